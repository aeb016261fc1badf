/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's embedding API (libkiln.so, pkg-config kiln): CPU and heap
 * profiling of the calling process from inside, and the HTTP endpoints
 * that `go tool pprof` fetches.  The same library is the LD_PRELOAD agent:
 * with KILN_CPU / CPUPROFILE, KILN_HEAP / HEAPPROFILE or KILN_HTTP set it
 * starts by itself (see docs/agent.md, docs/heap.md).
 *
 * Heap profiling needs the malloc interposer as well, a library of its
 * own so that without it no allocation passes through kiln: link it too,
 * `pkg-config --libs kiln-malloc` (-Wl,--no-as-needed -lkiln-malloc: a
 * linker that drops unneeded libraries would drop it), or preload it
 * beside libkiln.so.
 *
 * Every function returns 0 or a negative errno and is thread-safe.  None
 * may be called from a signal handler.
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#ifdef __cplusplus
extern "C" {
#endif

struct kiln_cpu_opts {
	int hz;		/* samples per second of CPU time; 0: 99 */
	unsigned flags;	/* KILN_CPU_* */
};
/*
 * Wall-clock time instead of CPU time: every thread sampled hz times per
 * second whether it runs or waits (KILN_CPU_MODE=wall); sample type
 * wall/nanoseconds, a `state` label (running, sleeping, blocked-io).
 */
#define KILN_CPU_WALL 1u

/*
 * Starts CPU profiling of every thread of the process (threads created
 * later included).  -EBUSY if a CPU profile is already being taken (by
 * this API, CPUPROFILE or an HTTP request), -EINVAL for a bad hz.
 */
int kiln_cpu_start(const struct kiln_cpu_opts *opts);

/*
 * Stops CPU profiling and writes the profile, symbolized, as gzipped
 * pprof to path (a temporary name, then rename(2)).  -ENOENT if no
 * profile was being taken, -errno if the file cannot be written.
 */
int kiln_cpu_stop_write(const char *path);

/* Whether a CPU profile is being taken. */
int kiln_cpu_running(void);

/*
 * Starts heap profiling of the process, if it is not on already (by
 * KILN_HEAP / HEAPPROFILE, KILN_HEAP_TRACE, the HTTP server or an earlier
 * call): from now on, one allocation per KILN_HEAP_SAMPLE bytes on
 * average (default 524288; 0: every allocation) is recorded with its call
 * stack, and its free.  Allocations made before are not seen.  -errno if
 * the profiler cannot start: -ENOTSUP without the malloc interposer.
 */
int kiln_heap_start(void);

/*
 * Writes the heap profile of the process to path as gzipped pprof (a
 * temporary name, then rename(2)): per call stack, alloc_objects and
 * alloc_space since heap profiling started, inuse_objects and
 * inuse_space live now, symbolized.  Starts heap profiling first if it
 * was off (the profile is then nearly empty: call kiln_heap_start()
 * early).  -EINVAL for a NULL path, -ENOTSUP without the malloc
 * interposer, -errno if the file cannot be written.
 */
int kiln_heap_write(const char *path);

struct kiln_http;

/*
 * Serves the /debug/pprof/ endpoints on addr ("127.0.0.1:6060",
 * "[::1]:6060", ":6060" for every address, port 0 for any free port) from
 * a thread of its own.  *srv receives the server.  -EADDRINUSE, -EINVAL
 * for a bad address, -ENOMEM.
 */
int kiln_http_start(const char *addr, struct kiln_http **srv);
/* The port the server listens on (useful with port 0). */
int kiln_http_port(const struct kiln_http *srv);
/* Stops the server and frees it; NULL is fine. */
int kiln_http_stop(struct kiln_http *srv);

#ifdef __cplusplus
}
#endif

#endif
