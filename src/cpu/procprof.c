/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles of this process (cpu stage): what the CPU profile (cpu.c)
 * and the heap profiles (heap/dump.c) do alike when they turn raw
 * addresses into a self-contained pprof: the executable mappings of
 * /proc/self/maps as profile mappings, light symbolization (no
 * debuginfod, symbol tables for system libraries: see kiln_sym_opts.light)
 * and the command line as a comment.  Runs on kiln's own threads (or a
 * caller's, with the heap hooks quiet), never in a handler or a hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "runtime/kfd.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/exename.h"
#include "util/file.h"
#include "cpu/procprof.h"

/*
 * This process's /proc folder, held from the start of a profile: a
 * program that chroots (where no /proc is) still has its maps read at
 * the end.  Only for the process that opened it (a fork child's
 * /proc/self is another folder).
 */
static struct kiln_kfd proc_dir = KILN_KFD_INIT;
static pid_t proc_pid;

void kiln_procprof_proc_hold(void)
{
	if (proc_pid == getpid() && kiln_kfd_ours(&proc_dir))
		return;
	/* A fork child that profiles itself: the parent's folder goes. */
	if (kiln_kfd_ours(&proc_dir))
		kiln_kfd_close(&proc_dir);
	if (!kiln_kfd_open(&proc_dir, "/proc/self", O_RDONLY | O_DIRECTORY, 0))
		proc_pid = getpid();
}

void kiln_procprof_fork_child(void)
{
	/* The parent's folder: of no use here (and a worker that profiles
	 * nothing held it for its life). */
	if (proc_pid != getpid())
		kiln_kfd_close(&proc_dir);
}

int kiln_procprof_proc_openat(struct kiln_kfd *k, const char *rel, int flags)
{
	char path[256];
	int fd = -1;

	if (proc_pid == getpid() && kiln_kfd_ours(&proc_dir))
		fd = openat(proc_dir.fd, rel, flags | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/self/%s", rel);
		fd = open(path, flags | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	return kiln_kfd_adopt(k, fd);
}

/*
 * /proc/self/maps, by the held folder when it is this process's.  Once
 * the main thread has ended (pthread_exit()), the process's own folder
 * is its zombie's and its maps read empty: the calling thread's are the
 * same and still there.  The executable named as it was run
 * (util/exename.h), as kiln_read_self_maps() names it.
 */
static int read_maps(struct kiln_buf *b)
{
	if (proc_pid == getpid() && kiln_kfd_ours(&proc_dir) &&
	    !kiln_read_proc(proc_dir.fd, "maps", b) && b->len)
		return kiln_self_maps_alias(b, 0);
	kiln_buf_reset(b);
	return kiln_read_self_maps(b);
}

int kiln_procprof_maps_load_from(struct kiln_procprof_maps *m,
				  struct kiln_prof *p, struct kiln_buf *text)
{
	int err = 0;

	memset(m, 0, sizeof(*m));
	if (!text->len)
		err = read_maps(text);
	if (!err)
		err = kiln_maptab_add_text(&m->t, p, text->data, text->len);
	if (!err)
		err = kiln_procprof_modules_add_gone(&m->t, p);
	if (!err)
		err = kiln_prof_error(p);
	return err;
}

int kiln_procprof_maps_load(struct kiln_procprof_maps *m, struct kiln_prof *p)
{
	struct kiln_buf maps = KILN_BUF_INIT;
	int err = kiln_procprof_maps_load_from(m, p, &maps);

	kiln_buf_release(&maps);
	return err;
}

uint32_t kiln_procprof_maps_find(const struct kiln_procprof_maps *m,
				 uint64_t addr)
{
	return kiln_maptab_find(&m->t, addr);
}

void kiln_procprof_maps_release(struct kiln_procprof_maps *m)
{
	kiln_maptab_release(&m->t);
}

struct kiln_sym *kiln_procprof_sym_new(bool kept)
{
	struct kiln_sym_opts so = { 0 };

	so.light = true;
	so.defer_cached_lines = kept;
	return kiln_sym_new(&so);
}

int kiln_procprof_finish_with(struct kiln_prof *p, unsigned sym_flags,
				struct kiln_sym *warm)
{
	struct kiln_buf cmd = KILN_BUF_INIT;
	struct kiln_map raw;
	struct kiln_sym *sym = warm ? warm : kiln_procprof_sym_new(false);
	size_t i;
	int err;

	if (!sym)
		return -ENOMEM;
	/* JIT code (node --perf-basic-prof, a JVM's perf map agent) named
	 * from the map its runtime writes for perf. */
	err = kiln_sym_load_own_perfmap(sym);
	if (!err)
		err = kiln_sym_load_own_jitdump(sym);
	if (!err)
		err = kiln_sym_prof(sym, p, sym_flags);
	if (!warm)
		kiln_sym_free(sym);
	if (err)
		return err;
	/* The arguments, NUL-separated, as one line (the calling thread's
	 * folder: once the main thread has ended, /proc/self's reads empty). */
	if (!kiln_map_open(&raw, "/proc/thread-self/cmdline") ||
	    !kiln_map_open(&raw, "/proc/self/cmdline")) {
		kiln_buf_add(&cmd, raw.data, raw.len);
		kiln_map_release(&raw);
	}
	if (cmd.len) {
		for (i = 0; i + 1 < cmd.len; i++)
			if (!cmd.data[i])
				cmd.data[i] = ' ';
		kiln_prof_add_comment(p, cmd.data);
	}
	kiln_buf_release(&cmd);
	return kiln_prof_error(p);
}

int kiln_procprof_finish(struct kiln_prof *p, unsigned sym_flags)
{
	return kiln_procprof_finish_with(p, sym_flags, NULL);
}
