/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sample's stack (session stage): the kernel's callchain or a DWARF
 * unwinding of the copied user stack into the profile's locations,
 * through a cache of recent stacks (kiln_rec_stack(); record.c adds the
 * samples).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/recint.h"
#include "session/record.h"
#include "session/unwind.h"
#include "profile/profile.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/htab.h"

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

