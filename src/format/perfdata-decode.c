/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf.data reader (format stage), the records decoded: finds the binaries a
 * perf.data names (the file itself when its build ID matches the one
 * recorded, else perf's build-id cache: $PERF_BUILDID_DIR or ~/.debug,
 * .build-id/xx/rest/elf and PATH/BUILDID/elf) and the kallsyms of the
 * kernel it was recorded on, and turns each record into the event
 * session/record.c replays (MMAP/MMAP2, COMM, FORK/EXIT, samples
 * with their call chains and --call-graph dwarf register and stack
 * copies).  Every field is checked against its record first.  See
 * perfdata.h.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "format/perfdata.h"
#include "symbolize/symbolize.h"

/* ---- finding the recorded binaries ---- */

static void hex(const uint8_t *id, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
	out[2 * n] = '\0';
}

static bool regular(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* Whether the regular file at path has GNU build ID id. */
static bool has_build_id(const char *path, const uint8_t *id, size_t n)
{
	const void *got;
	Elf *elf;
	ssize_t len;
	bool same = false;
	int fd;

	if (!regular(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		len = dwelf_elf_gnu_build_id(elf, &got);
		same = len > 0 && (size_t)len >= n && !memcmp(got, id, n);
		elf_end(elf);
	}
	close(fd);
	return same;
}

static const struct bid *find_bid(const struct pd *pd, const char *path,
				  uint32_t pid)
{
	const struct bid *any = NULL;
	size_t i;

	for (i = 0; i < pd->nbids; i++) {
		if (strcmp(pd->bids[i].path, path))
			continue;
		if (pd->bids[i].pid == pid)
			return &pd->bids[i];
		any = &pd->bids[i];
	}
	return any;
}

/* pd->path = the formatted name; false when out of memory. */
static bool set_path(struct pd *pd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static bool set_path(struct pd *pd, const char *fmt, ...)
{
	va_list ap;
	int err;

	pd->path.len = 0;
	err = kiln_buf_grow(&pd->path, 1);
	if (err)
		return false;
	pd->path.data[0] = '\0';
	va_start(ap, fmt);
	err = kiln_buf_vaddf(&pd->path, fmt, ap);
	va_end(ap);
	return !err;
}

/*
 * The file to read for a mapping of path (in pd->path): the file itself
 * when it is the recorded one, else perf's build-id cache; "" for none,
 * NULL when out of memory.
 */
static const char *resolve(struct pd *pd, const char *path, uint32_t pid,
			   uint8_t *bid_out, uint8_t *bid_size)
{
	const struct bid *b = find_bid(pd, path, pid);
	char h[41];

	if (!set_path(pd, "%s", ""))
		return NULL;
	if (b) {
		memcpy(bid_out, b->id, b->size);
		*bid_size = b->size;
	}
	/* --no-local-symbols: no file of this machine is opened. */
	if (kiln_sym_no_local())
		return pd->path.data;
	if (!b) {
		/* No build ID recorded: the file as it is now, as perf does. */
		if (path[0] == '/' && regular(path) && !set_path(pd, "%s", path))
			return NULL;
		return pd->path.data;
	}
	memcpy(bid_out, b->id, b->size);
	*bid_size = b->size;
	if (path[0] == '/' && has_build_id(path, b->id, b->size))
		return set_path(pd, "%s", path) ? pd->path.data : NULL;
	if (!pd->bid_dir)
		return pd->path.data;
	hex(b->id, b->size, h);
	if (!set_path(pd, "%s/.build-id/%.2s/%s/elf", pd->bid_dir, h, h + 2))
		return NULL;
	if (regular(pd->path.data))
		return pd->path.data;
	if (path[0] == '/' && !strstr(path, "/../")) {
		if (!set_path(pd, "%s%s/%s/elf", pd->bid_dir, path, h))
			return NULL;
		if (regular(pd->path.data))
			return pd->path.data;
	}
	return set_path(pd, "%s", "") ? pd->path.data : NULL;
}

/* Maps (or reads) the regular file path into *out once. */
static int slurp(const char *path, struct kiln_map *out)
{
	if (out->data)
		return 0;
	if (!regular(path))
		return -ENOENT;
	return kiln_map_open(out, path);
}

/* The running kernel's build ID from /sys/kernel/notes. */
static bool running_kernel_is(const struct bid *b)
{
	struct kiln_buf n = KILN_BUF_INIT;
	bool same = false;
	size_t off = 0;
	FILE *f = fopen("/sys/kernel/notes", "re");

	if (!f)
		return false;
	if (!kiln_buf_grow(&n, 4096))
		n.len = fread(n.data, 1, 4096, f);
	fclose(f);
	while (off + 12 <= n.len) {
		uint32_t nsz = u32(n.data + off), dsz = u32(n.data + off + 4);
		uint32_t type = u32(n.data + off + 8);
		size_t name = off + 12, desc = name + ((nsz + 3) & ~3u);

		if (desc > n.len || dsz > n.len - desc)
			break;
		if (type == 3 && nsz == 4 && !memcmp(n.data + name, "GNU", 4)) {
			same = dsz >= b->size && !memcmp(n.data + desc, b->id,
							   b->size);
			break;
		}
		off = desc + ((dsz + 3) & ~3u);
	}
	kiln_buf_release(&n);
	return same;
}

/* Kernel symbols for the kernel the file was recorded on. */
void kiln_perfdata_load_kallsyms(struct pd *pd)
{
	const struct bid *k = NULL;
	char h[41];
	size_t i;

	for (i = 0; i < pd->nbids; i++)
		if (pd->bids[i].kernel &&
		    !strcmp(pd->bids[i].path, "[kernel.kallsyms]"))
			k = &pd->bids[i];
	if (!k) {
		/* No kernel build ID recorded (pipe mode): the running
		 * kernel's symbols when it is the same release, as perf
		 * report uses them. */
		struct utsname u;

		if (pd->osrelease && !uname(&u) &&
		    !strcmp(pd->osrelease, u.release))
			slurp("/proc/kallsyms", &pd->ksyms);
		return;
	}
	hex(k->id, k->size, h);
	if (pd->bid_dir) {
		struct kiln_buf p = KILN_BUF_INIT;

		if (!kiln_buf_addf(&p, "%s/[kernel.kallsyms]/%s/kallsyms",
				   pd->bid_dir, h) &&
		    !slurp(p.data, &pd->ksyms)) {
			kiln_buf_release(&p);
			return;
		}
		kiln_buf_release(&p);
	}
	if (running_kernel_is(k))
		slurp("/proc/kallsyms", &pd->ksyms);
}

/* ---- replaying the records ---- */

const char *kiln_perfdata_event_name(const struct attr *a, char *buf, size_t n)
{
	static const char *const sw[] = { "cpu-clock", "task-clock",
		"page-faults", "context-switches", "cpu-migrations",
		"minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy", "bpf-output", "cgroup-switches" };
	static const char *const hw[] = { "cycles", "instructions",
		"cache-references", "cache-misses", "branches", "branch-misses",
		"bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
		"ref-cycles" };

	if (a->name && a->name[0]) {
		const char *slash = strchr(a->name, '/');

		snprintf(buf, n, "%s", a->name);
		buf[strcspn(buf, ":/")] = '\0';
		/* "group:name" tracepoints keep their group. */
		if (a->type == PERF_TYPE_TRACEPOINT)
			snprintf(buf, n, "%s", a->name);
		/* A PMU's event ("cpu_core/cycles:Pu/", hybrid CPUs have one
		 * per core type) keeps its PMU, less the modifiers. */
		else if (slash && slash != a->name &&
			 strcspn(slash + 1, ":/,"))
			snprintf(buf, n, "%.*s/%.*s", (int)(slash - a->name),
				 a->name, (int)strcspn(slash + 1, ":/,"),
				 slash + 1);
		if (buf[0])
			return buf;
	}
	if (a->type == PERF_TYPE_SOFTWARE && a->config < 12)
		return sw[a->config];
	if (a->type == PERF_TYPE_HARDWARE && a->config < 10)
		return hw[a->config];
	snprintf(buf, n, "event-%" PRIu32 "-%" PRIu64, a->type, a->config);
	return buf;
}

/* Bytes of a PERF_SAMPLE_READ value. */
static size_t read_size(uint64_t rf, const char *p, const char *end, bool *ok)
{
	size_t per = 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1u << 4)));
	size_t head = 8 * (!!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
			   !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));

	*ok = true;
	if (rf & PERF_FORMAT_GROUP) {
		uint64_t nr;

		if (end - p < 8) {
			*ok = false;
			return 0;
		}
		nr = u64(p);
		if (nr > (uint64_t)(end - p) / per) {
			*ok = false;
			return 0;
		}
		return 8 + head + per * (size_t)nr;
	}
	return head + per;
}

/* An aligned copy of n u64 at p, in pd->scratch at byte offset *at. */
static const uint64_t *aligned(struct pd *pd, const char *p, size_t n,
			       size_t *at)
{
	size_t off = *at;

	if (!((uintptr_t)p & 7))
		return (const uint64_t *)(const void *)p;
	if (kiln_buf_grow(&pd->scratch, off + n * 8 + 8))
		return NULL;
	memcpy(pd->scratch.data + off, p, n * 8);
	*at = off + n * 8;
	return (const uint64_t *)(const void *)(pd->scratch.data + off);
}

static int parse_sample(struct pd *pd, const struct attr *a, size_t off,
			struct kiln_perf_sample *s, uint64_t *regs)
{
	const char *rec = at(pd, off);
	uint16_t size = u16(rec + 6), misc = u16(rec + 4);
	const char *p = rec + 8, *end = rec + size;
	uint64_t st = a->sample_type, v;
	size_t scr = 0;
	bool ok;

	/* The regs and chain copies must stay put while the sample lives. */
	if (kiln_buf_grow(&pd->scratch, 2 * size + 64))
		return -ENOMEM;
#define TAKE(dst) do { if (end - p < 8) goto short_rec; \
		(dst) = u64(p); p += 8; } while (0)
	memset(s, 0, sizeof(*s));
	if (st & PERF_SAMPLE_IDENTIFIER)
		TAKE(v);
	if (st & PERF_SAMPLE_IP)
		TAKE(s->ip);
	if (st & PERF_SAMPLE_TID) {
		TAKE(v);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		TAKE(s->time);
	if (st & PERF_SAMPLE_ADDR)
		TAKE(v);
	if (st & PERF_SAMPLE_ID)
		TAKE(v);
	if (st & PERF_SAMPLE_STREAM_ID)
		TAKE(v);
	if (st & PERF_SAMPLE_CPU) {
		TAKE(v);
		s->cpu = (uint32_t)v;
	}
	if (st & PERF_SAMPLE_PERIOD)
		TAKE(s->period);
	pd->read_at = NULL;
	if (st & PERF_SAMPLE_READ) {
		size_t n = read_size(a->read_format, p, end, &ok);

		if (!ok || n > (size_t)(end - p))
			goto short_rec;
		pd->read_at = p;
		p += n;
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		TAKE(s->nr);
		if (s->nr > (uint64_t)(end - p) / 8)
			return bad(pd, off, "a sample's call chain of %" PRIu64
				   " entries runs past its record (%u bytes)",
				   s->nr, size);
		s->ips = aligned(pd, p, (size_t)s->nr, &scr);
		if (!s->ips)
			return -ENOMEM;
		p += s->nr * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		uint32_t n;

		if (end - p < 4)
			goto short_rec;
		n = u32(p);
		if (n > (size_t)(end - p) - 4)
			goto short_rec;
		p += 4 + n;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr;

		TAKE(nr);
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			TAKE(v);
		if (nr > (uint64_t)(end - p) / 24)
			goto short_rec;
		p += nr * 24;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		TAKE(s->abi);
		if (s->abi) {
			size_t n = a->nregs_user, j;

			if (n > (size_t)(end - p) / 8)
				goto short_rec;
			/* Into the layout kiln's unwinder reads (reg_layout():
			 * zero where the file has none; no sp or ip: nothing to
			 * unwind from). */
			const uint64_t *in = regs;

			/* perf's mask is kiln's: the file's registers as they
			 * are, where aligned (a record starts 8-aligned). */
			if (a->regs_as_is && !((uintptr_t)p & 7))
				in = (const uint64_t *)(const void *)p;
			else
				for (j = 0; j < a->nwant; j++)
					regs[j] = a->regpos[j] >= 0 ?
						  u64(p + 8 * (size_t)a->regpos[j]) : 0;
			p += 8 * n;
#if defined(__x86_64__)
			if (s->abi == PERF_SAMPLE_REGS_ABI_64 &&
			    ((a->regs_user >> 7) & 1) && ((a->regs_user >> 8) & 1))
				s->regs = in;
#endif
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		TAKE(s->stack_size);
		if (s->stack_size) {
			if (s->stack_size > (uint64_t)(end - p))
				return bad(pd, off, "a sample's stack copy of %"
					   PRIu64 " bytes runs past its record "
					   "(%u bytes)", s->stack_size, size);
			s->stack = p;
			p += s->stack_size;
			TAKE(s->stack_dyn);
			if (s->stack_dyn > s->stack_size)
				s->stack_dyn = s->stack_size;
		}
	}
#undef TAKE
	if (!s->regs)
		s->abi = 0;
	if (!(st & PERF_SAMPLE_PERIOD))
		s->period = a->freq ? 0 : a->period;
	if (s->period > MAX_PERIOD)
		return bad(pd, off, "a sample's period of %" PRIu64 " is more "
			   "than 2^48 (file damaged?)", s->period);
	s->user = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	return 0;
short_rec:
	return bad(pd, off, "a sample of %u bytes is too short for the fields "
		   "its event records (byte %zu of it)", size,
		   (size_t)(p - rec));
}

void kiln_perfdata_forget_counts(struct pd *pd)
{
	size_t i;

	for (i = 0; i < pd->nattrs; i++) {
		free(pd->attrs[i].last);
		pd->attrs[i].last = NULL;
	}
}

/*
 * A sample that carries the counts of events (PERF_SAMPLE_READ: perf
 * record's leader sampling, `-e '{cycles,instructions}:S'`), as perf
 * report takes it (session.c, deliver_sample_value()): one sample for
 * each event counted, weighing what its count grew by since the last
 * sample of its id (an id per event and CPU or thread), none where it
 * did not grow.  ev holds the parsed sample of the record at off.  false: the counts carry no
 * ids to tell their events by; the sample is taken as it is.
 */
static int read_counts(struct pd *pd, kiln_perf_fn fn, void *ctx, size_t off,
		       const struct attr *a, struct kiln_perf_event *ev,
		       bool *done)
{
	uint64_t rf = a->read_format, nr = 1, k;
	size_t head = 8 * (!!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
			   !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));
	size_t per = 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1u << 4)));
	const char *p = pd->read_at, *v;

	*done = false;
	if (!p || !(rf & PERF_FORMAT_ID))
		return 0;
	*done = true;
	/* read_size() checked that the values lie inside the record. */
	if (rf & PERF_FORMAT_GROUP) {
		nr = u64(p);
		v = p + 8 + head;
	} else {
		v = p;
		per = 0;
	}
	for (k = 0; k < nr; k++, v += per) {
		uint64_t val = u64(v), id = u64(v + (rf & PERF_FORMAT_GROUP ?
						      8 : 8 + head));
		struct attr *t = NULL;
		size_t i, j = 0;

		for (i = 0; i < pd->nattrs && !t; i++)
			for (j = 0; j < pd->attrs[i].nids; j++)
				if (pd->attrs[i].ids[j] == id) {
					t = &pd->attrs[i];
					break;
				}
		if (!t)
			continue;
		if (!t->last) {
			t->last = calloc(t->nids, sizeof(*t->last));
			if (!t->last)
				return -ENOMEM;
		}
		if (val < t->last[j] || val - t->last[j] > MAX_PERIOD)
			return bad(pd, off, "a sample's count of an event goes from %"
				   PRIu64 " to %" PRIu64 " (file damaged?)", t->last[j], val);
		ev->sample.period = val - t->last[j];
		t->last[j] = val;
		if (!ev->sample.period || t->col < 0 || is_dummy(t))
			continue;
		ev->sample.column = (uint32_t)t->col;
		fn(ctx, ev);
	}
	return 0;
}

/* A NUL-terminated name in [p, end), or NULL. */
static const char *name_in(const char *p, const char *end)
{
	return p < end && memchr(p, '\0', (size_t)(end - p)) ? p : NULL;
}

int kiln_perfdata_decode(struct pd *pd, size_t i, uint64_t *regs,
			 kiln_perf_fn fn, void *ctx)
{
	const struct rref *rr = &pd->recs[i];
	const char *rec = at(pd, rr->off);
	const struct attr *a = &pd->attrs[rr->attr];
	uint32_t type = u32(rec);
	uint16_t misc = u16(rec + 4), size = u16(rec + 6);
	const char *end = rec + size - trailer_size(a);
	struct kiln_perf_event ev;
	uint8_t bid[20];
	uint8_t bsize = 0;
	int err;

	if (end < rec + 8)
		end = rec + 8;
	memset(&ev, 0, sizeof(ev));
	ev.time = rr->time;
	switch (type) {
	case PERF_RECORD_SAMPLE: {
		bool done;

		if (is_dummy(a))
			return 0;
		ev.kind = KILN_PERF_SAMPLE;
		err = parse_sample(pd, a, rr->off, &ev.sample, regs);
		if (err)
			return err;
		err = read_counts(pd, fn, ctx, rr->off, a, &ev, &done);
		if (err || done)
			return err;
		/* Not of the --event asked for. */
		if (a->col < 0)
			return 0;
		ev.sample.column = (uint32_t)a->col;
		break;
	}
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		size_t fixed = type == PERF_RECORD_MMAP ? 8 + 32 : 8 + 64;
		bool old2 = false;
		const char *path;

		/*
		 * MMAP2 as kernels before 3.16 wrote it (and RHEL 7's 3.10,
		 * which has MMAP2 backported) has no prot and flags: the name
		 * starts at byte 64.  The kernel reports prot as PROT_READ,
		 * WRITE and EXEC only, so a "prot" with other bits is the
		 * name's first bytes; a body with no room for a name after
		 * prot and flags (the kernel pads a name to 8 bytes at least)
		 * is an old record with an empty name.  perf 6.1 reads such a
		 * record's trailer as its name.
		 */
		if (type == PERF_RECORD_MMAP2 && end - rec >= 8 + 56 + 8 &&
		    ((u32(rec + 64) & ~7u) || end - rec <= 8 + 64)) {
			old2 = true;
			fixed = 8 + 56;
		}
		if (end - rec < (ptrdiff_t)fixed)
			return bad(pd, rr->off, "a mapping record of %u bytes is "
				   "too short", size);
		/* Kernel and module mappings: kernel frames use kallsyms. */
		if ((misc & PERF_RECORD_MISC_CPUMODE_MASK) !=
		    PERF_RECORD_MISC_USER)
			return 0;
		path = name_in(rec + fixed, end);
		if (!path)
			return bad(pd, rr->off, "a mapping record's file name is "
				   "not terminated");
		ev.kind = KILN_PERF_MMAP;
		ev.mmap.pid = u32(rec + 8);
		ev.mmap.tid = u32(rec + 12);
		ev.mmap.start = u64(rec + 16);
		ev.mmap.len = u64(rec + 24);
		ev.mmap.pgoff = u64(rec + 32);
		if (ev.mmap.len == 0 || ev.mmap.start + ev.mmap.len < ev.mmap.start)
			return 0;
		if (type == PERF_RECORD_MMAP || old2)
			ev.mmap.prot = misc & PERF_RECORD_MISC_MMAP_DATA ? 1 : 5;
		else
			ev.mmap.prot = u32(rec + 64);
		ev.mmap.filename = path;
		if (type == PERF_RECORD_MMAP2 &&
		    (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
		    (uint8_t)rec[40] && (uint8_t)rec[40] <= 20 &&
		    !find_bid(pd, path, ev.mmap.pid)) {
			/* The record's own build ID (perf record --buildid-mmap). */
			struct bid b = { ev.mmap.pid, false, { 0 },
					 (uint8_t)rec[40], NULL };

			memcpy(b.id, rec + 44, b.size);
			b.path = strdup(path);
			if (!b.path)
				return -ENOMEM;
			{
				struct bid *nb = realloc(pd->bids, (pd->nbids + 1) *
							 sizeof(*nb));

				if (!nb) {
					free(b.path);
					return -ENOMEM;
				}
				pd->bids = nb;
				pd->bids[pd->nbids++] = b;
			}
		}
		if (!(ev.mmap.prot & 4))
			return 0;
		ev.mmap.open_path = resolve(pd, path, ev.mmap.pid, bid, &bsize);
		if (!ev.mmap.open_path)
			return -ENOMEM;
		memcpy(ev.mmap.build_id, bid, bsize);
		ev.mmap.build_id_size = bsize;
		break;
	}
	case PERF_RECORD_COMM: {
		const char *comm;

		if (end - rec < 8 + 8 + 1)
			return bad(pd, rr->off, "a COMM record of %u bytes is too "
				   "short", size);
		comm = name_in(rec + 16, end);
		if (!comm)
			return bad(pd, rr->off, "a COMM record's name is not "
				   "terminated");
		ev.kind = KILN_PERF_COMM;
		ev.comm.pid = u32(rec + 8);
		ev.comm.tid = u32(rec + 12);
		ev.comm.comm = comm;
		ev.comm.exec = misc & PERF_RECORD_MISC_COMM_EXEC;
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (end - rec < 8 + 16)
			return bad(pd, rr->off, "a %s record of %u bytes is too "
				   "short", type == PERF_RECORD_FORK ? "FORK" :
				   "EXIT", size);
		ev.kind = type == PERF_RECORD_FORK ? KILN_PERF_FORK : KILN_PERF_EXIT;
		ev.task.pid = u32(rec + 8);
		ev.task.ppid = u32(rec + 12);
		ev.task.tid = u32(rec + 16);
		ev.task.ptid = u32(rec + 20);
		break;
	default:
		return 0;
	}
	fn(ctx, &ev);
	return 0;
}
