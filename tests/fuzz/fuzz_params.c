/*
 * fuzz_params.c - libFuzzer target: the query strings of the render and
 * render-diff routes, read the way web/routes_query.c reads them: every
 * parameter of either route is URL-decoded by web__query_param into a
 * buffer of the route's size, its times go through time_parse and its
 * selectors through the query engine's parser.  A refusal must say why and
 * must leave the output untouched; a decoded value must fit its buffer.
 * The release label lists of /api/v1/releases and /api/v1/regressions
 * (`labels`) go through release_labels_parse: on success every name is a
 * label name inside the list's own buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/timeparse.h"
#include "query/query.h"
#include "query/regress.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW (1700000000LL * 1000000000LL)

static void selector(const char *v)
{
	struct query_selector sel;
	struct err_msg msg = { { 0 } };

	if (query_selector_parse(v, strlen(v), &sel, &msg)) {
		if (!msg.text[0])
			abort();
		return;
	}
	query_selector_release(&sel);
}

static void time_value(const char *v)
{
	struct err_msg msg = { { 0 } };
	int64_t t = 42;

	if (time_parse(v, NOW, &t, &msg)) {
		if (!msg.text[0] || t != 42 || strncmp(msg.text, "time: ", 6))
			abort();
	}
}

static void release_labels(const char *v)
{
	struct release_labels rl;
	struct err_msg msg = { { 0 } };

	rl.n = 99;
	if (release_labels_parse(v, &rl, &msg)) {
		if (!msg.text[0] || rl.n != 99)
			abort();
		return;
	}
	if (rl.n == 0 || rl.n > RELEASE_MAX_LABELS)
		abort();
	for (size_t i = 0; i < rl.n; i++) {
		const char *n = rl.name[i];
		if (n < rl.buf || n >= rl.buf + sizeof(rl.buf) || !n[0] || (n[0] >= '0' && n[0] <= '9'))
			abort();
		for (; *n; n++)
			if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') ||
			      *n == '_' || *n == '.'))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const selectors[] = { "query", "leftQuery", "rightQuery" };
	static const char *const times[] = { "from", "until", "leftFrom", "leftUntil",
					     "rightFrom", "rightUntil" };
	static const char *const ints[] = { "maxNodes", "limit", "mode", "sort", "format" };
	char *qs = malloc(size + 1), sel[WEB_PARAM_MAX], t[64], small[32];
	int rc;

	if (!qs)
		abort();
	memcpy(qs, data, size);
	qs[size] = '\0';
	for (size_t i = 0; i < sizeof(selectors) / sizeof(selectors[0]); i++) {
		rc = web__query_param(qs, selectors[i], sel, sizeof(sel));
		if (!rc) {
			if (strlen(sel) >= sizeof(sel))
				abort();
			selector(sel);
		} else if (rc != ERR_NOT_FOUND && rc != ERR_TOO_LARGE && rc != ERR_INVALID) {
			abort();
		}
	}
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
		if (!web__query_param(qs, times[i], t, sizeof(t)))
			time_value(t);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (!web__query_param(qs, ints[i], small, sizeof(small)) && strlen(small) >= 32)
			abort();
	if (!web__query_param(qs, "labels", sel, 512))
		release_labels(sel);
	free(qs);
	return 0;
}
