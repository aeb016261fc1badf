/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen-heaptrace: writes a valid kiln heap trace (docs/heap-trace.md) of a
 * chosen number of events, fast, for the kiln serve tests and bench/
 * (a traced program of 100 M events takes minutes; this takes seconds).
 * Not part of kiln; it uses kiln's own encoder (format/heapenc.h), as
 * libkiln.so's writer thread does.
 *
 * The trace looks like a server that leaks on its way to running out of
 * memory: one thread allocates blocks of varied sizes from STACKS call
 * stacks (depth 8), keeps the last 1000 live (each allocation frees the
 * oldest), and keeps one in a hundred for good (the heap grows steadily).
 * Events are evenly spread over SPAN ms; frames hold 65536 events, or
 * FRAME_EVENTS (a trace of few big frames: kiln serve's time index marks
 * frame boundaries only, so its ranges are read the slow way).
 *
 * usage: gen-heaptrace -n EVENTS [-k STACKS] [-t SPAN_MS] [-f FRAME_EVENTS]
 *        -o FILE
 * Prints a one-line summary on stderr.  Exit 0, 1 (write failed), 2 (usage).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "format/heapenc.h"
#include "util/buf.h"

#define KEEP 1000		/* blocks kept live, the oldest freed */
#define BATCH 4096		/* events per run handed to the encoder */
#define FRAME_EVENTS 65536	/* events per zstd frame, by default */
#define MAPS "00400000-00500000 r-xp 00000000 08:01 42 /opt/gen/server\n"

struct gen {
	struct kiln_hcols c;
	struct kiln_henc enc;
	FILE *out;
	size_t frames, bytes;
	struct kiln_buf raw, z;
};

static int write_frame(struct gen *g)
{
	const struct kiln_hcols *parts[1] = { &g->c };
	size_t cap, n;
	int err;

	kiln_buf_reset(&g->raw);
	err = kiln_hcols_frame(parts, 1, g->frames == 0, &g->raw);
	if (err)
		return err;
	cap = ZSTD_compressBound(g->raw.len);
	kiln_buf_reset(&g->z);
	err = kiln_buf_grow(&g->z, cap + 1);
	if (err)
		return err;
	n = ZSTD_compress(g->z.data, cap, g->raw.data, g->raw.len, 1);
	if (ZSTD_isError(n))
		return -EIO;
	if (fwrite(g->z.data, 1, n, g->out) != n)
		return -EIO;
	g->frames++;
	g->bytes += n;
	kiln_hcols_reset(&g->c);
	return 0;
}

static int flush_run(struct gen *g, const struct kiln_hev *run, size_t n)
{
	struct kiln_hev *e = kiln_henc_reserve(&g->enc, n);
	int err;

	if (!e)
		return -ENOMEM;
	memcpy(e, run, n * sizeof(*e));
	err = kiln_henc_commit(&g->enc, n);
	if (!err)
		err = kiln_henc_emit(&g->enc, UINT64_MAX, &g->c, NULL, NULL);
	return err;
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[8] = { 16, 48, 128, 256, 1024, 64, 4096, 32 };
	struct gen g = { 0 };
	struct kiln_hev run[BATCH];
	uint64_t n = 0, span_ms = 10000, i, nstacks = 64, ring[KEEP] = { 0 };
	uint64_t ptr = 0x10000000, live = 0, t0 = 1000000000ull;
	const char *path = NULL;
	size_t nrun = 0, since_frame = 0, frame_events = FRAME_EVENTS;
	int c, err = 0;

	while ((c = getopt(argc, argv, "n:k:t:f:o:")) != -1) {
		switch (c) {
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'k': nstacks = strtoull(optarg, NULL, 10); break;
		case 't': span_ms = strtoull(optarg, NULL, 10); break;
		case 'f': frame_events = strtoull(optarg, NULL, 10); break;
		case 'o': path = optarg; break;
		default: goto usage;
		}
	}
	if (!n || !path || !nstacks || nstacks > 100000 || !span_ms ||
	    !frame_events)
		goto usage;
	g.out = fopen(path, "wb");
	if (!g.out) {
		fprintf(stderr, "gen-heaptrace: cannot open '%s': %s\n", path,
			strerror(errno));
		return 1;
	}
	kiln_henc_init(&g.enc);
	err = kiln_hcols_header(&g.c, 4242, 1, 1700000000000000000ull, 0,
				"server\0--oom\0", 13);
	if (!err)
		err = kiln_hcols_maps(&g.c, MAPS, strlen(MAPS));
	for (i = 1; i <= nstacks && !err; i++) {
		uint64_t pcs[8];
		int d;

		/* Leaf first; callers shared near the root, as in a program. */
		for (d = 0; d < 8; d++)
			pcs[d] = 0x401000 + (d < 4 ? i * 0x40 + d * 0x8 :
					     (uint64_t)(8 - d) * 0x1000 + (i % 4) * 0x10);
		err = kiln_hcols_stack(&g.c, i, pcs, 8);
	}
	/* Events: allocations and frees in turn (a free every allocation
	 * once KEEP are live, but not for the kept ones). */
	for (i = 0; i < n && !err; i++) {
		struct kiln_hev *e = &run[nrun++];
		uint64_t slot = live % KEEP;

		memset(e, 0, sizeof(*e));
		e->t = t0 + i * (span_ms * 1000000ull) / n;
		e->tid = 1;
		if ((i & 1) && ring[slot]) {
			e->kind = KILN_HEV_FREE;
			e->ptr = ring[slot];
			ring[slot] = 0;
		} else {
			e->kind = KILN_HEV_ALLOC;
			e->ptr = ptr;
			e->size = sizes[i % 8] + (i % 7) * 8;
			e->stack = (uint32_t)(1 + (i / 1024 + i % 3) % nstacks);
			ptr += 8192;
			if (i % 100 != 0) {	/* one in a hundred leaks */
				ring[live % KEEP] = e->ptr;
				live++;
			}
		}
		if (nrun == BATCH) {
			err = flush_run(&g, run, nrun);
			since_frame += nrun;
			nrun = 0;
			if (!err && since_frame >= frame_events) {
				err = write_frame(&g);
				since_frame = 0;
			}
		}
	}
	if (!err && nrun)
		err = flush_run(&g, run, nrun);
	if (!err) {
		memset(run, 0, sizeof(run[0]));
		run[0].t = t0 + span_ms * 1000000ull;
		run[0].tid = 1;
		run[0].kind = KILN_HEV_END;
		err = flush_run(&g, run, 1);
	}
	if (!err)
		err = write_frame(&g);
	if (fclose(g.out) && !err)
		err = -EIO;
	kiln_henc_release(&g.enc);
	kiln_hcols_release(&g.c);
	kiln_buf_release(&g.raw);
	kiln_buf_release(&g.z);
	if (err) {
		fprintf(stderr, "gen-heaptrace: cannot write '%s': %s\n", path,
			strerror(-err));
		return 1;
	}
	fprintf(stderr, "gen-heaptrace: %llu events over %llu ms, %zu frames, "
		"%zu bytes\n", (unsigned long long)n, (unsigned long long)span_ms,
		g.frames, g.bytes);
	return 0;
usage:
	fprintf(stderr, "usage: gen-heaptrace -n EVENTS [-k STACKS] [-t SPAN_MS] "
		"[-f FRAME_EVENTS] -o FILE\n");
	return 2;
}
