/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/maps: the one reader and parser (util stage).  See maps.h.
 */
#include "util/maps.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"

uint64_t kiln_scan_hex(const char **p, const char *end, bool *ok)
{
	uint64_t v = 0;
	const char *q = *p;

	while (q < end) {
		int c = *q, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (v >> 60)
			*ok = false;
		v = v << 4 | (uint64_t)d;
		q++;
	}
	if (q == *p)
		*ok = false;
	*p = q;
	return v;
}

const char *kiln_scan_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

const char *kiln_scan_field(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

bool kiln_maps_parse_line(const char *p, const char *end,
			  struct kiln_maps_entry *e)
{
	bool ok = true;
	const char *f;
	size_t i;

	e->line = p;
	e->linelen = (size_t)(end - p);
	e->start = kiln_scan_hex(&p, end, &ok);
	if (!ok || p >= end || *p != '-')
		return false;
	p++;
	e->end = kiln_scan_hex(&p, end, &ok);
	if (!ok || p >= end || (*p != ' ' && *p != '\t'))
		return false;
	p = kiln_scan_blank(p, end);
	f = kiln_scan_field(p, end);
	if (f - p < 4)
		return false;
	for (i = 0; i < 4; i++)
		e->perms[i] = p[i];
	e->perms[4] = '\0';
	p = kiln_scan_blank(f, end);
	e->offset = kiln_scan_hex(&p, end, &ok);
	if (!ok)
		return false;
	/* Device and inode. */
	p = kiln_scan_blank(p, end);
	p = kiln_scan_field(p, end);
	p = kiln_scan_blank(p, end);
	p = kiln_scan_field(p, end);
	p = kiln_scan_blank(p, end);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\r'))
		end--;
	e->path = p;
	e->pathlen = (size_t)(end - p);
	return e->end > e->start;
}

int kiln_maps_parse(const char *text, size_t len,
		    int (*fn)(const struct kiln_maps_entry *e, void *ctx),
		    void *ctx)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		struct kiln_maps_entry e;

		if (kiln_maps_parse_line(p, le, &e)) {
			int r = fn(&e, ctx);

			if (r)
				return r;
		}
		p = le + 1;
	}
	return 0;
}

int kiln_maps_open(struct kiln_maps_iter *it, int dirfd, const char *path)
{
	it->fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	it->pos = it->have = 0;
	it->eof = it->cut = false;
	return it->fd < 0 ? -errno : 0;
}

int kiln_maps_next(struct kiln_maps_iter *it, struct kiln_maps_entry *e)
{
	for (;;) {
		char *s = it->buf + it->pos;
		char *nl = memchr(s, '\n', it->have - it->pos);
		bool full = !it->pos && it->have == sizeof(it->buf);
		ssize_t n;

		if (nl || full || (it->eof && it->have > it->pos)) {
			char *le = nl ? nl : it->buf + it->have;
			bool tail = it->cut;	/* the rest of a cut line */

			it->pos = (size_t)(le - it->buf) + (nl != NULL);
			it->cut = !nl && !it->eof;
			if (!tail && kiln_maps_parse_line(s, le, e))
				return 1;
			continue;
		}
		if (it->eof)
			return 0;
		memmove(it->buf, s, it->have - it->pos);
		it->have -= it->pos;
		it->pos = 0;
		n = read(it->fd, it->buf + it->have, sizeof(it->buf) - it->have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			it->eof = true;
		it->have += (size_t)n;
	}
}

void kiln_maps_close(struct kiln_maps_iter *it)
{
	if (it->fd >= 0)
		close(it->fd);
	it->fd = -1;
}

int kiln_maps_find(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	struct kiln_maps_iter it;
	struct kiln_maps_entry e;
	int r = kiln_maps_open(&it, AT_FDCWD, kiln_self_maps_path());

	if (r)
		return r;
	while ((r = kiln_maps_next(&it, &e)) > 0) {
		if (addr >= e.start && addr < e.end) {
			*lo = e.start;
			*hi = e.end;
			break;
		}
	}
	kiln_maps_close(&it);
	return r > 0 ? 0 : r ? r : -ENOENT;
}
