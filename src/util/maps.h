/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/maps, the one reader and parser (util stage).  Every reader
 * of a process's address space goes through here: the agent's profiles,
 * its stack lookups from the CPU collector and the heap hooks, the HTTP
 * `symbol` endpoint, `kiln record -p` and the gperftools reader.
 *
 * Two ways in:
 *   - kiln_read_proc() (util/file.h) takes the whole text into a buffer
 *     (for profiles, which keep it or parse it with kiln_maps_parse());
 *   - struct kiln_maps_iter walks a live maps file line by line with
 *     plain read(2) into a fixed buffer inside the iterator: no stdio, no
 *     allocation, so a malloc hook may use it (heap trace stack tops).
 * kiln_maps_find() is the iterator's common use: the mapping holding an
 * address.
 */
#ifndef KILN_UTIL_MAPS_H
#define KILN_UTIL_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line of a maps text: "START-END PERMS OFFSET DEV INODE [PATH]". */
struct kiln_maps_entry {
	uint64_t start, end, offset;
	char perms[5];		/* "r-xp" */
	const char *path;	/* not NUL-terminated; pathlen bytes, may be 0 */
	size_t pathlen;
	const char *line;	/* the whole line, without its '\n' */
	size_t linelen;
};

/*
 * Whether e maps anonymous memory (no path, or a name given with prctl's
 * PR_SET_VMA_ANON_NAME): executable, a JIT's code, which perf and the
 * kernel's perf records name "//anon".
 */
static inline bool kiln_maps_anon(const struct kiln_maps_entry *e)
{
	return !e->pathlen || (e->pathlen > 6 && !__builtin_memcmp(e->path, "[anon:", 6));
}

/*
 * Parses one line [p, end) (no '\n'); false where it is not a maps line
 * (pprof skips such lines; so does kiln).
 */
bool kiln_maps_parse_line(const char *p, const char *end,
			  struct kiln_maps_entry *e);

/*
 * Calls fn for each line of a maps text that parses, in order.  Stops at
 * and returns fn's first non-zero return value; 0 otherwise.
 */
int kiln_maps_parse(const char *text, size_t len,
		    int (*fn)(const struct kiln_maps_entry *e, void *ctx),
		    void *ctx);

/*
 * A live maps file read line by line.  An entry's path and line point
 * into the iterator and hold until the next call.  A line longer than
 * the buffer (a path near PATH_MAX) is given cut at the buffer's end,
 * with cut set.
 */
struct kiln_maps_iter {
	int fd;
	size_t pos, have;	/* unread bytes: buf[pos, have) */
	bool eof, cut;
	char buf[4096];
};

/* 0 or -errno.  path relative to dirfd (AT_FDCWD: as open(2)). */
int kiln_maps_open(struct kiln_maps_iter *it, int dirfd, const char *path);
/* 1 with e filled, 0 at the end, -errno on a read error. */
int kiln_maps_next(struct kiln_maps_iter *it, struct kiln_maps_entry *e);
void kiln_maps_close(struct kiln_maps_iter *it);

/*
 * The mapping of this process holding addr: 0 with *lo and *hi set,
 * -ENOENT, or -errno.  Async-signal-safe and allocation-free.
 */
int kiln_maps_find(uint64_t addr, uint64_t *lo, uint64_t *hi);

/* Text scanning shared with the other line formats of /proc and perf. */
/* Hexadecimal digits at *p (no "0x"); *ok cleared on none or overflow. */
uint64_t kiln_scan_hex(const char **p, const char *end, bool *ok);
/* Past spaces and tabs. */
const char *kiln_scan_blank(const char *p, const char *end);
/* Past a field (up to a space or tab). */
const char *kiln_scan_field(const char *p, const char *end);

#endif
