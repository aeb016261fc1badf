/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-any-file entry point (format stage): gzip, zstd and UTF-16
 * undone, then the format told by detection (detect.c) and read by its
 * reader.
 *
 * Detection weighs every format against the file and reads it as the
 * likeliest.  A format told by a magic number or a header of its own
 * ("confident") is the only one tried, and its reader's complaint is the
 * answer ("read as perf.data: byte 96: ...").  Otherwise the file is only
 * text or JSON of no clear shape: each format it might be is tried in
 * turn, and when none takes it the message lists them all and says why
 * the likeliest two refused it, rather than naming one it plainly is not.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "format/heaptrace.h"
#include "format/detect.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/limit.h"

int kiln_read_profile(const char *path, struct kiln_prof **out,
		      enum kiln_fmt *fmtp, struct kiln_diag *d)
{
	return kiln_read_profile_keep(path, out, fmtp, NULL, d);
}

/* Reads data as format e into a new *out.  0, -ENOMEM, or -EINVAL with
 * inner filled. */
static int read_as(const struct kiln_fmt_cand *e, const char *data,
		   size_t len, struct kiln_prof **out, struct kiln_diag *inner)
{
	struct kiln_prof *p = kiln_prof_new();
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	inner->msg[0] = '\0';
	inner->warn[0] = '\0';
	err = e->read(p, data, len, inner);
	if (!err)
		err = kiln_prof_error(p);
	if (err == -EINVAL && !inner->msg[0])
		kiln_diag(inner, "not readable");
	/* The model's own check (kiln_prof_note_mag()), where the reader
	 * said nothing: a bad input as any other. */
	if (err == -EOVERFLOW) {
		if (!inner->msg[0])
			kiln_diag(inner, "the values of a sample type add up past "
				  "2^63 (a value too large)");
		err = -EINVAL;
	}
	if (err) {
		kiln_prof_free(p);
		return err;
	}
	*out = p;
	return 0;
}

/*
 * The refusal of a file no reader takes: every format tried, then why the
 * likeliest two (those whose readers ran, in why[]) refused it.
 */
static int refuse(const char *path, const struct kiln_fmt_sniff *s,
		  const struct kiln_fmt_info *const *who,
		  struct kiln_diag *why, size_t nwhy, struct kiln_diag *d)
{
	char list[512];

	kiln_fmt_list_tried(list, sizeof(list));
	if (!nwhy && s->len >= 4 && !memcmp(s->data, "\177ELF", 4))
		return kiln_diag(d, "'%s' is an ELF file (a program or library), "
				 "not a profile; to name a profile's addresses "
				 "with it, give it before the profile, as pprof "
				 "takes it: kiln top %s PROFILE", path, path);
	if (!nwhy)
		return kiln_diag(d, "'%s': no reader accepts it (formats tried: "
				 "%s): %s data (first byte 0x%02x) with none's "
				 "magic number or header", path, list,
				 s->text ? "text" : "binary",
				 (unsigned char)s->data[0]);
	if (nwhy == 1)
		return kiln_diag(d, "'%s': no reader accepts it (formats tried: "
				 "%s); not %s: %.300s", path, list, who[0]->name,
				 why[0].msg);
	return kiln_diag(d, "'%s': no reader accepts it (formats tried: %s); "
			 "not %s: %.200s; not %s: %.200s", path, list,
			 who[0]->name, why[0].msg, who[1]->name, why[1].msg);
}

int kiln_read_profile_keep(const char *path, struct kiln_prof **out,
			   enum kiln_fmt *fmtp, struct kiln_buf *trace,
			   struct kiln_diag *d)
{
	struct kiln_map m;
	int err;

	*out = NULL;
	if (d)
		d->warn[0] = '\0';
	err = kiln_map_open(&m, path);
	if (err == -EFBIG) {
		char lim[32];

		return kiln_diag(d, "'%s': more than %s of input, the limit for "
				 "what is not a regular file (an endless input? set "
				 "KILN_MAX_INPUT to raise it)", path,
				 kiln_size_str(kiln_input_limit(), lim, sizeof(lim)));
	}
	if (err)
		return err;
	err = kiln_read_profile_data(path, m.data, m.len, out, fmtp, trace, d);
	/* The readers copied what they keep. */
	kiln_map_release_later(&m);
	return err;
}

int kiln_read_profile_data(const char *path, const void *bytes, size_t len,
			   struct kiln_prof **out, enum kiln_fmt *fmtp,
			   struct kiln_buf *trace, struct kiln_diag *d)
{
	struct kiln_buf raw = KILN_BUF_INIT, unz = KILN_BUF_INIT, conv = KILN_BUF_INIT;
	struct kiln_diag inner = { "" }, why[2] = { { "" }, { "" } };
	const struct kiln_fmt_info *who[2] = { NULL, NULL };
	struct kiln_prof *p = NULL;
	struct kiln_fmt_cand c[KILN_FMT_MAX_ROWS];
	struct kiln_fmt_sniff s;
	const char *data = bytes;
	size_t n, i, nwhy = 0;
	int err;

	*out = NULL;
	if (d)
		d->warn[0] = '\0';
	if (len == 0) {
		err = kiln_diag(d, "'%s': the file is empty", path);
		goto out_release;
	}
	if (kiln_is_gzip(data, len)) {
		err = kiln_gunzip(data, len, &raw, &inner);
		if (err) {
			if (err == -EINVAL)
				kiln_diag(d, "'%s': read as gzip: %s", path,
					  inner.msg);
			goto out_release;
		}
		data = raw.data;
		len = raw.len;
		if (len == 0) {
			err = kiln_diag(d, "'%s': the file is empty once decompressed",
					path);
			goto out_release;
		}
	}
	/* zstd that is not a kiln heap trace (whose frames heaptrace.c
	 * reads one by one): another tool's, heaptrack's .zst (into a
	 * buffer of its own: a gzip's bytes may be what it reads). */
	if (kiln_is_zstd(data, len) && !kiln_heaptrace_detect(data, len)) {
		err = kiln_unzstd(data, len, &unz, &inner);
		if (err) {
			if (err == -EINVAL)
				kiln_diag(d, "'%s': read as zstd: %s", path,
					  inner.msg);
			goto out_release;
		}
		data = unz.data;
		len = unz.len;
		if (len == 0) {
			err = kiln_diag(d, "'%s': the file is empty once decompressed",
					path);
			goto out_release;
		}
	}
	/* Once, for every text reader: UTF-16 becomes UTF-8, a byte order
	 * mark goes. */
	err = kiln_text_utf8(&data, &len, &conv);
	if (err)
		goto out_release;
	if (len == 0) {
		err = kiln_diag(d, "'%s': the file holds no text but its byte "
				"order mark", path);
		goto out_release;
	}
	kiln_fmt_sniff_init(&s, data, len);
	n = kiln_fmt_candidates(&s, c);
	if (n && c[0].score >= KILN_FMT_CONFIDENT && trace &&
	    c[0].f->fmt == KILN_FMT_HEAPTRACE) {
		/* Kept for the caller, who analyses it (format.h). */
		err = kiln_buf_add(trace, data, len);
		if (err)
			goto out_release;
		if (fmtp)
			*fmtp = KILN_FMT_HEAPTRACE;
		goto out_release;
	}
	if (n && c[0].score >= KILN_FMT_CONFIDENT) {
		/* Plainly this format: its reader's complaint is the answer. */
		err = read_as(&c[0], data, len, &p, &inner);
		if (err == -EINVAL)
			kiln_diag(d, "'%s': read as %s: %s", path, c[0].f->name,
				  inner.msg);
		if (err)
			goto out_release;
		i = 0;
	} else {
		for (i = 0; i < n; i++) {
			err = read_as(&c[i], data, len, &p, &inner);
			if (err != -EINVAL)
				break;
			if (nwhy < 2) {
				who[nwhy] = c[i].f;
				why[nwhy++] = inner;
			}
		}
		if (i == n) {
			err = refuse(path, &s, who, why, nwhy, d);
			goto out_release;
		}
		if (err)
			goto out_release;
	}
	if (trace && c[i].f->fmt == KILN_FMT_HEAPTRACE &&
	    kiln_buf_add(trace, data, len)) {
		kiln_prof_free(p);
		err = -ENOMEM;
		goto out_release;
	}
	if (inner.warn[0] && d)
		snprintf(d->warn, sizeof(d->warn), "'%s': %.300s", path, inner.warn);
	if (fmtp)
		*fmtp = c[i].f->fmt;
	*out = p;
out_release:
	kiln_buf_release(&conv);
	kiln_buf_release(&unz);
	kiln_buf_release(&raw);
	return err;
}
