/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-process stack unwinding for the SIGPROF handler (unwind stage):
 * frame pointers checked against the stack bounds and the executable
 * ranges of the loaded modules, and, where a function has no frame
 * pointer, DWARF call frame information taken from each module's
 * .eh_frame and compiled ahead of time (on a normal thread) into a compact
 * sorted table of rows that the handler binary-searches.
 *
 * The handler reads nothing but its own tables and the interrupted
 * thread's stack between the bounds it is given: no module memory, no
 * loader lock, no allocation.  Table sets are replaced with an atomic
 * pointer swap and an old set is freed only once no handler is inside the
 * unwinder.  The DWARF part exists for x86-64; elsewhere only the checked
 * frame-pointer walk is compiled (aarch64 registers are read from the
 * ucontext; on other architectures kiln_cfi_unwind() returns 0).  See
 * docs/unwinding.md.
 */
#ifndef KILN_CAPTURE_CFI_H
#define KILN_CAPTURE_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The unwind tables of the loaded modules, and the set being replaced. */
struct kiln_cfi;

/*
 * An empty table set (no module known: every unwind stops after pcs[0]
 * until kiln_cfi_refresh() runs).  NULL with errno set.  Not
 * async-signal-safe.
 */
struct kiln_cfi *kiln_cfi_new(void);

/*
 * Frees c and every table set it holds.  Only when no signal handler can
 * be inside kiln_cfi_unwind() on c any more (timers disarmed and the
 * handler seen out).  NULL is fine.  Not async-signal-safe.
 */
void kiln_cfi_free(struct kiln_cfi *c);

/*
 * Rescans the loaded modules (dl_iterate_phdr), parses the .eh_frame_hdr
 * and .eh_frame of the new ones straight from memory, drops the unloaded
 * ones and publishes the new set with an atomic pointer swap; when
 * nothing was loaded or unloaded since the last call it returns at once.
 * Sets replaced earlier are freed here once no handler is inside
 * kiln_cfi_unwind(); the handler never waits.  Call it from a normal
 * thread (periodically and after dlopen/dlclose); calls are serialized by
 * a mutex.  0 or -ENOMEM (the previous set then stays in use).  Not
 * async-signal-safe.
 */
int kiln_cfi_refresh(struct kiln_cfi *c);

/* kiln_cfi_unwind_regs() flags. */
/*
 * Lazy tables: from the next refresh on, a newly seen module (other than
 * the program) gets the rows of one of its FDEs only once an unwind
 * needed them (that unwind, and those until the next kiln_cfi_refresh(),
 * walk that frame by frame pointers).  Saves parsing whole libraries when
 * a profile touches a few of their functions.  Not for callers that need
 * every stack exact from the start.  wake (may be NULL) is called with
 * arg when a module is first wanted since the last refresh, from the
 * unwinding thread: in a signal handler it must be async-signal-safe.
 */
void kiln_cfi_set_lazy(struct kiln_cfi *c, bool lazy, void (*wake)(void *),
		       void *arg);

/*
 * With lazy tables: kiln_cfi_unwind_cached() builds a missing FDE's rows
 * itself, at once (through dl_iterate_phdr, allocating), so that its
 * stacks are exact from the first unwind: for callers in normal context
 * (the heap profiler's hooks), never a signal handler.  The other
 * unwinders still ask and walk by frame pointers.
 */
void kiln_cfi_set_build_now(struct kiln_cfi *c, bool now);

/*
 * Return addresses in [lo, hi) are walked through but not stored: the
 * frames of a profiler's own code between the program's (libkiln.so's
 * thread-start trampoline).  Set before the first unwind.
 */
void kiln_cfi_set_skip(struct kiln_cfi *c, uint64_t lo, uint64_t hi);

/* In a child after fork(), before it unwinds: the lock that builds FDEs
 * may have been held by a thread that is not in the child. */
void kiln_cfi_fork_child(struct kiln_cfi *c);

/* Whether an unwind asked for a lazy module's rows since the last
 * refresh (then call kiln_cfi_refresh()).  Takes c's lock. */
bool kiln_cfi_wanted(struct kiln_cfi *c);

enum {
	/* Frame pointers only (CFI rows ignored); pcs are still checked. */
	KILN_CFI_FP_ONLY = 1 << 0,
};

/* The registers an unwind starts from. */
struct kiln_cfi_regs {
	uint64_t pc, sp, fp;
};

/*
 * Unwinds the thread interrupted with `ucontext` (the handler's third
 * argument, a ucontext_t): pcs[0] is the interrupted pc, the others
 * return addresses, outermost last.  Returns how many were stored, at
 * least 1 when max >= 1 (0 on architectures whose registers it does not
 * know).  Every stack read is 8-byte aligned and inside
 * [max(stack_lo, interrupted sp), stack_hi): pass the bounds of the
 * thread's stack, whose part above sp is then mapped.  Every return
 * address stored lies in an executable segment of a module the table set
 * knows; the walk stops at the first that does not, at pc 0, at an sp
 * that does not increase, at the outermost frame (RA undefined) or at
 * max.
 *
 * Async-signal-safe, lock-free, allocation-free, re-entrant (a nested
 * signal may unwind too); safe against a concurrent kiln_cfi_refresh().
 */
int kiln_cfi_unwind(struct kiln_cfi *c, const void *ucontext,
		    uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
		    int max);

/*
 * The same from explicit registers (pc, sp, frame pointer) with
 * KILN_CFI_* flags; on x86-64 the walk is the one kiln_cfi_unwind()
 * does.  Async-signal-safe as kiln_cfi_unwind().
 */
int kiln_cfi_unwind_regs(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 uint64_t stack_lo, uint64_t stack_hi, unsigned flags,
			 uint64_t *pcs, int max);

/*
 * The same walk over a copy of the stack: copy holds the len bytes that
 * were at [r->sp, r->sp + len) (a thread blocked in the kernel, copied
 * with process_vm_readv: the sampler of wall time).  Addresses stay the
 * thread's; only the reads come from the copy.  r->fp may be 0 (not
 * known): frames whose rule needs it end the walk.  Async-signal-safe as
 * kiln_cfi_unwind().
 */
int kiln_cfi_unwind_copy(struct kiln_cfi *c, const struct kiln_cfi_regs *r,
			 const void *copy, size_t len, uint64_t *pcs, int max);

/* How a row computes the caller's frame (kiln_cfi_rule.kind). */
/*
 * A thread's cache of rule lookups for kiln_cfi_unwind_cached(): entries
 * belong to one table set (gen: its generation) and are forgotten when
 * the set changes.
 * Zeroed is empty.  Owned by one thread (no locking).
 */
#define KILN_CFI_CACHE 256
struct kiln_cfi_cache {
	uint64_t gen;
	/* The last loaded objects a walk stopped in that the table set did
	 * not know (their starts, a ring): the set was refreshed for each
	 * once, so one it leaves out for good costs no refresh per walk. */
	uint64_t stale_obj[4];
	unsigned stale_next;
	/* Set by a walk whose stack may come out otherwise next time, the
	 * same stack words under the same table set: a row not built yet
	 * (lazy tables), a pc in no object the set knows. */
	bool unsure;
	struct {
		uint64_t pc;		/* 0: empty */
		const void *row;	/* its row (NULL: none) */
		const void *range;	/* the executable range holding it */
	} e[KILN_CFI_CACHE];
};

/*
 * kiln_cfi_unwind_regs() (flags 0) with the lookups of pcs seen before
 * served from cache: the same stacks again and again (malloc hooks) cost
 * a hash probe per frame instead of two binary searches.
 * Async-signal-safe for one thread's own cache.
 */
int kiln_cfi_unwind_cached(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			   const struct kiln_cfi_regs *r, uint64_t stack_lo,
			   uint64_t stack_hi, uint64_t *pcs, int max);

/*
 * A thread's cache of recent call chains (the heap hooks'), before any
 * walk: a chain is known by where the walk starts (pc, sp, fp and the
 * stack's bounds), the table set's generation and every stack word the
 * walk read (return addresses, saved frame pointers: where and what).  A
 * walk is a function of those alone, so a chain found again with the
 * same words gives the stack the walk would give, and the value the
 * caller stored with it (the heap tracer's stack id) costs a compare per
 * word instead of a walk, a hash of the stack and a table probe.  A new
 * table set (libraries loaded or unloaded, and the set refreshed: a
 * library unloaded and another loaded at its address) misses every
 * entry; so does a caller reached another way (another return address on
 * the stack).  Walks that may go otherwise next time (cache.unsure) and
 * chains of more than KILN_CFI_CHAIN_WORDS words are not stored.  A
 * saved frame pointer that no later frame uses is not one of the words
 * (code without frame pointers saves whatever rbp held).  Sets of
 * KILN_CFI_CHAIN_WAYS entries picked by (pc, sp): a helper called from a
 * few places at the same depth keeps a chain for each.  Zeroed is empty.  Owned by one thread (no
 * locking); async-signal-safe.
 */
#define KILN_CFI_CHAINS 128	/* entries: sets of KILN_CFI_CHAIN_WAYS */
#define KILN_CFI_CHAIN_WAYS 4
#define KILN_CFI_CHAIN_WORDS 48
struct kiln_cfi_chain {
	uint64_t pc, sp, fp, lo, hi;	/* pc 0: empty */
	uint64_t gen;			/* the table set's */
	uint32_t value;			/* the caller's, not 0 */
	uint32_t n;			/* words; > KILN_CFI_CHAIN_WORDS: too many */
	bool fp_used;			/* the walk used fp (else: any fp) */
	uint32_t off[KILN_CFI_CHAIN_WORDS];	/* a word's address less sp */
	uint64_t word[KILN_CFI_CHAIN_WORDS];
};
struct kiln_cfi_chains {
	struct kiln_cfi_chain last;	/* what the last walk read (pc 0: none) */
	uint64_t hits, misses;
	unsigned next;			/* the way replaced next */
	struct kiln_cfi_chain e[KILN_CFI_CHAINS];
};

/*
 * The value stored with the chain that starts at r on the calling
 * thread's stack [stack_lo, stack_hi), or 0: not cached (then unwind with
 * kiln_cfi_unwind_chain() and store with kiln_cfi_chain_put()).
 */
uint32_t kiln_cfi_chain_find(struct kiln_cfi *c, struct kiln_cfi_chains *ch,
			     const struct kiln_cfi_regs *r, uint64_t stack_lo,
			     uint64_t stack_hi);

/*
 * kiln_cfi_unwind_cached() that notes, in ch->last, the stack words the
 * walk read, for kiln_cfi_chain_put().
 */
int kiln_cfi_unwind_chain(struct kiln_cfi *c, struct kiln_cfi_cache *cache,
			  struct kiln_cfi_chains *ch, const struct kiln_cfi_regs *r,
			  uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
			  int max);

/*
 * Stores value (not 0) with the chain of the last kiln_cfi_unwind_chain()
 * on ch, unless that walk may go otherwise next time or read too many
 * words.
 */
void kiln_cfi_chain_put(struct kiln_cfi_chains *ch, uint32_t value);

enum kiln_cfi_kind {
	KILN_CFI_NONE,		/* no FDE covers the pc: frame pointers */
	KILN_CFI_RULE,		/* CFA = reg + off; RA, rbp as below */
	KILN_CFI_UNKNOWN,	/* a rule the walker cannot apply: fp */
	KILN_CFI_OUTERMOST,	/* RA undefined: the last frame */
	KILN_CFI_PLT,		/* .plt: CFA = rsp + off + (pc&15 >= plt_at ? 8 : 0) */
	KILN_CFI_SIGNAL,	/* signal trampoline: registers in a ucontext at sp */
};

/* DWARF register numbers of the CFA base (kiln_cfi_rule.cfa_reg). */
enum { KILN_CFI_REG_RBP = 6, KILN_CFI_REG_RSP = 7 };

/* The unwind rule of one pc, as the handler applies it. */
struct kiln_cfi_rule {
	enum kiln_cfi_kind kind;
	int cfa_reg;		/* KILN_CFI_REG_* */
	int64_t cfa_off;
	int64_t ra_off;		/* RA saved at CFA + ra_off */
	int64_t fp_off;		/* rbp saved at CFA + fp_off; 0: unchanged */
	bool fp_lost;		/* rbp not recoverable in the caller */
	int plt_at;		/* KILN_CFI_PLT threshold */
};

/*
 * The rule the current table set has for pc (looked up as is), for tests
 * and diagnostics.  0, or -ENOENT when no module holds pc in an
 * executable segment.  Async-signal-safe.
 */
int kiln_cfi_lookup(struct kiln_cfi *c, uint64_t pc, struct kiln_cfi_rule *out);

/* Counters of a table set (kiln_cfi_stats()). */
struct kiln_cfi_stats {
	size_t modules;		/* loaded objects in the current set */
	size_t modules_cfi;	/* ... of which have CFI rows */
	size_t rows;		/* rows in all tables */
	size_t bytes;		/* memory of the current set */
	uint64_t generation;	/* sets published so far */
	size_t retired;		/* replaced sets not yet freed */
	size_t fdes_skipped;	/* malformed or unsupported FDEs seen */
	size_t fdes_built;	/* FDEs of lazy modules built so far */
};

/* Fills *st (under the refresh mutex).  Not async-signal-safe. */
void kiln_cfi_stats(struct kiln_cfi *c, struct kiln_cfi_stats *st);

#endif
