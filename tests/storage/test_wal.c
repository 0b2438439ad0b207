/* test_wal.c - the write-ahead log after a crash: a child process commits and
 * dies without closing (kill -9 as far as the files go); a log cut short
 * opens, one damaged in the middle is refused with the file named, and
 * store_wal_check() and wal_recover say and do what `unhex recover` does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

#define SEC 1000000000LL
#define N_COMMITS 60
#define N_VALUES 400

/* In a child: N_COMMITS commits of one profile each, then _exit(). */
static void write_and_die(const char *dir)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *st = open_store(dir, 0, 0);
		uint32_t stacks[N_VALUES];
		int64_t values[N_VALUES];

		if (!st)
			_exit(3);
		for (int i = 0; i < N_COMMITS; i++) {
			struct store_txn *tx = begin(st, "t");
			struct store_location l = { 0, 0, NULL, 0 };
			struct store_profile_meta meta = { (1700000000LL + i) * SEC, SEC, 1, { 0 } };
			uint64_t series;
			uint32_t part;

			if (add_series(tx, "svc", "pod", &series) || store_txn_partition(tx, "svc", &part))
				_exit(4);
			for (int k = 0; k < N_VALUES; k++) {
				uint32_t loc;
				l.address = (uint64_t)(i * N_VALUES + k + 1) * 16;
				if (store_txn_location(tx, part, &l, &loc) ||
				    store_txn_stack(tx, part, &loc, 1, &stacks[k]))
					_exit(5);
				values[k] = k + 1;
			}
			if (store_txn_profile(tx, series, part, &meta, stacks, values, N_VALUES) ||
			    commit(tx))
				_exit(6);
		}
		_exit(0); /* no store_close: the memtables are only in the log */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The path of the newest *.log of dir, in out. */
static void newest_log(const char *dir, char *out, size_t cap)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	char best[256] = "";

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0 && e->d_name[0] >= '0' &&
		    e->d_name[0] <= '9' && (strlen(best) < n || (strlen(best) == n && strcmp(best, e->d_name) < 0)))
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	assert_true(best[0]);
	snprintf(out, cap, "%s/%s", dir, best);
}

static int add_profiles(void *ctx, const struct store_tenant_stats *s)
{
	*(uint64_t *)ctx += s->profiles;
	return 0;
}

static uint64_t profiles_of(struct store *st)
{
	struct err_msg msg = { { 0 } };
	uint64_t n = 0;

	assert_int_equal(store_stats(st, add_profiles, &n, &msg), 0);
	return n;
}

static void test_intact_and_torn_tail(void **state)
{
	struct store_wal_report r;
	struct err_msg msg = { { 0 } };
	char *dir = tmpdir_new(), log[512];
	struct store *st;
	struct stat sb;

	(void)state;
	write_and_die(dir);
	assert_int_equal(store_wal_check(dir, &r, &msg), 0);
	assert_string_equal(r.file, "");
	assert_true(r.batches >= N_COMMITS);
	assert_int_equal(r.batches_after, 0);
	assert_false(r.torn_tail);

	/* A crash in the middle of the last write: the file just ends early. */
	newest_log(dir, log, sizeof(log));
	assert_int_equal(stat(log, &sb), 0);
	assert_int_equal(truncate(log, sb.st_size - 10), 0);
	assert_int_equal(store_wal_check(dir, &r, &msg), 0);
	assert_string_equal(r.file, "");
	assert_true(r.torn_tail);
	st = open_store(dir, 0, 0);
	assert_non_null(st);
	assert_int_equal(profiles_of(st), N_COMMITS - 1);
	store_close(st);
	tmpdir_free(dir);
}

static void test_damage_refused_then_recovered(void **state)
{
	struct store_options o = { 0 };
	struct store_wal_report r;
	struct err_msg msg = { { 0 } };
	char *dir = tmpdir_new(), log[512], junk[8];
	struct store *st = NULL;
	struct stat sb;
	uint64_t kept;
	int fd;

	(void)state;
	write_and_die(dir);
	newest_log(dir, log, sizeof(log));
	assert_int_equal(stat(log, &sb), 0);
	assert_true(sb.st_size > 4 * 32768);
	fd = open(log, O_RDWR);
	assert_true(fd >= 0);
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), sb.st_size / 2), sizeof(junk));
	close(fd);

	assert_int_equal(store_wal_check(dir, &r, &msg), 0);
	assert_string_equal(r.file, strrchr(log, '/') + 1);
	assert_true(r.offset <= (uint64_t)sb.st_size / 2);
	assert_true(r.offset + 32768 > (uint64_t)sb.st_size / 2);
	assert_true(r.batches_after > 0);
	assert_true(r.first_seq_after > r.last_seq);

	/* Refused, read-write and read-only, with the file and the command. */
	o.dir = dir;
	assert_int_equal(store_open(&o, &st, &msg), ERR_CORRUPT);
	assert_null(st);
	assert_non_null(strstr(msg.text, strrchr(log, '/') + 1));
	assert_non_null(strstr(msg.text, "unhex recover --data"));
	o.read_only = 1;
	err_clear(&msg);
	assert_int_equal(store_open(&o, &st, &msg), ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "damaged at byte"));

	/* The refusal changed nothing: the same damage is found again. */
	assert_int_equal(store_wal_check(dir, &r, &msg), 0);
	assert_string_equal(r.file, strrchr(log, '/') + 1);

	o.read_only = 0;
	o.wal_recover = 1;
	assert_int_equal(store_open(&o, &st, &msg), 0);
	kept = profiles_of(st);
	assert_true(kept > 0);
	assert_true(kept + r.batches_after <= N_COMMITS);
	store_close(st);

	/* Once recovered, the store opens normally with the same data. */
	st = open_store(dir, 0, 0);
	assert_non_null(st);
	assert_int_equal(profiles_of(st), kept);
	store_close(st);
	tmpdir_free(dir);
}

static void test_no_logs(void **state)
{
	struct store_wal_report r;
	struct err_msg msg = { { 0 } };
	char *dir = tmpdir_new();

	(void)state;
	assert_int_equal(store_wal_check(dir, &r, &msg), 0);
	assert_int_equal(r.files, 0);
	assert_string_equal(r.file, "");
	tmpdir_free(dir);
	assert_int_equal(store_wal_check("/nonexistent/unhex", &r, &msg), ERR_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intact_and_torn_tail),
		cmocka_unit_test(test_damage_refused_then_recovered),
		cmocka_unit_test(test_no_logs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
