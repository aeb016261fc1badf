/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How much input kiln takes in (util stage): the most bytes a reader
 * holds in memory from one input that is not a regular file (a pipe,
 * /dev/zero) or that it decompresses (gzip, zstd).  Past it the readers
 * stop with an error instead of filling memory: a tiny gzip file can
 * expand to any size, and an endless input never ends.  Regular files
 * are mapped, not read, and are not limited.
 *
 * The CLI sets it from KILN_MAX_INPUT (docs/input-limits.md).
 */
#ifndef KILN_UTIL_LIMIT_H
#define KILN_UTIL_LIMIT_H

#include <stddef.h>

/* The default: 4 GiB. */
#define KILN_INPUT_LIMIT_DEFAULT ((size_t)4 << 30)

size_t kiln_input_limit(void);
void kiln_input_set_limit(size_t bytes);

/*
 * Parses a size: digits with an optional suffix k, M, G or T (powers of
 * 1024; "KiB", "MB" and the like are taken too).  0 or -EINVAL.
 */
int kiln_parse_size(const char *s, size_t *out);

/* "4 GiB", "512 MiB", "1000 bytes": for messages.  Returns buf. */
const char *kiln_size_str(size_t bytes, char *buf, size_t n);

#endif
