/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `perf script` reader's internals (format stage), shared by
 * perfscript.c (the reader: lines walked, frames turned into locations,
 * samples added) and perfscript-header.c (the sample header line parsed,
 * the events it names turned into sample types).
 */
#ifndef KILN_FORMAT_PERFSCRIPTINT_H
#define KILN_FORMAT_PERFSCRIPTINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* ---- small text helpers ---- */

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Length of the run of hex digits at s (at most to e). */
static inline size_t hex_run(const char *s, const char *e)
{
	const char *q = s;

	while (q < e && hexval(*q) >= 0)
		q++;
	return (size_t)(q - s);
}

/* Parses n decimal digits; false on overflow of int64. */
static inline bool parse_dec(const char *s, size_t n, int64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]) || v > (uint64_t)(INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = (int64_t)v;
	return true;
}

static inline bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* "ADDR " or "ADDR" alone: the start of a frame line (after its indent). */
static inline bool looks_frame(const char *s, const char *e)
{
	size_t n = hex_run(s, e);

	return n > 0 && (s + n == e || is_ws(s[n]));
}

/* ---- perfscript-header.c: the sample header ---- */

struct hdr {
	const char *comm;	/* may be empty (no comm field) */
	size_t comm_len;
	const char *ident;	/* line start .. end of the pid/tid token */
	size_t ident_len;
	int64_t pid, tid;
	bool has_pid, has_tid;
	bool has_time;		/* perf script -F without time: none */
	int64_t time_ns;
	int64_t period;
	bool has_period;
	const char *event;	/* without modifiers; may be empty */
	size_t event_len;
	const char *rest;	/* after the event: "IP SYM (DSO)" or trace fields */
	size_t rest_len;
};

/*
 * Parses a header line [s, e) into h (pointers into the line).  False if
 * the line is no sample header.
 */
bool kiln_perfscript_parse_header(const char *s, const char *e,
				  struct hdr *h);

/* ---- perfscript-header.c: events and sample types ---- */

struct event {
	const char *name;	/* into the input */
	size_t len;
	bool has_period;
	int col;		/* value column, -1 for none (samples only) */
};

struct events {
	struct event *v;
	size_t n, alloc;
	size_t last;		/* cache of the last one found */
};

/* The index of the event named [name, name + len) in ev, or -1. */
long kiln_perfscript_event_find(struct events *ev, const char *name,
				size_t len);

/* Adds h's event to ev, or notes its period: 0 or -ENOMEM. */
int kiln_perfscript_event_add(struct events *ev, const struct hdr *h);

/*
 * Sets p's sample types from the events found by the first pass and
 * gives each event its value column: 0 or a negative errno.
 */
int kiln_perfscript_set_types(struct kiln_prof *p, struct events *ev);

#endif
