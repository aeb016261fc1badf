/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace's columns and records, described once (format
 * stage): docs/heap-trace.md's column table and record table as data.
 * The encoder (heapenc.c, in the profiled process's writer thread) puts
 * each record's fields in the columns its row names, the decoder
 * (heaptrace.c, in kiln's commands) takes them from there and names them
 * in its errors: a field or a column is added here, for both sides.
 */
#ifndef KILN_FORMAT_HEAPCOLS_H
#define KILN_FORMAT_HEAPCOLS_H

#define KILN_HEAPTRACE_VERSION 2

/* The columns of a frame (docs/heap-trace.md, "Layers"). */
enum kiln_hcol {
	KILN_HCOL_TAG,		/* one byte per record */
	KILN_HCOL_MISC,		/* every other field, in record order */
	KILN_HCOL_SIZE_LO,	/* A: size & 0xff */
	KILN_HCOL_SIZE_HI,	/* A: uv size >> 8 */
	KILN_HCOL_STACK,	/* A: uv stack */
	KILN_HCOL_BACK_LO,	/* F, R: back & 0xff */
	KILN_HCOL_BACK_HI,	/* F, R: uv back >> 8 */
	KILN_HCOL_N
};

/* Each column's name in the decoder's errors ("fields column"). */
extern const char *const kiln_hcol_names[KILN_HCOL_N];

/* How a field is coded. */
enum kiln_hfield_code {
	KILN_HF_UV,		/* an unsigned LEB128 varint */
	KILN_HF_STR,		/* uv length, then the bytes (no NUL) */
	KILN_HF_SPLIT,		/* the low byte in col, uv (value >> 8) in col_hi */
	KILN_HF_UVS,		/* as many uv as the field before it says */
};

struct kiln_hfield {
	unsigned char code;	/* enum kiln_hfield_code */
	unsigned char col;	/* enum kiln_hcol */
	unsigned char col_hi;	/* KILN_HF_SPLIT: the high bits' column */
	const char *name;	/* as docs/heap-trace.md says it */
};

/* The record kinds, in the order of docs/heap-trace.md's table. */
enum kiln_hrec_kind {
	KILN_HREC_HEADER,	/* H */
	KILN_HREC_MAPS,		/* P */
	KILN_HREC_STACK,	/* S */
	KILN_HREC_NAME,		/* N */
	KILN_HREC_TIME,		/* T */
	KILN_HREC_THREAD,	/* X */
	KILN_HREC_ALLOC,	/* A, a */
	KILN_HREC_FREE,		/* F, f */
	KILN_HREC_RFREE,	/* R, r */
	KILN_HREC_LOST,		/* L */
	KILN_HREC_END,		/* E */
	KILN_HREC_N
};

#define KILN_HREC_MAX_FIELDS 5
/* Events made by the previous thread: the tag in lower case. */
#define KILN_HREC_PREV_THREAD 0x20

struct kiln_hrec {
	unsigned char tag;
	unsigned char events;	/* an event: also tag + KILN_HREC_PREV_THREAD */
	unsigned char nfield;
	struct kiln_hfield f[KILN_HREC_MAX_FIELDS];
};

/*
 * The records' table as an initializer: kiln_hrecs is it, and the encoder
 * keeps a static copy of it, whose fields gcc reads at compile time (an
 * extern table costs a load and a branch per field of every event).
 */
#define KILN_HF__UV(col, name) { KILN_HF_UV, KILN_HCOL_##col, 0, name }
#define KILN_HF__STR(name) { KILN_HF_STR, KILN_HCOL_MISC, 0, name }
#define KILN_HF__UVS(name) { KILN_HF_UVS, KILN_HCOL_MISC, 0, name }
#define KILN_HF__SPLIT(lo, hi, name) { KILN_HF_SPLIT, KILN_HCOL_##lo, KILN_HCOL_##hi, name }
#define KILN_HRECS_INIT { \
	[KILN_HREC_HEADER] = { 'H', 0, 5, { \
		KILN_HF__UV(MISC, "pid"), KILN_HF__UV(MISC, "ppid"), KILN_HF__UV(MISC, "start_realtime_ns"), \
		KILN_HF__UV(MISC, "sample_bytes"), KILN_HF__STR("cmdline") } }, \
	[KILN_HREC_MAPS] = { 'P', 0, 1, { KILN_HF__STR("maps") } }, \
	[KILN_HREC_STACK] = { 'S', 0, 3, { \
		KILN_HF__UV(MISC, "stack id"), KILN_HF__UV(MISC, "depth"), KILN_HF__UVS("pc") } }, \
	[KILN_HREC_NAME] = { 'N', 0, 2, { KILN_HF__UV(MISC, "tid"), KILN_HF__STR("thread name") } }, \
	[KILN_HREC_TIME] = { 'T', 0, 1, { KILN_HF__UV(MISC, "dt_ns") } }, \
	[KILN_HREC_THREAD] = { 'X', 0, 1, { KILN_HF__UV(MISC, "tid") } }, \
	[KILN_HREC_ALLOC] = { 'A', 1, 2, { \
		KILN_HF__SPLIT(SIZE_LO, SIZE_HI, "size"), KILN_HF__UV(STACK, "stack") } }, \
	[KILN_HREC_FREE] = { 'F', 1, 1, { KILN_HF__SPLIT(BACK_LO, BACK_HI, "block") } }, \
	[KILN_HREC_RFREE] = { 'R', 1, 2, { \
		KILN_HF__UV(MISC, "thread"), KILN_HF__SPLIT(BACK_LO, BACK_HI, "block") } }, \
	[KILN_HREC_LOST] = { 'L', 0, 1, { KILN_HF__UV(MISC, "count") } }, \
	[KILN_HREC_END] = { 'E', 0, 0, { { 0 } } }, \
}

/* The records, by kind: their tags and fields in order. */
extern const struct kiln_hrec kiln_hrecs[KILN_HREC_N];

/* Fills map: the kind of each tag byte (lower-case events included), -1
 * for none. */
void kiln_hrec_map(signed char map[256]);

#endif
