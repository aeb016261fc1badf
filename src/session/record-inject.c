/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recording session in the profiled process (session stage): `kiln
 * record --mode inject`, the command run with libkiln.so preloaded and
 * its in-process sampler on, its processes' profiles merged.  See
 * record-run.h.
 */
#include "session/record-run.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/child.h"
#include "util/diag.h"

/* What the command runs with. */
struct inject_env {
	const char *pre, *prof, *hz;
	bool wall;
};

/* In the child, before exec (kiln_child.setup). */
static void inject_env(void *arg)
{
	const struct inject_env *e = arg;

	setenv("LD_PRELOAD", e->pre, 1);
	setenv("KILN_CPU", e->prof, 1);
	setenv("KILN_CPU_HZ", e->hz, 1);
	/* --wall: the agent's wall-clock sampler (wall.c). */
	setenv("KILN_CPU_MODE", e->wall ? "wall" : "cpu", 1);
	unsetenv("CPUPROFILE_REALTIME");
	unsetenv("KILN_CPU_SIGNAL");
	unsetenv("CPUPROFILESIGNAL");
	unsetenv("KILN_CPU_OWNER");
}

/* Runs the command to its end; its wait status in res.  0 or -errno. */
static int run(const struct kiln_inject_opts *o, const char *prof,
	       struct kiln_record_result *res)
{
	struct kiln_child child = KILN_CHILD_INIT;
	struct kiln_buf pre = KILN_BUF_INIT;
	struct inject_env env;
	char hz[32];
	int err;

	kiln_child_preload(&pre, o->agent);
	/* CPU-time timers tick at most at CONFIG_HZ (often 250). */
	snprintf(hz, sizeof(hz), "%ld", o->freq);
	if (o->on_stop) {
		signal(SIGINT, o->on_stop);
		signal(SIGTERM, o->on_stop);
	}
	env = (struct inject_env){ pre.data, prof, hz, o->wall };
	child.setup = inject_env;
	child.setup_arg = &env;
	err = kiln_child_spawn(&child, o->cmd);
	if (err)
		goto out;
	/* A failed exec: the child has exited 127, as a shell's would. */
	res->exec_err = kiln_child_start(&child);
	for (;;) {
		err = kiln_child_wait(&child, true, &res->status, NULL);
		if (err == 1 || err != -EINTR)
			break;
		/* As perf: SIGINT or SIGTERM to kiln ends the command. */
		if (*o->stop)
			kill(child.pid, SIGTERM);
		*o->stop = 0;
	}
	err = 0;
out:
	kiln_child_release(&child);
	kiln_buf_release(&pre);
	return err;
}

/* The profiles the command's processes wrote into dir, merged (and
 * removed).  NULL when there is none. */
static struct kiln_prof *merge_dir(const char *dir)
{
	struct kiln_prof *merged = NULL;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		struct kiln_buf f = KILN_BUF_INIT;
		struct kiln_prof *p;
		struct kiln_diag diag = { "" };
		int err;

		if (strncmp(de->d_name, "cpu.pb.gz", 9) || strstr(de->d_name, ".tmp."))
			continue;
		kiln_buf_addf(&f, "%s/%s", dir, de->d_name);
		err = kiln_read_profile(f.data, &p, NULL, &diag);
		unlink(f.data);
		kiln_buf_release(&f);
		if (err)
			continue;
		if (!merged) {
			merged = p;
			continue;
		}
		kiln_prof_merge(merged, p, &diag);
		kiln_prof_free(p);
	}
	if (d)
		closedir(d);
	return merged;
}

int kiln_record_inject(const struct kiln_inject_opts *o,
		       struct kiln_record_result *res)
{
	char dir[] = "/tmp/kiln-inject.XXXXXX";
	struct kiln_buf prof = KILN_BUF_INIT;
	int err;

	memset(res, 0, sizeof(*res));
	if (!mkdtemp(dir)) {
		res->failed = KILN_RECORD_TMPDIR;
		res->err = -errno;
		return -1;
	}
	kiln_buf_addf(&prof, "%s/cpu.pb.gz", dir);
	err = run(o, prof.data, res);
	if (err) {
		res->failed = KILN_RECORD_SPAWN;
		res->err = err;
	} else {
		res->prof = merge_dir(dir);
		if (!res->prof)
			res->failed = KILN_RECORD_NOPROFILE;
		else
			kiln_record_comment_cmdline(res->prof, o->cmd, o->ncmd, "");
	}
	rmdir(dir);
	kiln_buf_release(&prof);
	return res->failed ? -1 : 0;
}
