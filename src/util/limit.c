/* SPDX-License-Identifier: Apache-2.0 */
/* How much input kiln takes in (util stage). */
#include "util/limit.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

static size_t limit = KILN_INPUT_LIMIT_DEFAULT;

size_t kiln_input_limit(void)
{
	return limit;
}

void kiln_input_set_limit(size_t bytes)
{
	limit = bytes;
}

int kiln_parse_size(const char *s, size_t *out)
{
	static const char units[] = "kmgt";
	unsigned long long x;
	char *end;
	int shift = 0, i;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end) {
		for (i = 0; units[i]; i++)
			if (tolower((unsigned char)*end) == units[i])
				shift = 10 * (i + 1);
		if (!shift)
			return -EINVAL;
		end++;
		if (*end && strcasecmp(end, "b") && strcasecmp(end, "ib"))
			return -EINVAL;
	}
	if (shift && x > (SIZE_MAX >> shift))
		return -EINVAL;
	*out = (size_t)x << shift;
	return 0;
}

const char *kiln_size_str(size_t bytes, char *buf, size_t n)
{
	static const char *const names[] = { "KiB", "MiB", "GiB", "TiB" };
	int i;

	for (i = 3; i >= 0; i--) {
		size_t unit = (size_t)1 << (10 * (i + 1));

		if (bytes >= unit && bytes % unit == 0) {
			snprintf(buf, n, "%zu %s", bytes / unit, names[i]);
			return buf;
		}
	}
	snprintf(buf, n, "%zu bytes", bytes);
	return buf;
}
