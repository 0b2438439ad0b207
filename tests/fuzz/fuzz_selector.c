/*
 * fuzz_selector.c - libFuzzer target: label selectors, the query language
 * every read API parses from untrusted input.  The input is a selector
 * (query_selector_parse, no NUL needed), and also, split at its first
 * newline, the Connect form of a profile type and a label selector
 * (query_selector_parse2).  An accepted selector must be well formed
 * (named matchers, NUL-terminated values), is compiled (PCRE2 with its
 * bounds: a compiled one has a regex for each =~ and !~) and matched
 * against a fixed label set, which includes a long value for backtracking;
 * a refused one must say why, at every step.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "query/query.h"
#include "storage/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct store_label labels[] = {
	{ "__profile_type__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
	{ "env", "prod" },
	{ "service_name", "api" },
	{ "weird", "a\"b\\c\n\xc3\xa9" },
	{ "z_long", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" },
};

static void check(struct query_selector *sel)
{
	struct err_msg msg = { { 0 } };
	int rc;

	if (sel->n > QUERY_MAX_MATCHERS)
		abort();
	for (size_t i = 0; i < sel->n; i++) {
		const struct query_matcher *m = &sel->m[i];

		if (!m->name || !m->name[0] || !m->value)
			abort();
		if (m->op != QUERY_EQ && m->op != QUERY_NEQ && m->op != QUERY_RE &&
		    m->op != QUERY_NRE)
			abort();
		if (m->re)
			abort(); /* parsing never compiles */
	}
	if (sel->profile_type && !sel->profile_type[0])
		abort();
	if (query_selector_compile(sel, &msg)) {
		if (!msg.text[0])
			abort();
		return;
	}
	for (size_t i = 0; i < sel->n; i++)
		if ((sel->m[i].op == QUERY_RE || sel->m[i].op == QUERY_NRE) != (sel->m[i].re != NULL))
			abort();
	rc = query_selector_matches(sel, labels, sizeof(labels) / sizeof(labels[0]), &msg);
	if (rc < 0 ? !msg.text[0] : rc > 1)
		abort();
}

static void one(int rc, struct query_selector *sel, const struct err_msg *msg)
{
	if (rc) {
		if (!msg->text[0])
			abort(); /* every refusal says why */
		return;
	}
	check(sel);
	query_selector_release(sel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct query_selector sel;
	struct err_msg msg = { { 0 } };
	const uint8_t *nl;
	char *ptype, *lsel;

	one(query_selector_parse((const char *)data, size, &sel, &msg), &sel, &msg);

	/* Connect's two fields are C strings: NULs end them early. */
	nl = memchr(data, '\n', size);
	if (!nl)
		return 0;
	ptype = strndup((const char *)data, (size_t)(nl - data));
	lsel = strndup((const char *)nl + 1, size - (size_t)(nl - data) - 1);
	if (!ptype || !lsel)
		abort();
	err_clear(&msg);
	one(query_selector_parse2(ptype[0] ? ptype : NULL, lsel, &sel, &msg), &sel, &msg);
	free(ptype);
	free(lsel);
	return 0;
}
