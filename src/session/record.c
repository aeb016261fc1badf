/*
 * From perf records to a symbolized profile (session stage).  See record.h.
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

#include "session/unwind.h"
#include "profile/profile.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/htab.h"
#include "util/file.h"
#include "util/maps.h"

struct rmap {
	uint64_t start, end, pgoff;
	uint32_t mapping;	/* model mapping id */
	uint32_t file;		/* string id of the path */
	uint32_t open;		/* string id of the file to read, 0: file */
	bool exec;
};

struct proc {
	uint32_t pid;
	uint32_t gen;		/* changes on exec and on remapping */
	struct rmap *maps;	/* sorted by start, not overlapping */
	size_t nmaps, maps_alloc;
	struct kiln_sym *sym;	/* lazily; mappings added as they come */
	struct kiln_unwind *uw;	/* lazily, DWARF mode */
	uint64_t perfmap_off;	/* bytes of /tmp/perf-PID.map read so far */
	uint64_t perfmap_checked;	/* when its size was last looked at (ns) */
	uint32_t jitver;	/* counts the reads that found new lines */
	uint32_t nmiss;		/* unnamed JIT addresses since name_misses() */
	bool exited;
	bool known;		/* seeded, forked or exec'ed while recording */
};

/*
 * -a: one symbol session per file, shared by every process that maps it
 * (a machine runs many processes of the same programs and libraries; a
 * session each would read the same debug files again and again).  The
 * file is placed at the addresses of the first process that showed it.
 */
struct filesym {
	uint32_t file;		/* string id of the path */
	uint64_t start, end, pgoff;
	struct kiln_sym *sym;
};

struct thread {
	uint32_t tid, pid;
	uint32_t comm;		/* string id */
};

/* A resolved address: (process generation, ip, caller?) -> location. */
struct addr_ent {
	uint32_t gen;
	uint32_t caller;
	uint64_t ip;
	uint32_t loc;
	uint32_t jitver;	/* of a miss: the process's jitver then */
	bool miss;		/* no name found, outside any ELF file: JIT
				 * code not in the perf map yet */
};

/*
 * Offline, a sample's stack is a function of its process, its call chain
 * and the records replayed before it: one entry of the stack cache keeps
 * the locations of one (pid, epoch, ip, user, chain), so a chain seen
 * before costs one hash instead of a lookup per frame.
 */
#define STACK_CACHE 4096	/* entries, direct-mapped */

struct stack_ent {
	uint64_t hash;
	uint32_t pid, epoch;
	uint64_t ip;
	bool user, used;
	uint32_t nips, nlocs;
	long nu;		/* frames unwound from the stack copy, or
				 * NOT_UNWOUND (none taken) */
	uint64_t *ips;		/* the chain, then the nu unwound frames */
	uint32_t *locs;
	size_t ips_alloc, locs_alloc;
	/* The profile sample these locations were last added to, with
	 * label set memo_lset: the next sample of this stack with the same
	 * labels adds to it without hashing the stack again. */
	bool memo;
	uint32_t memo_lset;
	size_t memo_sample;
};

struct kiln_rec {
	struct kiln_rec_opts o;
	struct kiln_prof *p;
	uint64_t nsamples;
	uint64_t nself;
	uint32_t next_gen;

	struct proc *procs;
	size_t nprocs, procs_alloc;
	struct kiln_htab proc_index;

	struct thread *threads;
	size_t nthreads, threads_alloc;
	struct kiln_htab thread_index;

	struct addr_ent *addrs;
	size_t naddrs, addrs_alloc;
	struct kiln_htab addr_index;

	struct filesym *files;
	size_t nfiles, files_alloc;
	struct kiln_htab file_index;

	struct kiln_kallsyms *ksyms;
	bool ksyms_tried;
	uint32_t kmapping;

	uint32_t s_pid, s_thread, s_thread_name, s_comm;	/* label keys */
	uint32_t s_time, s_ns, s_state;
	uint32_t *locs;
	size_t locs_alloc;
	uint64_t *ubuf;				/* unwound user frames */
	size_t ubuf_alloc;
	int err;

	char vdso_path[64];	/* a copy of the [vdso] image */
	bool vdso_tried, vdso_ok;

	/* Changes with every record other than a sample (mappings, names,
	 * processes): what the caches below were filled under. */
	uint32_t epoch;
	struct stack_ent *stacks;	/* STACK_CACHE of them, offline */
	/* The entry whose locations kiln_rec_stack() just gave (in r->locs),
	 * for the kiln_rec_add() of the same sample; else NULL. */
	struct stack_ent *cur_stack;
	struct {			/* the last labels of kiln_rec_add() */
		bool valid;
		uint32_t pid, tid, epoch, lset;
		int64_t bucket;
	} last_labels;
	/* A sample's values: 1 sample, then one per value column (one, or
	 * o.ncolumns); all but the first are 0 between samples. */
	int64_t *values;
	uint32_t ncols;
	bool col_ns[KILN_REC_MAX_COLUMNS];	/* the column is a clock's */
};

static bool grow(void **arr, size_t *alloc, size_t need, size_t size)
{
	size_t n;
	void *q;

	if (need <= *alloc)
		return true;
	n = *alloc ? *alloc * 2 : 16;
	while (n < need)
		n *= 2;
	q = realloc(*arr, n * size);
	if (!q)
		return false;
	*arr = q;
	*alloc = n;
	return true;
}

#define GROW(arr, alloc, need) grow((void **)&(arr), &(alloc), (need), sizeof(*(arr)))

struct kiln_rec *kiln_rec_new(const struct kiln_rec_opts *o)
{
	struct kiln_rec *r = calloc(1, sizeof(*r));
	const char *types[1 + KILN_REC_MAX_COLUMNS];
	char second[128];
	uint32_t i;

	if (!r)
		return NULL;
	r->o = *o;
	r->o.columns = NULL;	/* the caller's strings: interned below */
	r->p = kiln_prof_new();
	if (!r->p)
		goto out_free;
	types[0] = "samples/count";
	if (o->ncolumns > 1) {
		if (o->ncolumns > KILN_REC_MAX_COLUMNS) {
			kiln_rec_free(r);
			errno = EINVAL;
			return NULL;
		}
		r->ncols = o->ncolumns;
		for (i = 0; i < r->ncols; i++) {
			const char *u = strrchr(o->columns[i], '/');

			types[1 + i] = o->columns[i];
			r->col_ns[i] = u && !strcmp(u, "/nanoseconds");
		}
	} else {
		if (o->ncolumns == 1)
			snprintf(second, sizeof(second), "%s", o->columns[0]);
		else if (o->value_type)
			snprintf(second, sizeof(second), "%s", o->value_type);
		else if (o->ns_values)
			snprintf(second, sizeof(second), "cpu/nanoseconds");
		else
			snprintf(second, sizeof(second), "%s/count", o->event);
		types[1] = second;
		r->ncols = 1;
		r->col_ns[0] = o->ns_values;
	}
	r->values = calloc(1 + r->ncols, sizeof(*r->values));
	if (!r->values)
		goto out_free;
	if (kiln_prof_set_types_str(r->p, types, 1 + r->ncols))
		goto out_free;
	r->p->period_type = r->p->types[1];
	r->p->period = (int64_t)o->period_ns;
	r->p->default_type = r->p->types[1].type;
	r->s_pid = kiln_prof_interns(r->p, "pid");
	r->s_thread = kiln_prof_interns(r->p, "thread");
	r->s_thread_name = kiln_prof_interns(r->p, "thread_name");
	r->s_comm = kiln_prof_interns(r->p, "comm");
	r->s_time = kiln_prof_interns(r->p, "time");
	r->s_ns = kiln_prof_interns(r->p, "nanoseconds");
	r->s_state = kiln_prof_interns(r->p, "state");
	if (kiln_prof_error(r->p))
		goto out_free;
	return r;
out_free:
	kiln_rec_free(r);
	errno = ENOMEM;
	return NULL;
}

static void proc_release(struct proc *pr)
{
	free(pr->maps);
	kiln_sym_free(pr->sym);
	kiln_unwind_free(pr->uw);
	pr->maps = NULL;
	pr->nmaps = pr->maps_alloc = 0;
	pr->sym = NULL;
	pr->uw = NULL;
}

void kiln_rec_free(struct kiln_rec *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nprocs; i++)
		proc_release(&r->procs[i]);
	free(r->procs);
	for (i = 0; i < r->nfiles; i++)
		kiln_sym_free(r->files[i].sym);
	free(r->files);
	kiln_htab_release(&r->file_index);
	free(r->threads);
	free(r->addrs);
	free(r->locs);
	free(r->ubuf);
	kiln_htab_release(&r->proc_index);
	kiln_htab_release(&r->thread_index);
	kiln_htab_release(&r->addr_index);
	kiln_kallsyms_free(r->ksyms);
	if (r->stacks) {
		for (i = 0; i < STACK_CACHE; i++) {
			free(r->stacks[i].ips);
			free(r->stacks[i].locs);
		}
		free(r->stacks);
	}
	kiln_prof_free(r->p);
	free(r->values);
	if (r->vdso_ok)
		unlink(r->vdso_path);
	free(r);
}

uint64_t kiln_rec_samples(const struct kiln_rec *r)
{
	return r->nsamples;
}

uint64_t kiln_rec_self_samples(const struct kiln_rec *r)
{
	return r->nself;
}

static void name_misses(struct kiln_rec *r, struct proc *pr);

struct kiln_prof *kiln_rec_detach(struct kiln_rec *r)
{
	struct kiln_prof *p = r->p;
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		name_misses(r, &r->procs[i]);
	if (r->err || kiln_prof_error(p)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Mappings tell readers truthfully what their locations carry. */
	for (i = 1; i <= p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i];
		struct kiln_mapping *m;

		if (!l->mapping || !l->nlines)
			continue;
		m = &p->mappings[l->mapping];
		m->has_functions = true;
		if (p->lines[l->line0].line) {
			m->has_filenames = true;
			m->has_line_numbers = true;
		}
		if (l->nlines > 1)
			m->has_inline_frames = true;
	}
	r->p = NULL;
	return p;
}

/* ---- processes and threads ---- */

static bool proc_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	uint32_t pid = *(const uint32_t *)((const void **)ctx)[1];

	return r->procs[id - 1].pid == pid;
}

static struct proc *find_proc(struct kiln_rec *r, uint32_t pid, bool create)
{
	const void *ctx[2] = { r, &pid };
	uint32_t hash = (uint32_t)kiln_hash(&pid, sizeof(pid));
	uint32_t id = kiln_htab_find(&r->proc_index, hash, proc_eq, ctx);
	struct proc *pr;

	if (id)
		return &r->procs[id - 1];
	if (!create)
		return NULL;
	if (!GROW(r->procs, r->procs_alloc, r->nprocs + 1)) {
		r->err = -ENOMEM;
		return NULL;
	}
	pr = &r->procs[r->nprocs];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	pr->gen = ++r->next_gen;
	if (kiln_htab_insert(&r->proc_index, hash, (uint32_t)r->nprocs + 1)) {
		r->err = -ENOMEM;
		return NULL;
	}
	r->nprocs++;
	return pr;
}

static bool thread_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	uint32_t tid = *(const uint32_t *)((const void **)ctx)[1];

	return r->threads[id - 1].tid == tid;
}

static struct thread *find_thread(struct kiln_rec *r, uint32_t tid,
				  uint32_t pid, bool create)
{
	const void *ctx[2] = { r, &tid };
	uint32_t hash = (uint32_t)kiln_hash(&tid, sizeof(tid));
	uint32_t id = kiln_htab_find(&r->thread_index, hash, thread_eq, ctx);
	struct thread *t;

	if (id)
		return &r->threads[id - 1];
	if (!create)
		return NULL;
	if (!GROW(r->threads, r->threads_alloc, r->nthreads + 1)) {
		r->err = -ENOMEM;
		return NULL;
	}
	t = &r->threads[r->nthreads];
	t->tid = tid;
	t->pid = pid;
	t->comm = 0;
	if (kiln_htab_insert(&r->thread_index, hash, (uint32_t)r->nthreads + 1)) {
		r->err = -ENOMEM;
		return NULL;
	}
	r->nthreads++;
	return t;
}

static void set_comm(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		     const char *comm)
{
	struct thread *t = find_thread(r, tid, pid, true);

	if (t) {
		t->pid = pid;
		t->comm = kiln_prof_interns(r->p, comm);
	}
}

/* ---- mappings ---- */

/*
 * The [vdso] is no file, but every process of this kernel maps the same
 * image: a copy of kiln's own lets libdw name its functions.
 */
static const char *vdso_copy(struct kiln_rec *r)
{
	struct kiln_maps_iter it;
	struct kiln_maps_entry e;

	if (!r->vdso_tried) {
		r->vdso_tried = true;
		if (kiln_maps_open(&it, AT_FDCWD, "/proc/self/maps"))
			return NULL;
		while (kiln_maps_next(&it, &e) > 0) {
			uint64_t len = e.end - e.start;
			int fd;

			if (e.pathlen != 6 || memcmp(e.path, "[vdso]", 6))
				continue;
			snprintf(r->vdso_path, sizeof(r->vdso_path),
				 "/tmp/kiln-vdso.XXXXXX");
			fd = mkostemp(r->vdso_path, O_CLOEXEC);
			if (fd < 0)
				break;
			if (write(fd, (const void *)(uintptr_t)e.start, len) !=
			    (ssize_t)len) {
				unlink(r->vdso_path);
				close(fd);
				break;
			}
			close(fd);
			r->vdso_ok = true;
			break;
		}
		kiln_maps_close(&it);
	}
	return r->vdso_ok ? r->vdso_path : NULL;
}

/* The file symbol sessions should open for a mapping, or NULL. */
static const char *sym_path(struct kiln_rec *r, const struct rmap *m)
{
	const char *path = kiln_prof_str(r->p, m->file);

	if (m->open)
		return kiln_prof_str(r->p, m->open);
	if (!strcmp(path, "[vdso]"))
		return vdso_copy(r);
	return r->o.offline ? NULL : path;
}

static bool is_exec_file(const char *path)
{
	return path[0] == '/' || !strncmp(path, "[vdso]", 6) ||
	       !strncmp(path, "//anon", 6) || !strncmp(path, "/memfd:", 7);
}

static uint32_t model_mapping(struct kiln_rec *r, const char *path,
			      uint64_t start, uint64_t end, uint64_t pgoff,
			      const uint8_t *bid, size_t bid_size)
{
	struct kiln_mapping m = { 0 };
	char hex[41];
	size_t i;

	m.start = start;
	m.limit = end;
	m.offset = pgoff;
	m.file = kiln_prof_interns(r->p, path);
	if (bid_size) {
		for (i = 0; i < bid_size && i < 20; i++)
			snprintf(hex + 2 * i, 3, "%02x", bid[i]);
		m.build_id = kiln_prof_intern(r->p, hex, 2 * i);
	}
	return kiln_prof_mapping(r->p, &m);
}

static void drop_sessions(struct proc *pr)
{
	kiln_sym_free(pr->sym);
	kiln_unwind_free(pr->uw);
	pr->sym = NULL;
	pr->uw = NULL;
}

/* Inserts a mapping, trimming or removing the ones it overlaps. */
static void add_map(struct kiln_rec *r, struct proc *pr, const struct rmap *nm)
{
	size_t i, j = 0;
	bool overlapped = false;
	struct rmap *out;

	/* Worst case: one mapping split in two, plus the new one. */
	if (!GROW(pr->maps, pr->maps_alloc, pr->nmaps + 2)) {
		r->err = -ENOMEM;
		return;
	}
	out = malloc((pr->nmaps + 2) * sizeof(*out));
	if (!out) {
		r->err = -ENOMEM;
		return;
	}
	for (i = 0; i < pr->nmaps; i++) {
		struct rmap m = pr->maps[i];

		if (m.end <= nm->start || m.start >= nm->end) {
			out[j++] = m;
			continue;
		}
		overlapped = true;
		if (m.start < nm->start) {
			struct rmap left = m;

			left.end = nm->start;
			out[j++] = left;
		}
		if (m.end > nm->end) {
			struct rmap right = m;

			right.pgoff += nm->end - m.start;
			right.start = nm->end;
			out[j++] = right;
		}
	}
	out[j++] = *nm;
	/* Keep sorted by start. */
	for (i = j - 1; i > 0 && out[i - 1].start > out[i].start; i--) {
		struct rmap t = out[i];

		out[i] = out[i - 1];
		out[i - 1] = t;
	}
	free(pr->maps);
	pr->maps = out;
	pr->nmaps = j;
	pr->maps_alloc = j;
	if (overlapped && nm->exec) {
		/* Code replaced (dlclose + dlopen): addresses mean new things. */
		drop_sessions(pr);
		pr->gen = ++r->next_gen;
	} else if (nm->exec && sym_path(r, nm)) {
		if (pr->sym)
			kiln_sym_add_mapping(pr->sym, sym_path(r, nm),
					     nm->start, nm->end, nm->pgoff);
		if (pr->uw)
			kiln_unwind_add_mapping(pr->uw, sym_path(r, nm),
						nm->start, nm->end, nm->pgoff);
	}
}

static const struct rmap *find_map(const struct proc *pr, uint64_t addr)
{
	size_t lo = 0, hi = pr->nmaps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pr->maps[mid].end <= addr)
			lo = mid + 1;
		else if (pr->maps[mid].start > addr)
			hi = mid;
		else
			return &pr->maps[mid];
	}
	return NULL;
}

static void on_mmap(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct proc *pr;
	struct rmap m;
	const char *path = ev->mmap.filename;

	/* Only code matters for stacks. */
	if (!(ev->mmap.prot & 4) || !is_exec_file(path))
		return;
	pr = find_proc(r, ev->mmap.pid, true);
	if (!pr)
		return;
	m.start = ev->mmap.start;
	m.end = ev->mmap.start + ev->mmap.len;
	m.pgoff = ev->mmap.pgoff;
	m.exec = true;
	m.file = kiln_prof_interns(r->p, path);
	m.open = ev->mmap.open_path && ev->mmap.open_path[0] ?
		 kiln_prof_interns(r->p, ev->mmap.open_path) : 0;
	m.mapping = model_mapping(r, path, m.start, m.end, m.pgoff,
				  ev->mmap.build_id, ev->mmap.build_id_size);
	add_map(r, pr, &m);
}

static void on_fork(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct thread *parent = find_thread(r, ev->task.ptid, ev->task.ppid,
					    false);
	uint32_t comm = parent ? parent->comm : 0;
	struct thread *t;

	if (ev->task.pid != ev->task.ppid) {
		/* A new process: a copy of its parent's address space. */
		struct proc *pp = find_proc(r, ev->task.ppid, false);
		struct proc *np = find_proc(r, ev->task.pid, true);

		if (np && pp && pp != np) {
			pp = find_proc(r, ev->task.ppid, false);
			np = find_proc(r, ev->task.pid, false);
			proc_release(np);
			np->gen = ++r->next_gen;
			np->exited = false;
			np->known = true;
			if (pp->nmaps) {
				np->maps = malloc(pp->nmaps * sizeof(*np->maps));
				if (!np->maps) {
					r->err = -ENOMEM;
					return;
				}
				memcpy(np->maps, pp->maps,
				       pp->nmaps * sizeof(*np->maps));
				np->nmaps = np->maps_alloc = pp->nmaps;
			}
		}
	}
	t = find_thread(r, ev->task.tid, ev->task.pid, true);
	if (t) {
		t->pid = ev->task.pid;
		if (comm)
			t->comm = comm;
	}
}

static void on_comm(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	if (ev->comm.exec) {
		struct proc *pr = find_proc(r, ev->comm.pid, true);

		/* A new program: none of the old mappings remain. */
		if (pr) {
			proc_release(pr);
			pr->gen = ++r->next_gen;
			pr->known = true;
		}
	}
	set_comm(r, ev->comm.pid, ev->comm.tid, ev->comm.comm);
}

static void on_exit_ev(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct proc *pr;

	if (ev->task.pid != ev->task.tid)
		return;
	pr = find_proc(r, ev->task.pid, false);
	if (pr) {
		/* Keep the maps (late samples may still come); free libdw. */
		name_misses(r, pr);
		drop_sessions(pr);
		pr->exited = true;
	}
}

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
		if (sym_path(r, &pr->maps[i]))
			kiln_sym_add_mapping(pr->sym, sym_path(r, &pr->maps[i]),
					     pr->maps[i].start, pr->maps[i].end,
					     pr->maps[i].pgoff);
	pr->perfmap_off = 0;
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

/* Whether a mapping's code may be named by the perf map (not an ELF file). */
static bool jit_mapping(struct kiln_rec *r, const struct rmap *m)
{
	const char *path = m ? kiln_prof_str(r->p, m->file) : "";

	return !m || path[0] != '/' || !strncmp(path, "//anon", 6) ||
	       !strncmp(path, "/memfd:", 7);
}

static bool file_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	uint32_t file = *(const uint32_t *)((const void **)ctx)[1];

	return r->files[id - 1].file == file;
}

/*
 * -a: looks ip (in mapping m of process pr) up in the session shared by
 * every process mapping m's file.  False where that cannot be done (not
 * a plain file, another part of the file, a process in a container): the
 * process's own session is used then.
 */
static bool shared_lookup(struct kiln_rec *r, struct proc *pr,
			  const struct rmap *m, uint64_t ip, bool caller,
			  struct kiln_sym_info *info)
{
	const char *path;
	const void *ctx[2];
	uint32_t hash, id;
	struct filesym *f;
	uint64_t off;
	char root[64];
	struct stat a, b;

	if (!r->o.system_wide || !m)
		return false;
	path = kiln_prof_str(r->p, m->file);
	if (path[0] != '/' || jit_mapping(r, m) || strstr(path, " (deleted)"))
		return false;
	snprintf(root, sizeof(root), "/proc/%u/root", pr->pid);
	if (!stat(root, &a) && !stat("/", &b) &&
	    (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		return false;
	ctx[0] = r;
	ctx[1] = &m->file;
	hash = (uint32_t)kiln_hash(&m->file, sizeof(m->file));
	id = kiln_htab_find(&r->file_index, hash, file_eq, ctx);
	if (!id) {
		struct kiln_sym_opts so = { 0 };

		if (!GROW(r->files, r->files_alloc, r->nfiles + 1) ||
		    kiln_htab_insert(&r->file_index, hash, (uint32_t)r->nfiles + 1)) {
			r->err = -ENOMEM;
			return false;
		}
		f = &r->files[r->nfiles++];
		f->file = m->file;
		f->start = m->start;
		f->end = m->end;
		f->pgoff = m->pgoff;
		so.pid = (int)pr->pid;
		f->sym = kiln_sym_new(&so);
		if (f->sym)
			kiln_sym_add_mapping(f->sym, path, m->start, m->end, m->pgoff);
		id = (uint32_t)r->nfiles;
	}
	f = &r->files[id - 1];
	off = ip - m->start + m->pgoff;
	if (!f->sym || off < f->pgoff || off - f->pgoff >= f->end - f->start)
		return false;
	ip = f->start + (off - f->pgoff);
	return !kiln_sym_lookup(f->sym, caller ? ip - 1 : ip, info);
}

static uint32_t info_lines(struct kiln_rec *r, const struct kiln_sym_info *info,
			   struct kiln_line *lines);

static uint32_t user_location(struct kiln_rec *r, struct proc *pr,
			      uint64_t ip, bool caller, bool *miss)
{
	const struct rmap *m = find_map(pr, ip);
	struct kiln_sym *sym = NULL;
	struct kiln_sym_info info = { 0 };
	struct kiln_line lines[32];
	uint32_t n = 0, mapping = m ? m->mapping : 0;

	if (!shared_lookup(r, pr, m, ip, caller, &info))
		sym = proc_sym(r, pr);
	if (sym) {
		kiln_sym_lookup(sym, caller ? ip - 1 : ip, &info);
		if (!info.nframes && !r->o.offline && jit_mapping(r, m) &&
		    reload_perfmap(r, pr))
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
static void name_misses(struct kiln_rec *r, struct proc *pr)
{
	struct kiln_line lines[32];
	size_t i;

	if (!pr->nmiss || !pr->sym)
		return;
	pr->nmiss = 0;
	pr->perfmap_checked = 0;
	reload_perfmap(r, pr);
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

static uint32_t location(struct kiln_rec *r, struct proc *pr, uint64_t ip,
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
		if (e->miss && (e->jitver != pr->jitver || reload_perfmap(r, pr))) {
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

/* ---- samples ---- */

static bool push(struct kiln_rec *r, size_t *n, uint32_t loc)
{
	if (!loc)
		return false;
	if (!GROW(r->locs, r->locs_alloc, *n + 1)) {
		r->err = -ENOMEM;
		return false;
	}
	r->locs[(*n)++] = loc;
	return true;
}

static struct kiln_unwind *proc_unwinder(struct kiln_rec *r, struct proc *pr)
{
	size_t i;

	if (pr->uw || pr->exited)
		return pr->uw;
	/* Offline, no /proc/PID/map_files of whatever has that pid now. */
	pr->uw = kiln_unwind_new(r->o.offline ? -1 : (int)pr->pid);
	if (!pr->uw)
		return NULL;
	for (i = 0; i < pr->nmaps; i++)
		if (sym_path(r, &pr->maps[i]))
			kiln_unwind_add_mapping(pr->uw,
						sym_path(r, &pr->maps[i]),
						pr->maps[i].start, pr->maps[i].end,
						pr->maps[i].pgoff);
	return pr->uw;
}

/* The i-th user address of the kernel's chain, 0 if none. */
static uint64_t user_ip(const struct kiln_perf_sample *s, size_t want)
{
	bool kernel = false;
	size_t i, k = 0;

	for (i = 0; i < s->nr; i++) {
		uint64_t ip = s->ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!kernel && k++ == want)
			return ip;
	}
	return 0;
}

/*
 * Without --kernel, a sample of a thread that has no user stack (a kernel
 * thread, the idle task) gets one frame, "[kernel]".
 */
static uint32_t kernel_stub(struct kiln_rec *r)
{
	struct kiln_line line;

	if (!r->ksyms_tried) {
		struct kiln_mapping m = { 0 };

		r->ksyms_tried = true;
		m.file = kiln_prof_interns(r->p, "[kernel.kallsyms]");
		r->kmapping = kiln_prof_mapping(r->p, &m);
	}
	line.function = kiln_prof_function(r->p, kiln_prof_interns(r->p, "[kernel]"),
					   kiln_prof_interns(r->p, "[kernel]"), 0, 0);
	line.line = 0;
	return kiln_prof_location(r->p, r->kmapping, 0, &line, 1);
}

#define NOT_UNWOUND LONG_MIN

/*
 * The stack of s as locations (see kiln_rec_stack()); nu: the result of
 * unwinding its stack copy into r->ubuf when the caller did that already,
 * else NOT_UNWOUND.
 */
static long stack_of(struct kiln_rec *r, const struct kiln_perf_sample *s,
		     const uint32_t **locs, long nu)
{
	struct proc *pr;
	size_t n = 0, i, user_start = 0, fp_user = 0;
	bool kernel = false, first_user = true, first_kernel = true;

	*locs = r->locs;
	pr = find_proc(r, s->pid, true);
	if (!pr)
		return r->err;
	if (r->o.system_wide && !pr->known && s->pid) {
		/* Started between the scan of /proc and the first record. */
		pr->known = true;
		kiln_rec_seed(r, (pid_t)s->pid);
		pr = find_proc(r, s->pid, false);
		if (!pr)
			return r->err;
	}
	r->nsamples++;
	/* The kernel's chain: context markers, then addresses leaf first. */
	for (i = 0; i < s->nr; i++) {
		uint64_t ip = s->ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kernel) {
			push(r, &n, location(r, pr, ip, !first_kernel, true));
			first_kernel = false;
		} else {
			/* A caller outside every executable mapping is what a
			 * frame-pointer walk reads past the last real frame
			 * (code built without frame pointers, _start): the
			 * chain ends there. */
			if (!first_user && !find_map(pr, ip))
				break;
			if (first_user)
				user_start = n;
			push(r, &n, location(r, pr, ip, !first_user, false));
			first_user = false;
			fp_user++;
		}
	}
	if (!s->nr && (s->user || r->o.kernel_frames))
		push(r, &n, location(r, pr, s->ip, false, !s->user));
	/* A chain without a user part (perf's --call-graph dwarf asks for
	 * none): the unwind of the copied stack gives it all, after the
	 * kernel frames, or in place of the user leaf pushed above. */
	if (first_user && s->regs && s->stack_dyn)
		user_start = !s->nr && s->user ? 0 : n;
	/*
	 * With a copy of the user stack: in dwarf and auto modes the CFI
	 * unwind replaces the frame-pointer chain when it goes at least as far
	 * (code without CFI, such as JIT code, keeps the frame-pointer chain;
	 * CFI also carries the chain on through libraries built without frame
	 * pointers, so every stack reaches the same root).  In fp mode, and
	 * when the CFI unwind stops early, only the leaf's caller is taken from
	 * it: gcc gives small leaves no frame even with
	 * -fno-omit-frame-pointer, and the frame-pointer walk skips their
	 * caller.
	 */
	if (s->regs && s->stack_dyn && (!first_user || s->abi)) {
		bool full = r->o.callgraph != KILN_CG_FP;

		if (nu == NOT_UNWOUND) {
			struct kiln_unwind *uw = proc_unwinder(r, pr);

			if (!GROW(r->ubuf, r->ubuf_alloc, 256)) {
				r->err = -ENOMEM;
				return r->err;
			}
			nu = uw ? kiln_unwind_sample(uw, s, r->ubuf,
						     full ? 256 : 2) : -1;
		}
		if (full && nu > 0 && (size_t)nu >= fp_user) {
			n = user_start;
			for (i = 0; i < (size_t)nu; i++)
				push(r, &n, location(r, pr, r->ubuf[i], i > 0,
						     false));
		} else if (nu >= 2 && fp_user >= 2 && r->ubuf[0] == user_ip(s, 0) &&
			   r->ubuf[1] != user_ip(s, 1)) {
			if (!GROW(r->locs, r->locs_alloc, n + 1)) {
				r->err = -ENOMEM;
				return r->err;
			}
			memmove(r->locs + user_start + 2, r->locs + user_start + 1,
				(n - user_start - 1) * sizeof(*r->locs));
			n++;
			r->locs[user_start + 1] = location(r, pr, r->ubuf[1], true,
							   false);
		}
	}
	if (!n && !s->user && !r->o.kernel_frames)
		push(r, &n, kernel_stub(r));
	*locs = r->locs;
	return (long)n;
}

static size_t unwound(long nu)
{
	return nu > 0 ? (size_t)nu : 0;
}

/* memcmp()/memcpy() of n bytes, where a pointer may be NULL when n is 0. */
static bool same(const void *a, const void *b, size_t n)
{
	return !n || !memcmp(a, b, n);
}

static void copy(void *dst, const void *src, size_t n)
{
	if (n)
		memcpy(dst, src, n);
}

static bool stack_hit(const struct stack_ent *e, uint64_t hash, uint32_t epoch,
		      const struct kiln_perf_sample *s, long nu,
		      const uint64_t *ubuf)
{
	return e->used && e->hash == hash && e->epoch == epoch &&
	       e->pid == s->pid && e->ip == s->ip && e->user == s->user &&
	       e->nips == s->nr && e->nu == nu &&
	       same(e->ips, s->ips, s->nr * sizeof(*s->ips)) &&
	       (!unwound(nu) ||
		same(e->ips + s->nr, ubuf, unwound(nu) * sizeof(*ubuf)));
}

/* Keeps the stack just computed in e (nothing kept when out of memory). */
static void stack_keep(struct stack_ent *e, uint64_t hash, uint32_t epoch,
		       const struct kiln_perf_sample *s, long nu,
		       const uint64_t *ubuf, const uint32_t *locs, uint32_t n)
{
	e->used = false;
	if (!GROW(e->ips, e->ips_alloc, s->nr + unwound(nu)) ||
	    !GROW(e->locs, e->locs_alloc, n))
		return;
	copy(e->ips, s->ips, s->nr * sizeof(*s->ips));
	if (unwound(nu))
		copy(e->ips + s->nr, ubuf, unwound(nu) * sizeof(*ubuf));
	copy(e->locs, locs, n * sizeof(*locs));
	e->memo = false;
	e->hash = hash;
	e->pid = s->pid;
	e->epoch = epoch;
	e->ip = s->ip;
	e->user = s->user;
	e->nips = (uint32_t)s->nr;
	e->nu = nu;
	e->nlocs = n;
	e->used = true;
}

/*
 * Offline, a sample with a stack copy: unwinds it into r->ubuf first (the
 * copy's bytes differ from sample to sample, the frames they give mostly
 * do not), so that the cache can be asked for the frames.  The unwind
 * stack_of() would do: a copy (registers with sp and ip, stack bytes)
 * of a process not gone.  Returns what kiln_unwind_sample() returned, or
 * NOT_UNWOUND.
 */
static long unwind_first(struct kiln_rec *r, const struct kiln_perf_sample *s)
{
	struct kiln_unwind *uw;
	struct proc *pr;

	if (!s->regs || !s->stack_dyn)
		return NOT_UNWOUND;
	pr = find_proc(r, s->pid, true);
	if (!pr || !GROW(r->ubuf, r->ubuf_alloc, 256)) {
		r->err = -ENOMEM;
		return NOT_UNWOUND;
	}
	uw = proc_unwinder(r, pr);
	return uw ? kiln_unwind_sample(uw, s, r->ubuf,
				       r->o.callgraph != KILN_CG_FP ? 256 : 2) : -1;
}

long kiln_rec_stack(struct kiln_rec *r, const struct kiln_perf_sample *s,
		    const uint32_t **locs)
{
	struct stack_ent *e;
	uint64_t hash, seed[2];
	long n, nu;

	*locs = r->locs;
	r->cur_stack = NULL;
	if (r->o.self_pid && s->pid == r->o.self_pid) {
		r->nself++;
		return 0;
	}
	/*
	 * Online, names of JIT code come and go with the perf map, and -a
	 * seeds processes on their first sample.
	 */
	if (!r->o.offline || s->nr > 4096)
		return stack_of(r, s, locs, NOT_UNWOUND);
	if (!r->stacks) {
		r->stacks = calloc(STACK_CACHE, sizeof(*r->stacks));
		if (!r->stacks)
			return stack_of(r, s, locs, NOT_UNWOUND);
	}
	nu = unwind_first(r, s);
	if (r->err)
		return r->err;
	seed[0] = s->ip;
	seed[1] = (uint64_t)s->pid << 32 | (uint64_t)r->epoch << 1 | s->user;
	hash = kiln_hash_seed(s->ips, s->nr * sizeof(*s->ips),
			      kiln_hash(seed, sizeof(seed)));
	if (nu != NOT_UNWOUND)
		hash = kiln_hash_seed(r->ubuf, unwound(nu) * sizeof(*r->ubuf),
				      hash ^ (uint64_t)nu);
	e = &r->stacks[hash % STACK_CACHE];
	if (stack_hit(e, hash, r->epoch, s, nu, r->ubuf)) {
		if (!GROW(r->locs, r->locs_alloc, e->nlocs)) {
			r->err = -ENOMEM;
			return r->err;
		}
		r->nsamples++;
		copy(r->locs, e->locs, e->nlocs * sizeof(*e->locs));
		*locs = r->locs;
		r->cur_stack = e;
		return (long)e->nlocs;
	}
	n = stack_of(r, s, locs, nu);
	if (n >= 0 && !r->err) {
		stack_keep(e, hash, r->epoch, s, nu, r->ubuf, *locs, (uint32_t)n);
		if (e->used && *locs == r->locs)
			r->cur_stack = e;
	}
	return n;
}

/*
 * kiln_prof_add_sample(), through the memo of the stack cache entry that
 * gave locs when there is one (cur: r->cur_stack, taken by the caller):
 * the same locations (the entry's, still in r->locs) and the same label
 * set are the same profile sample.
 */
static void add_sample(struct kiln_rec *r, struct stack_ent *cur,
		       const uint32_t *locs, uint32_t n, const int64_t *values,
		       uint32_t lset)
{
	long idx;

	if (cur && (locs != r->locs || n != cur->nlocs))
		cur = NULL;
	if (cur && cur->memo && cur->memo_lset == lset) {
		kiln_prof_add_to_sample(r->p, cur->memo_sample, values);
		return;
	}
	idx = kiln_prof_add_sample(r->p, locs, n, values, lset);
	if (cur && idx >= 0) {
		cur->memo = true;
		cur->memo_lset = lset;
		cur->memo_sample = (size_t)idx;
	}
}

/* kiln_rec_add() of a value in column col. */
static void add_col(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		    uint64_t time, const uint32_t *locs, uint32_t n,
		    uint32_t col, int64_t value, const char *state)
{
	struct stack_ent *cur = r->cur_stack;
	struct thread *t, *leader;
	struct kiln_label labels[6];
	uint32_t nl = 0, lset;
	int64_t *values = r->values, bucket;

	if (col >= r->ncols)
		col = 0;
	values[0] = 1;
	values[1 + col] = value;

	r->cur_stack = NULL;
	if (!r->o.start_ns)
		r->o.start_ns = time;
	bucket = (int64_t)((time > r->o.start_ns ? time - r->o.start_ns : 0) /
			   KILN_PROF_TIME_BUCKET_NS * KILN_PROF_TIME_BUCKET_NS);
	/* Samples come in runs of one thread within one time bucket: the
	 * labels of the last sample, unless a record changed names since. */
	if (!state && r->last_labels.valid && r->last_labels.pid == pid &&
	    r->last_labels.tid == tid && r->last_labels.bucket == bucket &&
	    r->last_labels.epoch == r->epoch) {
		add_sample(r, cur, locs, n, values, r->last_labels.lset);
		values[1 + col] = 0;
		return;
	}
	t = find_thread(r, tid, pid, true);
	leader = find_thread(r, pid, pid, false);
	labels[nl++] = (struct kiln_label){ r->s_pid, 0, pid, 0 };
	/* The process's name: its main thread's, else this thread's. */
	if (leader && leader->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, leader->comm, 0, 0 };
	else if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, t->comm, 0, 0 };
	labels[nl++] = (struct kiln_label){ r->s_thread, 0, tid, 0 };
	if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_thread_name, t->comm, 0, 0 };
	/* Since the recording's start, in buckets: samples of one stack in
	 * one bucket still add up into one pprof sample. */
	labels[nl++] = (struct kiln_label){ r->s_time, 0, bucket, r->s_ns };
	if (state)
		labels[nl++] = (struct kiln_label){
			r->s_state, kiln_prof_interns(r->p, state), 0, 0 };
	lset = kiln_prof_labelset(r->p, labels, nl);
	r->last_labels.valid = !state && lset && t;
	r->last_labels.pid = pid;
	r->last_labels.tid = tid;
	r->last_labels.bucket = bucket;
	r->last_labels.epoch = r->epoch;
	r->last_labels.lset = lset;
	add_sample(r, cur, locs, n, values, lset);
	values[1 + col] = 0;
}

void kiln_rec_add(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		  uint64_t time, const uint32_t *locs, uint32_t n,
		  int64_t value, const char *state)
{
	add_col(r, pid, tid, time, locs, n, 0, value, state);
}

static void on_sample(struct kiln_rec *r, const struct kiln_perf_sample *s)
{
	const uint32_t *locs;
	long n = kiln_rec_stack(r, s, &locs);
	uint32_t col = s->column < r->ncols ? s->column : 0;

	if (n <= 0)
		return;
	add_col(r, s->pid, s->tid, s->time, locs, (uint32_t)n, col,
		r->col_ns[col] || s->period ? (int64_t)s->period : 1,
		r->o.wall ? "running" : NULL);
}

void kiln_rec_event(void *ctx, const struct kiln_perf_event *ev)
{
	struct kiln_rec *r = ctx;

	if (ev->kind != KILN_PERF_SAMPLE)
		r->epoch++;
	switch (ev->kind) {
	case KILN_PERF_SAMPLE: on_sample(r, &ev->sample); break;
	case KILN_PERF_MMAP: on_mmap(r, ev); break;
	case KILN_PERF_COMM: on_comm(r, ev); break;
	case KILN_PERF_FORK: on_fork(r, ev); break;
	case KILN_PERF_EXIT: on_exit_ev(r, ev); break;
	case KILN_PERF_LOST:
	case KILN_PERF_SWITCH: break;
	}
}

struct seed_ctx {
	struct kiln_rec *r;
	struct proc *pr;
};

static int seed_entry(const struct kiln_maps_entry *e, void *arg)
{
	struct seed_ctx *c = arg;
	struct kiln_perf_event ev;
	char path[4096];

	if (e->perms[2] != 'x' || !e->pathlen || e->pathlen >= sizeof(path))
		return 0;
	memcpy(path, e->path, e->pathlen);
	path[e->pathlen] = '\0';
	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_MMAP;
	ev.mmap.pid = c->pr->pid;
	ev.mmap.tid = c->pr->pid;
	ev.mmap.start = e->start;
	ev.mmap.len = e->end - e->start;
	ev.mmap.pgoff = e->offset;
	ev.mmap.prot = 5;
	ev.mmap.filename = path;
	on_mmap(c->r, &ev);
	return c->r->err;
}

int kiln_rec_seed(struct kiln_rec *r, pid_t pid)
{
	struct kiln_buf text = KILN_BUF_INIT;
	struct seed_ctx c;
	char path[64], comm[64];
	FILE *f;
	int err = 0;

	r->epoch++;
	c.r = r;
	c.pr = find_proc(r, (uint32_t)pid, true);
	if (!c.pr)
		return -ENOMEM;
	c.pr->known = true;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = kiln_read_proc(AT_FDCWD, path, &text);
	if (!err)
		err = kiln_maps_parse(text.data, text.len, seed_entry, &c);
	kiln_buf_release(&text);
	if (err)
		return err;
	/* Every thread's name (thread_name labels). */
	{
		char dir[64];
		DIR *d;
		struct dirent *de;

		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
		d = opendir(dir);
		while (d && (de = readdir(d))) {
			unsigned long tid = strtoul(de->d_name, NULL, 10);

			if (!tid)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%lu/comm",
				 (int)pid, tid);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f)) {
				comm[strcspn(comm, "\n")] = '\0';
				set_comm(r, (uint32_t)pid, (uint32_t)tid, comm);
			}
			fclose(f);
		}
		if (d)
			closedir(d);
	}
	return r->err;
}

static long sink_stack(void *ctx, const struct kiln_perf_sample *s,
		       const uint32_t **locs)
{
	return kiln_rec_stack(ctx, s, locs);
}

static void sink_add(void *ctx, uint32_t pid, uint32_t tid, uint64_t time,
		     const uint32_t *locs, uint32_t n, int64_t value,
		     const char *state)
{
	kiln_rec_add(ctx, pid, tid, time, locs, n, value, state);
}

void kiln_rec_sink(struct kiln_rec *r, struct kiln_offcpu_sink *sink)
{
	sink->ctx = r;
	sink->stack = sink_stack;
	sink->add = sink_add;
	sink->event = kiln_rec_event;
}
