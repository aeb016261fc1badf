/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the heap-trace reader (src/format/heaptrace.c and
 * the analysis of src/profile/hprof.c): zstd frames or an uncompressed
 * "KILNHEAP" stream.  kiln_heaptrace_read() symbolizes from the maps
 * records of the trace; fuzz_reader_run() keeps it from opening the
 * files they name (kiln_sym_set_no_local()).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_reader_run("fuzz-heaptrace", kiln_heaptrace_read,
			(const char *)data, size);
	return 0;
}
