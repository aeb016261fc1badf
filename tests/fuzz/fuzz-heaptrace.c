/*
 * libFuzzer harness for the heap-trace reader (src/format/heaptrace.c and
 * the analysis of src/profile/heap.c): zstd frames or an uncompressed
 * "KILNHEAP" stream.  kiln_heaptrace_read() symbolizes from the maps
 * records of the trace; KILN_NO_LOCAL_SYMBOLS keeps it from opening the
 * files they name (a fuzzer would name /dev/zero or a FIFO).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;

	if (!once) {
		setenv("KILN_NO_LOCAL_SYMBOLS", "1", 1);
		once = 1;
	}
	fuzz_reader_run("fuzz-heaptrace", kiln_heaptrace_read,
			(const char *)data, size);
	return 0;
}
