/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recorder's insides (session stage), shared by its files: record.c
 * (the recorder's life, sample assembly: stacks, the stack cache, values
 * and labels), machine.c (the machine/thread/map model that MMAP2, COMM,
 * FORK and EXIT records describe, and the seeding of a running process)
 * and resolve.c (an address to a location: per-process and per-file
 * symbol sessions, JIT perf maps, kallsyms).  Private to those files.
 */
#ifndef KILN_SESSION_RECINT_H
#define KILN_SESSION_RECINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "session/record.h"
#include "symbolize/kallsyms.h"
#include "util/htab.h"

struct kiln_sym;
struct kiln_unwind;

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
	bool perfmap_read;	/* offline: /tmp/perf-PID.map was read */
	uint64_t jitdump_off;	/* bytes of its jit-PID.dump read so far */
	uint64_t jitdump_checked;	/* when last looked at (ns) */
	uint32_t jitver;	/* counts the reads that found new lines */
	uint32_t nmiss;		/* unnamed JIT addresses since kiln_rec_name_misses() */
	bool exited;
	bool known;		/* seeded, forked or exec'ed while recording */
};

/*
 * A part of a DSO's file placed in its symbol session: file offsets
 * [pgoff, end) at DSO_BASE + pgoff (parts never overlap).
 */
struct dso_part {
	uint64_t pgoff, end;
};

/*
 * One file shared by every process that maps it, in every recording and
 * in a perf.data (docs/design.md, "The DSO object"): a machine runs many processes of
 * the same programs and libraries, and a session each would read the
 * same symbol tables and debug files again and again.  Owned by the
 * recorder, freed with it; looked up by the string id of the file read.
 */
struct dso {
	uint32_t file;		/* string id of the file read (the key) */
	struct kiln_sym *sym;	/* one session, the file at DSO_BASE */
	struct dso_part *parts;	/* by pgoff */
	size_t nparts, parts_alloc;
	/* Live: whether the file was still at its path when first looked
	 * up (0 not yet, 1 yes, -1 gone: deleted since the process mapped
	 * it; its processes' own sessions reach it through map_files). */
	int8_t present;
};

struct thread {
	uint32_t tid, pid;
	uint32_t comm;		/* string id */
	/* Its samples' values in the first column, and the sample (index
	 * + 1) the last went to; the counts its exit's READ records gave
	 * and what of them went to no sample (kiln_rec_on_read()). */
	uint64_t sampled, read, unsampled;
	size_t last_sample;
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

	struct dso *dsos;
	size_t ndsos, dsos_alloc;
	struct kiln_htab dso_index;

	struct kiln_kallsyms *ksyms;
	bool ksyms_tried;
	uint32_t kmapping;

	uint32_t s_pid, s_thread, s_thread_name, s_comm;	/* label keys */
	uint32_t s_state;
	uint32_t *locs;
	size_t locs_alloc;
	uint64_t *ubuf;				/* unwound user frames */
	size_t ubuf_alloc;
	int err;

	char vdso_path[64];	/* a copy of the [vdso] image */
	bool vdso_tried, vdso_ok;
	/* A mapping's file by the name its process was run by (machine.c
	 * shown_path(), util/exename.h): (file, comm) -> the name shown. */
	struct {
		uint32_t file, comm, shown;
	} exe_names[256];

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
	} last_labels;
	/* A sample's values: 1 sample, then one per value column (one, or
	 * o.ncolumns); all but the first are 0 between samples. */
	int64_t *values;
	uint32_t ncols;
	bool col_ns[KILN_REC_MAX_COLUMNS];	/* the column is a clock's */
	/* o.carry_lost: events of LOST records not yet given to a stack,
	 * those given, the event values added, and the last sample (its
	 * stack copied). */
	uint64_t lost_pending, carried, event_total;
	struct {
		bool valid;
		uint32_t pid, tid, col, n;
		uint64_t time;
	} last;
	uint32_t *last_locs;
	size_t last_locs_alloc;
};

static inline bool kiln_rec_grow(void **arr, size_t *alloc, size_t need, size_t size)
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

#define GROW(arr, alloc, need) kiln_rec_grow((void **)&(arr), &(alloc), (need), sizeof(*(arr)))

/* ---- shared by record.c, machine.c and resolve.c ---- */

/* record.c */
void kiln_rec_proc_release(struct proc *pr);

/* machine.c: the processes, threads and mappings records describe */
struct proc *kiln_rec_find_proc(struct kiln_rec *r, uint32_t pid, bool create);
struct thread *kiln_rec_find_thread(struct kiln_rec *r, uint32_t tid,
				    uint32_t pid, bool create);
/* The mapping of pr holding addr, or NULL. */
const struct rmap *kiln_rec_find_map(const struct proc *pr, uint64_t addr);
/* The file to read for mapping m (/proc/PID/root, map_files, [vdso]). */
const char *kiln_rec_sym_path(struct kiln_rec *r, const struct rmap *m);
void kiln_rec_on_mmap(struct kiln_rec *r, const struct kiln_perf_event *ev);
void kiln_rec_on_fork(struct kiln_rec *r, const struct kiln_perf_event *ev);
void kiln_rec_on_comm(struct kiln_rec *r, const struct kiln_perf_event *ev);
void kiln_rec_on_exit(struct kiln_rec *r, const struct kiln_perf_event *ev);

/* resolve.c: addresses to locations */
/* The location of ip in pr (caller: a return address), 0 for none. */
uint32_t kiln_rec_location(struct kiln_rec *r, struct proc *pr, uint64_t ip,
			   bool caller, bool kernel);
/* Names the JIT addresses of pr still unnamed from its perf map. */
void kiln_rec_name_misses(struct kiln_rec *r, struct proc *pr);

#endif
