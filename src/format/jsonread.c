/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON readers' shared helpers (format stage): see jsonread.h.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "format/jsonread.h"
#include "util/diag.h"

json_t *kiln_json_load(const char *data, size_t len, int *err,
		       struct kiln_diag *d)
{
	json_error_t je;
	json_t *j;

	/* jansson bounds nesting (2048 levels), so a hostile file cannot
	 * run the parser's recursion off the stack.  Duplicate keys are
	 * taken (the last wins), as JSON.parse() takes them in speedscope
	 * and Chrome.  Every number is a double, as in JavaScript: Chrome
	 * writes integers beyond 2^63 that an integer parse refuses. */
	j = json_loadb(data, len, JSON_DECODE_INT_AS_REAL, &je);
	if (j) {
		*err = 0;
		return j;
	}
	if (json_error_code(&je) == json_error_out_of_memory) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = kiln_diag(d, "line %d, column %d: not JSON: %s", je.line,
			 je.column, je.text);
	return NULL;
}

bool kiln_json_value(const json_t *j, double scale, int64_t *v)
{
	double x;

	if (!json_is_number(j))
		return false;
	x = json_number_value(j) * scale;
	/* 2^62: room to add thousands of them up in int64_t, where the
	 * readers check the totals. */
	if (!isfinite(x) || x < 0 || x > 4611686018427387904.0)
		return false;
	*v = (int64_t)llround(x);
	return true;
}

const char *kiln_json_str(const json_t *obj, const char *key, const char *def)
{
	const json_t *j = json_object_get(obj, key);

	return json_is_string(j) ? json_string_value(j) : def;
}

bool kiln_json_int(const json_t *j, int64_t *v)
{
	double x;

	if (!json_is_number(j))
		return false;
	x = json_number_value(j);
	/* 2^53: where doubles stop holding every integer. */
	if (!(x >= -9007199254740992.0 && x <= 9007199254740992.0) ||
	    x != (double)(int64_t)x)
		return false;
	*v = (int64_t)x;
	return true;
}
