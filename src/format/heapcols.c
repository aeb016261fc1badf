/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kiln heap trace's columns and records (format stage): the one
 * description of docs/heap-trace.md's tables that its encoder and its
 * decoder share.  See heapcols.h.
 */
#include "format/heapcols.h"

const char *const kiln_hcol_names[KILN_HCOL_N] = {
	[KILN_HCOL_TAG] = "tags column",
	[KILN_HCOL_MISC] = "fields column",
	[KILN_HCOL_SIZE_LO] = "size low bytes column",
	[KILN_HCOL_SIZE_HI] = "size high bytes column",
	[KILN_HCOL_STACK] = "stack ids column",
	[KILN_HCOL_BACK_LO] = "block low bytes column",
	[KILN_HCOL_BACK_HI] = "block high bytes column",
};

const struct kiln_hrec kiln_hrecs[KILN_HREC_N] = KILN_HRECS_INIT;

void kiln_hrec_map(signed char map[256])
{
	int k;

	for (k = 0; k < 256; k++)
		map[k] = -1;
	for (k = 0; k < KILN_HREC_N; k++) {
		map[kiln_hrecs[k].tag] = (signed char)k;
		if (kiln_hrecs[k].events)
			map[kiln_hrecs[k].tag + KILN_HREC_PREV_THREAD] = (signed char)k;
	}
}
