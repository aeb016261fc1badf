/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profile file formats (format stage): detection, readers and writers.
 *
 * Readers fill an empty struct kiln_prof from a whole file in memory and
 * return 0, -ENOMEM, or -EINVAL with d->msg saying where and why
 * ("line 12: ...", "byte 4096: ..."), without the file name or format,
 * which kiln_read_profile() prefixes.  Writers append to a kiln_buf.
 */
#ifndef KILN_FORMAT_FORMAT_H
#define KILN_FORMAT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

struct kiln_prof;
struct kiln_buf;
struct kiln_diag;

enum kiln_fmt {
	KILN_FMT_UNKNOWN,
	KILN_FMT_PPROF,
	KILN_FMT_COLLAPSED,
	KILN_FMT_PERF_SCRIPT,
	KILN_FMT_GPERFTOOLS,
	KILN_FMT_SPEEDSCOPE,
	KILN_FMT_HEAPTRACE,
	KILN_FMT_PERF_DATA,
	/* The legacy text profiles `go tool pprof` reads (format/legacy.c),
	 * one name each, one reader for all. */
	KILN_FMT_LEGACY_HEAP,		/* gperftools heap/growth, Go heap */
	KILN_FMT_LEGACY_COUNT,		/* Go goroutine, threadcreate */
	KILN_FMT_LEGACY_THREAD,		/* threadz */
	KILN_FMT_LEGACY_CONTENTION,	/* contentionz, Go mutex/contention */
	KILN_FMT_LEGACY_JAVA,		/* Java heapz, contentionz text */
	/* Chrome/Node .cpuprofile and Chrome's trace events holding one
	 * (format/cpuprofile.c), read only. */
	KILN_FMT_CPUPROFILE,
	/* Other tools' heap files: valgrind massif's massif.out.PID
	 * (format/massif.c), KDE heaptrack's traces (format/heaptrack.c). */
	KILN_FMT_MASSIF,
	KILN_FMT_HEAPTRACK,
	/* The Firefox Profiler's processed profile (format/firefox.c),
	 * written only. */
	KILN_FMT_FIREFOX,
};

typedef int (*kiln_fmt_reader)(struct kiln_prof *, const char *, size_t,
			       struct kiln_diag *);

/* What a writer is given besides the profile. */
struct kiln_fmt_wopts {
	int type;		/* the text formats' one sample type, by index */
	const char *name;	/* the profile's name (speedscope's) */
	bool raw;		/* pprof: not gzip-compressed (a .pb file) */
	bool no_times;		/* pprof: without the time column's labels */
};
typedef int (*kiln_fmt_writer)(struct kiln_prof *p,
			       const struct kiln_fmt_wopts *o,
			       struct kiln_buf *out);

/*
 * One format: a row of the one table of formats (format/formats.def) that
 * reading, `kiln convert`, the help, the refusal messages and kiln
 * serve's downloads all go by, less its reader and detection
 * (kiln_fmt_reader_of(), kiln_fmt_detect()).  Rows are in the order
 * detection weighs formats where two are as likely, and extensions are
 * matched in it.
 */
struct kiln_fmt_info {
	enum kiln_fmt fmt;
	const char *name;	/* "pprof": --to, messages, /api/download */
	const char *aliases;	/* other names kiln_fmt_parse() takes */
	/* File extensions, blank-separated, longest first where one ends
	 * another; a written file is named with the first. */
	const char *exts;
	/* In the list of a refusal ("formats tried: ..."); NULL: said by
	 * another row of the same reader. */
	const char *tried;
	const char *note;	/* help's words on a written format, or NULL */
	const char *mime;	/* a written format's content type, or NULL */
	kiln_fmt_writer write;	/* NULL: not written */
	/* A written format's place in the lists of them (help, messages,
	 * kiln serve's downloads), from 1; 0 for one not written. */
	int written;
};

/* Row i of the table, NULL past the last: for lists of formats. */
const struct kiln_fmt_info *kiln_fmt_row(size_t i);
/* The row of format f, NULL for none. */
const struct kiln_fmt_info *kiln_fmt_info(enum kiln_fmt f);
/* The i-th format kiln writes (from 0, in their `written` order), NULL
 * past the last. */
const struct kiln_fmt_info *kiln_fmt_written(size_t i);
/*
 * Appends the names of the formats kiln writes to b, separated by sep,
 * the last two by last: ("pprof, collapsed, speedscope, perf-script or firefox"
 * for ", " and " or ").  0 or -ENOMEM.
 */
int kiln_fmt_list_writable(struct kiln_buf *b, const char *sep,
			   const char *last);
/* Writes the list a refusal names, every format read ("perf.data,
 * gperftools, ..."), into list (size bytes, cut short to fit). */
void kiln_fmt_list_tried(char *list, size_t size);
/*
 * Appends one line per written format to b, for help: its name, its
 * extensions and its note, in columns, each line indented by two blanks.
 * 0 or -ENOMEM.
 */
int kiln_fmt_list_help(struct kiln_buf *b);
/*
 * Writes p as format f (one with a writer) to out.  -EINVAL for a format
 * kiln does not write, else what the writer returns.
 */
int kiln_fmt_write(enum kiln_fmt f, struct kiln_prof *p,
		   const struct kiln_fmt_wopts *o, struct kiln_buf *out);

/* "pprof", "collapsed", "perf-script", ... */
const char *kiln_fmt_name(enum kiln_fmt f);
/* The inverse of kiln_fmt_name() (other names too: "folded", "perf");
 * KILN_FMT_UNKNOWN if none. */
enum kiln_fmt kiln_fmt_parse(const char *name);
/* The format a file name's extension names (an output's, for writers). */
enum kiln_fmt kiln_fmt_from_ext(const char *path);
/* Guesses the format of (already decompressed, UTF-8) file contents:
 * the likeliest, KILN_FMT_UNKNOWN when nothing fits at all. */
enum kiln_fmt kiln_fmt_detect(const char *data, size_t len);
/* The reader of format f, NULL for one kiln does not read. */
kiln_fmt_reader kiln_fmt_reader_of(enum kiln_fmt f);

/* True if data starts with the gzip magic. */
bool kiln_is_gzip(const char *data, size_t len);
/*
 * Inflates a whole gzip (or zlib) stream into out.  -EINVAL with d filled
 * ("byte N: ...") when it is corrupt or truncated.
 */
int kiln_gunzip(const char *data, size_t len, struct kiln_buf *out,
		struct kiln_diag *d);
/* True if data starts with the zstd frame magic. */
bool kiln_is_zstd(const char *data, size_t len);
/*
 * Inflates a whole zstd stream (frames one after another) into out, under
 * the input limit.  -EINVAL with d filled ("byte N: ...") when it is
 * corrupt, truncated or too large; -ENOMEM.
 */
int kiln_unzstd(const char *data, size_t len, struct kiln_buf *out,
		struct kiln_diag *d);
/* Appends the gzip compression of data to out. */
int kiln_gzip(const void *data, size_t len, int level, struct kiln_buf *out);

/*
 * For the text readers: refuses text holding a NUL byte (a binary or
 * corrupt file; names with NULs could not be written as pprof strings).
 * 0, or -EINVAL with d filled ("line N: ...").
 */
int kiln_text_check(const char *data, size_t len, struct kiln_diag *d);
/*
 * Text as UTF-8 (format/text.c): when data starts with a UTF-16 byte
 * order mark (FF FE little-endian, FE FF big-endian) the text is
 * converted into conv (unpaired surrogates become U+FFFD) and *data,
 * *len point there; a UTF-8 byte order mark is stepped over.  Other
 * input is left alone.  0 or -ENOMEM.  kiln_read_profile() does it before
 * detection, so that every text reader gets UTF-8 without a mark.
 */
int kiln_text_utf8(const char **data, size_t *len, struct kiln_buf *conv);

/*
 * Malformed lines a text reader skips among good ones: it counts each
 * with kiln_text_skip() (why->msg saying "line N: why", as kiln_diag()
 * made it) and ends with kiln_text_skips_end(), given the good lines
 * read.  Skipped lines as many as the good ones or more make a file that
 * is mostly something else: -EINVAL with the first bad line's message in
 * d->msg.  Fewer: 0, and one warning in d->warn ("skipped 3 malformed
 * lines, first at line 17: why").  Zero-initialise the struct.
 */
struct kiln_text_skips {
	size_t n, first;
	struct kiln_diag why;
};
void kiln_text_skip(struct kiln_text_skips *s, size_t lineno,
		    const struct kiln_diag *why);
/* Lines counted from a chunk's start: the first bad line's number (and
 * its message's "line N") moved on by `by`, the lines before it. */
void kiln_text_skips_shift(struct kiln_text_skips *s, size_t by);
int kiln_text_skips_end(struct kiln_text_skips *s, size_t good,
			struct kiln_diag *d);

int kiln_pprof_read(struct kiln_prof *p, const char *data, size_t len,
		    struct kiln_diag *d);
int kiln_collapsed_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d);
int kiln_perfscript_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d);
int kiln_gperf_read(struct kiln_prof *p, const char *data, size_t len,
		    struct kiln_diag *d);
/* A kiln heap trace (zstd frames, docs/heap-trace.md): analysed, one
 * sample per stack with the types allocated/bytes, calls/count,
 * peak/bytes, leaked/bytes, temporary/count, symbolized from the trace's
 * maps records (format/heaptrace.h has the rest). */
int kiln_heaptrace_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d);

/*
 * The legacy text profiles `go tool pprof` reads, by pprof's rules
 * (legacy_profile.go, legacy_java_profile.go): gperftools/tcmalloc heap
 * profiles (heapprofile, heap_v2, heapz_v2: unsampled as pprof does),
 * growth and fragmentation, C++ and Go contention, threadz, Go's heap,
 * goroutine and threadcreate text, Java heapz and contentionz.  Sample
 * types are pprof's; the memory map becomes the mappings, symbolized from
 * the files it names (docs/formats.md).  kiln_legacy_detect() gives the
 * format of a header, KILN_FMT_UNKNOWN for none.
 */
enum kiln_fmt kiln_legacy_detect(const char *data, size_t len);
int kiln_legacy_read(struct kiln_prof *p, const char *data, size_t len,
		     struct kiln_diag *d);

/* perf's binary perf.data, file or pipe mode (format/perfdata.c):
 * samples of one event with their processes, threads and mappings,
 * call chains and DWARF stack copies unwound, symbolized from the
 * recorded binaries or perf's build-id cache (docs/formats.md).  The
 * file is parsed here; a replay of its records through the recording
 * session's model (session/replay.c, kiln_perfdata_read()) makes the
 * profile. */
bool kiln_perfdata_detect(const char *data, size_t len);
/*
 * The reader kiln_read_profile() calls for perf.data: format/ cannot
 * reach session/, which replays the records, so whoever links session/
 * registers it at start-up (kiln_session_register(): kiln's main, the
 * tests).  Until then perf.data is refused with -ENOTSUP ("no perf.data
 * replay in this program").  Not thread-safe: set it before reading.
 */
void kiln_fmt_set_perfdata_reader(kiln_fmt_reader rd);
/*
 * The event a perf.data is read for (--event): its samples alone, as
 * the profile's one event; NULL (the default): every event the file
 * samples, each its own sample type ("task-clock/nanoseconds",
 * "page-faults/count") where there are several.  A file without it is
 * refused, naming the events it has.  For the whole process; the string
 * must outlive the reading.
 */
void kiln_perfdata_set_event(const char *name);

/* Writes the whole profile; gzip-compressed when compress is set.  The
 * time column is written as time labels (docs/formats.md, "Sample
 * times"). */
int kiln_pprof_write(const struct kiln_prof *p, struct kiln_buf *out,
		     bool compress);
/* The same; without times (times false) every sample is one pprof
 * sample whatever its times: smaller, and the same for go tool pprof
 * but for -tags and -tagfocus=time. */
int kiln_pprof_write_times(const struct kiln_prof *p, struct kiln_buf *out,
			   bool compress, bool times);
/* The text formats write one sample type, by index (see
 * kiln_prof_type_index()).  They take p non-const because unknown frames
 * get names interned on first use. */
int kiln_collapsed_write(struct kiln_prof *p, int type, struct kiln_buf *out);
int kiln_perfscript_write(struct kiln_prof *p, int type, struct kiln_buf *out);
/*
 * At most about this many lines are written by kiln_perfscript_write() (a
 * record is a header line, a line per frame and a blank line): beyond,
 * every stack's record count is scaled down in proportion (at least one
 * each), so that shares hold and a profile claiming 2^60 samples cannot
 * ask for exabytes of text.  The default, 10 million lines, is about the
 * 500 MB the Firefox Profiler still opens; the fuzz harnesses lower it.
 */
#define KILN_PERFSCRIPT_MAX_LINES 10000000ull
extern uint64_t kiln_perfscript_max_lines;
/*
 * speedscope's JSON (format/speedscope-read.c): every profile of the
 * file, sampled or evented, its frames with their file and line; with
 * several profiles each sample is labelled with its profile's name
 * ("thread_name").  Time units become one "time/nanoseconds" type, "none"
 * "samples/count", bytes "space/bytes".
 */
int kiln_speedscope_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d);
/*
 * Chrome's and Node's CPU profiles (format/cpuprofile.c): a .cpuprofile
 * (nodes, samples, timeDeltas; also the older head/timestamps tree), or
 * Chrome's trace events (an array or {"traceEvents": [...]}) with
 * Profile/ProfileChunk or CpuProfile events.  Sample types
 * "samples/count" and "wall/nanoseconds"; "(root)" frames and "(idle)"
 * samples are left out, as speedscope leaves them.
 */
int kiln_cpuprofile_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d);

/*
 * valgrind massif's massif.out.PID (format/massif.c): the peak snapshot's
 * heap tree (else the fullest detailed one, with a warning) as one sample
 * type space/bytes, a sample per tree node's own bytes, frames named from
 * the tree lines.  kiln_massif_detect(): "desc:" then massif's keys.
 */
bool kiln_massif_detect(const char *data, size_t len);
int kiln_massif_read(struct kiln_prof *p, const char *data, size_t len,
		     struct kiln_diag *d);
/*
 * KDE heaptrack's interpreted trace (format/heaptrack.c; the text, zstd
 * or gzip undone by kiln_read_profile()): the sample types of a kiln heap
 * trace (allocated/bytes, calls/count, peak/bytes, leaked/bytes,
 * temporary/count), each counted as heaptrack_print counts it.  A raw
 * trace (heaptrack -r) is refused.  kiln_heaptrack_detect(): the first
 * line "v HEX HEX".
 */
bool kiln_heaptrack_detect(const char *data, size_t len);
int kiln_heaptrack_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d);

int kiln_speedscope_write(struct kiln_prof *p, int type, const char *name,
			  struct kiln_buf *out);

/*
 * Writes p as a Firefox Profiler processed profile (JSON, format version
 * 70; docs/formats.md): one thread per pid/thread label pair with its
 * samples of sample type `type` at their times, off-CPU states as
 * markers, the memory over time as a Memory counter; `name` names the
 * product.  May intern strings into p (module names).  0, -EINVAL (no
 * such type) or -ENOMEM.
 */
int kiln_firefox_write(struct kiln_prof *p, int type, const char *name,
		       struct kiln_buf *out);

/*
 * Reads a profile file of any supported format ("-" for standard input),
 * gzip undone first, then UTF-16 or a UTF-8 byte order mark
 * (kiln_text_utf8()).  On success *out is a new profile (caller frees),
 * and d->warn holds "'FILE': warning" when the reader took the file with
 * a warning ("" otherwise).  Errors: -errno for I/O, -EINVAL with d->msg
 * of the form "'FILE': read as FORMAT: line N: why" where the file is
 * plainly of one format, or, when no reader accepts it, "'FILE': no
 * reader accepts it (formats tried: ...); not F1: why; not F2: why" for
 * the likeliest two.  If fmt is not NULL it receives the format read.
 */
int kiln_read_profile(const char *path, struct kiln_prof **out,
		      enum kiln_fmt *fmt, struct kiln_diag *d);
/*
 * The same; when the file is a kiln heap trace and trace is not NULL, its
 * bytes (gzip undone) are appended to trace instead, *out is NULL and fmt
 * says KILN_FMT_HEAPTRACE: the caller analyses it itself (kiln serve reads
 * it once for the profile, the memory over time and the time index,
 * kiln_heaptrace_read_index()), which also says what is wrong with a bad
 * one.
 */
int kiln_read_profile_keep(const char *path, struct kiln_prof **out,
			   enum kiln_fmt *fmt, struct kiln_buf *trace,
			   struct kiln_diag *d);
/*
 * The same over bytes already in memory (a body fetched over HTTP): len
 * bytes at data, named path in messages.  The data stay the caller's.
 */
int kiln_read_profile_data(const char *path, const void *data, size_t len,
			   struct kiln_prof **out, enum kiln_fmt *fmt,
			   struct kiln_buf *trace, struct kiln_diag *d);

#endif
