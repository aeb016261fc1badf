/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JIT code for the symbolizer (symint.h): perf's /tmp/perf-PID.map files
 * and jitdump files (jit-PID.dump), read whole or as they grow.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symint.h"
#include "util/diag.h"
#include "util/maps.h"
#include "util/file.h"
#include "util/buf.h"

/* ---- JIT symbol maps ---- */

static int cmp_jit(const void *a, const void *b)
{
	const struct jit *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

const struct jit *ksym_find_jit(struct kiln_sym *s, uint64_t addr)
{
	size_t lo = 0, hi = s->njits;

	if (!s->njits)
		return NULL;
	if (!s->jits_sorted) {
		qsort(s->jits, s->njits, sizeof(*s->jits), cmp_jit);
		s->jits_sorted = true;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->jits[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= s->jits[lo - 1].end)
		return NULL;
	return &s->jits[lo - 1];
}

/* Code [start, start + size) named name.  0 or -ENOMEM. */
static int add_jit(struct kiln_sym *s, uint64_t start, uint64_t size,
		   const char *name, size_t len)
{
	struct jit *j;

	if (KILN_GROW(s->jits, s->jits_alloc, s->njits + 1, 64))
		return -ENOMEM;
	j = &s->jits[s->njits];
	j->start = start;
	j->end = start + size;
	j->name = ksym_intern(s, name, len);
	if (!j->name)
		return -ENOMEM;
	s->njits++;
	s->jits_sorted = false;
	return 0;
}

/* ---- JIT symbol maps ---- */

int kiln_sym_add_perfmap(struct kiln_sym *s, const char *text, size_t len,
			 struct kiln_diag *d)
{
	const char *p = text, *end = text + len;
	size_t lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q;
		uint64_t start, size;
		bool ok = true;

		lineno++;
		q = kiln_scan_blank(p, le);
		while (le > q && (le[-1] == '\r' || le[-1] == ' '))
			le--;
		if (q == le) {
			p = (nl ? nl : end) + 1;
			continue;
		}
		if (le - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		start = kiln_scan_hex(&q, le, &ok);
		if (!ok || q == le || (*q != ' ' && *q != '\t'))
			return kiln_diag(d, "line %zu: expected \"START SIZE "
					 "name\" in hexadecimal", lineno);
		q = kiln_scan_blank(q, le);
		if (le - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		size = kiln_scan_hex(&q, le, &ok);
		if (!ok || q == le || (*q != ' ' && *q != '\t'))
			return kiln_diag(d, "line %zu: expected a hexadecimal "
					 "size and a name after the start",
					 lineno);
		q = kiln_scan_blank(q, le);
		if (!size || start + size < start)
			return kiln_diag(d, "line %zu: bad size 0x%" PRIx64,
					 lineno, size);
		if (add_jit(s, start, size, q, (size_t)(le - q)))
			return -ENOMEM;
		p = (nl ? nl : end) + 1;
	}
	return 0;
}

int kiln_sym_load_perfmap(struct kiln_sym *s, int pid, struct kiln_diag *d)
{
	uint64_t off = 0;

	return kiln_sym_load_perfmap_from(s, pid, &off, d);
}

/* Reads the map from *offset on when it is owned by root or by `owner`
 * (any owner when owner is -1). */
static int load_perfmap(struct kiln_sym *s, int pid, uid_t owner,
			uint64_t *offset, struct kiln_diag *d)
{
	char path[64], *text = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	ssize_t n;
	int fd, err;

	if (kiln_sym_no_local())
		return 0;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	/* /tmp is everyone's: a FIFO or device there is not a JIT map. */
	fd = kiln_open_regular(path);
	if (fd == -EINVAL || fd == -EISDIR || fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	/* Anyone can write /tmp/perf-PID.map for a process long gone:
	 * only root's or the owner's names are believed (fstat: the file
	 * opened, not the one the name points to by now). */
	if (owner != (uid_t)-1 &&
	    (fstat(fd, &st) || (st.st_uid && st.st_uid != owner))) {
		close(fd);
		return 0;
	}
	if (*offset && lseek(fd, (off_t)*offset, SEEK_SET) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	for (;;) {
		if (KILN_GROW(text, cap, len + 1, 65536)) {
			err = -ENOMEM;
			goto out;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	/* Only whole lines: a runtime may be writing the last one now. */
	while (len && text[len - 1] != '\n')
		len--;
	*offset += len;
	s->jit_module = ksym_interns(s, path);
	err = s->jit_module ? kiln_sym_add_perfmap(s, text, len, d) : -ENOMEM;
out:
	free(text);
	close(fd);
	return err;
}

int kiln_sym_load_perfmap_from(struct kiln_sym *s, int pid, uint64_t *offset,
			       struct kiln_diag *d)
{
	return load_perfmap(s, pid, (uid_t)-1, offset, d);
}

int kiln_sym_load_perfmap_owned(struct kiln_sym *s, int pid, uid_t owner,
				uint64_t *offset, struct kiln_diag *d)
{
	return load_perfmap(s, pid, owner, offset, d);
}

int kiln_sym_load_own_perfmap(struct kiln_sym *s)
{
	int pid = (int)getpid(), err;

	if (s->own_map_pid != pid) {
		/* (A session a forked child inherited keeps the parent's
		 * names; its own map starts from the beginning.) */
		s->own_map_pid = pid;
		s->own_map_off = 0;
	}
	err = load_perfmap(s, pid, geteuid(), &s->own_map_off, NULL);
	/* A line the runtime wrote badly names nothing; the profile is
	 * written all the same. */
	return err == -EINVAL ? 0 : err;
}

int kiln_sym_load_trace_perfmap(struct kiln_sym *s, int pid,
				uint64_t start_realtime_ns)
{
	char path[64];
	struct stat st;
	uint64_t off = 0, mtime;
	int err;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	if (stat(path, &st))
		return 0;
	/* A map last written before the traced process started is another
	 * process's that had the same pid. */
	mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
		(uint64_t)st.st_mtim.tv_nsec;
	if (start_realtime_ns && mtime < start_realtime_ns)
		return 0;
	err = load_perfmap(s, pid, geteuid(), &off, NULL);
	return err == -EINVAL ? 0 : err;
}

/* ---- jitdump files ---- */

/*
 * perf's jitdump format (tools/perf/Documentation/jitdump-specification
 * .txt), in the writer's byte order: a header (magic "JiTD" 0x4A695444,
 * version, its size, ELF machine, padding, pid, time, flags: 40 bytes),
 * then records of a 16-byte header (type, size with the header, time).
 * JIT_CODE_LOAD (type 0): pid, tid (32 bits), vma, code address, code
 * size, code index (64 bits), the name (NUL-terminated), the code.
 */
#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_HEADER 40u
#define JIT_CODE_LOAD 0u

/* The file header at data: 0 with *hsize, or -EINVAL with d filled;
 * 1 when too short yet. */
static int jd_header(const char *data, size_t len, int pid, uint32_t *hsize,
		     struct kiln_diag *d)
{
	uint32_t magic, hpid;

	if (len < JITDUMP_HEADER)
		return 1;
	memcpy(&magic, data, 4);
	if (magic == 0x4454694Au)
		return kiln_diag(d, "a jitdump file of the other byte order");
	if (magic != JITDUMP_MAGIC)
		return kiln_diag(d, "not a jitdump file (it starts with 0x%08x, "
				 "not \"JiTD\")", magic);
	memcpy(hsize, data + 8, 4);
	memcpy(&hpid, data + 20, 4);
	if (*hsize < JITDUMP_HEADER)
		return kiln_diag(d, "a jitdump header of %u bytes", *hsize);
	if (pid > 0 && hpid != (uint32_t)pid)
		return kiln_diag(d, "the jitdump file of process %u, not %d",
				 hpid, pid);
	return 0;
}

/* The records of the file's bytes [base, base + len) (data holds them)
 * from file offset *offset on, complete ones only; *offset advanced. */
static int jd_records(struct kiln_sym *s, const char *data, uint64_t base,
		      size_t len, uint64_t *offset, struct kiln_diag *d)
{
	size_t off = (size_t)(*offset - base);

	while (len - off >= 16) {
		const char *r = data + off, *name, *nul;
		uint32_t type, size;
		uint64_t addr, csize;

		memcpy(&type, r, 4);
		memcpy(&size, r + 4, 4);
		if (size < 16)
			return kiln_diag(d, "a jitdump record of %u bytes at "
					 "byte %" PRIu64, size, base + off);
		if (size > len - off)
			break;	/* being written */
		if (type == JIT_CODE_LOAD) {
			if (size < 16 + 40 + 1)
				return kiln_diag(d, "a short code-load record at "
						 "byte %" PRIu64, base + off);
			memcpy(&addr, r + 16 + 16, 8);
			memcpy(&csize, r + 16 + 24, 8);
			name = r + 16 + 40;
			nul = memchr(name, '\0', size - 16 - 40);
			if (!nul)
				return kiln_diag(d, "a code-load record without "
						 "a name's end at byte %" PRIu64,
						 base + off);
			if (csize && addr + csize > addr &&
			    add_jit(s, addr, csize, name, (size_t)(nul - name)))
				return -ENOMEM;
		}
		off += size;
	}
	*offset = base + off;
	return 0;
}

int kiln_sym_add_jitdump(struct kiln_sym *s, const char *data, size_t len,
			 int pid, uint64_t *offset, struct kiln_diag *d)
{
	uint32_t hsize = 0;
	int err = jd_header(data, len, pid, &hsize, d);

	if (err)
		return err < 0 ? err : 0;
	if (hsize > len)
		return kiln_diag(d, "a jitdump header of %u bytes", hsize);
	if (*offset < hsize)
		*offset = hsize;
	return *offset > len ? 0 : jd_records(s, data, 0, len, offset, d);
}

int kiln_sym_load_jitdump(struct kiln_sym *s, const char *path, int pid,
			  uid_t owner, uint64_t *offset, struct kiln_diag *d)
{
	char head[JITDUMP_HEADER];
	struct stat st;
	uint64_t base;
	uint32_t hsize = 0;
	size_t page = (size_t)getpagesize(), len;
	void *map;
	int fd, err;

	if (kiln_sym_no_local())
		return 0;
	fd = kiln_open_regular(path);
	if (fd == -EINVAL || fd == -EISDIR || fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	/* As the perf map: only root's or the owner's names are believed. */
	if (fstat(fd, &st) ||
	    (owner != (uid_t)-1 && st.st_uid && st.st_uid != owner) ||
	    (uint64_t)st.st_size <= *offset ||
	    pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
		close(fd);
		return 0;
	}
	err = jd_header(head, sizeof(head), pid, &hsize, d);
	if (err) {
		close(fd);
		return err < 0 ? err : 0;
	}
	if (*offset < hsize)
		*offset = hsize;
	if ((uint64_t)st.st_size <= *offset) {
		close(fd);
		return 0;
	}
	/* Only what was not read yet is mapped (the code bytes in between
	 * make a long-running runtime's dump large). */
	base = *offset & ~(uint64_t)(page - 1);
	len = (size_t)((uint64_t)st.st_size - base);
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)base);
	err = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return err;
	s->jit_module = ksym_interns(s, path);
	err = s->jit_module ? jd_records(s, map, base, len, offset, d) : -ENOMEM;
	munmap(map, len);
	return err;
}

bool kiln_sym_is_jitdump(const char *path, size_t len, int pid)
{
	char tail[32];
	size_t tl = (size_t)snprintf(tail, sizeof(tail), "/jit-%d.dump", pid);

	return len >= tl && !memcmp(path + len - tl, tail, tl);
}

int kiln_sym_load_own_jitdump(struct kiln_sym *s)
{
	struct kiln_maps_iter it;
	struct kiln_maps_entry e;
	char path[4096] = "";
	int pid = (int)getpid(), err;

	if (s->own_jd_pid != pid) {
		s->own_jd_pid = pid;
		s->own_jd_off = 0;
	}
	if (kiln_maps_open(&it, AT_FDCWD, "/proc/self/maps"))
		return 0;
	while (kiln_maps_next(&it, &e) == 1)
		if (!it.cut && e.pathlen < sizeof(path) &&
		    kiln_sym_is_jitdump(e.path, e.pathlen, pid)) {
			memcpy(path, e.path, e.pathlen);
			path[e.pathlen] = '\0';
			break;
		}
	kiln_maps_close(&it);
	if (!path[0])
		return 0;
	err = kiln_sym_load_jitdump(s, path, pid, geteuid(), &s->own_jd_off, NULL);
	return err == -EINVAL ? 0 : err;
}

struct find_dump {
	int pid;
	char path[4096];
};

static int find_dump(const struct kiln_maps_entry *e, void *ctx)
{
	struct find_dump *f = ctx;

	if (e->pathlen >= sizeof(f->path) ||
	    !kiln_sym_is_jitdump(e->path, e->pathlen, f->pid))
		return 0;
	memcpy(f->path, e->path, e->pathlen);
	f->path[e->pathlen] = '\0';
	return 1;
}

int kiln_sym_load_trace_jitdump(struct kiln_sym *s, const char *maps,
				size_t len, int pid, uint64_t start_realtime_ns)
{
	struct find_dump f;
	struct stat st;
	uint64_t off = 0, mtime;
	int err;

	if (pid <= 0 || !maps)
		return 0;
	f.pid = pid;
	if (kiln_maps_parse(maps, len, find_dump, &f) != 1 || stat(f.path, &st))
		return 0;
	/* As the perf map: one last written before the traced process
	 * started is another's. */
	mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
		(uint64_t)st.st_mtim.tv_nsec;
	if (start_realtime_ns && mtime < start_realtime_ns)
		return 0;
	err = kiln_sym_load_jitdump(s, f.path, pid, geteuid(), &off, NULL);
	return err == -EINVAL ? 0 : err;
}
