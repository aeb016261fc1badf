/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof's wire format (format stage): the fields of profile.proto as
 * protobuf-c expects them, and a walker over them.  The reader
 * (pprof.c) walks the top-level Profile message with it in its first
 * pass; where protobuf-c rejects a record, the checker walks the record
 * and its submessages to find the offending byte and say what is wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>

#include "format/pprofint.h"
#include "util/diag.h"

/* A message's table; linkage is static, or empty for those pprofint.h
 * declares. */
#define WF_MSG_DEF(linkage, var, label, ...)				\
	static const struct wf_field var##_fields[] = { __VA_ARGS__ };	\
	linkage const struct wf_msg var = { label, var##_fields,	\
		sizeof(var##_fields) / sizeof(var##_fields[0]) }

WF_MSG_DEF(, kiln_pprof_wf_value_type, "ValueType",
	   { 1, WF_VARINT, "type", NULL }, { 2, WF_VARINT, "unit", NULL });
WF_MSG_DEF(static, wf_label, "Label",
	   { 1, WF_VARINT, "key", NULL }, { 2, WF_VARINT, "str", NULL },
	   { 3, WF_VARINT, "num", NULL }, { 4, WF_VARINT, "num_unit", NULL });
WF_MSG_DEF(static, wf_sample, "Sample",
	   { 1, WF_PACKED, "location_id", NULL },
	   { 2, WF_PACKED, "value", NULL },
	   { 3, WF_MSG, "label", &wf_label });
WF_MSG_DEF(static, wf_mapping, "Mapping",
	   { 1, WF_VARINT, "id", NULL }, { 2, WF_VARINT, "memory_start", NULL },
	   { 3, WF_VARINT, "memory_limit", NULL },
	   { 4, WF_VARINT, "file_offset", NULL },
	   { 5, WF_VARINT, "filename", NULL }, { 6, WF_VARINT, "build_id", NULL },
	   { 7, WF_VARINT, "has_functions", NULL },
	   { 8, WF_VARINT, "has_filenames", NULL },
	   { 9, WF_VARINT, "has_line_numbers", NULL },
	   { 10, WF_VARINT, "has_inline_frames", NULL });
WF_MSG_DEF(static, wf_line, "Line",
	   { 1, WF_VARINT, "function_id", NULL }, { 2, WF_VARINT, "line", NULL },
	   { 3, WF_VARINT, "column", NULL });
WF_MSG_DEF(static, wf_location, "Location",
	   { 1, WF_VARINT, "id", NULL }, { 2, WF_VARINT, "mapping_id", NULL },
	   { 3, WF_VARINT, "address", NULL }, { 4, WF_MSG, "line", &wf_line },
	   { 5, WF_VARINT, "is_folded", NULL });
WF_MSG_DEF(static, wf_function, "Function",
	   { 1, WF_VARINT, "id", NULL }, { 2, WF_VARINT, "name", NULL },
	   { 3, WF_VARINT, "system_name", NULL },
	   { 4, WF_VARINT, "filename", NULL },
	   { 5, WF_VARINT, "start_line", NULL });
WF_MSG_DEF(, kiln_pprof_wf_profile, "Profile",
	   { 1, WF_MSG, "sample_type", &kiln_pprof_wf_value_type },
	   { 2, WF_MSG, "sample", &wf_sample },
	   { 3, WF_MSG, "mapping", &wf_mapping },
	   { 4, WF_MSG, "location", &wf_location },
	   { 5, WF_MSG, "function", &wf_function },
	   { 6, WF_BYTES, "string_table", NULL },
	   { 7, WF_VARINT, "drop_frames", NULL },
	   { 8, WF_VARINT, "keep_frames", NULL },
	   { 9, WF_VARINT, "time_nanos", NULL },
	   { 10, WF_VARINT, "duration_nanos", NULL },
	   { 11, WF_MSG, "period_type", &kiln_pprof_wf_value_type },
	   { 12, WF_VARINT, "period", NULL },
	   { 13, WF_PACKED, "comment", NULL },
	   { 14, WF_VARINT, "default_sample_type", NULL });

/*
 * Reads the field at *pos of message msg (whose bytes end at end), as
 * protobuf-c would accept it.  1 with *it filled, 0 at the end, or -EINVAL
 * with d saying "byte N: <ctx><why>".
 */
int kiln_pprof_wf_next(const uint8_t *b, size_t *pos, size_t end,
		       const struct wf_msg *msg, struct wf_item *it,
		       const char *ctx, struct kiln_diag *d)
{
	uint64_t key, len;

	if (*pos >= end)
		return 0;
	it->at = *pos;
	it->f = NULL;
	it->name = "unknown field";
	it->v = 0;
	it->off = it->len = 0;
	if (!wf_varint(b, pos, end, &key))
		return kiln_diag(d, "byte %zu: %sa field key in %s is cut short",
				 it->at, ctx, msg->name);
	if (key >> 3 == 0 || key >> 3 > (1u << 29) - 1)
		return kiln_diag(d, "byte %zu: %sinvalid field number %" PRIu64
				 " in %s", it->at, ctx, key >> 3, msg->name);
	it->num = (uint32_t)(key >> 3);
	it->wt = (uint32_t)(key & 7);
	/* The fields of each message are numbered 1..n, in order. */
	if (it->num <= msg->n)
		it->f = &msg->fields[it->num - 1];
	if (it->f) {
		enum wf_kind k = it->f->kind;

		it->name = it->f->name;
		if ((k == WF_VARINT && it->wt != 0) ||
		    ((k == WF_BYTES || k == WF_MSG) && it->wt != 2) ||
		    (k == WF_PACKED && it->wt != 0 && it->wt != 2))
			return kiln_diag(d, "byte %zu: %s%s.%s has wire type %u, "
					 "expected %s", it->at, ctx, msg->name,
					 it->name, it->wt,
					 k == WF_VARINT ? "0 (varint)" :
					 k == WF_PACKED ? "0 or 2" :
					 "2 (length-delimited)");
	}
	switch (it->wt) {
	case 0:
		if (!wf_varint(b, pos, end, &it->v))
			return kiln_diag(d, "byte %zu: %sthe varint of %s.%s is cut "
					 "short or longer than 10 bytes", it->at,
					 ctx, msg->name, it->name);
		return 1;
	case 1:
	case 5:
		if (end - *pos < (it->wt == 1 ? 8u : 4u))
			return kiln_diag(d, "byte %zu: %s%s.%s is cut short", it->at,
					 ctx, msg->name, it->name);
		*pos += it->wt == 1 ? 8 : 4;
		return 1;
	case 2:
		if (!wf_varint(b, pos, end, &len))
			return kiln_diag(d, "byte %zu: %sthe length of %s.%s is cut "
					 "short", it->at, ctx, msg->name, it->name);
		if (len > end - *pos)
			return kiln_diag(d, "byte %zu: %s%s.%s claims %" PRIu64
					 " bytes but only %zu remain (truncated?)",
					 it->at, ctx, msg->name, it->name, len,
					 end - *pos);
		it->off = *pos;
		it->len = (size_t)len;
		*pos += (size_t)len;
		return 1;
	default:
		return kiln_diag(d, "byte %zu: %sinvalid wire type %u (%s %u of "
				 "%s)", it->at, ctx, it->wt, it->name, it->num,
				 msg->name);
	}
}

/* Checks the packed varints of a length-delimited field. */
int kiln_pprof_wf_packed(const uint8_t *b, const struct wf_item *it,
			 const char *msg, const char *ctx, struct kiln_diag *d)
{
	size_t q = it->off, end = it->off + it->len;
	uint64_t v;

	while (q < end)
		if (!wf_varint(b, &q, end, &v))
			return kiln_diag(d, "byte %zu: %sa varint in %s.%s is cut "
					 "short", q, ctx, msg, it->name);
	return 0;
}

/*
 * Walks message msg in b[start, end) and its submessages, and reports
 * the first thing protobuf-c would reject.  0 when nothing was found.
 */
int kiln_pprof_wf_check(const uint8_t *b, size_t start, size_t end,
			const struct wf_msg *msg, const char *ctx,
			struct kiln_diag *d)
{
	struct wf_item it;
	size_t pos = start;
	int rc;

	while ((rc = kiln_pprof_wf_next(b, &pos, end, msg, &it, ctx, d)) > 0) {
		if (!it.f || it.wt != 2)
			continue;
		if (it.f->kind == WF_MSG)
			rc = kiln_pprof_wf_check(b, it.off, it.off + it.len,
						 it.f->sub, ctx, d);
		else if (it.f->kind == WF_PACKED)
			rc = kiln_pprof_wf_packed(b, &it, msg->name, ctx, d);
		if (rc)
			return rc;
	}
	return rc;
}
