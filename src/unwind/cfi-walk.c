/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CFI unwinder's walk (unwind stage): kiln_cfi_unwind() and its
 * siblings, which the SIGPROF handler, the wall-clock sampler and the
 * malloc hooks call.
 *
 * Async-signal-safe code, and nothing else, lives here: no allocation, no
 * locks, no stdio, no libdw, no module memory.  It reads the published
 * table set (cfiint.h: immutable once published, freed by cfi.c's
 * reclaim() only when the handlers' count in `inside` is seen at 0, which
 * kiln_cfi_unwind*() and kiln_cfi_lookup() raise around their reads), and
 * the interrupted thread's stack, only 8-byte aligned inside the bounds
 * it was given.  Lazy modules' FDE tables are copies, so a library
 * unloaded meanwhile cannot fault it.  What it may call: the functions of
 * this file, lock-free atomics, memset, getpid() and process_vm_readv()
 * (call_before(): a read of module memory that fails instead of
 * faulting), and the owner's wake function (want(): async-signal-safe if
 * that is, as kiln_cfi_set_lazy() requires).  The one exception is
 * kcfi_build_now() (cfi-parse.c: loader lock, allocation), called only
 * by kiln_cfi_unwind_cached() after kiln_cfi_set_build_now(), whose
 * callers unwind in normal context, never in a handler.
 *
 * Its helpers (find_range(), find_row(), cached_row(), rd_stack() ...)
 * are static, in walk()'s own file, for the compiler to inline.  See
 * cfi.h and docs/unwinding.md.
 */
#include "unwind/cfiint.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <sys/uio.h>
#include <unistd.h>

/* A byte of initial-exec TLS: its address tells threads apart. */
static __thread char stripe_anchor __attribute__((tls_model("initial-exec")));

/* The calling thread's stripe of c->inside. */
static inline atomic_long *inside_of(struct kiln_cfi *c)
{
	uint64_t a = (uint64_t)(uintptr_t)&stripe_anchor;

	a ^= a >> 21;
	a *= 0x9E3779B97F4A7C15ull;
	return &c->inside[a >> 60].n;
}

/* The executable range holding pc, or NULL. */
static const struct cfi_range *find_range(const struct cfi_set *s, uint64_t pc)
{
	size_t lo = 0, hi;

	if (!s)
		return NULL;
	hi = s->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= s->ranges[lo - 1].hi)
		return NULL;
	return &s->ranges[lo - 1];
}

static void want(const struct cfi_set *set, const struct cfi_mod *m);

/* The last row starting at or before off, searched in rows[lo, hi)
 * (sorted by pc): rows[lo - 1] when none there does, NULL if lo is 0. */
static const struct cfi_row *last_row(const struct cfi_row *rows, size_t lo,
				      size_t hi, uint64_t off)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}

/*
 * The row for offset off in lazy module m: the last row at or before it
 * of the FDE whose range may hold it, or NULL (no rule; an FDE not built
 * yet is asked for, or built now when `now`).
 */
static const struct cfi_row *fde_row(const struct cfi_set *set,
				     const struct cfi_mod *m, uint32_t off,
				     bool now)
{
	size_t lo = 0, hi = m->nfde, i;
	const struct fde_rows *fr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->fdes[mid].pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	i = lo - 1;
	fr = atomic_load_explicit(&m->fde_rows[i], memory_order_acquire);
	if (!fr && now && set->c) {
		kcfi_build_now(set, m, i);
		fr = atomic_load_explicit(&m->fde_rows[i], memory_order_acquire);
	}
	if (!fr) {
		_Atomic uint64_t *w = &m->fde_want[i >> 6];
		uint64_t bit = 1ull << (i & 63);

		if (!(atomic_load_explicit(w, memory_order_relaxed) & bit))
			atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
		want(set, m);
		return NULL;
	}
	return last_row(fr->rows, 0, fr->n, off);
}

/* The row for pc in mod, or NULL (then: no CFI).  set: the set holding
 * m, whose owner is asked for rows a lazy module lacks (or builds them
 * now: `now`). */
static const struct cfi_row *find_row(const struct cfi_set *set,
				      const struct cfi_mod *m, uint64_t pc,
				      bool now)
{
	size_t lo, hi, bk;
	uint64_t off = pc - m->bias;

	if (m->pending) {
		want(set, m);
		return NULL;	/* lazy: built by the next refresh */
	}
	if (pc < m->bias || off > UINT32_MAX)
		return NULL;
	if (m->fde_rows)
		return fde_row(set, m, (uint32_t)off, now);
	if (!m->nrows || off < m->rows[0].pc)
		return NULL;
	bk = (off - m->rows[0].pc) >> BUCKET_SHIFT;
	if (bk >= m->nindex)
		return &m->rows[m->nrows - 1];
	/* Rows of the bucket; the answer is among them or just before. */
	lo = m->index[bk];
	hi = m->index[bk + 1];
	return last_row(m->rows, lo, hi, off);
}

/* An 8-byte read inside [lo, hi), aligned; false if outside. */
/*
 * A word of the stack at addr, inside [lo, hi).  delta is 0 for the live
 * stack; for a copy of it, the copy's address less the stack's (the walk
 * computes with the thread's own addresses and reads the copy).
 */
static inline bool rd_stack(uint64_t addr, uint64_t lo, uint64_t hi,
			    uint64_t delta, uint64_t *out)
{
	if ((addr & 7) || addr < lo || hi < 8 || addr > hi - 8)
		return false;
	*out = *(const volatile uint64_t *)(uintptr_t)(addr + delta);
	return true;
}

static inline size_t cache_slot(uint64_t a)
{
	return (size_t)((a * 0x9E3779B97F4A7C15ull) >> 56) & (KILN_CFI_CACHE - 1);
}

/*
 * Asks the next refresh for rows of lazy module m (the whole module, or
 * the FDEs whose bits the caller set before), waking its owner's thread
 * the first time since the last refresh (the module lives as long as the
 * set the caller holds: see `inside`).  Async-signal-safe if the wake
 * function is.
 */
static void want(const struct cfi_set *set, const struct cfi_mod *m)
{
	_Atomic bool *w = &((struct cfi_mod *)m)->wanted;

	/* release: the refresh that clears `wanted` sees the FDE bits. */
	if (atomic_load_explicit(w, memory_order_relaxed) ||
	    atomic_exchange_explicit(w, true, memory_order_release))
		return;
	if (set->c && set->c->wake)
		set->c->wake(set->c->wake_arg);
}

/* find_row() through the caller's cache (NULL: none). */
static inline const struct cfi_row *cached_row(struct kiln_cfi_cache *cache,
					       const struct cfi_set *set,
					       const struct cfi_range *rg, uint64_t a)
{
	size_t i;
	const struct cfi_row *row;

	if (!cache)
		return find_row(set, rg->mod, a, false);
	i = cache_slot(a);
	if (cache->e[i].pc == a)
		return cache->e[i].row;
	row = find_row(set, rg->mod, a, set->c && set->c->build_now);
	if (!row && (rg->mod->pending || rg->mod->fde_rows)) {
		cache->unsure = true;
		return row;	/* may be built later: not remembered */
	}
	cache->e[i].pc = a;
	cache->e[i].row = row;
	cache->e[i].range = rg;
	return row;
}

/* find_range() for a return address, through the cache (its entry is
 * keyed by the address the next lookup uses, ra - 1). */
static inline const struct cfi_range *cached_range(struct kiln_cfi_cache *cache,
						   const struct cfi_set *set,
						   uint64_t ra)
{
	if (cache) {
		size_t i = cache_slot(ra - 1);

		if (cache->e[i].pc == ra - 1)
			return cache->e[i].range;
	}
	return find_range(set, ra);
}

/* walk()'s flag for copies whose frame pointer is not known: find it. */
#define SCAN_FP (1u << 30)
/* How far above sp a frame record is looked for (words). */
#define SCAN_WORDS 512

/*
 * Whether the instruction before ra is a call (e8 rel32, or ff /2 in its
 * register, [reg], disp8 and disp32 forms), read with process_vm_readv:
 * a module unloaded meanwhile fails the read instead of faulting.
 */
static bool call_before(uint64_t ra)
{
	uint8_t b[8];
	struct iovec l = { b, sizeof(b) }, r = { (void *)(uintptr_t)(ra - 8), 8 };
	static const int ff_at[] = { 2, 3, 6, 7 };
	size_t i;

	if (ra < 8 || process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 8)
		return false;
	if (b[8 - 5] == 0xe8)
		return true;
	for (i = 0; i < sizeof(ff_at) / sizeof(*ff_at); i++)
		if (b[8 - ff_at[i]] == 0xff && ((b[9 - ff_at[i]] >> 3) & 7) == 2)
			return true;
	return false;
}

/*
 * The frame pointer of a function that keeps one, when the registers
 * did not say (a thread blocked in the kernel gives only its sp and pc):
 * the lowest frame record above sp -- a saved frame pointer that points
 * higher up the stack (or is 0, the outermost) next to a return address
 * that follows a call into a module the set knows.  A stale record left
 * in the function's locals by an earlier call from the same caller names
 * the same caller.  0 if none.
 */
static uint64_t scan_fp(const struct cfi_set *set, uint64_t sp, uint64_t lo,
			uint64_t hi, uint64_t delta)
{
	uint64_t s, saved, ra;
	int i;

	for (i = 0, s = sp; i < SCAN_WORDS; i++, s += 8) {
		if (!rd_stack(s, lo, hi, delta, &saved) ||
		    !rd_stack(s + 8, lo, hi, delta, &ra))
			return 0;
		if ((saved && (saved <= s + 8 || saved >= hi || (saved & 7))) ||
		    !find_range(set, ra) || !call_before(ra))
			continue;
		return s;
	}
	return 0;
}

/* rd_stack() for walk(), noting the word in log (when given): a chain
 * for kiln_cfi_chain_put(). */
static inline bool rd_log(struct kiln_cfi_chain *log, uint64_t addr,
			  uint64_t lo, uint64_t hi, uint64_t delta, uint64_t *out)
{
	if (!rd_stack(addr, lo, hi, delta, out))
		return false;
	if (log) {
		uint32_t n = log->n;

		if (n < KILN_CFI_CHAIN_WORDS) {
			log->off[n] = (uint32_t)(addr - log->sp);
			log->word[n] = *out;
		}
		log->n = n + 1;
	}
	return true;
}

/*
 * Where the walk's frame pointer came from, for the chain log: a saved
 * frame pointer matters to the stack only if a later frame uses it (its
 * CFA, or the frame-pointer chain), and code built without frame
 * pointers saves whatever rbp held, which changes from call to call: it
 * is noted only when used, so that such chains are found again.
 */
struct fp_src {
	bool reg;		/* the register the walk started with */
	bool pend;		/* the stack word at addr, not noted yet */
	uint64_t addr, val;
};

/* The walk uses its frame pointer: notes where it came from. */
static inline void fp_use(struct kiln_cfi_chain *log, struct fp_src *s)
{
	if (!log)
		return;
	if (s->reg) {
		log->fp_used = true;
		s->reg = false;
	} else if (s->pend) {
		uint32_t n = log->n;

		if (n < KILN_CFI_CHAIN_WORDS) {
			log->off[n] = (uint32_t)(s->addr - log->sp);
			log->word[n] = s->val;
		}
		log->n = n + 1;
		s->pend = false;
	}
}

/*
 * The walk.  *unknown (when given) gets the first pc met that lies in no
 * range of the set -- the leaf's, or the caller's where the walk stopped
 * -- or stays 0: kiln_cfi_unwind_cached() asks the loader about that pc
 * only, so the hot path pays no lookup for a walk that ended normally.
 */
static int walk(const struct cfi_set *set, struct kiln_cfi_cache *cache,
		uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lo, uint64_t hi,
		uint64_t delta, unsigned flags, uint64_t *pcs, int max,
		uint64_t *unknown, struct kiln_cfi_chain *log)
{
	bool fp_ok = !(flags & SCAN_FP), exact = true;
	struct fp_src src = { .reg = true }, nsrc;
	int n = 0;

	if (max < 1)
		return 0;
	pcs[n++] = pc;
	/* No tables yet: no code is known, not even a caller to follow by
	 * its frame pointer (and set->c below would be read). */
	if (!set)
		return n;
	if (sp > lo)
		lo = sp;	/* nothing the walk needs lies below sp */
	const struct cfi_range *rg = find_range(set, pc);

	if (!rg && unknown)
		*unknown = pc;
	while (n < max) {
		const struct cfi_row *row = NULL;
		uint64_t npc, nsp, nfp = fp, cfa;
		bool nfp_ok = fp_ok, nexact = false, nfp_new = false;
		int kind = KILN_CFI_NONE;

		/* (A pc in no range -- JIT code, or a module the set does not
		 * know yet -- has no rule: the frame-pointer chain below.) */
#if CFI_DWARF
		if (rg && !(flags & KILN_CFI_FP_ONLY)) {
			row = cached_row(cache, set, rg, exact ? pc : pc - 1);
			if (row)
				kind = row->kind;
		}
#endif
		switch (kind) {
		case KILN_CFI_RULE:
			if (row->cfa_reg != KILN_CFI_REG_RSP && !fp_ok &&
			    (flags & SCAN_FP) && (fp = scan_fp(set, sp, lo, hi, delta)))
				fp_ok = true;
			if (row->cfa_reg == KILN_CFI_REG_RSP)
				cfa = sp;
			else if (fp_ok) {
				fp_use(log, &src);
				cfa = fp;
			} else {
				return n;
			}
			cfa += (uint64_t)(int64_t)row->cfa_off;
			if (!rd_log(log, cfa + (uint64_t)(int64_t)row->ra_off, lo, hi, delta,
				      &npc))
				return n;
			if (row->fp_off == FP_LOST) {
				nfp_ok = false;
			} else if (row->fp_off) {
				uint64_t a = cfa + (uint64_t)(int64_t)row->fp_off;

				if (!rd_stack(a, lo, hi, delta, &nfp))
					return n;
				nsrc = (struct fp_src){ .pend = true, .addr = a, .val = nfp };
				nfp_new = true;
				nfp_ok = true;
			}
			nsp = cfa;
			break;
		case KILN_CFI_PLT:
			cfa = sp + (uint64_t)(int64_t)row->cfa_off +
			      ((pc & 15) >= row->plt_at ? 8 : 0);
			if (!rd_log(log, cfa - 8, lo, hi, delta, &npc))
				return n;
			nsp = cfa;
			break;
#if CFI_DWARF
		case KILN_CFI_SIGNAL: {
			/* rt_sigreturn's frame: the ucontext_t lies at sp. */
			uint64_t g = sp + offsetof(ucontext_t, uc_mcontext.gregs);

			if (!rd_log(log, g + 8 * REG_RIP, lo, hi, delta, &npc) ||
			    !rd_log(log, g + 8 * REG_RSP, lo, hi, delta, &nsp) ||
			    !rd_log(log, g + 8 * REG_RBP, lo, hi, delta, &nfp))
				return n;
			nsrc = (struct fp_src){ 0 };
			nfp_new = true;
			nfp_ok = true;
			nexact = true;
			break;
		}
#endif
		case KILN_CFI_OUTERMOST:
			return n;
		default:
			/* No usable rule: the frame-pointer chain. */
			if (!fp_ok && (flags & SCAN_FP) &&
			    (fp = scan_fp(set, sp, lo, hi, delta)))
				fp_ok = true;
			if (!fp_ok)
				return n;
			fp_use(log, &src);
			if (fp < sp)
				return n;
			if (!rd_stack(fp, lo, hi, delta, &nfp) ||
			    !rd_log(log, fp + 8, lo, hi, delta, &npc))
				return n;
			/* Code the set does not know: a frame record only if
			 * the caller's is higher up (or 0, the outermost). */
			if (!rg && nfp && (nfp <= fp || (nfp & 7)))
				return n;
			nsrc = (struct fp_src){ .pend = true, .addr = fp, .val = nfp };
			nfp_new = true;
			nsp = fp + 16;
			nfp_ok = true;
			break;
		}
		if (!npc || nsp <= sp)
			break;
		if (rg && npc - rg->lo < rg->hi - rg->lo) {
			/* Mostly a caller in the same module. */
		} else if (!(rg = cached_range(cache, set, npc))) {
			if (unknown && !*unknown)
				*unknown = npc;
			/* A caller in code no module of the set holds: JIT
			 * code (V8, the JVM keep frame pointers in theirs), or
			 * a library loaded a moment ago.  Followed by its frame
			 * pointer, as perf's kernel walk follows it, when the
			 * caller has one that can be a frame's (at or above its
			 * stack pointer), or 0 (the outermost: taken, and the
			 * walk ends there); else the walk ends before it. */
			if (!nfp_ok || (nfp && (nfp < nsp || (nfp & 7) || nfp >= hi)))
				break;
		}
		if (!set->c || npc - set->c->skip_lo >= set->c->skip_hi - set->c->skip_lo)
			pcs[n++] = npc;
		pc = npc;
		sp = nsp;
		fp = nfp;
		fp_ok = nfp_ok;
		if (nfp_new)
			src = nsrc;
		exact = nexact;
	}
	return n;
}

int kiln_cfi_unwind_regs(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 uint64_t stack_lo, uint64_t stack_hi, unsigned flags,
			 uint64_t *pcs, int max)
{
	int n;

	/* seq_cst: see reclaim(). */
	atomic_long *in = inside_of(c);

	atomic_fetch_add(in, 1);
	n = walk(atomic_load(&c->cur), NULL, r->pc, r->sp, r->fp, stack_lo,
		 stack_hi, 0, flags, pcs, max, NULL, NULL);
	atomic_fetch_sub(in, 1);
	return n;
}

int kiln_cfi_unwind_copy(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 const void *copy, size_t len, uint64_t *pcs, int max)
{
	int n;
	atomic_long *in = inside_of(c);

	atomic_fetch_add(in, 1);
	n = walk(atomic_load(&c->cur), NULL, r->pc, r->sp, r->fp, r->sp,
		 r->sp + len, (uint64_t)(uintptr_t)copy - r->sp,
		 r->fp ? 0 : SCAN_FP, pcs, max, NULL, NULL);
	atomic_fetch_sub(in, 1);
	return n;
}

/*
 * Whether pc lies in an object the loader has mapped (glibc's lock-free
 * _dl_find_object(), 2.35 and later) and not asked about before by this
 * thread: then a table set that does not know it is older than the
 * object.  Normal context only.
 */
static bool loaded_since(struct kiln_cfi_cache *cache, uint64_t pc)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
	struct dl_find_object o;
	uint64_t start;
	size_t i, n = sizeof(cache->stale_obj) / sizeof(*cache->stale_obj);

	if (_dl_find_object((void *)(uintptr_t)pc, &o))
		return false;
	start = (uint64_t)(uintptr_t)o.dlfo_map_start;
	for (i = 0; i < n; i++)
		if (cache->stale_obj[i] == start)
			return false;
	cache->stale_obj[cache->stale_next++ % n] = start;
	return true;
#else
	(void)cache;
	(void)pc;
	return false;
#endif
}

/*
 * kiln_cfi_unwind_cached(), noting in log (when given) where the walk
 * started, the set's generation and the stack words it read.
 */
static int unwind_cached(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			 const struct kiln_cfi_regs *r, uint64_t stack_lo,
			 uint64_t stack_hi, uint64_t *pcs, int max,
			 struct kiln_cfi_chain *log)
{
	atomic_long *in = inside_of(c);
	const struct cfi_set *set;
	bool stale, again = c->build_now;
	uint64_t unknown;
	int n;

retry:
	atomic_fetch_add(in, 1);
	set = atomic_load(&c->cur);
	if (set && cache->gen != set->gen) {
		/* The rows of another set (by generation: a new set may
		 * reuse a freed one's address): forget them all. */
		memset(cache->e, 0, sizeof(cache->e));
		cache->gen = set->gen;
	}
	unknown = 0;
	cache->unsure = false;
	if (log) {
		log->pc = 0;
		log->sp = r->sp;
		log->n = 0;
		log->fp_used = false;
	}
	n = walk(set, cache, r->pc, r->sp, r->fp, stack_lo, stack_hi, 0, 0, pcs,
		 max, &unknown, log);
	stale = again && unknown && loaded_since(cache, unknown);
	if (log && set && !unknown && !cache->unsure) {
		log->pc = r->pc;
		log->fp = r->fp;
		log->lo = stack_lo;
		log->hi = stack_hi;
		log->gen = set->gen;
	}
	atomic_fetch_sub(in, 1);
	if (stale) {
		/* The walk stopped in a library loaded since the last
		 * refresh (dlopen()ed a moment ago, its constructor or first
		 * call allocating): the set learns of it, and the walk goes
		 * again, once. */
		again = false;
		if (!kiln_cfi_refresh(c))
			goto retry;
	}
	return n;
}

int kiln_cfi_unwind_cached(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			   const struct kiln_cfi_regs *r, uint64_t stack_lo,
			   uint64_t stack_hi, uint64_t *pcs, int max)
{
	return unwind_cached(c, cache, r, stack_lo, stack_hi, pcs, max, NULL);
}

int kiln_cfi_unwind_chain(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			  struct kiln_cfi_chains *ch, const struct kiln_cfi_regs *r,
			  uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
			  int max)
{
	return unwind_cached(c, cache, r, stack_lo, stack_hi, pcs, max, &ch->last);
}

int kiln_cfi_unwind(struct kiln_cfi *c, const void *ucontext,
		    uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
		    int max)
{
	const ucontext_t *uc = ucontext;
	struct kiln_cfi_regs r;

#if defined(__x86_64__)
	r.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	r.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	r.fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	r.pc = uc->uc_mcontext.pc;
	r.sp = uc->uc_mcontext.sp;
	r.fp = uc->uc_mcontext.regs[29];
#else
	(void)uc;
	return 0;
#endif
	return kiln_cfi_unwind_regs(c, &r, stack_lo, stack_hi, 0, pcs, max);
}

int kiln_cfi_lookup(struct kiln_cfi *c, uint64_t pc, struct kiln_cfi_rule *out)
{
	const struct cfi_range *rg;
	const struct cfi_row *row = NULL;
	int err = 0;

	atomic_long *in = inside_of(c);

	memset(out, 0, sizeof(*out));
	atomic_fetch_add(in, 1);
	rg = find_range(atomic_load(&c->cur), pc);
	if (!rg) {
		err = -ENOENT;
		goto out;
	}
	row = find_row(atomic_load(&c->cur), rg->mod, pc, false);
	if (!row)
		goto out;
	out->kind = row->kind;
	out->cfa_reg = row->cfa_reg;
	out->cfa_off = row->cfa_off;
	out->ra_off = row->ra_off;
	out->fp_off = row->fp_off == FP_LOST ? 0 : row->fp_off;
	out->fp_lost = row->fp_off == FP_LOST;
	out->plt_at = row->plt_at;
out:
	atomic_fetch_sub(in, 1);
	return err;
}
