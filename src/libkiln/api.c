/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkiln.so's public API, include/kiln/kiln.h (libkiln stage): every
 * exported kiln_* function is here, over the parts' own calls.  Each
 * runs kiln's work on the caller's thread under the allocation guard:
 * what kiln allocates for it (the unwinder's tables, a profile, the
 * symbolizer, the server and the threads it starts) is not the
 * program's, and never in its heap profile.
 */
#include <errno.h>

#include "runtime/guard.h"
#include "kiln/kiln.h"
#include "cpu/cpu.h"
#include "heap/htrace.h"
#include "http/http.h"

#define KILN_API __attribute__((visibility("default")))

KILN_API int kiln_cpu_start(const struct kiln_cpu_opts *opts)
{
	int err;

	kiln_rt_quiet_begin();
	err = kiln_sampler_begin(opts && opts->hz ? opts->hz : 99,
				   opts && (opts->flags & KILN_CPU_WALL));
	kiln_rt_quiet_end();
	return err;
}

KILN_API int kiln_cpu_stop_write(const char *path)
{
	int err;

	if (!path)
		return -EINVAL;
	kiln_rt_quiet_begin();
	err = kiln_sampler_stop_write(path);
	kiln_rt_quiet_end();
	return err;
}

KILN_API int kiln_cpu_running(void)
{
	return kiln_sampler_running();
}

KILN_API int kiln_heap_start(void)
{
	int err;

	kiln_rt_quiet_begin();
	err = kiln_htrace_profile_start();
	kiln_rt_quiet_end();
	return err;
}

/* kiln_htrace_write() keeps its own guard (it is also the dump
 * that heap/dump.c writes from kiln's threads). */
KILN_API int kiln_heap_write(const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	return kiln_htrace_write(path);
}

KILN_API int kiln_http_start(const char *addr, struct kiln_http **out)
{
	int err;

	kiln_rt_quiet_begin();
	err = kiln_httpd_start(addr, out);
	kiln_rt_quiet_end();
	return err;
}

KILN_API int kiln_http_port(const struct kiln_http *srv)
{
	return kiln_httpd_port(srv);
}

KILN_API int kiln_http_stop(struct kiln_http *srv)
{
	int err;

	kiln_rt_quiet_begin();
	err = kiln_httpd_stop(srv);
	kiln_rt_quiet_end();
	return err;
}
