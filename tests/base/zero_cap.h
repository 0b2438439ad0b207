/*
 * zero_cap.h - for the tests of base's capped containers (buffers, arenas):
 * a cap of 0 is a programmer error, an assert where asserts are compiled in.
 * Include after <cmocka.h>.
 */
#ifndef UNHEX_TESTS_BASE_ZERO_CAP_H
#define UNHEX_TESTS_BASE_ZERO_CAP_H

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Initializes *obj (`size` bytes) with a cap of 0 through init0.  Where
 * asserts are compiled in (Debug, ASan) that must abort: it runs in a child
 * that has to die of SIGABRT, and *obj is zeroed instead (a struct never
 * initialized has the same cap).  Where they are not, it runs here.
 */
static inline void zero_cap_init(void (*init0)(void *obj), void *obj, size_t size)
{
#ifndef NDEBUG
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		init0(obj);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	memset(obj, 0, size);
#else
	(void)size;
	init0(obj);
#endif
}

#endif
