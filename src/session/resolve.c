/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recorder's address resolution (session stage): an address of a
 * process at a time to a location of the profile, through a symbol session
 * per file (a DSO object, shared by the processes that map it), or per
 * process where the file is the process's own, the JIT perf maps, kallsyms, cached per (process
 * generation, address).  See recint.h.
 */
#include "session/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session/recint.h"
#include "session/unwind.h"
#include "profile/profile.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/htab.h"
#include "util/file.h"
#include "util/maps.h"

/* ---- symbolization of one address ---- */

static bool addr_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	const struct addr_ent *k = ((const void **)ctx)[1];
	const struct addr_ent *e = &r->addrs[id - 1];

	return e->ip == k->ip && e->gen == k->gen && e->caller == k->caller;
}

static struct kiln_sym *proc_sym(struct kiln_rec *r, struct proc *pr)
{
	struct kiln_sym_opts so = { 0 };
	char root[64];
	struct stat a, b;
	size_t i;

	if (pr->sym || pr->exited)
		return pr->sym;
	so.pid = r->o.offline ? 0 : (int)pr->pid;
	snprintf(root, sizeof(root), "/proc/%u/root", pr->pid);
	/* A process in another mount namespace sees other files. */
	if (!r->o.offline && !stat(root, &a) && !stat("/", &b) &&
	    (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		so.root = root;
	pr->sym = kiln_sym_new(&so);
	if (!pr->sym)
		return NULL;
	for (i = 0; i < pr->nmaps; i++)
		if (kiln_rec_sym_path(r, &pr->maps[i]))
			kiln_sym_add_mapping(pr->sym, kiln_rec_sym_path(r, &pr->maps[i]),
					     pr->maps[i].start, pr->maps[i].end,
					     pr->maps[i].pgoff);
	pr->perfmap_off = 0;
	pr->perfmap_read = false;
	pr->jitdump_off = 0;
	pr->jitdump_checked = 0;
	if (!r->o.offline)
		kiln_sym_load_perfmap_from(pr->sym, (int)pr->pid, &pr->perfmap_off,
					   NULL);
	return pr->sym;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * JIT runtimes append to /tmp/perf-PID.map as they compile: when an
 * address outside every ELF file has no name, the lines added since the
 * last read are read (the file's size looked at every 20 ms at most).
 * True when new lines came.
 */
static bool reload_perfmap(struct kiln_rec *r, struct proc *pr)
{
	char path[64];
	struct stat st;
	uint64_t now = mono_ns(), before;

	if (!pr->sym || now - pr->perfmap_checked < 20000000ull)
		return false;
	pr->perfmap_checked = now;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pr->pid);
	if (stat(path, &st) || (uint64_t)st.st_size <= pr->perfmap_off)
		return false;
	before = pr->perfmap_off;
	kiln_sym_load_perfmap_from(pr->sym, (int)pr->pid, &pr->perfmap_off, NULL);
	if (pr->perfmap_off == before)
		return false;
	pr->jitver++;
	return true;
}

/*
 * A perf.data replayed: an address outside every ELF file is named from
 * /tmp/perf-PID.map as perf report names it, read once, at the first such
 * address of the process, if root or the user reading owns it (perf
 * report's rule; docs/symbols.md).  True when lines were read.
 */
static bool read_perfmap(struct proc *pr)
{
	uint64_t before = pr->perfmap_off;

	if (pr->perfmap_read || !pr->sym)
		return false;
	pr->perfmap_read = true;
	kiln_sym_load_perfmap_owned(pr->sym, (int)pr->pid, geteuid(),
				    &pr->perfmap_off, NULL);
	return pr->perfmap_off != before;
}

/*
 * A runtime that writes a jitdump file (node --perf-prof, JVM agents)
 * maps it so that its path is recorded (jit-PID.dump, in the directory
 * it chose): the code-load records it gained since the last read name
 * JIT code, as `perf inject --jit` would (no ELF files made).  Live, the
 * file is looked at every 20 ms at most; read after the fact, only if
 * root or the user reading owns it, as the perf map.  True when records
 * were read.
 */
static bool read_jitdump(struct kiln_rec *r, struct proc *pr)
{
	size_t i;
	uint64_t now = mono_ns(), before = pr->jitdump_off;

	if (!pr->sym || now - pr->jitdump_checked < 20000000ull)
		return false;
	pr->jitdump_checked = now;
	for (i = 0; i < pr->nmaps; i++) {
		const struct rmap *m = &pr->maps[i];
		const char *path = kiln_prof_str(r->p, m->file);

		if (!kiln_sym_is_jitdump(path, strlen(path), (int)pr->pid))
			continue;
		kiln_sym_load_jitdump(pr->sym, m->open ? kiln_prof_str(r->p, m->open) :
				      path, (int)pr->pid,
				      r->o.offline ? geteuid() : (uid_t)-1,
				      &pr->jitdump_off, NULL);
		break;
	}
	if (pr->jitdump_off == before)
		return false;
	pr->jitver++;
	return true;
}

/* New JIT names for process pr: its perf map's, its jitdump file's. */
static bool more_jit(struct kiln_rec *r, struct proc *pr)
{
	bool map = r->o.offline ? read_perfmap(pr) : reload_perfmap(r, pr);

	return read_jitdump(r, pr) || map;
}

/* Whether a mapping's code may be named by the perf map (not an ELF file). */
static bool jit_mapping(struct kiln_rec *r, const struct rmap *m)
{
	const char *path = m ? kiln_prof_str(r->p, m->file) : "";

	return !m || path[0] != '/' || !strncmp(path, "//anon", 6) ||
	       !strncmp(path, "/memfd:", 7);
}

/* Where a DSO's file offset x is looked up: DSO_BASE + x (docs/design.md). */
#define DSO_BASE 0x100000000000ull

static bool dso_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	uint32_t file = *(const uint32_t *)((const void **)ctx)[1];

	return r->dsos[id - 1].file == file;
}

/* The DSO of the file read (string id file), made on first use; NULL
 * when out of memory (r->err set). */
static struct dso *dso_get(struct kiln_rec *r, struct proc *pr, uint32_t file)
{
	const void *ctx[2] = { r, &file };
	uint32_t hash = (uint32_t)kiln_hash(&file, sizeof(file)), id;
	struct kiln_sym_opts so = { 0 };
	struct dso *d;

	id = kiln_htab_find(&r->dso_index, hash, dso_eq, ctx);
	if (id)
		return &r->dsos[id - 1];
	if (!GROW(r->dsos, r->dsos_alloc, r->ndsos + 1)) {
		r->err = -ENOMEM;
		return NULL;
	}
	d = &r->dsos[r->ndsos];
	memset(d, 0, sizeof(*d));
	d->file = file;
	/* Live, the first process's map_files if the path cannot be opened
	 * (offline, whatever has that pid now is another process). */
	so.pid = r->o.offline ? 0 : (int)pr->pid;
	d->sym = kiln_sym_new(&so);
	if (!d->sym || kiln_htab_insert(&r->dso_index, hash,
					(uint32_t)r->ndsos + 1)) {
		kiln_sym_free(d->sym);
		r->err = -ENOMEM;
		return NULL;
	}
	r->ndsos++;
	return d;
}

/*
 * Places the part of d's file that mapping m maps around file offset off
 * in d's session, if no part holds off yet: the largest range of m's file
 * offsets around off that no other part holds (parts never overlap, so
 * that the one holding an address is the one found).  0 or -ENOMEM.
 */
static int dso_place(struct dso *d, const char *path, const struct rmap *m,
		     uint64_t off)
{
	uint64_t lo = m->pgoff, hi = m->pgoff + (m->end - m->start);
	size_t i;

	for (i = 0; i < d->nparts; i++) {
		const struct dso_part *p = &d->parts[i];

		if (off >= p->pgoff && off < p->end)
			return 0;
		if (p->end <= off && p->end > lo)
			lo = p->end;
		if (p->pgoff > off && p->pgoff < hi)
			hi = p->pgoff;
	}
	if (!GROW(d->parts, d->parts_alloc, d->nparts + 1))
		return -ENOMEM;
	d->parts[d->nparts].pgoff = lo;
	d->parts[d->nparts].end = hi;
	d->nparts++;
	return kiln_sym_add_mapping(d->sym, path, DSO_BASE + lo, DSO_BASE + hi, lo);
}

/*
 * Looks ip (in mapping m of process pr) up in the DSO of m's file, shared
 * by every process that maps it: a perf.data, -a, and since issue 22 a
 * command or -p too (a process-per-connection server made a session per
 * process, each reading the same symbol tables again).  False where the
 * file is the process's own (JIT memory, [vdso], a deleted file, a
 * process in a container): the process's own session is used then.
 */
static bool dso_lookup(struct kiln_rec *r, struct proc *pr,
		       const struct rmap *m, uint64_t ip, bool caller,
		       struct kiln_sym_info *info)
{
	const char *path, *name;
	uint64_t a = caller ? ip - 1 : ip;
	char root[64];
	struct stat st_a, st_b;
	struct dso *d;

	if (!m || a < m->start)
		return false;
	name = kiln_prof_str(r->p, m->file);
	path = kiln_rec_sym_path(r, m);
	if (!path || path[0] != '/' || name[0] != '/' || jit_mapping(r, m) ||
	    strstr(name, " (deleted)") || strstr(path, " (deleted)"))
		return false;
	if (!r->o.offline) {
		snprintf(root, sizeof(root), "/proc/%u/root", pr->pid);
		if (!stat(root, &st_a) && !stat("/", &st_b) &&
		    (st_a.st_dev != st_b.st_dev || st_a.st_ino != st_b.st_ino))
			return false;
	}
	d = dso_get(r, pr, m->open ? m->open : m->file);
	if (!d)
		return false;
	/* A file deleted after the maps were read (they do not say
	 * "(deleted)" yet): the DSO's session cannot open it, the
	 * process's own can (/proc/PID/map_files). */
	if (!r->o.offline && !d->present)
		d->present = access(path, R_OK) ? -1 : 1;
	if (d->present < 0)
		return false;
	a = a - m->start + m->pgoff;
	if (dso_place(d, path, m, a)) {
		r->err = -ENOMEM;
		return false;
	}
	return !kiln_sym_lookup(d->sym, DSO_BASE + a, info);
}

static uint32_t info_lines(struct kiln_rec *r, const struct kiln_sym_info *info,
			   struct kiln_line *lines);

static uint32_t user_location(struct kiln_rec *r, struct proc *pr,
			      uint64_t ip, bool caller, bool *miss)
{
	const struct rmap *m = kiln_rec_find_map(pr, ip);
	struct kiln_sym *sym = NULL;
	struct kiln_sym_info info = { 0 };
	struct kiln_line lines[32];
	uint32_t n = 0, mapping = m ? m->mapping : 0;

	if (!dso_lookup(r, pr, m, ip, caller, &info))
		sym = proc_sym(r, pr);
	if (sym) {
		kiln_sym_lookup(sym, caller ? ip - 1 : ip, &info);
		if (!info.nframes && jit_mapping(r, m) && more_jit(r, pr))
			kiln_sym_lookup(sym, caller ? ip - 1 : ip, &info);
	}
	*miss = !r->o.offline && !info.nframes && jit_mapping(r, m);
	if (*miss)
		pr->nmiss++;
	n = info_lines(r, &info, lines);
	if (mapping && info.build_id && !r->p->mappings[mapping].build_id)
		r->p->mappings[mapping].build_id =
			kiln_prof_interns(r->p, info.build_id);
	return kiln_prof_location(r->p, mapping, ip, lines, n);
}

/*
 * Before a process's symbols go (its exit, the end): JIT code it named in
 * the perf map after its samples were taken gets its name now, as perf
 * reads the map at report time.
 */
void kiln_rec_name_misses(struct kiln_rec *r, struct proc *pr)
{
	struct kiln_line lines[32];
	size_t i;

	if (!pr->nmiss || !pr->sym)
		return;
	pr->nmiss = 0;
	pr->perfmap_checked = 0;
	pr->jitdump_checked = 0;
	reload_perfmap(r, pr);
	read_jitdump(r, pr);
	for (i = 0; i < r->naddrs; i++) {
		struct addr_ent *e = &r->addrs[i];
		struct kiln_sym_info info = { 0 };
		uint32_t n;

		if (!e->miss || e->gen != pr->gen)
			continue;
		kiln_sym_lookup(pr->sym, e->caller ? e->ip - 1 : e->ip, &info);
		n = info_lines(r, &info, lines);
		if (n && !kiln_prof_set_lines(r->p, e->loc, lines, n))
			e->miss = false;
	}
}

static uint32_t info_lines(struct kiln_rec *r, const struct kiln_sym_info *info,
			   struct kiln_line *lines)
{
	uint32_t n = 0, i;

	for (i = 0; i < info->nframes && n < 32; i++) {
		const struct kiln_sym_frame *f = &info->frames[i];
		uint32_t file = kiln_prof_interns(r->p, f->func_file ? f->func_file :
						  f->file);

		lines[n].function = kiln_prof_function(
			r->p, kiln_prof_interns(r->p, f->name),
			kiln_prof_interns(r->p, f->system_name ? f->system_name :
					  f->name),
			file, f->start_line);
		lines[n].line = f->line;
		n++;
	}
	return n;
}

static uint32_t kernel_location(struct kiln_rec *r, uint64_t ip, bool caller)
{
	struct kiln_line line;
	const char *name = NULL;

	if (!r->ksyms_tried) {
		struct kiln_mapping m = { 0 };

		r->ksyms_tried = true;
		if (!r->o.offline)
			r->ksyms = kiln_kallsyms_load();
		else if (r->o.kallsyms)
			r->ksyms = kiln_kallsyms_parse(r->o.kallsyms,
						       r->o.kallsyms_len);
		m.file = kiln_prof_interns(r->p, "[kernel.kallsyms]");
		m.has_functions = r->ksyms != NULL;
		r->kmapping = kiln_prof_mapping(r->p, &m);
	}
	if (r->ksyms)
		name = kiln_kallsyms_lookup(r->ksyms, caller ? ip - 1 : ip);
	if (!name)
		return kiln_prof_location(r->p, r->kmapping, ip, NULL, 0);
	line.function = kiln_prof_function(r->p, kiln_prof_interns(r->p, name),
					   kiln_prof_interns(r->p, name), 0, 0);
	line.line = 0;
	return kiln_prof_location(r->p, r->kmapping, ip, &line, 1);
}

uint32_t kiln_rec_location(struct kiln_rec *r, struct proc *pr, uint64_t ip,
			   bool caller, bool kernel)
{
	struct addr_ent k = { kernel ? 0 : pr->gen, caller, ip, 0, 0, false };
	const void *ctx[2] = { r, &k };
	uint32_t hash, id;
	uint64_t key[2] = { ip, ((uint64_t)k.gen << 1) | caller };

	hash = (uint32_t)kiln_hash(key, sizeof(key));
	id = kiln_htab_find(&r->addr_index, hash, addr_eq, ctx);
	if (id) {
		struct addr_ent *e = &r->addrs[id - 1];

		/* A miss in JIT code is looked up again once the perf map
		 * has grown. */
		if (e->miss && (e->jitver != pr->jitver || more_jit(r, pr))) {
			struct kiln_sym_info info = { 0 };
			struct kiln_line lines[32];
			uint32_t n;

			e->jitver = pr->jitver;
			if (pr->sym)
				kiln_sym_lookup(pr->sym, caller ? ip - 1 : ip, &info);
			n = info_lines(r, &info, lines);
			/* The samples taken before are named too. */
			if (n && !kiln_prof_set_lines(r->p, e->loc, lines, n))
				e->miss = false;
		}
		return e->loc;
	}
	k.loc = kernel ? kernel_location(r, ip, caller) :
			 user_location(r, pr, ip, caller, &k.miss);
	k.jitver = pr->jitver;
	if (!k.loc)
		return 0;
	if (!GROW(r->addrs, r->addrs_alloc, r->naddrs + 1) ||
	    kiln_htab_insert(&r->addr_index, hash, (uint32_t)r->naddrs + 1)) {
		r->err = -ENOMEM;
		return k.loc;
	}
	r->addrs[r->naddrs++] = k;
	return k.loc;
}
