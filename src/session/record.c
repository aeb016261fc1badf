/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From perf records to a symbolized profile (session stage): the
 * recorder's life and sample assembly (stacks unwound or taken from the
 * call chain, the stack cache, values and labels).  See record.h; the
 * model is machine.c's, the symbols resolve.c's.
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
	/* The time label's key and unit, for the pprof writer's time
	 * labels (docs/formats.md, "Sample times"). */
	kiln_prof_interns(r->p, "time");
	kiln_prof_interns(r->p, "nanoseconds");
	r->s_state = kiln_prof_interns(r->p, "state");
	if (kiln_prof_error(r->p))
		goto out_free;
	return r;
out_free:
	kiln_rec_free(r);
	errno = ENOMEM;
	return NULL;
}

void kiln_rec_proc_release(struct proc *pr)
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
		kiln_rec_proc_release(&r->procs[i]);
	free(r->procs);
	for (i = 0; i < r->ndsos; i++) {
		kiln_sym_free(r->dsos[i].sym);
		free(r->dsos[i].parts);
	}
	free(r->dsos);
	kiln_htab_release(&r->dso_index);
	free(r->threads);
	free(r->addrs);
	free(r->locs);
	free(r->last_locs);
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

struct kiln_prof *kiln_rec_detach(struct kiln_rec *r)
{
	struct kiln_prof *p = r->p;
	size_t i;

	for (i = 0; i < r->nprocs; i++)
		kiln_rec_name_misses(r, &r->procs[i]);
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
		if (kiln_rec_sym_path(r, &pr->maps[i]))
			kiln_unwind_add_mapping(pr->uw,
						kiln_rec_sym_path(r, &pr->maps[i]),
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

/* The user part of the kernel's chain (leaf first) at *ips; its length. */
static size_t user_chain(const struct kiln_perf_sample *s, const uint64_t **ips)
{
	bool kernel = false;
	size_t i, k;

	*ips = NULL;
	for (i = 0; i < s->nr; i++) {
		uint64_t ip = s->ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kernel)
			continue;
		for (k = i; k < s->nr && s->ips[k] < (uint64_t)PERF_CONTEXT_MAX; k++)
			;
		*ips = s->ips + i;
		return k - i;
	}
	return 0;
}

/*
 * A stack copy too short for the whole stack (--off-cpu and --wall copy
 * only the frames near the leaf, docs/kiln-record.md): its CFI frames
 * (r->ubuf, nu of them) pass the leaf's functions that have no frame
 * pointer (libc's system call wrappers), and where one of their return
 * addresses (not the leaf) is also in the kernel's frame-pointer chain,
 * that chain goes on from there to the root.  The user frames replace
 * those from user_start in r->locs, *n their end.  False (nothing
 * changed) when the two share no return address.
 */
static bool splice_fp(struct kiln_rec *r, struct proc *pr,
		   const struct kiln_perf_sample *s, size_t nu,
		   size_t user_start, size_t *n)
{
	const uint64_t *fp;
	size_t nfp = user_chain(s, &fp), i, j, k;

	if (nfp < 2 || r->ubuf[0] != fp[0])
		return false;
	for (i = 1; i < nu; i++)
		for (j = 1; j < nfp; j++) {
			if (r->ubuf[i] != fp[j])
				continue;
			*n = user_start;
			for (k = 0; k < i; k++)
				push(r, n, kiln_rec_location(r, pr, r->ubuf[k],
							     k > 0, false));
			/* As the chain's own walk: it ends at a caller
			 * outside every executable mapping. */
			for (k = j; k < nfp && kiln_rec_find_map(pr, fp[k]); k++)
				push(r, n, kiln_rec_location(r, pr, fp[k], true,
							     false));
			return true;
		}
	return false;
}

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
	pr = kiln_rec_find_proc(r, s->pid, true);
	if (!pr)
		return r->err;
	if (r->o.system_wide && !pr->known && s->pid) {
		/* Started between the scan of /proc and the first record. */
		pr->known = true;
		kiln_rec_seed(r, (pid_t)s->pid);
		pr = kiln_rec_find_proc(r, s->pid, false);
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
			push(r, &n, kiln_rec_location(r, pr, ip, !first_kernel, true));
			first_kernel = false;
		} else {
			/* A caller outside every executable mapping is what a
			 * frame-pointer walk reads past the last real frame
			 * (code built without frame pointers, _start): the
			 * chain ends there. */
			if (!first_user && !kiln_rec_find_map(pr, ip))
				break;
			if (first_user)
				user_start = n;
			push(r, &n, kiln_rec_location(r, pr, ip, !first_user, false));
			first_user = false;
			fp_user++;
		}
	}
	if (!s->nr && (s->user || r->o.kernel_frames))
		push(r, &n, kiln_rec_location(r, pr, s->ip, false, !s->user));
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
				push(r, &n, kiln_rec_location(r, pr, r->ubuf[i], i > 0,
						     false));
		} else if (full && nu >= 2 && fp_user >= 2 &&
			   splice_fp(r, pr, s, (size_t)nu, user_start, &n)) {
			/* the copy's frames, then the frame-pointer chain */
		} else if (nu >= 2 && fp_user >= 2 && r->ubuf[0] == user_ip(s, 0) &&
			   r->ubuf[1] != user_ip(s, 1)) {
			if (!GROW(r->locs, r->locs_alloc, n + 1)) {
				r->err = -ENOMEM;
				return r->err;
			}
			memmove(r->locs + user_start + 2, r->locs + user_start + 1,
				(n - user_start - 1) * sizeof(*r->locs));
			n++;
			r->locs[user_start + 1] = kiln_rec_location(r, pr, r->ubuf[1], true,
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
	pr = kiln_rec_find_proc(r, s->pid, true);
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
		       uint32_t lset, int64_t bucket)
{
	long idx;

	if (cur && (locs != r->locs || n != cur->nlocs))
		cur = NULL;
	if (cur && cur->memo && cur->memo_lset == lset) {
		kiln_prof_add_to_sample(r->p, cur->memo_sample, values);
		kiln_prof_add_event(r->p, cur->memo_sample, bucket, values);
		return;
	}
	idx = kiln_prof_add_timed(r->p, locs, n, values, lset, bucket);
	if (cur && idx >= 0) {
		cur->memo = true;
		cur->memo_lset = lset;
		cur->memo_sample = (size_t)idx;
	}
}

/* kiln_rec_add() of a value in column col, weighing nsamp samples. */
static void add_col(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		    uint64_t time, const uint32_t *locs, uint32_t n,
		    uint32_t col, int64_t nsamp, int64_t value, const char *state)
{
	struct stack_ent *cur = r->cur_stack;
	struct thread *t, *leader;
	struct kiln_label labels[6];
	uint32_t nl = 0, lset;
	int64_t *values = r->values, bucket;

	if (col >= r->ncols)
		col = 0;
	values[0] = nsamp;
	values[1 + col] = value;

	r->cur_stack = NULL;
	if (!r->o.start_ns)
		r->o.start_ns = time;
	bucket = (int64_t)((time > r->o.start_ns ? time - r->o.start_ns : 0) /
			   KILN_PROF_TIME_BUCKET_NS * KILN_PROF_TIME_BUCKET_NS);
	/* Samples come in runs of one thread: the labels of the last
	 * sample, unless a record changed names since. */
	if (!state && r->last_labels.valid && r->last_labels.pid == pid &&
	    r->last_labels.tid == tid && r->last_labels.epoch == r->epoch) {
		add_sample(r, cur, locs, n, values, r->last_labels.lset, bucket);
		values[1 + col] = 0;
		return;
	}
	t = kiln_rec_find_thread(r, tid, pid, true);
	leader = kiln_rec_find_thread(r, pid, pid, false);
	labels[nl++] = (struct kiln_label){ r->s_pid, 0, pid, 0 };
	/* The process's name: its main thread's, else this thread's. */
	if (leader && leader->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, leader->comm, 0, 0 };
	else if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_comm, t->comm, 0, 0 };
	labels[nl++] = (struct kiln_label){ r->s_thread, 0, tid, 0 };
	if (t && t->comm)
		labels[nl++] = (struct kiln_label){ r->s_thread_name, t->comm, 0, 0 };
	/* The time (since the recording's start, in buckets) goes to the
	 * time column (profile.h), not the labels. */
	if (state)
		labels[nl++] = (struct kiln_label){
			r->s_state, kiln_prof_interns(r->p, state), 0, 0 };
	lset = kiln_prof_labelset(r->p, labels, nl);
	r->last_labels.valid = !state && lset && t;
	r->last_labels.pid = pid;
	r->last_labels.tid = tid;
	r->last_labels.epoch = r->epoch;
	r->last_labels.lset = lset;
	add_sample(r, cur, locs, n, values, lset, bucket);
	values[1 + col] = 0;
}

void kiln_rec_add(struct kiln_rec *r, uint32_t pid, uint32_t tid,
		  uint64_t time, const uint32_t *locs, uint32_t n,
		  int64_t value, const char *state)
{
	add_col(r, pid, tid, time, locs, n, 0, 1, value, state);
}

/*
 * o.carry_lost: the value of sample s (v) with the events of the records
 * lost just before it (a LOST record precedes the first record the kernel
 * wrote after the loss); s kept as the last sample.
 */
static int64_t carry(struct kiln_rec *r, const struct kiln_perf_sample *s,
		     uint32_t col, const uint32_t *locs, uint32_t n, int64_t v)
{
	v += (int64_t)r->lost_pending * (v > 0 ? v : 1);
	r->carried += r->lost_pending;
	r->lost_pending = 0;
	r->event_total += (uint64_t)v;
	r->last.valid = GROW(r->last_locs, r->last_locs_alloc, n);
	if (r->last.valid) {
		memcpy(r->last_locs, locs, n * sizeof(*locs));
		r->last.pid = s->pid;
		r->last.tid = s->tid;
		r->last.col = col;
		r->last.n = n;
		r->last.time = s->time;
	}
	return v;
}

int kiln_rec_carry(struct kiln_rec *r, uint64_t n)
{
	if (!n)
		return 0;
	if (!r->last.valid)
		return -ENOENT;
	r->cur_stack = NULL;
	add_col(r, r->last.pid, r->last.tid, r->last.time, r->last_locs,
		r->last.n, r->last.col, 0, (int64_t)n, NULL);
	r->carried += n;
	r->event_total += n;
	return 0;
}

uint64_t kiln_rec_event_total(const struct kiln_rec *r)
{
	return r->event_total;
}

uint64_t kiln_rec_carried(const struct kiln_rec *r)
{
	return r->carried;
}

/*
 * o.carry_lost: a LOST record's n events happened between the sample
 * before it and the sample after it: half go to the one's stack now, the
 * rest to the other's (carry()).  Within a phase of the program both
 * are the same stack; where the phase changed during the loss, nothing
 * tells where, and the halves are the estimate.
 */
static void carry_run(struct kiln_rec *r, uint64_t n)
{
	uint64_t half = r->last.valid ? n / 2 : 0;

	if (half && !kiln_rec_carry(r, half))
		n -= half;
	r->lost_pending += n;
}

static void on_sample(struct kiln_rec *r, const struct kiln_perf_sample *s)
{
	const uint32_t *locs;
	long n = kiln_rec_stack(r, s, &locs);
	uint32_t col = s->column < r->ncols ? s->column : 0;
	int64_t v;

	if (n <= 0)
		return;
	v = r->col_ns[col] || s->period ? (int64_t)s->period : 1;
	if (r->o.carry_lost)
		v = carry(r, s, col, locs, (uint32_t)n, v);
	add_col(r, s->pid, s->tid, s->time, locs, (uint32_t)n, col, 1, v,
		r->o.wall ? "running" : NULL);
}

void kiln_rec_event(void *ctx, const struct kiln_perf_event *ev)
{
	struct kiln_rec *r = ctx;

	if (ev->kind != KILN_PERF_SAMPLE)
		r->epoch++;
	switch (ev->kind) {
	case KILN_PERF_SAMPLE: on_sample(r, &ev->sample); break;
	case KILN_PERF_MMAP: kiln_rec_on_mmap(r, ev); break;
	case KILN_PERF_COMM: kiln_rec_on_comm(r, ev); break;
	case KILN_PERF_FORK: kiln_rec_on_fork(r, ev); break;
	case KILN_PERF_EXIT: kiln_rec_on_exit(r, ev); break;
	case KILN_PERF_LOST:
		if (r->o.carry_lost)
			carry_run(r, ev->lost.lost);
		break;
	case KILN_PERF_SWITCH: break;
	}
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
