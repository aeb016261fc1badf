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

#define UV(col, name) { KILN_HF_UV, KILN_HCOL_##col, 0, name }
#define STR(name) { KILN_HF_STR, KILN_HCOL_MISC, 0, name }
#define UVS(name) { KILN_HF_UVS, KILN_HCOL_MISC, 0, name }
#define SPLIT(lo, hi, name) { KILN_HF_SPLIT, KILN_HCOL_##lo, KILN_HCOL_##hi, name }

const struct kiln_hrec kiln_hrecs[KILN_HREC_N] = {
	[KILN_HREC_HEADER] = { 'H', 0, 5, {
		UV(MISC, "pid"), UV(MISC, "ppid"), UV(MISC, "start_realtime_ns"),
		UV(MISC, "sample_bytes"), STR("cmdline") } },
	[KILN_HREC_MAPS] = { 'P', 0, 1, { STR("maps") } },
	[KILN_HREC_STACK] = { 'S', 0, 3, {
		UV(MISC, "stack id"), UV(MISC, "depth"), UVS("pc") } },
	[KILN_HREC_NAME] = { 'N', 0, 2, { UV(MISC, "tid"), STR("thread name") } },
	[KILN_HREC_TIME] = { 'T', 0, 1, { UV(MISC, "dt_ns") } },
	[KILN_HREC_THREAD] = { 'X', 0, 1, { UV(MISC, "tid") } },
	[KILN_HREC_ALLOC] = { 'A', 1, 2, {
		SPLIT(SIZE_LO, SIZE_HI, "size"), UV(STACK, "stack") } },
	[KILN_HREC_FREE] = { 'F', 1, 1, { SPLIT(BACK_LO, BACK_HI, "block") } },
	[KILN_HREC_RFREE] = { 'R', 1, 2, {
		UV(MISC, "thread"), SPLIT(BACK_LO, BACK_HI, "block") } },
	[KILN_HREC_LOST] = { 'L', 0, 1, { UV(MISC, "count") } },
	[KILN_HREC_END] = { 'E', 0, 0, { { 0 } } },
};

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
