/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the JSON readers share (format stage, private to speedscope-read.c
 * and cpuprofile.c): parsing a whole file with jansson, with errors as
 * "line N: why", and numbers taken as the model's int64_t values.
 */
#ifndef KILN_FORMAT_JSONREAD_H
#define KILN_FORMAT_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct kiln_diag;

/*
 * Parses data as one JSON value (nothing but blanks after it).  NULL with
 * -EINVAL and d filled ("line 3, column 7: ...") or -ENOMEM in *err; the
 * caller json_decref()s what it gets.
 */
json_t *kiln_json_load(const char *data, size_t len, int *err,
		       struct kiln_diag *d);

/* A number (integer or real) scaled by scale and rounded, into *v: false
 * when it is not a number, not finite, negative or beyond 2^62. */
bool kiln_json_value(const json_t *j, double scale, int64_t *v);

/* An integral number of at most 2^53 in magnitude, into *v. */
bool kiln_json_int(const json_t *j, int64_t *v);

/* A string member of obj, or def when absent or not a string. */
const char *kiln_json_str(const json_t *obj, const char *key, const char *def);

struct kiln_prof;

/*
 * The duration events ("B", "E", "X") of Chrome trace events with no CPU
 * profile among them, nested per thread into stacks weighing their self
 * time (format/trace-events.c).  Sets the profile's sample types;
 * -EINVAL with d filled when there are none or one is malformed.
 */
int kiln_trace_events_read(struct kiln_prof *p, const json_t *events,
			   struct kiln_diag *d);

#endif
