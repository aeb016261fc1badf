/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace's detection and header peek (format stage): is
 * this a heap trace, and whose (pid, ppid, start time, sample rate), from
 * the first bytes of the first frame, without the analysis.  The reader
 * is heaptrace-stream.c and heaptrace.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include "format/format.h"
#include "format/heapcols.h"
#include "format/heaptrace.h"
#include "util/varint.h"

bool kiln_heaptrace_detect(const char *data, size_t len)
{
	char head[9];
	ZSTD_DCtx *z;
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer out = { head, sizeof(head), 0 };
	int i;

	if (len >= 8 && !memcmp(data, "KILNHEAP", 8))
		return true;
	if (!kiln_is_zstd(data, len))
		return false;
	z = ZSTD_createDCtx();
	if (!z)
		return false;
	/* The first bytes come after a few steps at most. */
	for (i = 0; i < 16 && out.pos < out.size; i++) {
		size_t rc = ZSTD_decompressStream(z, &out, &in);

		if (ZSTD_isError(rc) || rc == 0)
			break;
	}
	ZSTD_freeDCtx(z);
	/* A first frame cut too short to tell is left to the reader, which
	 * says where it ends. */
	return out.pos < 8 || !memcmp(head, "KILNHEAP", 8);
}

/*
 * A varint of p[*i..n), or false when it does not end there.  Bits above
 * the 64th in a tenth byte are dropped: the peek only recognizes a trace,
 * the reader names what is wrong with one.
 */
static bool peek_uv(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
	int got = kiln_varint_get_proto(p + *i, n - *i, v);

	if (got <= 0)
		return false;
	*i += (size_t)got;
	return true;
}

int kiln_heaptrace_peek(const char *data, size_t len,
			struct kiln_heaptrace_info *info)
{
	const struct kiln_hrec *hr = &kiln_hrecs[KILN_HREC_HEADER];
	unsigned char out[8192];
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_outBuffer o = { out, sizeof(out), 0 };
	uint64_t version, ncol, len_of[KILN_HCOL_N], v[4];
	size_t i = 8, at[KILN_HCOL_N], k;
	ZSTD_DCtx *z;

	if (!kiln_is_zstd(data, len))
		return -EINVAL;
	z = ZSTD_createDCtx();
	if (!z)
		return -ENOMEM;
	/* The first frame only: the header is in its first bytes. */
	while (o.pos < o.size && in.pos < in.size) {
		size_t rc = ZSTD_decompressStream(z, &o, &in);

		if (ZSTD_isError(rc) || rc == 0)
			break;
	}
	ZSTD_freeDCtx(z);
	if (o.pos < 8 || memcmp(out, "KILNHEAP", 8) ||
	    !peek_uv(out, o.pos, &i, &version) || version != KILN_HEAPTRACE_VERSION ||
	    !peek_uv(out, o.pos, &i, &ncol) || ncol < KILN_HCOL_N || ncol > 64)
		return -EINVAL;
	for (k = 0; k < ncol; k++) {
		uint64_t l;

		if (!peek_uv(out, o.pos, &i, &l))
			return -EINVAL;
		if (k < KILN_HCOL_N)
			len_of[k] = l;
	}
	/* The columns follow the table, back to back; those past the bytes
	 * inflated start at their end (a field there is cut short). */
	for (k = 0; k < KILN_HCOL_N; k++) {
		at[k] = i;
		i = len_of[k] < o.pos - i ? i + (size_t)len_of[k] : o.pos;
	}
	/* The first record is H, and its integer fields come first in the
	 * columns format/heapcols.h puts them in, as the decoder reads them. */
	if (!len_of[KILN_HCOL_TAG] || len_of[KILN_HCOL_TAG] > o.pos - at[0] ||
	    out[at[KILN_HCOL_TAG]] != hr->tag)
		return -EINVAL;
	for (k = 0; k < 4; k++)
		if (hr->f[k].code != KILN_HF_UV ||
		    !peek_uv(out, o.pos, &at[hr->f[k].col], &v[k]))
			return -EINVAL;
	info->version = version;
	info->pid = v[0];
	info->ppid = v[1];
	info->start_realtime_ns = v[2];
	info->sample_bytes = v[3];
	return 0;
}
