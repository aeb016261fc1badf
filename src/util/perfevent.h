/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The perf event record (util: below capture/ and format/, which both
 * make them): what the kernel's ring buffers (capture/perf.c) and a
 * perf.data file (format/perfdata-decode.c) are decoded into, and what
 * the recorder (session/) consumes, whichever it came from.  Types only,
 * and the register layout a sample's regs follow.
 */
#ifndef KILN_UTIL_PERFEVENT_H
#define KILN_UTIL_PERFEVENT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The user registers a sample carries, in the order of their bits
 * (PERF_SAMPLE_REGS_USER's layout): x86-64, AX BX CX DX SI DI BP SP IP
 * FLAGS CS SS (DS ES FS GS) R8-R15, everything but the segment
 * registers; arm64, x0-x30, sp, pc.
 */
#if defined(__x86_64__)
#define KILN_PERF_REGS_MASK (0xff0fffull & ~(0xfull << 12))
#elif defined(__aarch64__)
#define KILN_PERF_REGS_MASK ((1ull << 33) - 1)
#else
#define KILN_PERF_REGS_MASK 0ull
#endif

/*
 * One sample, pointing into its reader's buffers (kiln_perf's rings, a
 * perf.data file's records): valid during the callback.
 */
struct kiln_perf_sample {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t period;
	uint64_t ip;
	uint32_t cpu;
	uint64_t nr;			/* call chain entries, with context markers */
	const uint64_t *ips;
	uint64_t abi;			/* PERF_SAMPLE_REGS_ABI_*, 0: no regs */
	const uint64_t *regs;		/* as many as bits in KILN_PERF_REGS_MASK */
	uint64_t stack_size;		/* bytes copied */
	const char *stack;
	uint64_t stack_dyn;		/* bytes of it that are valid */
	bool user;			/* the sample hit user code */
	uint32_t raw_size;		/* PERF_SAMPLE_RAW bytes, 0: none */
	const char *raw;
	uint32_t column;		/* the value column of its event
					 * (kiln_rec_opts.columns), 0: the one */
};

enum kiln_perf_kind {
	KILN_PERF_SAMPLE,
	KILN_PERF_MMAP,		/* a new mapping */
	KILN_PERF_COMM,		/* a thread's name (exec: true on exec) */
	KILN_PERF_FORK,		/* a new process or thread */
	KILN_PERF_EXIT,
	KILN_PERF_LOST,		/* the kernel dropped `lost` records */
	KILN_PERF_SWITCH,	/* a thread left or got a CPU (context_switch) */
	KILN_PERF_READ,		/* an inherited task's count at its exit
				 * (attr.inherit_stat) */
};

struct kiln_perf_event {
	enum kiln_perf_kind kind;
	uint64_t time;
	union {
		struct kiln_perf_sample sample;
		struct {
			uint32_t pid, tid;
			uint64_t start, len, pgoff;
			uint32_t prot;
			uint32_t maj, min;
			uint64_t ino;
			uint8_t build_id[20];
			uint8_t build_id_size;	/* 0: none in the record */
			const char *filename;
			/* offline readers: the file to read for filename
			 * (a local copy or perf's build-id cache), NULL for
			 * none; live recording leaves it NULL and opens
			 * filename */
			const char *open_path;
		} mmap;
		struct {
			uint32_t pid, tid;
			const char *comm;
			bool exec;
		} comm;
		struct {
			uint32_t pid, ppid, tid, ptid;
			/* Live sessions with one event per thread: the
			 * thread kiln opened the writing event (or the one
			 * it inherited from) on, and which
			 * kiln_perf_open() that was; 0, 0: not known. */
			uint32_t by_tid, by_seq;
		} task;		/* FORK and EXIT */
		struct {
			uint64_t lost;
		} lost;
		struct {
			uint32_t pid, tid;
			uint64_t value;	/* read_format 0: the count alone */
		} read;
		struct {
			uint32_t pid, tid;
			bool out;	/* switched out (else in) */
			bool preempt;	/* out while still runnable */
		} sw;
	};
};

typedef void (*kiln_perf_fn)(void *ctx, const struct kiln_perf_event *ev);

#endif
