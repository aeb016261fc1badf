/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU sampler's collector (cpu stage): a thread of kiln's that drains
 * the handlers' sample queue every few milliseconds (sooner when woken)
 * and interns the stacks into the profile's aggregate (memory grows with
 * distinct stacks, labels per thread and state); it keeps the queue's
 * pages ready, the unwinding tables and the modules up to date, and warms
 * a symbolizer session while the program runs, so that the profile's end
 * (kcpu_finish(): mappings and symbols) only looks up what is new.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "cpu/cpuint.h"
#include "cpu/procprof.h"
#include "profile/profile.h"
#include "runtime/guard.h"
#include "runtime/threads.h"
#include "symbolize/symbolize.h"
#include "unwind/cfi.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"

/* The aggregation: the collector's, and the start's and stop's under
 * the sampler's state lock while no collector runs. */
static struct kiln_prof *agg;
static struct kiln_htab tid_index;	/* tid -> label set (value in tids[]) */
static struct tid_ent { uint32_t tid, state, lset; } *tids;
static size_t ntids, tids_alloc;
static uint64_t dl_generation;
static uint64_t deq_pos;
static int period_ns;
static pthread_t collector;


static bool tid_eq(const void *ctx, uint32_t id)
{
	const uint32_t *k = ctx;

	return tids[id - 1].tid == k[0] && tids[id - 1].state == k[1];
}

/* The state label's values (wall mode), as kiln record --wall's. */
static const char *const state_names[] = {
	[KILN_WALL_RUNNING] = "running",
	[KILN_WALL_SLEEPING] = "sleeping",
	[KILN_WALL_BLOCKED_IO] = "blocked-io",
	[KILN_WALL_OTHER] = "other",
};

/* The labels of thread tid's samples in state (0: none) in p: pid,
 * thread, thread_name, state.  Returns how many (at most 4). */
uint32_t kcpu_thread_labels(struct kiln_prof *p, uint32_t tid, uint8_t state,
			    struct kiln_label *l)
{
	char path[64], comm[64] = "";
	FILE *f;
	uint32_t n = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	l[n++] = (struct kiln_label){ kiln_prof_interns(p, "pid"), 0,
				      getpid(), 0 };
	l[n++] = (struct kiln_label){ kiln_prof_interns(p, "thread"), 0, tid, 0 };
	if (comm[0])
		l[n++] = (struct kiln_label){ kiln_prof_interns(p, "thread_name"),
					      kiln_prof_interns(p, comm), 0, 0 };
	if (state && state < sizeof(state_names) / sizeof(*state_names))
		l[n++] = (struct kiln_label){ kiln_prof_interns(p, "state"),
					      kiln_prof_interns(p, state_names[state]),
					      0, 0 };
	return n;
}

/* The label set of thread tid's samples in state (0: none). */
static uint32_t labels_for(uint32_t tid, uint8_t state)
{
	uint32_t key[2] = { tid, state };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key));
	uint32_t id = kiln_htab_find(&tid_index, hash, tid_eq, key);
	struct kiln_label l[4];
	uint32_t n;

	if (id)
		return tids[id - 1].lset;
	n = kcpu_thread_labels(agg, tid, state, l);
	if (KILN_GROW(tids, tids_alloc, ntids + 1, 64))
		return 0;
	tids[ntids].tid = tid;
	tids[ntids].state = state;
	tids[ntids].lset = kiln_prof_labelset(agg, l, n);
	if (kiln_htab_insert(&tid_index, hash, (uint32_t)ntids + 1))
		return 0;
	return tids[ntids++].lset;
}

void kcpu_drain(void)
{
	for (;;) {
		uint64_t idx = deq_pos & (RING_SLOTS - 1);
		struct rec *r = &kcpu_ring[idx];
		uint64_t seq = atomic_load_explicit(&r->seq, memory_order_acquire) + idx;
		uint32_t locs[MAX_DEPTH];
		int64_t values[2];
		uint32_t i, n;

		if (seq != deq_pos + 1)
			break;
		n = r->n > MAX_DEPTH ? MAX_DEPTH : r->n;
		for (i = 0; i < n; i++)
			locs[i] = kiln_prof_location(agg, 0, r->pcs[i], NULL, 0);
		if (kcpu_wall) {
			values[0] = 1;
			values[1] = (int64_t)r->weight;
		} else {
			values[0] = (int64_t)r->weight;
			values[1] = (int64_t)r->weight * period_ns;
		}
		kiln_prof_add_sample(agg, locs, n, values,
				     labels_for(r->tid, r->state));
		atomic_store_explicit(&r->seq, deq_pos + RING_SLOTS - idx,
				      memory_order_release);
		deq_pos++;
	}
}

static int dl_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(uint64_t *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

/* Stack tops the handler could not know: the mapping holding a seen sp. */
void kcpu_resolve_stacks(void)
{
	size_t i;

	for (i = 0; i < atomic_load(&kiln_rt_threads_hw); i++) {
		struct kiln_rt_thread *t = &kiln_rt_threads[i];
		uint64_t sp = atomic_load(&t->sp_seen), lo, hi;

		if (!atomic_load(&t->tid) || atomic_load(&t->stack_hi) || !sp)
			continue;
		if (!kiln_maps_find(sp, &lo, &hi))
			atomic_store(&t->stack_hi, hi);
	}
}

/*
 * The collector's period: it is woken sooner when the queue fills by a
 * quarter, when a sample needs a library's unwinding tables, and when
 * the profile stops (the program's exit waits for it: no sleep may add
 * to that).  Waking rarely is what it costs the program.
 */
#define COLLECT_NS 100000000

/*
 * Makes the queue's pages present and writable ahead of the handlers,
 * from the collector, off the program's start.  A handler reads a slot's
 * sequence before it writes the slot, and a page first read is the
 * shared zero page, replaced at the write by a copy-on-write fault that
 * flushes the TLB of every CPU running the program: an interrupt to
 * each, which in a VM doubled the cost of a signal while the queue's
 * pages were new.  The collector keeps RING_AHEAD slots past the last
 * one taken ready (it runs at least every RING_SLOTS / 4 samples), so a
 * short profile never pays for the whole 4 MiB.
 */
#define RING_AHEAD (RING_SLOTS / 2)
static size_t ring_ready;	/* slots made ready so far (collector's) */

static void populate_ring(void)
{
	uint64_t taken = atomic_load_explicit(&kcpu_enq_pos, memory_order_relaxed);
	size_t want = taken + RING_AHEAD > RING_SLOTS ? RING_SLOTS :
						       (size_t)taken + RING_AHEAD;
	uintptr_t lo, hi;

	if (want <= ring_ready)
		return;
	lo = (uintptr_t)&kcpu_ring[ring_ready] & ~(uintptr_t)4095;
	hi = ((uintptr_t)&kcpu_ring[want] + 4095) & ~(uintptr_t)4095;
#ifdef MADV_POPULATE_WRITE
	if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE))
#endif
	{
		/* Older kernels: a write to every page (each holds the start
		 * of a slot; adding 0 leaves a slot a handler may be filling
		 * as it is). */
		for (size_t i = ring_ready; i < want; i++)
			atomic_fetch_add(&kcpu_ring[i].seq, 0);
	}
	ring_ready = want;
}

/*
 * The symbolizer session of the profile being taken, warmed by the
 * collector while the program runs: the modules its samples touch are
 * reported to libdwfl and their symbol tables read in the background, so
 * that writing the profile at the program's exit only looks up what is
 * new (the exit cost was several milliseconds of opening libraries and
 * symbol tables).  Dropped when libraries are loaded or unloaded (an
 * address may then name another file).  The collector's, and the stop's
 * once the collector is joined.
 */
static struct kiln_sym *warm;
static uint32_t warmed;		/* agg's locations [1, warmed] looked up */
static struct kiln_buf warm_maps;	/* the maps text warm_up() read last */
/*
 * Lines from the debug file cache (libc's, from libc6-dbg as kiln record
 * decompressed it) are read apart, by kiln_sym_fill_lines(), whose libdw
 * session ends there: the exit then frees none of libdw's tables for the
 * copy nor its mapped pages (0.2-0.3 ms of a program's exit when warm kept
 * them).  Reading libc's copy again costs the collector about 10 ms, so
 * the fills come at the warm-ups numbered 1, 2, 4, 8, 16 and then every
 * 16th (about 16 s): addresses first seen since the last fill keep their
 * names without lines.
 */
static unsigned warm_ups, fill_at = 1, fill_gap = 1;
#define FILL_GAP_MAX 16

static void warm_up(void)
{
	struct kiln_procprof_maps c = { 0 };
	struct kiln_prof *p;
	uint32_t i, n = (uint32_t)agg->nlocations;

	if (n <= warmed)
		return;
	if (!warm && !(warm = kiln_procprof_sym_new(true)))
		return;
	p = kiln_prof_new();
	if (!p)
		return;
	kiln_buf_release(&warm_maps);
	if (!kiln_procprof_maps_load_from(&c, p, &warm_maps)) {
		for (i = warmed + 1; i <= n; i++) {
			uint64_t a = agg->locations[i].address;

			kiln_prof_location(p, kiln_procprof_maps_find(&c, a), a, NULL, 0);
		}
		/* Each address as a leaf and as a caller (address - 1), the
		 * two ways the profile's end may look it up: the session's
		 * per-module indexes are built here, not at the exit. */
		if (!kiln_prof_error(p) && !kiln_sym_prof(warm, p, 0)) {
			for (i = warmed + 1; i <= n; i++) {
				struct kiln_sym_info info;

				kiln_sym_lookup(warm, agg->locations[i].address - 1, &info);
			}
			warmed = n;
		}
	}
	kiln_procprof_maps_release(&c);
	kiln_prof_free(p);
}

static void *read_lines(void *arg)
{
	kiln_sym_lines_read(warm, arg);
	return NULL;
}

/*
 * Once per warm-up: the lines of the debug file cache when they are due,
 * read on a thread of its own (libdw's memory in its malloc arena, given
 * back when it ends; see kiln_sym_lines_read()) while the collector waits.
 */
static void fill_lines(void)
{
	struct kiln_sym_lines l = { 0 };
	struct timespec t0, t1;
	pthread_t t;
	int n;

	if (++warm_ups < fill_at || !warm)
		return;
	fill_at = warm_ups + fill_gap;
	if (fill_gap < FILL_GAP_MAX)
		fill_gap *= 2;
	if (!kiln_sym_lines_pending(warm)) {
		kiln_rt_log(KILN_LOG_DEBUG, "no address waits for lines from "
			       "the debug file cache");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (kiln_rt_thread_start(&t, "kiln-lines", read_lines, &l, false))
		return;
	kiln_rt_thread_join(t);
	n = kiln_sym_lines_take(warm, &l);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	kiln_rt_log(KILN_LOG_DEBUG, "lines from the debug file cache: %d "
		       "addresses given lines in %.1f ms%s", n < 0 ? 0 : n,
		       (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
		       n < 0 ? " (out of memory)" : "");
}

static void *collect(void *arg)
{
	struct timespec ts = { 0, COLLECT_NS };
	unsigned tick = 0;

	kiln_rt_busy_begin();
	populate_ring();
	kiln_rt_busy_end();

	while (!atomic_load(&kcpu_collector_stop)) {
		syscall(SYS_futex, &kcpu_collector_stop, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
		if (atomic_load(&kcpu_collector_stop))
			break;
		/* Its work allocates: never while the program forks. */
		kiln_rt_busy_begin();
		kcpu_drain();
		populate_ring();
		/* Unwinding tables a sample needed (lazy: see the begin). */
		if (kiln_cfi_wanted(kcpu_cfi))
			kiln_cfi_refresh(kcpu_cfi);
		{
			uint64_t gen = 0;

			kcpu_resolve_stacks();
			/* New or unloaded libraries: new unwinding tables. */
			dl_iterate_phdr(dl_counts, &gen);
			if (gen != dl_generation) {
				dl_generation = gen;
				kiln_cfi_refresh(kcpu_cfi);
				kiln_sym_free(warm);
				warm = NULL;
				warmed = 0;
				kiln_buf_release(&warm_maps);
				/* Named even if unloaded before the end. */
				kiln_procprof_modules_note();
			}
			if (kiln_sampler_engine() == KILN_ENGINE_THREAD_TIMERS && tick % 5 == 4)
				kcpu_scan_late();
			if (tick % 10 == 2) {
				warm_up();
				fill_lines();
			}
			tick++;
		}
		kiln_rt_busy_end();
	}
	kiln_rt_busy_begin();
	kcpu_drain();
	kiln_rt_busy_end();
	return NULL;
}


int kcpu_collect_open(int period, bool wall)
{
	struct timespec now;

	period_ns = period;
	dl_iterate_phdr(dl_counts, &dl_generation);
	ring_ready = 0;
	warmed = 0;	/* a new profile's locations (the session stays) */
	deq_pos = 0;
	agg = kiln_prof_new();
	if (!agg || kiln_prof_set_types_str(agg, (const char *const[]){
			"samples/count", wall ? "wall/nanoseconds" : "cpu/nanoseconds" },
			2)) {
		kcpu_collect_close();
		return -ENOMEM;
	}
	agg->period_type = agg->types[1];
	agg->period = period_ns;
	clock_gettime(CLOCK_REALTIME, &now);
	agg->time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	return 0;
}

bool kcpu_collect_opened(void)
{
	return agg != NULL;
}

int kcpu_collect_start(void)
{
	atomic_store(&kcpu_collector_stop, 0);
	return kiln_rt_thread_start(&collector, "kiln-collect", collect, NULL,
				    false) ? -EAGAIN : 0;
}

/* Stops the collector thread at once (it drains a last time) and joins it. */
void kcpu_collect_stop(void)
{
	atomic_store(&kcpu_collector_stop, 1);
	kcpu_wake_collector(NULL);
	kiln_rt_thread_join(collector);
}

struct kiln_prof *kcpu_collect_take(void)
{
	struct kiln_prof *raw = agg;

	agg = NULL;
	kiln_htab_release(&tid_index);
	free(tids);
	tids = NULL;
	ntids = tids_alloc = 0;
	return raw;
}

void kcpu_collect_close(void)
{
	kiln_prof_free(agg);
	agg = NULL;
}

int kcpu_finish_warm(struct kiln_prof *raw, struct kiln_prof **out)
{
	return kcpu_finish(raw, out, warm);
}

void kcpu_collect_fork_child(void)
{
	agg = NULL;	/* the parent's; leaked in the child, never written */
	warm = NULL;	/* the parent's session: leaked too */
	warmed = 0;
	warm_maps = (struct kiln_buf)KILN_BUF_INIT;
	kiln_htab_init(&tid_index);
	tids = NULL;
	ntids = tids_alloc = 0;
}

/*
 * finish() with the maps text in *maps (read into it when empty):
 * -EAGAIN when a location lies in none of its executable mappings (the
 * text is older than the code: read it again).
 */
static int finish_maps(struct kiln_prof *raw, struct kiln_prof **out,
		       struct kiln_sym *with, struct kiln_buf *maps)
{
	struct kiln_procprof_maps c = { 0 };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_value_type vt[2];
	uint32_t *locmap = NULL, locs[MAX_DEPTH];
	size_t i, j;
	int err;

	if (!p)
		return -ENOMEM;
	for (i = 0; i < raw->ntypes && i < 2; i++) {
		vt[i].type = kiln_prof_interns(p, kiln_prof_str(raw, raw->types[i].type));
		vt[i].unit = kiln_prof_interns(p, kiln_prof_str(raw, raw->types[i].unit));
	}
	err = kiln_prof_set_types(p, vt, i);
	if (err)
		goto out;
	p->period_type = p->types[p->ntypes - 1];
	p->period = raw->period;
	p->time_nanos = raw->time_nanos;
	p->default_type = p->types[p->ntypes - 1].type;
	err = kiln_procprof_maps_load_from(&c, p, maps);
	/* At the stop, what the collector's last maps had and the exit's
	 * lack: mappings gone since, whose samples it took. */
	if (!err && with && maps != &warm_maps && warm_maps.len)
		err = kiln_maptab_add_gone_text(&c.t, p, warm_maps.data,
						warm_maps.len);
	if (err)
		goto out;
	locmap = calloc(raw->nlocations + 1, sizeof(*locmap));
	if (!locmap) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 1; i <= raw->nlocations; i++) {
		uint64_t a = raw->locations[i].address;
		uint32_t m = kiln_procprof_maps_find(&c, a);

		if (!m && maps == &warm_maps) {
			err = -EAGAIN;
			goto out;
		}
		locmap[i] = kiln_prof_location(p, m, a, NULL, 0);
	}
	for (i = 0; i < raw->nsamples; i++) {
		const struct kiln_sample *s = &raw->samples[i];
		const uint32_t *sl = kiln_prof_sample_locs(raw, s);
		const struct kiln_labelset *ls = &raw->labelsets[s->labels];
		struct kiln_label l[4];

		for (j = 0; j < s->depth && j < MAX_DEPTH; j++)
			locs[j] = locmap[sl[j]];
		for (j = 0; s->labels && j < ls->n && j < 4; j++) {
			const struct kiln_label *a = &raw->labels[ls->first + j];

			l[j].key = kiln_prof_interns(p, kiln_prof_str(raw, a->key));
			l[j].str = a->str ? kiln_prof_interns(p, kiln_prof_str(raw, a->str)) : 0;
			l[j].num = a->num;
			l[j].unit = 0;
		}
		kiln_prof_add_sample(p, locs, (uint32_t)(s->depth < MAX_DEPTH ?
						     s->depth : MAX_DEPTH),
				     raw->values + i * raw->ntypes,
				     kiln_prof_labelset(p, l, (uint32_t)j));
	}
	err = kiln_prof_error(p);
	if (!err)
		err = kiln_procprof_finish_with(p, KILN_SYM_RETURN_ADDRS, with);
out:
	free(locmap);
	kiln_procprof_maps_release(&c);
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

/*
 * The aggregated stacks as a profile with mappings and symbols, with
 * symbolizer session with (NULL: one of its own).  With the warmed
 * session, the maps the collector read last are used when they still
 * cover every address (no library was loaded or unloaded since: the
 * session is dropped then): /proc/self/maps is not read again at exit.
 */
int kcpu_finish(struct kiln_prof *raw, struct kiln_prof **out,
		  struct kiln_sym *with)
{
	struct kiln_buf fresh = KILN_BUF_INIT;
	int err = -EAGAIN;

	if (with && warm_maps.len)
		err = finish_maps(raw, out, with, &warm_maps);
	if (err == -EAGAIN)
		err = finish_maps(raw, out, with, &fresh);
	/* (Only the stop passes the session: the collector is gone then.) */
	if (with)
		kiln_buf_release(&warm_maps);
	kiln_buf_release(&fresh);
	return err;
}

