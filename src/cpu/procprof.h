/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles of this process (cpu stage, procprof.c and modules.c): what
 * the CPU profile and the heap profiles (heap/dump.c) do alike when they
 * turn raw addresses into a self-contained pprof -- this process's
 * executable mappings as profile mappings, the libraries unloaded since
 * they were noted, light symbolization.
 */
#ifndef KILN_CPU_PROCPROF_H
#define KILN_CPU_PROCPROF_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/maptab.h"

struct kiln_prof;

/* The executable mappings of /proc/self/maps, added to profile p. */
struct kiln_procprof_maps {
	struct kiln_maptab t;
};

/* Holds this process's /proc folder open (kiln's fd), so that the maps
 * are read even after the program chroots.  Called when a profile
 * starts; idempotent. */
void kiln_procprof_proc_hold(void);

/* In a forked child (its fork handler): the parent's /proc folder, held
 * by kiln_procprof_proc_hold(), is closed. */
void kiln_procprof_fork_child(void);

/* Opens rel under this process's /proc folder (the held one when it
 * is this process's) into k.  0 or -errno. */
struct kiln_kfd;
int kiln_procprof_proc_openat(struct kiln_kfd *k, const char *rel, int flags);

/*
 * Reads /proc/self/maps into m and p's mappings, with the libraries
 * unloaded since they were noted (kiln_procprof_modules_add_gone()).
 * 0 or -errno.
 */
int kiln_procprof_maps_load(struct kiln_procprof_maps *m, struct kiln_prof *p);
/* The same from the maps text in *text, or read into it (and left there
 * for the next call) when it is empty. */
struct kiln_buf;
int kiln_procprof_maps_load_from(struct kiln_procprof_maps *m,
				  struct kiln_prof *p, struct kiln_buf *text);
/* The mapping id holding addr, 0 for none. */
uint32_t kiln_procprof_maps_find(const struct kiln_procprof_maps *m,
				 uint64_t addr);
void kiln_procprof_maps_release(struct kiln_procprof_maps *m);

/* ---- modules once mapped (modules.c) ---- */

/*
 * Notes the shared libraries mapped now (path, load address, executable
 * segments), adding those not seen before.  Called by the collector when
 * the loader's set changes and by kiln's dlclose() before the real one.
 */
void kiln_procprof_modules_note(void);
/*
 * Adds to t and p the executable segments of noted libraries that no
 * range of t covers (unloaded since), as mappings of their files, so
 * that samples taken in them are symbolized from the files on disk.
 * 0 or -ENOMEM.
 */
int kiln_procprof_modules_add_gone(struct kiln_maptab *t, struct kiln_prof *p);

/*
 * Symbolizes p in place, lightly (the agent's options: no debuginfod),
 * with kiln_sym_prof() flags sym_flags, and adds the command line as a
 * comment.  0 or -errno.
 */
int kiln_procprof_finish(struct kiln_prof *p, unsigned sym_flags);

/*
 * The same with session warm, which is kept (its modules stay reported
 * and its lookups cached: a profile written at exit then only looks up
 * what is new); NULL: a session of its own.  kiln_procprof_sym_new() makes
 * one with the agent's options (light); kept: a session kept while the
 * program runs, whose lines from the debug file cache are read by
 * kiln_sym_fill_lines() (defer_cached_lines, symbolize.h).
 */
struct kiln_sym;
int kiln_procprof_finish_with(struct kiln_prof *p, unsigned sym_flags,
				struct kiln_sym *warm);
struct kiln_sym *kiln_procprof_sym_new(bool kept);

#endif
