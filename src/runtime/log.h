/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libkiln.so's messages on stderr (runtime stage, log.c).
 */
#ifndef KILN_RUNTIME_LOG_H
#define KILN_RUNTIME_LOG_H


/* Remembers which file fd 2 is (called first by every constructor;
 * idempotent): messages go there only while it still is, see log.c. */
void kiln_rt_log_init(void);

/* Logging on stderr when KILN_LOG=debug (or info); printf-like. */
void kiln_rt_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
enum { KILN_LOG_ERROR, KILN_LOG_INFO, KILN_LOG_DEBUG };

#endif
