/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole zstd streams (format stage): inflating compressed input of other
 * tools (heaptrack's .zst traces) under the input limit, as gzip.c does
 * for gzip.  kiln's own heap traces are zstd frames read one by one by
 * heaptrace.c, and perf.data's compressed records by perfdata-zstd.c:
 * neither is inflated whole here.
 */
#include <errno.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/format.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/limit.h"

bool kiln_is_zstd(const char *data, size_t len)
{
	return len >= 4 && (unsigned char)data[0] == 0x28 &&
	       (unsigned char)data[1] == 0xb5 && (unsigned char)data[2] == 0x2f &&
	       (unsigned char)data[3] == 0xfd;
}

int kiln_unzstd(const char *data, size_t len, struct kiln_buf *out,
		struct kiln_diag *d)
{
	size_t limit = kiln_input_limit(), start = out->len, rc = 1;
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_DCtx *z = ZSTD_createDCtx();
	char lim[32];
	int err = 0;

	if (!z)
		return -ENOMEM;
	/* Concatenated frames are one stream to zstd(1): the loop goes on
	 * while input is left. */
	while (in.pos < in.size) {
		ZSTD_outBuffer o;

		/* Past the limit by a piece at most: the
		 * buffer stops there instead of doubling beyond it. */
		err = kiln_buf_grow_most(out, out->len - start < len ?
					 len * 4 + 65536 : out->len - start,
					 start + limit + 65536 + 2);
		if (err)
			goto out_free;
		o.dst = out->data + out->len;
		o.size = out->cap - out->len - 1;
		o.pos = 0;
		rc = ZSTD_decompressStream(z, &o, &in);
		out->len += o.pos;
		out->data[out->len] = '\0';
		if (ZSTD_isError(rc)) {
			err = ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation ?
			      -ENOMEM :
			      kiln_diag(d, "byte %zu: corrupt zstd data: %s", in.pos,
					ZSTD_getErrorName(rc));
			goto out_free;
		}
		if (out->len - start > limit) {
			err = kiln_diag(d, "byte %zu: the data inflates to more than "
					"%s, the limit for decompressed input (set "
					"KILN_MAX_INPUT to raise it)", in.pos,
					kiln_size_str(limit, lim, sizeof(lim)));
			goto out_free;
		}
		/* No progress with room left: the input is used up mid-frame. */
		if (in.pos == in.size && rc != 0 && o.pos < o.size)
			break;
	}
	if (rc != 0)
		err = kiln_diag(d, "byte %zu: the zstd stream is truncated (file "
				"cut short?)", len);
out_free:
	ZSTD_freeDCtx(z);
	return err;
}
