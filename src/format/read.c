/*
 * Format detection, gzip, and the read-any-file entry point (format stage).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "format/format.h"
#include "format/heaptrace.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/limit.h"

static const char *const names[] = {
	[KILN_FMT_UNKNOWN] = "unknown",
	[KILN_FMT_PPROF] = "pprof",
	[KILN_FMT_COLLAPSED] = "collapsed",
	[KILN_FMT_PERF_SCRIPT] = "perf-script",
	[KILN_FMT_GPERFTOOLS] = "gperftools",
	[KILN_FMT_SPEEDSCOPE] = "speedscope",
	[KILN_FMT_HEAPTRACE] = "heap-trace",
	[KILN_FMT_PERF_DATA] = "perf.data",
	[KILN_FMT_LEGACY_HEAP] = "legacy-heap",
	[KILN_FMT_LEGACY_COUNT] = "legacy-count",
	[KILN_FMT_LEGACY_THREAD] = "legacy-thread",
	[KILN_FMT_LEGACY_CONTENTION] = "legacy-contention",
	[KILN_FMT_LEGACY_JAVA] = "legacy-java",
};

const char *kiln_fmt_name(enum kiln_fmt f)
{
	return f < sizeof(names) / sizeof(names[0]) ? names[f] : "unknown";
}

enum kiln_fmt kiln_fmt_parse(const char *name)
{
	size_t i;

	for (i = 1; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (enum kiln_fmt)i;
	if (!strcmp(name, "perf") || !strcmp(name, "perfscript"))
		return KILN_FMT_PERF_SCRIPT;
	if (!strcmp(name, "folded"))
		return KILN_FMT_COLLAPSED;
	return KILN_FMT_UNKNOWN;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

enum kiln_fmt kiln_fmt_from_ext(const char *path)
{
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pb") ||
	    ends_with(path, ".pprof"))
		return KILN_FMT_PPROF;
	if (ends_with(path, ".collapsed") || ends_with(path, ".folded") ||
	    ends_with(path, ".txt"))
		return KILN_FMT_COLLAPSED;
	if (ends_with(path, ".json") || ends_with(path, ".speedscope"))
		return KILN_FMT_SPEEDSCOPE;
	if (ends_with(path, ".perf") || ends_with(path, ".perf-script") ||
	    ends_with(path, ".script"))
		return KILN_FMT_PERF_SCRIPT;
	/* Read only: named so that a writer can refuse them by name. */
	if (ends_with(path, ".heap") || ends_with(path, ".growth"))
		return KILN_FMT_LEGACY_HEAP;
	if (ends_with(path, ".contention"))
		return KILN_FMT_LEGACY_CONTENTION;
	if (ends_with(path, ".thread"))
		return KILN_FMT_LEGACY_THREAD;
	return KILN_FMT_UNKNOWN;
}

bool kiln_is_gzip(const char *data, size_t len)
{
	return len >= 2 && (unsigned char)data[0] == 0x1f &&
	       (unsigned char)data[1] == 0x8b;
}

/* The first line that is neither blank nor a '#' comment. */
static const char *first_line(const char *data, size_t len, size_t *ll)
{
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *q = p;

		while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < e && *q != '#') {
			*ll = (size_t)(e - p);
			return p;
		}
		p = e + 1;
	}
	return NULL;
}

static bool is_text(const char *data, size_t len)
{
	size_t i, n = len < 4096 ? len : 4096;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)data[i];

		if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
			return false;
	}
	return true;
}

/* A token "DIGITS.DIGITS:" followed by a blank: perf script's time. */
static bool has_time_stamp(const char *line, size_t ll)
{
	size_t i = 0, j;

	while (i < ll) {
		while (i < ll && (line[i] == ' ' || line[i] == '\t'))
			i++;
		j = i;
		while (j < ll && line[j] >= '0' && line[j] <= '9')
			j++;
		if (j > i && j + 2 < ll && line[j] == '.' &&
		    line[j + 1] >= '0' && line[j + 1] <= '9') {
			j++;
			while (j < ll && line[j] >= '0' && line[j] <= '9')
				j++;
			if (j < ll && line[j] == ':' &&
			    (j + 1 == ll || line[j + 1] == ' ' ||
			     line[j + 1] == '\t' || line[j + 1] == '\r'))
				return true;
		}
		while (i < ll && line[i] != ' ' && line[i] != '\t')
			i++;
	}
	return false;
}

enum kiln_fmt kiln_fmt_detect(const char *data, size_t len)
{
	enum kiln_fmt legacy;
	const char *line, *nl;
	size_t ll;

	if (kiln_perfdata_detect(data, len))
		return KILN_FMT_PERF_DATA;
	/* gperftools: header words 0, 3 (count), 0 (version), 32- or 64-bit. */
	if (len >= 16) {
		uint64_t w[2];
		uint32_t v[2];

		memcpy(w, data, 16);
		memcpy(v, data, 8);
		if ((w[0] == 0 && w[1] == 3) || (v[0] == 0 && v[1] == 3))
			return KILN_FMT_GPERFTOOLS;
	}
	/* zstd frames whose stream starts with 'H' "KILNHEAP" */
	if (kiln_heaptrace_detect(data, len))
		return KILN_FMT_HEAPTRACE;
	if (!is_text(data, len)) {
		/* A protobuf Profile starts with a field key of wire type 2
		 * (length-delimited: sample_type, sample, mapping, ...) or 0. */
		unsigned char c = (unsigned char)data[0];

		if ((c & 7) == 2 || (c & 7) == 0)
			return KILN_FMT_PPROF;
		return KILN_FMT_UNKNOWN;
	}
	/* Before the guesses below: "heap profile: 1: 2 [ 3: 4] @ ..." has
	 * the ':' and '[' of a perf script line, "threadcreate profile:
	 * total 7" the count of a collapsed one. */
	legacy = kiln_legacy_detect(data, len);
	if (legacy != KILN_FMT_UNKNOWN)
		return legacy;
	line = first_line(data, len, &ll);
	if (!line)
		return KILN_FMT_UNKNOWN;
	if (line[0] == '{')
		return KILN_FMT_SPEEDSCOPE;
	/* perf script: a frame line first ("\t ADDR SYM (DSO)", for a clear
	 * error), or a header with a time stamp ("COMM TID 12.345678: ..."),
	 * also without -g where the header is right-aligned. */
	if (line[0] == '\t' || has_time_stamp(line, ll))
		return KILN_FMT_PERF_SCRIPT;
	/* perf script: a header line, then tab- or space-indented frames. */
	nl = line + ll;
	if (nl < data + len && nl + 1 < data + len &&
	    (nl[1] == '\t' || nl[1] == ' ') && line[0] != ' ' && line[0] != '\t')
		return KILN_FMT_PERF_SCRIPT;
	{
		/* collapsed: "frame;frame;frame COUNT" */
		const char *e = line + ll;

		while (e > line && (e[-1] == '\r' || e[-1] == ' '))
			e--;
		/* perf script without time whose header ends with the event
		 * ("java 19983 cycles:"), frames not indented (old perf). */
		if (e > line && e[-1] == ':')
			return KILN_FMT_PERF_SCRIPT;
		while (e > line && e[-1] >= '0' && e[-1] <= '9')
			e--;
		if (e > line && e < line + ll && e[-1] == ' ')
			return KILN_FMT_COLLAPSED;
	}
	/* A perf script sample without frames (no -g) is one line each. */
	if (memchr(line, ':', ll) && memchr(line, '[', ll))
		return KILN_FMT_PERF_SCRIPT;
	return KILN_FMT_COLLAPSED;
}

/* zlib counts in uInt: larger buffers go through in pieces. */
static uInt piece(size_t n)
{
	return (uInt)(n > UINT_MAX ? UINT_MAX : n);
}

int kiln_gunzip(const char *data, size_t len, struct kiln_buf *out,
		struct kiln_diag *d)
{
	const unsigned char *in = (const unsigned char *)data;
	size_t limit = kiln_input_limit(), at, start = out->len;
	char lim[32];
	z_stream z;
	int rc, err = 0;

	memset(&z, 0, sizeof(z));
	/* 32 + 15: accept gzip and zlib headers, largest window. */
	if (inflateInit2(&z, 32 + 15) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)in;
	z.avail_in = piece(len);
	for (;;) {
		size_t room;

		/* Room for twice the input at first, then doubling. */
		err = kiln_buf_grow(out, out->len - start < len ?
				   len * 2 + 65536 : out->len - start);
		if (err)
			goto out_end;
		room = out->cap - out->len - 1;
		z.next_out = (unsigned char *)out->data + out->len;
		z.avail_out = piece(room);
		rc = inflate(&z, Z_NO_FLUSH);
		out->len = (size_t)((char *)z.next_out - out->data);
		out->data[out->len] = '\0';
		at = (size_t)(z.next_in - in);
		/* The input past the first 4 GiB, a piece at a time. */
		if (z.avail_in == 0 && at < len)
			z.avail_in = piece(len - at);
		if (out->len - start > limit) {
			err = kiln_diag(d, "byte %zu: the data inflates to more than "
					"%s, the limit for decompressed input (set "
					"KILN_MAX_INPUT to raise it)", at,
					kiln_size_str(limit, lim, sizeof(lim)));
			goto out_end;
		}
		if (rc == Z_STREAM_END) {
			/* Concatenated gzip members are one stream to gzip(1). */
			if (at < len && kiln_is_gzip(data + at, len - at)) {
				inflateReset(&z);
				z.avail_in = piece(len - at);
				continue;
			}
			break;
		}
		if (rc == Z_BUF_ERROR && at == len) {
			err = kiln_diag(d, "byte %zu: the gzip stream is truncated "
					"(file cut short?)", at);
			goto out_end;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			if (rc == Z_MEM_ERROR) {
				err = -ENOMEM;
				goto out_end;
			}
			err = kiln_diag(d, "byte %zu: corrupt gzip data: %s", at,
					z.msg ? z.msg : "inflate failed");
			goto out_end;
		}
		if (at == len && rc == Z_OK && z.avail_out != 0) {
			err = kiln_diag(d, "byte %zu: the gzip stream is truncated "
					"(file cut short?)", len);
			goto out_end;
		}
	}
out_end:
	inflateEnd(&z);
	return err;
}

int kiln_gzip(const void *data, size_t len, int level, struct kiln_buf *out)
{
	z_stream z;
	int rc, err = 0;

	int wbits = 9, mem;

	memset(&z, 0, sizeof(z));
	/* A window no larger than the input (it holds all of it anyway),
	 * and hash tables to match: zlib's state for a 32 KiB window is
	 * 256 KiB, allocated and touched for a profile of a few KiB. */
	while (wbits < 15 && ((size_t)1 << wbits) < len)
		wbits++;
	mem = wbits - 7 < 1 ? 1 : wbits - 7;
	/* 16 + wbits: gzip header. */
	if (deflateInit2(&z, level, Z_DEFLATED, 16 + wbits, mem,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	err = kiln_buf_grow(out, deflateBound(&z, (uLong)len) + 64);
	if (err)
		goto out_end;
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	z.next_out = (unsigned char *)out->data + out->len;
	z.avail_out = (uInt)(out->cap - out->len - 1);
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		err = -ENOMEM;
		goto out_end;
	}
	out->len = (size_t)((char *)z.next_out - out->data);
	out->data[out->len] = '\0';
out_end:
	deflateEnd(&z);
	return err;
}

int kiln_text_check(const char *data, size_t len, struct kiln_diag *d)
{
	const char *nul = memchr(data, '\0', len);
	size_t line = 1;
	const char *q;

	if (!nul)
		return 0;
	for (q = data; (q = memchr(q, '\n', (size_t)(nul - q))); q++)
		line++;
	return kiln_diag(d, "line %zu: a NUL byte (byte %zu) in text: the file "
			 "is binary or corrupt", line, (size_t)(nul - data));
}

typedef int (*reader_fn)(struct kiln_prof *, const char *, size_t,
			 struct kiln_diag *);

int kiln_read_profile(const char *path, struct kiln_prof **out,
		      enum kiln_fmt *fmtp, struct kiln_diag *d)
{
	return kiln_read_profile_keep(path, out, fmtp, NULL, d);
}

int kiln_read_profile_keep(const char *path, struct kiln_prof **out,
			   enum kiln_fmt *fmtp, struct kiln_buf *trace,
			   struct kiln_diag *d)
{
	struct kiln_map m;
	struct kiln_buf raw = KILN_BUF_INIT;
	struct kiln_diag inner = { "" };
	struct kiln_prof *p = NULL;
	const char *data;
	size_t len;
	enum kiln_fmt fmt;
	reader_fn rd = NULL;
	int err;

	*out = NULL;
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
	data = m.data;
	len = m.len;
	if (len == 0) {
		err = kiln_diag(d, "'%s': the file is empty", path);
		goto out_unmap;
	}
	if (kiln_is_gzip(data, len)) {
		err = kiln_gunzip(data, len, &raw, &inner);
		if (err) {
			if (err == -EINVAL)
				kiln_diag(d, "'%s': read as gzip: %s", path,
					  inner.msg);
			goto out_unmap;
		}
		data = raw.data;
		len = raw.len;
		if (len == 0) {
			err = kiln_diag(d, "'%s': the file is empty once decompressed",
					path);
			goto out_unmap;
		}
	}
	fmt = kiln_fmt_detect(data, len);
	switch (fmt) {
	case KILN_FMT_PPROF: rd = kiln_pprof_read; break;
	case KILN_FMT_COLLAPSED: rd = kiln_collapsed_read; break;
	case KILN_FMT_PERF_SCRIPT: rd = kiln_perfscript_read; break;
	case KILN_FMT_GPERFTOOLS: rd = kiln_gperf_read; break;
	case KILN_FMT_HEAPTRACE: rd = kiln_heaptrace_read; break;
	case KILN_FMT_PERF_DATA: rd = kiln_perfdata_read; break;
	case KILN_FMT_LEGACY_HEAP:
	case KILN_FMT_LEGACY_COUNT:
	case KILN_FMT_LEGACY_THREAD:
	case KILN_FMT_LEGACY_CONTENTION:
	case KILN_FMT_LEGACY_JAVA: rd = kiln_legacy_read; break;
	default: break;
	}
	if (!rd) {
		err = kiln_diag(d, "'%s': unknown format: not pprof, perf script "
				"text, perf.data, collapsed stacks, a gperftools CPU "
				"profile, a legacy text profile (heap, contention, "
				"thread) or a kiln heap trace (first byte 0x%02x)%s", path,
				(unsigned char)data[0],
				fmt == KILN_FMT_SPEEDSCOPE ?
				"; speedscope JSON is written, not read" : "");
		goto out_unmap;
	}
	p = kiln_prof_new();
	if (!p) {
		err = -ENOMEM;
		goto out_unmap;
	}
	err = rd(p, data, len, &inner);
	if (!err)
		err = kiln_prof_error(p);
	if (err) {
		if (err == -EINVAL)
			kiln_diag(d, "'%s': read as %s: %s", path,
				  kiln_fmt_name(fmt), inner.msg);
		kiln_prof_free(p);
		goto out_unmap;
	}
	if (trace && fmt == KILN_FMT_HEAPTRACE &&
	    kiln_buf_add(trace, data, len)) {
		kiln_prof_free(p);
		err = -ENOMEM;
		goto out_unmap;
	}
	if (fmtp)
		*fmtp = fmt;
	*out = p;
out_unmap:
	kiln_buf_release(&raw);
	kiln_map_release(&m);
	return err;
}
