/*
 * regex.c - the regexes of selectors (=~ and !~), on PCRE2 with every
 * resource it can spend bounded.
 *
 * A selector's value comes from any client, so a regex is untrusted code
 * run against every candidate series.  What bounds it:
 *   - its pattern is at most QUERY_MAX_REGEX_BYTES bytes of UTF-8, and
 *     parentheses nest at most QUERY__REGEX_MAX_NESTING deep;
 *   - compiling it may allocate at most QUERY__REGEX_COMPILE_BYTES (every
 *     allocation of pcre2_compile goes through a counting allocator), and
 *     the compiled code may be at most QUERY__REGEX_CODE_BYTES: a repeat
 *     count copies its group, so (((a{0,32767}){0,32767}){0,32767}) is
 *     refused by the compiler ("regular expression is too large") without
 *     being built;
 *   - back-references are refused (PCRE2_INFO_BACKREFMAX, and groups do not
 *     capture unless named: \1 names no group), as RE2 and Prometheus have
 *     none and they make matching NP-hard;
 *   - one match may take at most QUERY__REGEX_MATCH_STEPS backtracking
 *     steps (the match limit, a few milliseconds), QUERY__REGEX_DEPTH
 *     nested backtracking points and QUERY__REGEX_HEAP_KIB of heap; a value
 *     that needs more fails the query with ERR_INVALID naming the label,
 *     never a silent non-match.
 * Matching is anchored at both ends (PCRE2_ANCHORED | PCRE2_ENDANCHORED),
 * the `^(?:re)$` of Prometheus, without putting text around the user's.
 * Subjects are label values: one that is not UTF-8 (stored before ingest
 * refused such values) matches no regex, never an error.  (PCRE2's
 * PCRE2_MATCH_INVALID_UTF is not used: it lets a match end at an invalid
 * byte, so "b\xff" would match "b".)
 *
 * Threading: a compiled regex owns its match data, so one regex is used by
 * one thread at a time (a selector belongs to one query).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "query_int.h"

#include "base/err.h"

#include <assert.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct query_regex {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_general_context *gctx;
	size_t used;   /* bytes allocated through gctx while compiling */
	int compiling; /* allocations are counted against the compile cap */
};

static void *re_alloc(size_t n, void *data)
{
	struct query_regex *re = data;

	if (re->compiling) {
		if (n > QUERY__REGEX_COMPILE_BYTES - re->used)
			return NULL;
		re->used += n;
	}
	return malloc(n);
}

static void re_release(void *p, void *data)
{
	(void)data;
	free(p);
}

void query__regex_free(struct query_regex *re)
{
	if (!re)
		return;
	pcre2_match_data_free(re->md);
	pcre2_match_context_free(re->mctx);
	pcre2_code_free(re->code);
	pcre2_general_context_free(re->gctx);
	free(re);
}

static int compile_error(int code, size_t off, const char *label, struct err_msg *msg)
{
	PCRE2_UCHAR text[160];

	if (pcre2_get_error_message(code, text, sizeof(text)) < 0)
		strcpy((char *)text, "unknown error");
	if (code == PCRE2_ERROR_HEAPLIMIT || code == PCRE2_ERROR_NOMEMORY)
		return err_set(msg, ERR_INVALID,
			       "selector: label %s: regex needs more than %d bytes to compile", label,
			       QUERY__REGEX_COMPILE_BYTES);
	return err_set(msg, ERR_INVALID, "selector: label %s: bad regex at offset %zu: %s", label,
		       off, (const char *)text);
}

int query__regex_compile(const char *pattern, size_t len, const char *label,
			 struct query_regex **out, struct err_msg *msg)
{
	struct query_regex *re;
	pcre2_compile_context *cctx = NULL;
	uint32_t backrefs = 0;
	size_t size = 0;
	PCRE2_SIZE off = 0;
	int code = 0, rc = ERR_NOMEM;

	if (len > QUERY_MAX_REGEX_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "selector: label %s: regex of %zu bytes, the limit is %d",
			       label, len, QUERY_MAX_REGEX_BYTES);
	re = calloc(1, sizeof(*re));
	if (!re)
		return err_set(msg, ERR_NOMEM, "out of memory (regex)");
	re->gctx = pcre2_general_context_create(re_alloc, re_release, re);
	if (!re->gctx || !(cctx = pcre2_compile_context_create(re->gctx)))
		goto nomem;
	pcre2_set_max_pattern_length(cctx, QUERY_MAX_REGEX_BYTES);
	pcre2_set_parens_nest_limit(cctx, QUERY__REGEX_MAX_NESTING);
	re->compiling = 1;
	re->code = pcre2_compile((PCRE2_SPTR)pattern, len,
				 PCRE2_UTF | PCRE2_ANCHORED |
					 PCRE2_ENDANCHORED | PCRE2_NO_AUTO_CAPTURE |
					 PCRE2_NEVER_BACKSLASH_C | PCRE2_DOTALL,
				 &code, &off, cctx);
	re->compiling = 0;
	pcre2_compile_context_free(cctx);
	if (!re->code) {
		rc = compile_error(code, off, label, msg);
		query__regex_free(re);
		return rc;
	}
	if (pcre2_pattern_info(re->code, PCRE2_INFO_BACKREFMAX, &backrefs) || backrefs) {
		rc = err_set(msg, ERR_INVALID, "selector: label %s: back-references are not supported",
			     label);
		query__regex_free(re);
		return rc;
	}
	if (pcre2_pattern_info(re->code, PCRE2_INFO_SIZE, &size) ||
	    size > QUERY__REGEX_CODE_BYTES) {
		rc = err_set(msg, ERR_INVALID,
			     "selector: label %s: regex compiles to %zu bytes, the limit is %d", label,
			     size, QUERY__REGEX_CODE_BYTES);
		query__regex_free(re);
		return rc;
	}
	re->md = pcre2_match_data_create(1, re->gctx);
	re->mctx = pcre2_match_context_create(re->gctx);
	if (!re->md || !re->mctx)
		goto nomem;
	pcre2_set_match_limit(re->mctx, QUERY__REGEX_MATCH_STEPS);
	pcre2_set_depth_limit(re->mctx, QUERY__REGEX_DEPTH);
	pcre2_set_heap_limit(re->mctx, QUERY__REGEX_HEAP_KIB);
	*out = re;
	return 0;
nomem:
	query__regex_free(re);
	return err_set(msg, rc, "out of memory (regex)");
}

int query__regex_match(struct query_regex *re, const char *s, size_t len, const char *label,
		       struct err_msg *msg)
{
	int rc;

	assert(re && re->code && re->md);
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, re->md, re->mctx);
	if (rc >= 0)
		return 1;
	if (rc == PCRE2_ERROR_NOMATCH ||
	    (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
		return 0;
	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
	    rc == PCRE2_ERROR_HEAPLIMIT)
		return err_set(msg, ERR_INVALID,
			       "selector: label %s: regex needs more than %d steps, %d nested "
			       "backtracking points or %d KiB to match a %zu-byte value (nested "
			       "repetitions such as (a*)* backtrack exponentially); simplify it",
			       label, QUERY__REGEX_MATCH_STEPS, QUERY__REGEX_DEPTH,
			       QUERY__REGEX_HEAP_KIB, len);
	if (rc == PCRE2_ERROR_NOMEMORY)
		return err_set(msg, ERR_NOMEM, "out of memory (regex match)");
	{
		PCRE2_UCHAR text[160];

		if (pcre2_get_error_message(rc, text, sizeof(text)) < 0)
			strcpy((char *)text, "unknown error");
		return err_set(msg, ERR_INVALID, "selector: label %s: regex match failed: %s",
			       label, (const char *)text);
	}
}
