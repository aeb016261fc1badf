/*
 * The formats kiln reads, in one table (format stage): names, file
 * extensions, detection and readers; and the read-any-file entry point.
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
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/limit.h"

/* What detection looks at, worked out once per file. */
struct sniff {
	const char *data;
	size_t len;
	bool text;		/* no control bytes in the first 4 KiB */
	bool json;		/* text whose first non-blank byte is { or [ */
	const char *line;	/* the first line not blank nor a comment */
	size_t ll;
	enum kiln_fmt legacy;	/* kiln_legacy_detect() */
};

/* Detection scores: 0 not this format, CONFIDENT and above told by a
 * magic number or a header of its own. */
enum { CONFIDENT = 50 };

struct fmt_entry {
	enum kiln_fmt fmt;
	const char *name;
	const char *aliases;	/* other names kiln_fmt_parse() takes */
	const char *exts;	/* extensions, longest first where one ends another */
	const char *tried;	/* in the refusal's list; NULL: said by another */
	kiln_fmt_reader read;
	int (*score)(const struct fmt_entry *e, const struct sniff *s);
};

static int score_perfdata(const struct fmt_entry *e, const struct sniff *s)
{
	return kiln_perfdata_detect(s->data, s->len) ? 100 : 0;
}

/* gperftools: header words 0, 3 (count), 0 (version), 32- or 64-bit. */
static int score_gperf(const struct fmt_entry *e, const struct sniff *s)
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
static int score_heaptrace(const struct fmt_entry *e, const struct sniff *s)
{
	return kiln_heaptrace_detect(s->data, s->len) ? 100 : 0;
}

static int score_massif(const struct fmt_entry *e, const struct sniff *s)
{
	return s->text && kiln_massif_detect(s->data, s->len) ? 100 : 0;
}

static int score_heaptrack(const struct fmt_entry *e, const struct sniff *s)
{
	return s->text && kiln_heaptrack_detect(s->data, s->len) ? 100 : 0;
}

/* A protobuf Profile starts with a field key of wire type 2
 * (length-delimited: sample_type, sample, mapping, ...) or 0. */
static int score_pprof(const struct fmt_entry *e, const struct sniff *s)
{
	unsigned char c = (unsigned char)s->data[0];

	return !s->text && ((c & 7) == 2 || (c & 7) == 0) ? 70 : 0;
}

/* Before the guesses below: "heap profile: 1: 2 [ 3: 4] @ ..." has the
 * ':' and '[' of a perf script line, "threadcreate profile: total 7"
 * the count of a collapsed one. */
static int score_legacy(const struct fmt_entry *e, const struct sniff *s)
{
	return s->legacy == e->fmt ? 100 : 0;
}

/* Whether the JSON text holds the key (quotes included). */
static bool has_key(const struct sniff *s, const char *key)
{
	return memmem(s->data, s->len, key, strlen(key)) != NULL;
}

static int score_speedscope(const struct fmt_entry *e, const struct sniff *s)
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

static int score_cpuprofile(const struct fmt_entry *e, const struct sniff *s)
{
	if (!s->json)
		return 0;
	if ((has_key(s, "\"nodes\"") || has_key(s, "\"head\"")) &&
	    has_key(s, "\"samples\""))
		return 90;
	if (has_key(s, "\"ProfileChunk\"") || has_key(s, "\"CpuProfile\""))
		return 85;
	/* A trace without the CPU profiler's events: said so by the reader. */
	if (has_key(s, "\"traceEvents\""))
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

static int score_perfscript(const struct fmt_entry *e, const struct sniff *s)
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
static int score_collapsed(const struct fmt_entry *e, const struct sniff *s)
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

/*
 * Detection order is this order where scores tie; extensions are matched
 * in it too.  Legacy text formats are read by one reader and said once in
 * the refusal's list.
 */
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

static const struct fmt_entry formats[] = {
	{ KILN_FMT_PERF_DATA, "perf.data", NULL, NULL, "perf.data",
	  read_perfdata, score_perfdata },
	{ KILN_FMT_GPERFTOOLS, "gperftools", NULL, NULL, "gperftools",
	  kiln_gperf_read, score_gperf },
	{ KILN_FMT_HEAPTRACE, "heap-trace", NULL, NULL, "heap-trace",
	  kiln_heaptrace_read, score_heaptrace },
	{ KILN_FMT_MASSIF, "massif", "valgrind", NULL, "massif",
	  kiln_massif_read, score_massif },
	{ KILN_FMT_HEAPTRACK, "heaptrack", NULL, NULL, "heaptrack",
	  kiln_heaptrack_read, score_heaptrack },
	{ KILN_FMT_PPROF, "pprof", NULL, ".pb.gz .pb .pprof", "pprof",
	  kiln_pprof_read, score_pprof },
	{ KILN_FMT_LEGACY_HEAP, "legacy-heap", NULL, ".heap .growth",
	  "legacy text (heap, growth, goroutine, threadz, contention, Java)",
	  kiln_legacy_read, score_legacy },
	{ KILN_FMT_LEGACY_COUNT, "legacy-count", NULL, NULL, NULL,
	  kiln_legacy_read, score_legacy },
	{ KILN_FMT_LEGACY_THREAD, "legacy-thread", NULL, ".thread", NULL,
	  kiln_legacy_read, score_legacy },
	{ KILN_FMT_LEGACY_CONTENTION, "legacy-contention", NULL, ".contention",
	  NULL, kiln_legacy_read, score_legacy },
	{ KILN_FMT_LEGACY_JAVA, "legacy-java", NULL, NULL, NULL,
	  kiln_legacy_read, score_legacy },
	{ KILN_FMT_SPEEDSCOPE, "speedscope", NULL, ".speedscope.json .json .speedscope",
	  "speedscope", kiln_speedscope_read, score_speedscope },
	{ KILN_FMT_CPUPROFILE, "cpuprofile", "chrome node", ".cpuprofile",
	  "cpuprofile", kiln_cpuprofile_read, score_cpuprofile },
	{ KILN_FMT_PERF_SCRIPT, "perf-script", "perf perfscript",
	  ".perf .perf-script .script", "perf-script", kiln_perfscript_read,
	  score_perfscript },
	{ KILN_FMT_COLLAPSED, "collapsed", "folded", ".collapsed .folded .txt",
	  "collapsed", kiln_collapsed_read, score_collapsed },
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static const struct fmt_entry *entry_of(enum kiln_fmt f)
{
	size_t i;

	for (i = 0; i < NFORMATS; i++)
		if (formats[i].fmt == f)
			return &formats[i];
	return NULL;
}

const char *kiln_fmt_name(enum kiln_fmt f)
{
	const struct fmt_entry *e = entry_of(f);

	return e ? e->name : "unknown";
}

kiln_fmt_reader kiln_fmt_reader_of(enum kiln_fmt f)
{
	const struct fmt_entry *e = entry_of(f);

	return e ? e->read : NULL;
}

/* Whether word is one of the blank-separated words of list. */
static bool in_list(const char *list, const char *word, size_t wl)
{
	const char *p = list;

	while (list && *p) {
		size_t n = strcspn(p, " ");

		if (n == wl && !memcmp(p, word, n))
			return true;
		p += n;
		p += strspn(p, " ");
	}
	return false;
}

enum kiln_fmt kiln_fmt_parse(const char *name)
{
	size_t i;

	for (i = 0; i < NFORMATS; i++)
		if (!strcmp(name, formats[i].name) ||
		    in_list(formats[i].aliases, name, strlen(name)))
			return formats[i].fmt;
	return KILN_FMT_UNKNOWN;
}

enum kiln_fmt kiln_fmt_from_ext(const char *path)
{
	size_t i, pl = strlen(path);

	for (i = 0; i < NFORMATS; i++) {
		const char *p = formats[i].exts;

		while (p && *p) {
			size_t n = strcspn(p, " ");

			if (pl >= n && !memcmp(path + pl - n, p, n))
				return formats[i].fmt;
			p += n;
			p += strspn(p, " ");
		}
	}
	return KILN_FMT_UNKNOWN;
}

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

static void sniff_init(struct sniff *s, const char *data, size_t len)
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

struct cand {
	const struct fmt_entry *e;
	int score;
};

/* The formats data might be, likeliest first; their number. */
static size_t candidates(const struct sniff *s, struct cand *c)
{
	size_t i, j, n = 0;

	for (i = 0; i < NFORMATS; i++) {
		int sc = s->len ? formats[i].score(&formats[i], s) : 0;

		if (sc <= 0)
			continue;
		/* Insertion, stable: ties keep the table's order. */
		for (j = n; j > 0 && c[j - 1].score < sc; j--)
			c[j] = c[j - 1];
		c[j].e = &formats[i];
		c[j].score = sc;
		n++;
	}
	return n;
}

enum kiln_fmt kiln_fmt_detect(const char *data, size_t len)
{
	struct cand c[NFORMATS];
	struct sniff s;

	sniff_init(&s, data, len);
	return candidates(&s, c) ? c[0].e->fmt : KILN_FMT_UNKNOWN;
}

int kiln_read_profile(const char *path, struct kiln_prof **out,
		      enum kiln_fmt *fmtp, struct kiln_diag *d)
{
	return kiln_read_profile_keep(path, out, fmtp, NULL, d);
}

/* Reads data as format e into a new *out.  0, -ENOMEM, or -EINVAL with
 * inner filled. */
static int read_as(const struct fmt_entry *e, const char *data, size_t len,
		   struct kiln_prof **out, struct kiln_diag *inner)
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
static int refuse(const char *path, const struct sniff *s,
		  const struct fmt_entry *const *who, struct kiln_diag *why,
		  size_t nwhy, struct kiln_diag *d)
{
	char list[512];
	size_t i, at = 0;

	list[0] = '\0';
	for (i = 0; i < NFORMATS; i++)
		if (formats[i].tried && at < sizeof(list))
			at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
					       at ? ", " : "", formats[i].tried);
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
	kiln_map_release(&m);
	return err;
}

int kiln_read_profile_data(const char *path, const void *bytes, size_t len,
			   struct kiln_prof **out, enum kiln_fmt *fmtp,
			   struct kiln_buf *trace, struct kiln_diag *d)
{
	struct kiln_buf raw = KILN_BUF_INIT, unz = KILN_BUF_INIT, conv = KILN_BUF_INIT;
	struct kiln_diag inner = { "" }, why[2] = { { "" }, { "" } };
	const struct fmt_entry *who[2] = { NULL, NULL };
	struct kiln_prof *p = NULL;
	struct cand c[NFORMATS];
	struct sniff s;
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
	sniff_init(&s, data, len);
	n = candidates(&s, c);
	if (n && c[0].score >= CONFIDENT) {
		/* Plainly this format: its reader's complaint is the answer. */
		err = read_as(c[0].e, data, len, &p, &inner);
		if (err == -EINVAL)
			kiln_diag(d, "'%s': read as %s: %s", path, c[0].e->name,
				  inner.msg);
		if (err)
			goto out_release;
		i = 0;
	} else {
		for (i = 0; i < n; i++) {
			err = read_as(c[i].e, data, len, &p, &inner);
			if (err != -EINVAL)
				break;
			if (nwhy < 2) {
				who[nwhy] = c[i].e;
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
	if (trace && c[i].e->fmt == KILN_FMT_HEAPTRACE &&
	    kiln_buf_add(trace, data, len)) {
		kiln_prof_free(p);
		err = -ENOMEM;
		goto out_release;
	}
	if (inner.warn[0] && d)
		snprintf(d->warn, sizeof(d->warn), "'%s': %.300s", path, inner.warn);
	if (fmtp)
		*fmtp = c[i].e->fmt;
	*out = p;
out_release:
	kiln_buf_release(&conv);
	kiln_buf_release(&unz);
	kiln_buf_release(&raw);
	return err;
}
