/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the reader of collapsed stacks (src/format/collapsed.c):
 * any bytes are read or refused with a message; what is read goes through
 * the writers (tests/fuzz/fuzz.h).  Built by -DKILN_FUZZ=ON (make fuzz),
 * or as a corpus replayer without it (tests/fuzz/README.md).
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_reader_run("fuzz-collapsed", kiln_collapsed_read, (const char *)data, size);
	return 0;
}
