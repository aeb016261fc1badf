/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The perf.data replay (session stage): perf's file read into a profile
 * through the recording session's model (see replay.c).
 */
#ifndef KILN_SESSION_REPLAY_H
#define KILN_SESSION_REPLAY_H

#include <stddef.h>

struct kiln_diag;
struct kiln_prof;

/*
 * perf's binary perf.data, file or pipe mode, into the empty profile p:
 * samples with their processes, threads and mappings, call chains and
 * DWARF stack copies unwound, symbolized from the recorded binaries or
 * perf's build-id cache (docs/formats.md).  0, -ENOMEM, or -EINVAL with
 * d filled.
 */
int kiln_perfdata_read(struct kiln_prof *p, const char *data, size_t len,
		       struct kiln_diag *d);

/*
 * Registers what session/ offers format/ at run time: the perf.data
 * reader behind kiln_read_profile() (kiln_fmt_set_perfdata_reader()).
 * Call once at start-up, before reading profiles.
 */
void kiln_session_register(void);

#endif
