/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache of decompressed separate debug files (symbolize stage), keyed
 * by build ID as perf's ~/.debug is: DIR/xx/yyyy.debug holds a copy of a
 * debug file whose DWARF sections were compressed (SHF_COMPRESSED), with
 * every section inflated, so that libdw maps it instead of inflating
 * libc's 10 MB of zlib on every run.  See docs/symbols.md, "The debug file
 * cache".
 *
 * The folder and whether this process may add files are process-wide
 * (kiln_sym_set_debug_cache() in symbolize.h).  Not thread-safe.
 */
#ifndef KILN_SYMBOLIZE_DEBUGCACHE_H
#define KILN_SYMBOLIZE_DEBUGCACHE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Opens the cached copy for build ID id[0..len) if there is one and it
 * passes the checks (a regular ELF file, every section inside the file,
 * none compressed, its build ID note equal to id).  A descriptor and, in
 * *path when path is not NULL, its malloc'ed name; -1 when there is no
 * usable copy (or no cache, or kiln_sym_close_debug_cache() was called).
 */
int kiln_debugcache_open(const unsigned char *id, size_t len, char **path);

/*
 * Adds a copy of debug file src for build ID id[0..len) when the cache is
 * writable, src's build ID is id and src has compressed sections: written
 * under a temporary name in the same folder and renamed into place, so
 * that a concurrent reader sees the whole file or none.  0 when added or
 * when there was nothing to add; -errno when it could not be written (the
 * caller goes on without it).
 */
int kiln_debugcache_add(const unsigned char *id, size_t len, const char *src);

#endif
