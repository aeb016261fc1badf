/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf.data reader (format stage), the compressed records: `perf record
 * -z` writes what it reads from the ring buffers as PERF_RECORD_COMPRESSED
 * records (COMPRESSED2 since perf 6.15: with the payload's length, the
 * record padded to 8 bytes), each holding the next piece of one zstd
 * stream that perf flushes, never ends, after each piece.  So one
 * decompression context inflates them all, in file order, and the bytes
 * they inflate to are records as if they had been in the file, a record
 * sometimes cut between two pieces (perf's session.c carries the rest of
 * one piece over to the next).  perfdata.c walks them; this file inflates
 * them onto pd->unz and says where an inflated byte came from.
 *
 * What they inflate to is held in memory, and capped by the input limit
 * (util/limit.h, KILN_MAX_INPUT): a few kilobytes of zstd can claim
 * gigabytes.  Layout facts from linux tools/perf/util/session.c
 * (perf_session__process_compressed_event) and util/zstd.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/perfdata.h"
#include "util/limit.h"

#define REC_COMPRESSED2 83	/* header, u64 data_size, data */

/* The inflated records are read where they lie: the segment table tells
 * a message which compressed record a byte came from. */
static int add_seg(struct pd *pd, size_t file_off)
{
	if (kiln_array_grow((void **)&pd->zsegs, &pd->zsegs_alloc,
			    pd->nzsegs + 1, sizeof(*pd->zsegs)))
		return -ENOMEM;
	pd->zsegs[pd->nzsegs++] = (struct zseg){ pd->unz.len, file_off };
	return 0;
}

int kiln_perfdata_inflate(struct pd *pd, size_t off, uint32_t type,
			  uint16_t size)
{
	const char *rec = pd->data + off;
	size_t limit = kiln_input_limit(), hdr = 8, n;
	ZSTD_inBuffer in;
	bool full;
	char lim[32];
	int err;

	if (type == REC_COMPRESSED2) {
		if (size < 16)
			return bad(pd, off, "a compressed record of %u bytes", size);
		if (u64(rec + 8) > (uint64_t)size - 16)
			return bad(pd, off, "a compressed record of %u bytes says "
				   "it holds %llu", size,
				   (unsigned long long)u64(rec + 8));
		hdr = 16;
		n = (size_t)u64(rec + 8);
	} else {
		n = (size_t)size - 8;
	}
	if (!pd->zctx) {
		pd->zctx = ZSTD_createDCtx();
		if (!pd->zctx)
			return -ENOMEM;
	}
	err = add_seg(pd, off);
	if (err)
		return err;
	in = (ZSTD_inBuffer){ rec + hdr, n, 0 };
	/* Until the piece is used up and the context has nothing left to
	 * give (an output buffer it filled may not have been enough). */
	do {
		/* One byte past the limit tells "more than the limit" from
		 * "exactly the limit". */
		size_t room = limit - pd->unz.len + 1, rc;
		ZSTD_outBuffer out;

		if (room > 4 * n + 65536)
			room = 4 * n + 65536;
		err = kiln_buf_grow(&pd->unz, room);
		if (err)
			return err;
		out = (ZSTD_outBuffer){ pd->unz.data + pd->unz.len, room, 0 };
		rc = ZSTD_decompressStream(pd->zctx, &out, &in);
		if (ZSTD_isError(rc)) {
			if (ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
				return -ENOMEM;
			return bad(pd, off, "a compressed record (perf record -z) "
				   "does not inflate: %s (file damaged?)",
				   ZSTD_getErrorName(rc));
		}
		pd->unz.len += out.pos;
		pd->unz.data[pd->unz.len] = '\0';
		if (pd->unz.len > limit)
			return bad(pd, off, "the compressed records inflate to more "
				   "than %s, the limit for decompressed input (set "
				   "KILN_MAX_INPUT to raise it)",
				   kiln_size_str(limit, lim, sizeof(lim)));
		full = out.pos == out.size;
	} while (in.pos < in.size || full);
	return 0;
}

void kiln_perfdata_inflate_release(struct pd *pd)
{
	ZSTD_freeDCtx(pd->zctx);
	pd->zctx = NULL;
	free(pd->zsegs);
	pd->zsegs = NULL;
	pd->nzsegs = pd->zsegs_alloc = 0;
	kiln_buf_release(&pd->unz);
}

const char *kiln_perfdata_where(const struct pd *pd, size_t off, char *buf,
				size_t n)
{
	size_t lo = 0, hi = pd->nzsegs, u;

	if (off < pd->len || !pd->nzsegs) {
		snprintf(buf, n, "byte %zu", off);
		return buf;
	}
	/* The last segment that starts at or before the byte. */
	u = off - pd->len;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->zsegs[mid].unz <= u)
			lo = mid;
		else
			hi = mid;
	}
	snprintf(buf, n, "byte %zu (a compressed record; byte %zu of what the "
		 "compressed records inflate to)", pd->zsegs[lo].file, u);
	return buf;
}
