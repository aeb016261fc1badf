/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Libraries that only some commands use, loaded on first use (util
 * stage).  kiln links what every command needs (libdw, protobuf-c, zlib,
 * zstd, jansson); libcurl (URL inputs), graphviz (call graphs),
 * libmicrohttpd (kiln serve) and capstone (kiln doctor) pull in some
 * forty libraries between them, and relocating those cost every command
 * about 3 ms at start.  The file that calls such a library declares a
 * table of the functions it uses, and opens it before the first call:
 *
 *   #define CURL_FNS(X) X(easy_init, curl_easy_init) X(...)
 *   KILN_LAZYLIB(curl, KILN_SONAME_CURL, "libcurl4", CURL_FNS);
 *   ...
 *   if (kiln_lazylib_open(&curl, d) < 0) return -ENOENT;  // d says why
 *   CURL *h = curl_fns.f.easy_init();
 *
 * Each member has the type of the library's own declaration (the header
 * is still included), so calls are checked as before.  The soname is the
 * one the build found (CMake reads it from the library: KILN_SONAME_*),
 * so the ABI is the header's.  Opening is thread-safe and done once; a
 * failure is remembered and said again by later calls.
 */
#ifndef KILN_UTIL_LAZYLIB_H
#define KILN_UTIL_LAZYLIB_H

#include <pthread.h>
#include <stddef.h>

struct kiln_diag;

struct kiln_lazylib {
	const char *soname;		/* "libcurl.so.4" */
	const char *package;		/* Debian package that has it */
	const char *const *names;	/* the n symbols */
	void **slots;			/* filled by kiln_lazylib_open() */
	size_t n;
	pthread_mutex_t lock;
	int state;			/* 0 not tried, 1 open, < 0 failed */
	char why[200];			/* the failure, for later calls */
};

/*
 * Opens l's library and resolves every symbol, once.  0, or -ENOENT with
 * d (may be NULL) saying which library is missing and the package to
 * install.
 */
int kiln_lazylib_open(struct kiln_lazylib *l, struct kiln_diag *d);

/* Helpers of KILN_LAZYLIB(). */
#define KILN_LAZY_MEMBER_(m, s) __typeof__(s) *m;
#define KILN_LAZY_NAME_(m, s) #s,
#define KILN_LAZY_COUNT_(m, s) +1

/*
 * Declares VAR (struct kiln_lazylib) and VAR_fns, whose .f holds one
 * function pointer per X(member, symbol) of LIST.
 */
#define KILN_LAZYLIB(var, soname, package, LIST)                          \
	static union {                                                    \
		struct { LIST(KILN_LAZY_MEMBER_) } f;                     \
		void *slot[0 LIST(KILN_LAZY_COUNT_)];                     \
	} var##_fns;                                                      \
	static const char *const var##_names[] = { LIST(KILN_LAZY_NAME_) }; \
	static struct kiln_lazylib var = {                                \
		soname, package, var##_names, var##_fns.slot,             \
		sizeof(var##_names) / sizeof(*var##_names),               \
		PTHREAD_MUTEX_INITIALIZER, 0, ""                          \
	}

#endif
