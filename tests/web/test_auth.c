/*
 * test_auth.c - the token table (web/auth.c): a file loaded and looked up
 * by the SHA-256 of a presented token; files refused whole (a bad line
 * named by number, the same token twice, writable by every user, missing,
 * too large); a reload that takes a new file, and one that keeps the old
 * tokens when the new file is broken; lookups on threads while reloads
 * swap the table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "web/web_int.h"

static char g_dir[] = "/tmp/unhex-auth-XXXXXX";
static char g_path[128];

/* Writes the lines of tokens "tok<i>" (tenant and scopes per entry) to g_path. */
static void write_file(const char *const *lines, size_t n)
{
	FILE *f = fopen(g_path, "w");

	assert_non_null(f);
	fputs("# test tokens\n\n", f);
	for (size_t i = 0; i < n; i++)
		fputs(lines[i], f);
	fclose(f);
	chmod(g_path, 0600);
}

/* The token-file line of `token`. */
static const char *line_of(const char *token, const char *tenant, const char *scopes,
			   const char *name)
{
	static char lines[8][256];
	static int k;
	struct buf b;
	char *out = lines[k++ % 8];

	buf_init(&b, 4096);
	assert_int_equal(web_token_line(token, strlen(token), tenant, scopes, name, &b, NULL), 0);
	snprintf(out, 256, "%s", b.data);
	buf_release(&b);
	return out;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_path, sizeof(g_path), "%s/tokens", g_dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) ? -1 : 0;
}

static void test_lookup(void **state)
{
	const char *lines[] = {
		line_of("tok-a", "team-a", "ingest,query", "a"),
		line_of("tok-all", "*", "admin", NULL),
	};
	struct web__principal who;
	struct web_auth *a = NULL;
	struct err_msg msg;

	(void)state;
	write_file(lines, 2);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), 0);
	assert_int_equal(web__auth_count(a), 2);
	assert_string_equal(web__auth_path(a), g_path);
	assert_int_equal(web__auth_lookup(a, "tok-a", 5, &who), 0);
	assert_string_equal(who.tenant, "team-a");
	assert_int_equal(who.scopes, WEB_SCOPE_INGEST | WEB_SCOPE_QUERY);
	assert_string_equal(who.name, "a");
	assert_int_equal(web__auth_lookup(a, "tok-all", 7, &who), 0);
	assert_string_equal(who.tenant, WEB_ALL_TENANTS);
	assert_string_equal(who.name, "line-4"); /* no name: its line */
	memset(&who, 0x33, sizeof(who));
	assert_int_equal(web__auth_lookup(a, "tok-b", 5, &who), ERR_UNAUTHENTICATED);
	assert_int_equal(web__auth_lookup(a, "tok-a ", 6, &who), ERR_UNAUTHENTICATED);
	assert_int_equal(web__auth_lookup(a, "tok-", 4, &who), ERR_UNAUTHENTICATED);
	assert_int_equal((unsigned char)who.tenant[0], 0x33); /* untouched */
	web__auth_free(a);
	web__auth_free(NULL);
}

static void test_bad_files(void **state)
{
	const char *dup[] = { line_of("same", "a", "query", "x"), line_of("same", "b", "ingest", "y") };
	const char *bad[] = { line_of("t1", "a", "query", NULL), "sha256=00 tenant=a scopes=query\n" };
	const char *plain[] = { "uhx_plaintext\n" };
	struct web_auth *a = NULL;
	struct err_msg msg;
	FILE *f;

	(void)state;
	write_file(dup, 2);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, ":4: the same token as \"x\""));
	write_file(bad, 2);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "tokens:4: sha256="));
	write_file(plain, 1);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "stored hashed"));
	/* Anyone could add a token to it. */
	write_file(bad, 1);
	chmod(g_path, 0666);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "writable by every user"));
	chmod(g_path, 0600);
	err_clear(&msg);
	assert_int_equal(web__auth_new("/nonexistent/tokens", &a, &msg), ERR_IO);
	assert_int_equal(web__auth_new(g_dir, &a, &msg), ERR_INVALID);
	/* Past 1 MiB. */
	f = fopen(g_path, "w");
	assert_non_null(f);
	for (int i = 0; i < 20000; i++)
		fputs("# a comment line of some length to fill the file up quickly\n", f);
	fclose(f);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), ERR_TOO_LARGE);
	assert_null(a);
}

static void test_reload(void **state)
{
	const char *first[] = { line_of("old", "team-a", "query", "old") };
	const char *second[] = { line_of("new", "team-b", "ingest", "new") };
	const char *broken[] = { "sha256=zz tenant=a scopes=query\n" };
	struct web__principal who;
	struct web_auth *a = NULL;
	struct err_msg msg;

	(void)state;
	write_file(first, 1);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), 0);
	write_file(second, 1);
	assert_int_equal(web__auth_reload(a, &msg), 0);
	assert_int_equal(web__auth_lookup(a, "old", 3, &who), ERR_UNAUTHENTICATED);
	assert_int_equal(web__auth_lookup(a, "new", 3, &who), 0);
	assert_string_equal(who.tenant, "team-b");
	/* A broken edit changes nothing. */
	write_file(broken, 1);
	err_clear(&msg);
	assert_int_equal(web__auth_reload(a, &msg), ERR_INVALID);
	assert_int_equal(web__auth_lookup(a, "new", 3, &who), 0);
	unlink(g_path);
	assert_int_equal(web__auth_reload(a, &msg), ERR_IO);
	assert_int_equal(web__auth_lookup(a, "new", 3, &who), 0);
	/* An empty file is a valid one: nobody gets in. */
	write_file(NULL, 0);
	assert_int_equal(web__auth_reload(a, &msg), 0);
	assert_int_equal(web__auth_count(a), 0);
	assert_int_equal(web__auth_lookup(a, "new", 3, &who), ERR_UNAUTHENTICATED);
	web__auth_free(a);
}

struct looker {
	struct web_auth *a;
	int found, missed;
};

static void *look(void *arg)
{
	struct looker *l = arg;
	struct web__principal who;

	for (int i = 0; i < 20000; i++) {
		if (web__auth_lookup(l->a, "stay", 4, &who) == 0 && strcmp(who.name, "stay") == 0)
			l->found++;
		else
			l->missed++;
	}
	return NULL;
}

/* "stay" is in every version of the file: no lookup may miss it mid-reload. */
static void test_reload_under_load(void **state)
{
	const char *v1[] = { line_of("stay", "a", "query", "stay"), line_of("x1", "a", "query", NULL) };
	const char *v2[] = { line_of("x2", "a", "query", NULL), line_of("stay", "a", "query", "stay") };
	struct looker l[3];
	pthread_t t[3];
	struct web_auth *a = NULL;
	struct err_msg msg;

	(void)state;
	write_file(v1, 2);
	err_clear(&msg);
	assert_int_equal(web__auth_new(g_path, &a, &msg), 0);
	for (int i = 0; i < 3; i++) {
		l[i] = (struct looker){ a, 0, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, look, &l[i]), 0);
	}
	for (int i = 0; i < 50; i++) {
		write_file(i % 2 ? v1 : v2, 2);
		assert_int_equal(web__auth_reload(a, &msg), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(l[i].missed, 0);
		assert_int_equal(l[i].found, 20000);
	}
	web__auth_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_under_load),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
