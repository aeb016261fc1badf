/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recorder's machine/thread/map model (session stage): processes and
 * threads as FORK, COMM and EXIT records tell them, each process's
 * mappings as MMAP2 records (or /proc/PID/maps, kiln_rec_seed()) tell
 * them, a copy of [vdso] to read.  See recint.h.
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
#include "util/exename.h"

/* ---- processes and threads ---- */

static bool proc_eq(const void *ctx, uint32_t id)
{
	const struct kiln_rec *r = ((const void **)ctx)[0];
	uint32_t pid = *(const uint32_t *)((const void **)ctx)[1];

	return r->procs[id - 1].pid == pid;
}

struct proc *kiln_rec_find_proc(struct kiln_rec *r, uint32_t pid, bool create)
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

struct thread *kiln_rec_find_thread(struct kiln_rec *r, uint32_t tid,
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
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
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
	struct thread *t = kiln_rec_find_thread(r, tid, pid, true);

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
const char *kiln_rec_sym_path(struct kiln_rec *r, const struct rmap *m)
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

static uint32_t model_mapping(struct kiln_rec *r, uint32_t file,
			      uint64_t start, uint64_t end, uint64_t pgoff,
			      const uint8_t *bid, size_t bid_size)
{
	struct kiln_mapping m = { 0 };
	char hex[41];
	size_t i;

	m.start = start;
	m.limit = end;
	m.offset = pgoff;
	m.file = file;
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
	} else if (nm->exec && kiln_rec_sym_path(r, nm)) {
		if (pr->sym)
			kiln_sym_add_mapping(pr->sym, kiln_rec_sym_path(r, nm),
					     nm->start, nm->end, nm->pgoff);
		if (pr->uw)
			kiln_unwind_add_mapping(pr->uw, kiln_rec_sym_path(r, nm),
						nm->start, nm->end, nm->pgoff);
	}
}

const struct rmap *kiln_rec_find_map(const struct proc *pr, uint64_t addr)
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

/*
 * The name a mapping's file is shown by in the profile: its path, or
 * where the process was run by a link to it (its comm names a link in
 * the file's folder: redis-server -> redis-check-rdb) that link's, as
 * the agent does (util/exename.h).  The mapping's own file (rmap.file)
 * stays the one to read.  Not for another machine's files (offline).
 */
static uint32_t shown_file(struct kiln_rec *r, uint32_t pid, uint32_t file,
			   const char *path)
{
	const struct thread *t = kiln_rec_find_thread(r, pid, pid, false);
	char alias[4096];
	unsigned slot;

	if (r->o.offline || !t || !t->comm || path[0] != '/')
		return file;
	slot = (file * 31u + t->comm) %
	       (unsigned)(sizeof(r->exe_names) / sizeof(r->exe_names[0]));
	if (r->exe_names[slot].file != file ||
	    r->exe_names[slot].comm != t->comm) {
		r->exe_names[slot].file = file;
		r->exe_names[slot].comm = t->comm;
		r->exe_names[slot].shown =
			kiln_exe_alias(path, kiln_prof_str(r->p, t->comm),
				       alias, sizeof(alias)) ?
			kiln_prof_interns(r->p, alias) : file;
	}
	return r->exe_names[slot].shown;
}

void kiln_rec_on_mmap(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct proc *pr;
	struct rmap m;
	const char *path = ev->mmap.filename;

	/* Only code matters for stacks. */
	if (!(ev->mmap.prot & 4) || !is_exec_file(path))
		return;
	pr = kiln_rec_find_proc(r, ev->mmap.pid, true);
	if (!pr)
		return;
	m.start = ev->mmap.start;
	m.end = ev->mmap.start + ev->mmap.len;
	m.pgoff = ev->mmap.pgoff;
	m.exec = true;
	m.file = kiln_prof_interns(r->p, path);
	m.open = ev->mmap.open_path && ev->mmap.open_path[0] ?
		 kiln_prof_interns(r->p, ev->mmap.open_path) : 0;
	m.mapping = model_mapping(r, shown_file(r, pr->pid, m.file, path),
				  m.start, m.end, m.pgoff,
				  ev->mmap.build_id, ev->mmap.build_id_size);
	add_map(r, pr, &m);
}

void kiln_rec_on_fork(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct thread *parent = kiln_rec_find_thread(r, ev->task.ptid, ev->task.ppid,
					    false);
	uint32_t comm = parent ? parent->comm : 0;
	struct thread *t;

	if (ev->task.pid != ev->task.ppid) {
		/* A new process: a copy of its parent's address space. */
		struct proc *pp = kiln_rec_find_proc(r, ev->task.ppid, false);
		struct proc *np = kiln_rec_find_proc(r, ev->task.pid, true);

		if (np && pp && pp != np) {
			pp = kiln_rec_find_proc(r, ev->task.ppid, false);
			np = kiln_rec_find_proc(r, ev->task.pid, false);
			kiln_rec_proc_release(np);
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
	t = kiln_rec_find_thread(r, ev->task.tid, ev->task.pid, true);
	if (t) {
		t->pid = ev->task.pid;
		if (comm)
			t->comm = comm;
		/* A new task (its tid may be an old one's). */
		t->sampled = t->read = t->unsampled = 0;
		t->last_sample = 0;
	}
}

void kiln_rec_on_comm(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	if (ev->comm.exec) {
		struct proc *pr = kiln_rec_find_proc(r, ev->comm.pid, true);

		/* A new program: none of the old mappings remain. */
		if (pr) {
			kiln_rec_proc_release(pr);
			pr->gen = ++r->next_gen;
			pr->known = true;
		}
	}
	set_comm(r, ev->comm.pid, ev->comm.tid, ev->comm.comm);
}

void kiln_rec_on_exit(struct kiln_rec *r, const struct kiln_perf_event *ev)
{
	struct proc *pr;

	if (ev->task.pid != ev->task.tid)
		return;
	pr = kiln_rec_find_proc(r, ev->task.pid, false);
	if (pr) {
		/* Keep the maps (late samples may still come); free libdw. */
		kiln_rec_name_misses(r, pr);
		drop_sessions(pr);
		pr->exited = true;
	}
}

/* Whether process pid runs (not gone, not a zombie). */
static bool proc_runs(uint32_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

pid_t kiln_rec_procs_running(const struct kiln_rec *r, pid_t except, size_t *n)
{
	pid_t first = 0;
	size_t i;

	*n = 0;
	for (i = 0; i < r->nprocs; i++) {
		const struct proc *pr = &r->procs[i];

		if (!pr->known || pr->exited || (pid_t)pr->pid == except ||
		    !proc_runs(pr->pid))
			continue;
		if (!first)
			first = (pid_t)pr->pid;
		(*n)++;
	}
	return first;
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

	if (e->perms[2] != 'x' || e->pathlen >= sizeof(path))
		return 0;
	if (kiln_maps_anon(e)) {
		/* Code in anonymous memory (a JIT's: V8, the JVM, LuaJIT),
		 * named as the kernel's MMAP records name it and perf's
		 * synthesized ones do: the frame-pointer chain goes on
		 * through it where it was mapped before kiln started (it
		 * ended at the first JIT frame under -a and -p). */
		memcpy(path, "//anon", 7);
	} else {
		memcpy(path, e->path, e->pathlen);
		path[e->pathlen] = '\0';
	}
	memset(&ev, 0, sizeof(ev));
	ev.kind = KILN_PERF_MMAP;
	ev.mmap.pid = c->pr->pid;
	ev.mmap.tid = c->pr->pid;
	ev.mmap.start = e->start;
	ev.mmap.len = e->end - e->start;
	ev.mmap.pgoff = e->offset;
	ev.mmap.prot = 5;
	ev.mmap.filename = path;
	kiln_rec_on_mmap(c->r, &ev);
	return c->r->err;
}

int kiln_rec_seed(struct kiln_rec *r, pid_t pid)
{
	struct kiln_buf text = KILN_BUF_INIT;
	struct seed_ctx c;
	char path[64];
	int err = 0;

	r->epoch++;
	c.r = r;
	c.pr = kiln_rec_find_proc(r, (uint32_t)pid, true);
	if (!c.pr)
		return -ENOMEM;
	c.pr->known = true;
	/* The program's name first: its mappings are named by it. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!kiln_read_proc(AT_FDCWD, path, &text) && text.len) {
		text.data[strcspn(text.data, "\n")] = '\0';
		set_comm(r, (uint32_t)pid, (uint32_t)pid, text.data);
	}
	kiln_buf_reset(&text);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = kiln_read_proc(AT_FDCWD, path, &text);
	if (!err)
		err = kiln_maps_parse(text.data, text.len, seed_entry, &c);
	kiln_buf_release(&text);
	if (err)
		return err;
	return kiln_rec_seed_names(r, pid);
}

int kiln_rec_seed_names(struct kiln_rec *r, pid_t pid)
{
	char path[64], comm[64], dir[64];
	DIR *d;
	struct dirent *de;
	FILE *f;

	/* Every thread's name (thread_name labels). */
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
	return r->err;
}
