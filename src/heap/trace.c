/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The heap trace of libkiln.so (heap stage): its life -- started from
 * KILN_HEAP_TRACE at load (or by a heap profile: the aggregate alone,
 * sampled), kept across fork (the child's own trace, PATH.PID), flushed
 * before exec and _exit, ended at exit; the malloc interposer found and
 * checked in front of the allocator; snapshots of the aggregate for the
 * heap profiles.  The hook context is ring.c's, the writer thread
 * writer.c's (traceint.h is what the three share).
 *
 * Hot path (hooks.c, on the program's threads): encode a record into the
 * thread's ring (ring.c).  Cold path (the writer, a thread of kiln's own
 * with every signal blocked and the allocation guard set for good): every
 * 100 ms, or sooner when woken, drain the rings into one zstd frame
 * written with one write(2), so that a SIGKILL loses at most the last
 * ~100 ms (writer.c).  See docs/heap.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "runtime/env.h"
#include "runtime/kfd.h"
#include "format/heapenc.h"
#include "format/heaptrace.h"
#include "unwind/cfi.h"
#include "heap/htrace.h"
#include "heap/heapint.h"
#include "heap/traceint.h"
#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"
#include "util/maps.h"
#include "runtime/log.h"
#include "runtime/threads.h"


/* ---- start, fork, exit ---- */

static const char *base_path;	/* KILN_HEAP_TRACE, absolute */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_read, start_tried;	/* under start_lock */
static int start_err;
static pid_t trace_pid;		/* the process that writes trace_fd */

static int start_writer(void)
{
	int err = kiln_rt_thread_start(&kheap_writer, "kiln-heap", kheap_write_loop, NULL, true);

	if (err)
		return err;
	kheap_writer_running = true;
	return 0;
}

/* Opens path and writes the first frame (header, maps).  0 or -errno. */
static int open_trace(const char *path)
{
	struct kiln_hcols f = { 0 };
	const struct kiln_hcols *parts[1] = { &f };
	struct kiln_buf b = KILN_BUF_INIT;
	int err;

	err = kiln_kfd_open(&kheap_trace_kfd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (err)
		return err;
	trace_pid = getpid();
	kheap_put_header(&f);
	kheap_put_maps(&f);
	kheap_ok(kiln_hcols_frame(parts, 1, true, &b));
	dl_iterate_phdr(kheap_dl_gen, &kheap_w_dl_gen);
	kheap_w_maps_due = false;
	err = kheap_w_nomem ? -ENOMEM : kheap_write_frame(&b);
	kheap_w_nomem = false;
	kiln_buf_release(&b);
	kiln_hcols_release(&f);
	if (err)
		kiln_kfd_close(&kheap_trace_kfd);
	return err;
}

void kiln_htrace_fork_prepare(void)
{
	if (!kheap_writer_running)
		return;
	kiln_rt_guard++;
	/* No writer round, stack insertion or sampled-set change may be
	 * half done in the child's copy of memory. */
	pthread_mutex_lock(&kheap_wlock);
	kheap_lock(&kheap_st_lock);
	kheap_lock(&kheap_ss_lock);
}

void kiln_htrace_fork_parent(void)
{
	if (!kheap_writer_running)
		return;
	kheap_unlock(&kheap_ss_lock);
	kheap_unlock(&kheap_st_lock);
	pthread_mutex_unlock(&kheap_wlock);
	kiln_rt_guard--;
}

void kiln_htrace_fork_child(void)
{
	struct kheap_thread *t;
	char path[PATH_MAX];
	int err;

	if (!kheap_writer_running)
		return;
	kheap_unlock(&kheap_ss_lock);
	kheap_unlock(&kheap_st_lock);
	pthread_mutex_init(&kheap_wlock, NULL);
	if (kheap_cfi)
		kiln_cfi_fork_child(kheap_cfi);
	kheap_writer_running = false;
	if (atomic_load(&kheap_finishing) || !atomic_load(&kheap_on)) {
		atomic_store(&kheap_on, false);
		kiln_rt_guard--;
		return;
	}
	/* The parent writes what its threads recorded; the child starts
	 * empty, with only this thread, and defines every stack again. */
	for (t = atomic_load(&kheap_rings); t; t = t->next) {
		atomic_store(&t->tail, atomic_load(&t->head));
		t->tail_seen = atomic_load(&t->tail);
		if (t == kheap_me) {
			t->tid = kheap_gettid();
			t->t_base = t->last_ns = kheap_stamp();
			atomic_store(&t->lost, 0);
			atomic_fetch_add(&t->gen, 1);
		} else {
			atomic_store(&t->state, KHEAP_FREE);
		}
	}
	kheap_main_tid = getpid();
	kheap_main_stack_hi = kheap_me && kheap_me != ME_DEAD ? kheap_me->stack_hi : 0;
	if (kheap_sample && kheap_ss_slots) {
		/* The parent's sampled blocks are not this trace's. */
		munmap(kheap_ss_slots, kheap_ss_cap * sizeof(*kheap_ss_slots));
		munmap(kheap_ss_filter, SS_FILTER * sizeof(*kheap_ss_filter));
		for (size_t i = 0; i < KHEAP_SS_BITS / 64; i++)
			atomic_store(&kheap_ss_bits[i], 0);
		for (size_t i = 0; i < KHEAP_SS_BITS0 / 64; i++)
			atomic_store(&kheap_ss_bits0[i], kheap_ss_pins0[i]);
		memset(kheap_ss_filter0, 0, sizeof(kheap_ss_filter0));
		kheap_ss_map();
	}
	kiln_hcols_reset(&kheap_w_ev);
	kiln_henc_release(&kheap_w_enc);
	kheap_agg_epoch = 0;
	kheap_w_stacks = 0;
	kheap_w_lost = 0;
	kheap_w_dropped = 0;
	kheap_w_last_flush = kheap_now();
	kheap_clock_pair(&kheap_w_c_raw, &kheap_w_c_ns);
	kheap_w_c_drawn = false;
	kheap_exit_tid = 0;
	atomic_store(&kheap_stalled, false);
	atomic_store(&kheap_wake_word, 0);
	/* The parent's fd (the child shares its file offset: closed here,
	 * if it is still kiln's, the parent's stays open). */
	kiln_kfd_close(&kheap_trace_kfd);
	/* The child's heap profile holds what it allocates itself. */
	if (kheap_agg_on)
		kheap_agg_reset();
	trace_pid = getpid();
	err = 0;
	if (kheap_trace_on) {
		snprintf(path, sizeof(path), "%s.%d", base_path, (int)getpid());
		free(kheap_trace_path);
		kheap_trace_path = strdup(path);
		err = kheap_trace_path ? kiln_keep_as_old(kheap_trace_path) : -ENOMEM;
		if (!err)
			err = open_trace(kheap_trace_path);
	} else {
		snprintf(path, sizeof(path), "the heap profiler");
	}
	if (!err)
		err = start_writer();
	if (err) {
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       path, strerror(-err));
		atomic_store(&kheap_on, false);
		start_err = err;
	}
	kiln_rt_guard--;
}

/* Writes the end record and stops (normal exit).  Waits at most 2 s. */
static void finish(void)
{
	int none = 0;
	struct timespec ts = { 0, 50000000 };
	int i;

	if (!kheap_writer_running || getpid() != trace_pid ||
	    !atomic_compare_exchange_strong(&kheap_finishing, &none, 1))
		return;
	kiln_rt_guard++;
	kheap_exit_tid = kheap_gettid();
	atomic_store(&kheap_on, false);
	atomic_store(&kheap_wake_word, 1);
	syscall(SYS_futex, &kheap_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (i = 0; i < 40 && atomic_load(&kheap_finishing) != 2; i++)
		syscall(SYS_futex, &kheap_finishing, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
	kiln_rt_guard--;
}

void kiln_htrace_exit_flush(void)
{
	finish();
}

/*
 * A writer round now, from a thread of the program (all: everything the
 * rings hold), with the allocation guard set.  Only in the process that
 * writes the trace (never a vfork child, which shares its parent's
 * memory).  Bounded: exec and a handler's dlclose() may come from a
 * thread that holds the lock (a snapshot of the embedding API); 0 or the
 * lock's error.
 */
static int round_now(bool all)
{
	struct timespec until;
	int rc;

	if (!kheap_writer_running || !kheap_trace_on || getpid() != trace_pid ||
	    atomic_load(&kheap_finishing))
		return 0;
	kiln_rt_guard++;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	rc = pthread_mutex_timedlock(&kheap_wlock, &until);
	if (!rc) {
		kheap_round(true, all, false);
		pthread_mutex_unlock(&kheap_wlock);
	}
	kiln_rt_guard--;
	return rc;
}

void kiln_htrace_exec_flush(void)
{
	/* Everything the rings hold, in one frame; no end record: the
	 * blocks live at exec were live when the image ended, and if exec
	 * fails tracing goes on. */
	int rc = round_now(true);

	if (rc) {
		kiln_rt_guard++;
		kiln_rt_log(KILN_LOG_INFO, "exec: the heap trace's last events "
			       "could not be written first: %s", strerror(rc));
		kiln_rt_guard--;
	}
}

void kiln_htrace_dlclose_flush(void)
{
	/* The round sees the library set changed since the last one (if it
	 * did) and writes the maps with the library in them, then every
	 * stack so far, which the reader names against those maps. */
	round_now(false);
}

/*
 * When the process started, in CLOCK_REALTIME ns (to a clock tick), or 0:
 * /proc/self/stat's starttime (ticks after boot) against CLOCK_BOOTTIME.
 */
/*
 * Whether path holds a trace that this very process wrote, in an image
 * before an exec: its header has this pid and a start after the
 * process's (a process that had the pid before ended before it started).
 */
static bool by_this_process(const char *path, unsigned long long started,
			    void *arg)
{
	struct kiln_heaptrace_info info = { 0 };
	size_t cap = 256 << 10, len = 0;
	struct stat st;
	char *buf;
	int fd;
	bool yes = false;

	(void)arg;
	/* A FIFO (a reader streaming the trace) would block an open
	 * without O_NONBLOCK: only regular files are traces kept. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	buf = malloc(cap);
	while (buf && len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	/* Tick-rounded start against a header timed after it: 20 ms of
	 * margin for the clocks. */
	if (buf && !kiln_heaptrace_peek(buf, len, &info) &&
	    info.pid == (uint64_t)getpid() &&
	    info.start_realtime_ns + 20000000ull >= started)
		yes = true;
	free(buf);
	return yes;
}

/*
 * exec keeps the pid: the image before wrote its trace to path (and
 * flushed it, kiln_htrace_exec_flush()).  It is kept as PATH.old, or
 * PATH.old.2, PATH.old.3, ... when earlier images of this process hold
 * those (names in the order the images ran), before this image starts
 * its own trace in path.  A stale file (another process's) at one of
 * these names is replaced.  0 or -errno (then nothing is overwritten).
 */
static int keep_earlier_image(const char *path)
{
	char *old;
	int err = kiln_keep_earlier_image(path, by_this_process, NULL, &old);

	if (old)
		kiln_rt_log(KILN_LOG_INFO, "exec: the heap trace of the image "
			       "before is kept as '%s'", old);
	free(old);
	return err;
}

/*
 * The last destructor to run in the process (libkiln.so is loaded before
 * the program's own objects), so frees by the program's atexit handlers
 * and static destructors are in the trace.
 */
void kiln_htrace_fini(void)
{
	finish();
}

static bool reserve_tables(void)
{
	kheap_st_ent = kheap_map_anon((ST_MAX + 2) * sizeof(*kheap_st_ent));
	kheap_st_slots = kheap_map_table(ST_SLOTS * sizeof(*kheap_st_slots));
	if (!kheap_st_ent || !kheap_st_slots)
		return false;
	/* Stack 1: the empty stack (the table full, no frame known). */
	kheap_st_ent[1] = kheap_st_empty;
	atomic_store(&kheap_st_count, 1);
	if (kheap_sample) {
		if (!kheap_ss_map())
			return false;
		/* Its pages written before any is read (see kheap_map_table()). */
		memset(kheap_ss_filter0, 0, sizeof(kheap_ss_filter0));
	}
	return true;
}


/* KILN_HEAP_SAMPLE, or def when unset (0 with a trace: every allocation;
 * KILN_HEAP_DEFAULT_SAMPLE for a heap profile alone). */
static void read_sample(uint64_t def)
{
	const struct kiln_env *e = kiln_env();

	kheap_sample = e->heap_sample_set ? e->heap_sample : def;
}


/*
 * Starts the hooks and the writer, with a trace to path (NULL: none, the
 * events only feed the aggregate).  start_lock held.  0 or -errno.
 */
static int start(const char *path)
{
	const char *clock;
	int err;

	kiln_rt_guard++;
	if (!kiln_htrace_available()) {
		kheap_say_no_interposer(path);
		kiln_rt_guard--;
		return -ENOTSUP;
	}
	kheap_malloc_lib->real_malloc();
	kheap_check_allocator();
	if (path) {
		/* Resolved at load, PATH.PID in a program the traced one
		 * started (runtime/env.c). */
		base_path = kiln_env()->trace.base;
		kheap_trace_path = strdup(kiln_env()->trace.path);
		if (!kheap_trace_path) {
			err = -ENOMEM;
			goto fail;
		}
	}
	if (!reserve_tables()) {
		err = -ENOMEM;
		goto fail;
	}
	kiln_henc_init(&kheap_w_enc);
	kheap_main_tid = getpid();
	if (kheap_gettid() == kheap_main_tid) {
		uint64_t lo, hi;

		if (!kiln_maps_find((uint64_t)(uintptr_t)__builtin_frame_address(0),
				    &lo, &hi))
			kheap_main_stack_hi = hi;
	}
	kheap_cfi = kiln_cfi_new();
	if (kheap_cfi) {
		/* A library's rows are built by the hook that first unwinds
		 * through one of its functions, at once (stacks are exact
		 * from the first allocation): parsing every loaded library
		 * at start cost about 3 ms of every profiled program. */
		kiln_cfi_set_lazy(kheap_cfi, true, NULL, NULL);
		kiln_cfi_set_build_now(kheap_cfi, true);
		{
			uint64_t lo, hi;

			kiln_rt_own_frames(&lo, &hi);
			kiln_cfi_set_skip(kheap_cfi, lo, hi);
		}
		kiln_cfi_refresh(kheap_cfi);
	}
	if (!pthread_key_create(&kheap_exit_key, kheap_on_thread_exit))
		kheap_have_key = true;
	if (path) {
		kheap_w_zstd = ZSTD_createCCtx();
		if (!kheap_w_zstd) {
			err = -ENOMEM;
			goto fail;
		}
		kheap_trace_on = true;
		err = keep_earlier_image(kheap_trace_path);
		/* Another run's trace at the name: kept as PATH.old. */
		if (!err)
			err = kiln_keep_as_old(kheap_trace_path);
		if (!err)
			err = open_trace(kheap_trace_path);
		if (err) {
			kheap_trace_on = false;
			goto fail;
		}
	} else {
		dl_iterate_phdr(kheap_dl_gen, &kheap_w_dl_gen);
	}
	trace_pid = getpid();
	kheap_w_last_flush = kheap_now();
	clock = kheap_clock_choose();
	kheap_clock_pair(&kheap_w_c_raw, &kheap_w_c_ns);
	kheap_w_c_drawn = false;
	err = start_writer();
	if (err)
		goto fail;
	if (!kheap_sample)
		/* Every free is recorded: the hooks' first filter says so. */
		for (size_t i = 0; i < KHEAP_SS_BITS0 / 64; i++)
			atomic_store(&kheap_ss_bits0[i], ~0ull);
	atomic_store(&kheap_on, true);
	if (path)
		kiln_rt_log(KILN_LOG_INFO, "heap trace to '%s' (%s, %s clock)",
			       kheap_trace_path,
			       kheap_sample ? "sampling" : "every allocation", clock);
	kiln_rt_guard--;
	return 0;
fail:
	if (path)
		kiln_rt_log(KILN_LOG_ERROR, "cannot write the heap trace '%s': %s",
			       kheap_trace_path ? kheap_trace_path : path, strerror(-err));
	else
		kiln_rt_log(KILN_LOG_ERROR, "cannot start the heap profiler: %s",
			       strerror(-err));
	kiln_rt_guard--;
	return err;
}

void kiln_htrace_init(void)
{
	const char *path = kiln_env()->trace.path;

	pthread_mutex_lock(&start_lock);
	if (!env_read) {
		env_read = true;
		if (path) {
			read_sample(0);
			start_err = start(path);
			start_tried = true;
		}
	}
	pthread_mutex_unlock(&start_lock);
}

int kiln_htrace_profile_start(void)
{
	int err = 0;

	kiln_htrace_init();
	pthread_mutex_lock(&start_lock);
	if (!start_tried) {
		start_tried = true;
		read_sample(KILN_HEAP_DEFAULT_SAMPLE);
		start_err = start(NULL);
	}
	err = start_err;
	if (!err && !kheap_agg_on) {
		pthread_mutex_lock(&kheap_wlock);
		kheap_agg_on = true;
		kheap_agg_epoch = ++kheap_w_enc.epoch;
		pthread_mutex_unlock(&kheap_wlock);
		if (kheap_sample)
			kiln_rt_log(KILN_LOG_INFO, "heap profile: one sample per "
				       "%llu bytes allocated",
				       (unsigned long long)kheap_sample);
		else
			kiln_rt_log(KILN_LOG_INFO, "heap profile: every allocation");
	}
	pthread_mutex_unlock(&start_lock);
	return err;
}

bool kiln_htrace_profiling(void)
{
	return kheap_agg_on && kheap_writer_running;
}

void kiln_htrace_stop(void)
{
	finish();
}

int kiln_htrace_snap_take(struct kiln_htrace_snap *out)
{
	struct timespec rt;
	int err;

	memset(out, 0, sizeof(*out));
	kiln_rt_guard++;
	pthread_mutex_lock(&kheap_wlock);
	if (!kheap_agg_on || !kheap_writer_running) {
		err = -ENOENT;
	} else {
		/* What the threads recorded up to now, unless the writer
		 * already did its last round (exit). */
		if (!atomic_load(&kheap_finishing))
			kheap_round(false, false, false);
		err = kheap_agg_copy(out);
	}
	pthread_mutex_unlock(&kheap_wlock);
	kiln_rt_guard--;
	out->sample_bytes = kheap_sample;
	clock_gettime(CLOCK_REALTIME, &rt);
	out->time_nanos = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	return err;
}

void kiln_htrace_snap_release(struct kiln_htrace_snap *s)
{
	kiln_rt_guard++;
	free(s->sites);
	kiln_rt_guard--;
	s->sites = NULL;
	s->n = 0;
}

const uint64_t *kiln_htrace_stack(uint32_t id, uint32_t *depth)
{
	const uint64_t *e;

	if (!id || !kheap_st_ent || id > atomic_load_explicit(&kheap_st_count, memory_order_acquire))
		return NULL;
	e = kheap_st_ent[id];
	*depth = (uint32_t)e[1];
	return e + 2;
}

void kiln_htrace_on_interval(uint64_t bytes, void (*fn)(void))
{
	pthread_mutex_lock(&kheap_wlock);
	kheap_agg_interval(bytes, fn);
	pthread_mutex_unlock(&kheap_wlock);
}

void kiln_htrace_load(void)
{
	kiln_rt_log_init();
	if (kiln_htrace_available()) {
		kheap_malloc_lib->real_malloc();
		kheap_malloc_lib->jemalloc_init();
		kheap_check_in_front();
	}
	kiln_htrace_init();
}


bool kiln_htrace_tracing(void)
{
	return kheap_writer_running && kheap_trace_on && atomic_load(&kheap_on);
}

void kiln_htrace_stats(struct kiln_htrace_stats *st)
{
	struct kheap_thread *t;

	memset(st, 0, sizeof(*st));
	for (t = atomic_load(&kheap_rings); t; t = t->next) {
		st->events += atomic_load(&t->events);
		st->lost += atomic_load(&t->lost);
	}
	st->stacks = atomic_load(&kheap_st_count);
	st->bytes_written = atomic_load(&kheap_st_written);
	st->frames = atomic_load(&kheap_st_frames);
}
