/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof's internals (format stage), shared by its three files: pprof.c
 * (the reader), pprof-write.c (the writer) and pprof-wire.c (the walker
 * that knows profile.proto's wire format: the reader's first pass and
 * the checker that finds the byte protobuf-c rejected).
 */
#ifndef KILN_FORMAT_PPROFINT_H
#define KILN_FORMAT_PPROFINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "profile.pb-c.h"

#include "util/diag.h"
#include "util/varint.h"

/* Shorter names for the generated types (file-local). */
typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* calloc that never returns NULL for n == 0 and never overflows. */
static inline void *bulk(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* ---- pprof-wire.c: the wire format ---- */

enum wf_kind { WF_VARINT, WF_PACKED, WF_BYTES, WF_MSG };

/* What protobuf-c expects of a field of profile.proto.  A message's
 * fields are listed in order of number, and the numbers are 1..n. */
struct wf_field {
	uint32_t num;
	enum wf_kind kind;
	const char *name;
	const struct wf_msg *sub;
};

struct wf_msg {
	const char *name;
	const struct wf_field *fields;
	size_t n;
};

/* The messages of profile.proto the reader walks itself. */
extern const struct wf_msg kiln_pprof_wf_profile;
extern const struct wf_msg kiln_pprof_wf_value_type;

/*
 * Reads a varint at *pos (< end); false if it is cut short or too long.
 * As protobuf-c does, a tenth byte's bits above the 64th are dropped.
 */
static inline bool wf_varint(const uint8_t *b, size_t *pos, size_t end,
			     uint64_t *v)
{
	int got = kiln_varint_get_proto(b + *pos, end - *pos, v);

	if (got <= 0)
		return false;
	*pos += (size_t)got;
	return true;
}

/* One field of a message. */
struct wf_item {
	size_t at;			/* offset of its key */
	uint32_t num, wt;
	const struct wf_field *f;	/* NULL for an unknown field */
	const char *name;
	uint64_t v;			/* the value, wire type 0 */
	size_t off, len;		/* the contents, wire type 2 */
};

/*
 * Reads the field at *pos of message msg (whose bytes end at end), as
 * protobuf-c would accept it.  1 with *it filled, 0 at the end, or -EINVAL
 * with d saying "byte N: <ctx><why>".
 */
int kiln_pprof_wf_next(const uint8_t *b, size_t *pos, size_t end,
		       const struct wf_msg *msg, struct wf_item *it,
		       const char *ctx, struct kiln_diag *d);

/* Checks the packed varints of a length-delimited field: 0 or -EINVAL. */
int kiln_pprof_wf_packed(const uint8_t *b, const struct wf_item *it,
			 const char *msg, const char *ctx, struct kiln_diag *d);

/*
 * Walks message msg in b[start, end) and its submessages, and reports
 * the first thing protobuf-c would reject.  0 when nothing was found.
 */
int kiln_pprof_wf_check(const uint8_t *b, size_t start, size_t end,
			const struct wf_msg *msg, const char *ctx,
			struct kiln_diag *d);

#endif
