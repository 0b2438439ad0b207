/*
 * folded.h - reading a decoded profile (struct ingest_pprof) back as
 * folded stacks, "root;...;leaf" of each location's first function, for
 * the tests of the decoders that build one (text, speedscope).
 * Header-only; include after <cmocka.h>.
 */
#ifndef UNHEX_TESTS_INGEST_FOLDED_H
#define UNHEX_TESTS_INGEST_FOLDED_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ingest/ingest_int.h"

/* The value of the sample whose stack, written root first as "a;b;c", is `want`; or -1. */
static inline int64_t folded_value(const struct ingest_pprof *p, const char *want)
{
	char s[1024];

	for (size_t i = 0; i < p->n_samples; i++) {
		size_t n = 0;

		s[0] = '\0';
		for (size_t k = p->sample_off[i + 1]; k > p->sample_off[i]; k--) {
			const struct ingest_location *l = &p->locations[p->stack_locs[k - 1]];

			n += (size_t)snprintf(s + n, sizeof(s) - n, "%s%s", n ? ";" : "",
					      p->functions[l->lines[0].function - 1].name);
		}
		if (strcmp(s, want) == 0)
			return p->values[i];
	}
	return -1;
}

/* A stack written root first ("a;b;c") and the value a profile must give it. */
struct folded {
	const char *stack;
	int64_t value;
};

/* Checks every stack of want[0..n) against p, naming the first that differs. */
static inline void expect_folded(const struct ingest_pprof *p, const struct folded *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t got = folded_value(p, want[i].stack);

		if (got != want[i].value)
			fail_msg("stack \"%s\": %lld, want %lld", want[i].stack, (long long)got,
				 (long long)want[i].value);
	}
}

/* expect_folded() of the stacks given as { "a;b", 3 }, { "a", 1 }, ... */
#define EXPECT_FOLDED(p, ...)                                                                      \
	expect_folded((p), (const struct folded[]){ __VA_ARGS__ },                                 \
		      sizeof((const struct folded[]){ __VA_ARGS__ }) / sizeof(struct folded))

#endif
