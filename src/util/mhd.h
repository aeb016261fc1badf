/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libmicrohttpd, loaded on first use (util stage; util/lazylib.h): by
 * the first server libkiln.so's KILN_HTTP starts, or `kiln serve`.
 * Debian's build brings GnuTLS, p11-kit and eight more libraries, whose
 * constructors would otherwise run in every program the agent is
 * preloaded into and relocate at every start of every kiln command.
 *
 * Include it after <microhttpd.h>: the macros below make the usual MHD_*
 * calls go through the table, so the code reads as plain MHD calls.  Call
 * kiln_mhd_open() before the first of them.  A function used anywhere
 * must be in KILN_MHD_FNS and have its macro (a missing one fails the
 * link: nothing links libmicrohttpd).
 */
#ifndef KILN_UTIL_MHD_H
#define KILN_UTIL_MHD_H

#include "util/lazylib.h"

struct kiln_diag;

#define KILN_MHD_FNS(X)                                                       \
	X(start_daemon, MHD_start_daemon) X(stop_daemon, MHD_stop_daemon)     \
	X(quiesce_daemon, MHD_quiesce_daemon)                                 \
	X(create_response_from_buffer, MHD_create_response_from_buffer)       \
	X(add_response_header, MHD_add_response_header)                       \
	X(destroy_response, MHD_destroy_response)                             \
	X(queue_response, MHD_queue_response)                                 \
	X(lookup_connection_value, MHD_lookup_connection_value)               \
	X(get_connection_values, MHD_get_connection_values)                   \
	X(get_connection_info, MHD_get_connection_info)                       \
	X(set_connection_option, MHD_set_connection_option)                   \
	X(suspend_connection, MHD_suspend_connection)                         \
	X(resume_connection, MHD_resume_connection)

union kiln_mhd_fns {
	struct { KILN_MHD_FNS(KILN_LAZY_MEMBER_) } f;
	void *slot[0 KILN_MHD_FNS(KILN_LAZY_COUNT_)];
};
extern union kiln_mhd_fns kiln_mhd_fns
	__attribute__((visibility("hidden")));

/*
 * Loads libmicrohttpd once (thread-safe).  0, or -ENOENT with d (may be
 * NULL) naming the library and its Debian package.
 */
int kiln_mhd_open(struct kiln_diag *d) __attribute__((visibility("hidden")));

#ifndef KILN_MHD_TABLE
#define MHD_start_daemon kiln_mhd_fns.f.start_daemon
#define MHD_stop_daemon kiln_mhd_fns.f.stop_daemon
#define MHD_quiesce_daemon kiln_mhd_fns.f.quiesce_daemon
#define MHD_create_response_from_buffer kiln_mhd_fns.f.create_response_from_buffer
#define MHD_add_response_header kiln_mhd_fns.f.add_response_header
#define MHD_destroy_response kiln_mhd_fns.f.destroy_response
#define MHD_queue_response kiln_mhd_fns.f.queue_response
#define MHD_lookup_connection_value kiln_mhd_fns.f.lookup_connection_value
#define MHD_get_connection_values kiln_mhd_fns.f.get_connection_values
#define MHD_get_connection_info kiln_mhd_fns.f.get_connection_info
#define MHD_set_connection_option kiln_mhd_fns.f.set_connection_option
#define MHD_suspend_connection kiln_mhd_fns.f.suspend_connection
#define MHD_resume_connection kiln_mhd_fns.f.resume_connection
#endif

#endif
