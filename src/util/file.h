/*
 * Whole-file input and atomic output (util stage).
 */
#ifndef KILN_UTIL_FILE_H
#define KILN_UTIL_FILE_H

#include <stdbool.h>
#include <stddef.h>

struct kiln_buf;

/* A read-only view of a whole file: mmap'ed when it is a regular file,
 * read into memory otherwise (pipes, /dev/stdin). */
struct kiln_map {
	const char *data;
	size_t len;
	bool mapped;
};

/* "-" means standard input.  0 or -errno. */
int kiln_map_open(struct kiln_map *m, const char *path);
void kiln_map_release(struct kiln_map *m);

/*
 * Writes data to path atomically: a temporary file in the same folder,
 * then rename(2), so a reader never sees half a file.  "-" writes to
 * standard output.  0 or -errno.
 */
int kiln_write_atomic(const char *path, const void *data, size_t len);

/* True when a and b name the same existing file (same device and inode). */
bool kiln_same_file(const char *a, const char *b);

#endif
