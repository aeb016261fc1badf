/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DWARF unwinding of sampled user stacks (session stage): the registers
 * and the copy of the user stack that perf_event_open took with a sample
 * are unwound with elfutils' libdwfl CFI (.eh_frame / .debug_frame), as
 * eu-stack and perf do.  One session per process address space; each
 * module's CFI is parsed once and cached by libdwfl across samples.
 *
 * On x86-64 the CFI row of each address is also kept in a compact form
 * (CFA = register + offset, registers at or relative to the CFA, the same
 * or undefined) and the walk done from those rows exactly as libdwfl's
 * handle_cfi() does it, without its allocations: a sample that meets a row
 * of another shape (expressions, code without CFI) is unwound by libdwfl.
 * KILN_UNWIND_CHECK=1 unwinds every sample both ways and reports
 * differences on stderr (tests/e2e/t334).
 */
#ifndef KILN_SESSION_UNWIND_H
#define KILN_SESSION_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct kiln_perf_sample;
struct kiln_unwind;

/* NULL with errno set.  pid: the process, for /proc/PID/map_files. */
struct kiln_unwind *kiln_unwind_new(int pid);
void kiln_unwind_free(struct kiln_unwind *u);

/* Adds an executable file mapping (the columns of /proc/PID/maps). */
int kiln_unwind_add_mapping(struct kiln_unwind *u, const char *path,
			    uint64_t start, uint64_t end, uint64_t pgoff);

/*
 * Unwinds sample s (which must carry user registers and stack) into out,
 * leaf first: out[0] is the sampled IP, the others return addresses.
 * Returns the number of addresses (possibly a partial stack), or -1 when
 * nothing could be unwound.
 */
long kiln_unwind_sample(struct kiln_unwind *u, const struct kiln_perf_sample *s,
			uint64_t *out, size_t max);

#endif
