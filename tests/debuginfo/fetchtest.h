/*
 * fetchtest.h - fixtures of the service tests that build programs in t_dir
 * (symtest.h) and open their own store and service on it, with or without
 * the fake upstream of upstream.h: a build ID read from a compiled file,
 * the C fixture compiled with its .debug, and the store, the service and
 * the upstream opened and closed together.  svctest.h is the fuller
 * fixture of the tests that need two builds and uploads.  Header-only:
 * each test is one program.
 */
#ifndef UNHEX_TESTS_DEBUGINFO_FETCHTEST_H
#define UNHEX_TESTS_DEBUGINFO_FETCHTEST_H

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"
#include "tests/symbolize/fixtures.h"
#include "tests/symbolize/symtest.h"
#include "upstream.h"

/* The build ID of t_dir/`name` into *info and, in hex, into hex. 0 or -1 (none). */
static inline int ft_build_id(const char *name, struct sym_elf_info *info,
			      char hex[DEBUGINFO_HEX_MAX])
{
	if (sym_elf_inspect_file(t_path(name), info, NULL) || !info->build_id_len)
		return -1;
	sym_build_id_hex(info->build_id, info->build_id_len, hex);
	return 0;
}

/*
 * Compiles the C fixture (fixtures.h) in t_dir as prog (-g -O2) with
 * prog.debug beside it, then runs the shell commands `more` there ("" for
 * none); prog's build ID as ft_build_id() gives it.  0 or -1.
 */
static inline int ft_build_prog(const char *more, struct sym_elf_info *info,
				char hex[DEBUGINFO_HEX_MAX])
{
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	if (t_run("cd '%s' && gcc -g -O2 -Wl,--build-id -o prog prog.c && "
		  "objcopy --only-keep-debug prog prog.debug%s%s",
		  t_dir, more[0] ? " && " : "", more))
		return -1;
	return ft_build_id("prog", info, hex);
}

/*
 * Starts the fake upstream `up` (NULL: none; fake_listen() done before),
 * opens a store in t_dir/store and the service of `o` on it.  0, or -1
 * with the reason on stderr.
 */
static inline int ft_open(struct fake_upstream *up, const struct debuginfo_options *o,
			  struct store **st, struct debuginfo **s)
{
	struct store_options so = { 0 };
	struct err_msg msg;

	err_clear(&msg);
	so.dir = t_path("store");
	if ((up && fake_start(up)) || store_open(&so, st, &msg) ||
	    debuginfo_open(*st, o, s, &msg)) {
		fprintf(stderr, "%s\n", msg.text[0] ? msg.text : "cannot start the fake upstream");
		return -1;
	}
	return 0;
}

/* Closes what ft_open() opened. */
static inline void ft_close(struct fake_upstream *up, struct store *st, struct debuginfo *s)
{
	debuginfo_close(s);
	store_close(st);
	if (up)
		fake_stop(up);
}

#endif
