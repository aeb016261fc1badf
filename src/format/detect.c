/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Detection (format stage): which format a file is, by the scores and
 * readers of the one table (format/formats.def), for the read-any-file
 * entry point (read.c).
 *
 * Every format is weighed against the file: one told by a magic number
 * or a header of its own scores KILN_FMT_CONFIDENT or more; text or JSON
 * of no clear shape scores less for each format it might be.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "format/format.h"
#include "format/heaptrace.h"
#include "format/detect.h"
#include "util/diag.h"

/* ---- scores ---- */

/* A format kiln writes but does not read. */
static int score_none(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	(void)f;
	(void)s;
	return 0;
}

static int score_perfdata(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	return kiln_perfdata_detect(s->data, s->len) ? 100 : 0;
}

/* gperftools: header words 0, 3 (count), 0 (version), 32- or 64-bit. */
static int score_gperf(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	uint64_t w[2];
	uint32_t v[2];

	if (s->len < 16)
		return 0;
	memcpy(w, s->data, 16);
	memcpy(v, s->data, 8);
	return (w[0] == 0 && w[1] == 3) || (v[0] == 0 && v[1] == 3) ? 100 : 0;
}

/* zstd frames whose stream starts with 'H' "KILNHEAP" */
static int score_heaptrace(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	return kiln_heaptrace_detect(s->data, s->len) ? 100 : 0;
}

static int score_massif(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	return s->text && kiln_massif_detect(s->data, s->len) ? 100 : 0;
}

static int score_heaptrack(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	return s->text && kiln_heaptrack_detect(s->data, s->len) ? 100 : 0;
}

/* A protobuf Profile starts with a field key of wire type 2
 * (length-delimited: sample_type, sample, mapping, ...) or 0. */
static int score_pprof(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	unsigned char c = (unsigned char)s->data[0];

	return !s->text && ((c & 7) == 2 || (c & 7) == 0) ? 70 : 0;
}

/* Before the guesses below: "heap profile: 1: 2 [ 3: 4] @ ..." has the
 * ':' and '[' of a perf script line, "threadcreate profile: total 7"
 * the count of a collapsed one. */
static int score_legacy(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	return s->legacy == f ? 100 : 0;
}

/* Whether the JSON text holds the key (quotes included). */
static bool has_key(const struct kiln_fmt_sniff *s, const char *key)
{
	return memmem(s->data, s->len, key, strlen(key)) != NULL;
}

static int score_speedscope(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	if (!s->json)
		return 0;
	/* The schema's address is required by the format's spec. */
	if (has_key(s, "speedscope.app/file-format-schema"))
		return 90;
	if (has_key(s, "\"profiles\"") && has_key(s, "\"shared\""))
		return 80;
	return 20;
}

static int score_cpuprofile(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	if (!s->json)
		return 0;
	if ((has_key(s, "\"nodes\"") || has_key(s, "\"head\"")) &&
	    has_key(s, "\"samples\""))
		return 90;
	if (has_key(s, "\"ProfileChunk\"") || has_key(s, "\"CpuProfile\""))
		return 85;
	/* A trace without the CPU profiler's events: said so by the reader. */
	if (has_key(s, "\"traceEvents\"") || has_key(s, "\"ph\""))
		return 60;
	return 15;
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

/* "\t 4011aa sym+0x1 (dso)" or "    4011aa sym": indent, hex, blank. */
static bool frame_like(const char *l, const char *end)
{
	const char *h;

	while (l < end && (*l == ' ' || *l == '\t'))
		l++;
	for (h = l; h < end && ((*h >= '0' && *h <= '9') ||
				(*h >= 'a' && *h <= 'f')); h++)
		;
	return h > l && h < end && (*h == ' ' || *h == '\t');
}

static int score_perfscript(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	const char *line = s->line, *nl, *end = s->data + s->len;
	size_t ll = s->ll;

	if (!s->text)
		return 0;
	if (!line)
		return s->json ? 0 : 5;
	/* A frame line first ("\t ADDR SYM (DSO)", for a clear error), or a
	 * header with a time stamp ("COMM TID 12.345678: ..."), also without
	 * -g where the header is right-aligned. */
	if (line[0] == '\t' || has_time_stamp(line, ll))
		return 70;
	/* JSON's nesting and "key": [...] look like the shapes below. */
	if (s->json)
		return 0;
	/* Old perf without a time stamp: a header that ends with its event
	 * ("java 19983 cycles:"), then a frame not indented at all
	 * ("ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])"). */
	nl = line + ll;
	if (nl < end && nl + 1 < end && ll > 1 &&
	    line[ll - 1 - (line[ll - 1] == ' ' || line[ll - 1] == '\r')] == ':') {
		const char *e2 = memchr(nl + 1, '\n', (size_t)(end - nl - 1));

		if (frame_like(nl + 1, e2 ? e2 : end))
			return 65;
	}
	/* A header line, then indented frames. */
	if (nl < end && nl + 1 < end && (nl[1] == '\t' || nl[1] == ' ') &&
	    line[0] != ' ' && line[0] != '\t') {
		const char *e2 = memchr(nl + 1, '\n', (size_t)(end - nl - 1));

		return frame_like(nl + 1, e2 ? e2 : end) ? 65 : 40;
	}
	/* A sample without frames (no -g) is one line each. */
	if (memchr(line, ':', ll) && memchr(line, '[', ll))
		return 30;
	return 5;
}

/* collapsed: "frame;frame;frame COUNT" */
static int score_collapsed(enum kiln_fmt f, const struct kiln_fmt_sniff *s)
{
	const char *line = s->line, *end;

	if (!s->text)
		return 0;
	if (line) {
		end = line + s->ll;
		while (end > line && (end[-1] == '\r' || end[-1] == ' '))
			end--;
		while (end > line && end[-1] >= '0' && end[-1] <= '9')
			end--;
		if (end > line && end < line + s->ll && end[-1] == ' ')
			return 60;
	}
	return s->json ? 0 : 20;
}

/* ---- the table's readers ---- */

/* kiln_fmt_set_perfdata_reader(): the replay lives in session/. */
static kiln_fmt_reader perfdata_reader;

void kiln_fmt_set_perfdata_reader(kiln_fmt_reader rd)
{
	perfdata_reader = rd;
}

static int read_perfdata(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d)
{
	if (!perfdata_reader) {
		kiln_diag(d, "no perf.data replay in this program");
		return -ENOTSUP;
	}
	return perfdata_reader(p, data, len, d);
}

static const struct {
	enum kiln_fmt fmt;
	kiln_fmt_reader read;
	int (*score)(enum kiln_fmt f, const struct kiln_fmt_sniff *s);
} readers[] = {
#define KILN_FMT(f, n, al, ex, tr, no, mi, rd, sc, wr, wn) \
	{ f, rd, sc },
#include "format/formats.def"
#undef KILN_FMT
};

#define NREADERS (sizeof(readers) / sizeof(readers[0]))
_Static_assert(NREADERS <= KILN_FMT_MAX_ROWS, "KILN_FMT_MAX_ROWS is too small");

kiln_fmt_reader kiln_fmt_reader_of(enum kiln_fmt f)
{
	size_t i;

	for (i = 0; i < NREADERS; i++)
		if (readers[i].fmt == f)
			return readers[i].read;
	return NULL;
}

/* ---- detection ---- */

/* The first line that is neither blank nor a comment ('#', or '//' as in
 * some collapsed files). */
static const char *first_line(const char *data, size_t len, size_t *ll)
{
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *q = p;

		while (q < e && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < e && *q != '#' && !(e - q >= 2 && q[0] == '/' && q[1] == '/')) {
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

void kiln_fmt_sniff_init(struct kiln_fmt_sniff *s, const char *data,
			 size_t len)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->data = data;
	s->len = len;
	if (!len)
		return;
	s->text = is_text(data, len);
	if (!s->text)
		return;
	s->legacy = kiln_legacy_detect(data, len);
	s->line = first_line(data, len, &s->ll);
	for (i = 0; i < len && (data[i] == ' ' || data[i] == '\t' ||
				data[i] == '\r' || data[i] == '\n'); i++)
		;
	s->json = i < len && (data[i] == '{' || data[i] == '[');
}

size_t kiln_fmt_candidates(const struct kiln_fmt_sniff *s,
			   struct kiln_fmt_cand *c)
{
	size_t i, j, n = 0;

	for (i = 0; i < NREADERS; i++) {
		int sc = s->len ? readers[i].score(readers[i].fmt, s) : 0;

		if (sc <= 0)
			continue;
		/* Insertion, stable: ties keep the table's order. */
		for (j = n; j > 0 && c[j - 1].score < sc; j--)
			c[j] = c[j - 1];
		c[j].f = kiln_fmt_info(readers[i].fmt);
		c[j].read = readers[i].read;
		c[j].score = sc;
		n++;
	}
	return n;
}

enum kiln_fmt kiln_fmt_detect(const char *data, size_t len)
{
	struct kiln_fmt_cand c[KILN_FMT_MAX_ROWS];
	struct kiln_fmt_sniff s;

	kiln_fmt_sniff_init(&s, data, len);
	return kiln_fmt_candidates(&s, c) ? c[0].f->fmt : KILN_FMT_UNKNOWN;
}


