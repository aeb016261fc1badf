/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the doctor examines (doctor stage): the program and the libraries
 * it loads, found as the dynamic loader finds them (DT_NEEDED through
 * RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.conf and the default folders) and
 * from a process's maps (what it dlopen'ed); and the process check, JIT
 * code with or without a perf map.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/docint.h"
#include "util/buf.h"
#include "util/maps.h"

/* At most this many files are examined (a program and its libraries). */
#define MAX_OBJS 256

static bool known(const struct kiln_doc_target *t, const char *path)
{
	size_t i;

	for (i = 0; i < t->nobjs; i++)
		if (!strcmp(t->objs[i].path, path))
			return true;
	return false;
}

static int add_obj(struct kiln_doc_target *t, const char *path)
{
	struct kiln_doc_elf *n;
	char *real = realpath(path, NULL);
	int err;

	if (!real)
		return 0;
	if (known(t, real) || t->nobjs >= MAX_OBJS) {
		free(real);
		return 0;
	}
	n = realloc(t->objs, (t->nobjs + 1) * sizeof(*n));
	if (!n) {
		free(real);
		return -ENOMEM;
	}
	t->objs = n;
	err = kiln_doc_elf_scan(&t->objs[t->nobjs], real);
	free(real);
	if (err)
		return err;
	t->nobjs++;
	return 0;
}

/* Appends the ':'-separated folders of list to dirs (a '\n' list). */
static void add_dirs(struct kiln_buf *dirs, const char *list, char sep)
{
	while (list && *list) {
		size_t n = strcspn(list, sep == ':' ? ":;" : "\n");

		if (n) {
			kiln_buf_add(dirs, list, n);
			kiln_buf_addc(dirs, '\n');
		}
		list += n;
		if (*list)
			list++;
	}
}

/* The folders of /etc/ld.so.conf and the files it includes (one level). */
static void ldconf_dirs(struct kiln_buf *dirs, const char *path, int depth)
{
	FILE *f = fopen(path, "re");
	char line[PATH_MAX + 16];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");
		glob_t g;
		size_t i;

		p[strcspn(p, "#\n")] = '\0';
		if (!*p)
			continue;
		if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
			p += 8 + strspn(p + 8, " \t");
			if (depth > 2 || glob(p, 0, NULL, &g))
				continue;
			for (i = 0; i < g.gl_pathc; i++)
				ldconf_dirs(dirs, g.gl_pathv[i], depth + 1);
			globfree(&g);
			continue;
		}
		add_dirs(dirs, p, '\n');
	}
	fclose(f);
}

/* A DT_NEEDED name: found in runpath, then the shared folders. */
static int add_needed(struct kiln_doc_target *t, const char *name,
		      const char *runpath, const char *dirs)
{
	struct kiln_buf try = KILN_BUF_INIT, all = KILN_BUF_INIT;
	const char *p;
	int err = 0;

	if (strchr(name, '/'))
		return add_obj(t, name);
	add_dirs(&all, runpath, ':');
	kiln_buf_adds(&all, dirs);
	for (p = all.data; p && *p; p += strcspn(p, "\n") + 1) {
		size_t n = strcspn(p, "\n");

		kiln_buf_reset(&try);
		kiln_buf_add(&try, p, n);
		kiln_buf_addf(&try, "/%s", name);
		if (try.data && !access(try.data, R_OK)) {
			err = add_obj(t, try.data);
			break;
		}
		if (!p[n])
			break;
	}
	kiln_buf_release(&try);
	kiln_buf_release(&all);
	return err;
}

static int add_mapped(const struct kiln_maps_entry *m, void *ctx)
{
	struct kiln_doc_target *t = ctx;
	char path[PATH_MAX];

	if (m->perms[2] != 'x' || !m->pathlen || m->path[0] != '/' ||
	    m->pathlen >= sizeof(path))
		return 0;
	memcpy(path, m->path, m->pathlen);
	path[m->pathlen] = '\0';
	if (strstr(path, " (deleted)"))
		return 0;
	return add_obj(t, path);
}

int kiln_doc_target_objects(struct kiln_doc_target *t, const char *exe)
{
	struct kiln_buf dirs = KILN_BUF_INIT;
	size_t i, j;
	int err;

	err = add_obj(t, exe);
	if (err || !t->nobjs)
		return err;
	add_dirs(&dirs, getenv("LD_LIBRARY_PATH"), ':');
	ldconf_dirs(&dirs, "/etc/ld.so.conf", 0);
	kiln_buf_adds(&dirs, "/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"
		      "/lib64\n/usr/lib64\n/lib\n/usr/lib\n");
	if (!dirs.data) {
		err = -ENOMEM;
		goto out;
	}
	/* Breadth first: each library's own needs, as the loader does. */
	for (i = 0; !err && i < t->nobjs; i++)
		for (j = 0; !err && j < t->objs[i].nneeded; j++)
			err = add_needed(t, t->objs[i].needed[j],
					 t->objs[i].runpath, dirs.data);
	if (!err && t->have_maps)
		err = kiln_maps_parse(t->maps.data, t->maps.len, add_mapped, t);
out:
	kiln_buf_release(&dirs);
	return err;
}

void kiln_doc_target_release(struct kiln_doc_target *t)
{
	size_t i;

	for (i = 0; i < t->nobjs; i++)
		kiln_doc_elf_release(&t->objs[i]);
	free(t->objs);
	t->objs = NULL;
	t->nobjs = 0;
	kiln_buf_release(&t->maps);
}

struct anon {
	unsigned long long bytes;
	unsigned n;
};

/* Executable memory no file backs: JIT code (not the kernel's pages). */
static int count_anon(const struct kiln_maps_entry *m, void *ctx)
{
	struct anon *a = ctx;

	if (m->perms[2] != 'x')
		return 0;
	if (m->pathlen && m->path[0] == '[' && strncmp(m->path, "[anon", 5))
		return 0;	/* [vdso], [vsyscall], [uprobes] */
	if (m->pathlen && m->path[0] == '/' && strncmp(m->path, "/memfd:", 7))
		return 0;
	a->bytes += m->end - m->start;
	a->n++;
	return 0;
}

int kiln_doc_jitmaps(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	char subject[32], map[64], inroot[96];
	struct anon a = { 0, 0 };
	const char *found = NULL;

	if (!t->pid)
		return 0;
	snprintf(subject, sizeof(subject), "pid %d", (int)t->pid);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)t->pid);
	snprintf(inroot, sizeof(inroot), "/proc/%d/root%s", (int)t->pid, map);
	if (!access(map, R_OK))
		found = map;
	else if (!t->ran && !access(inroot, R_OK))
		found = inroot;
	if (!t->have_maps) {
		kiln_doc_add(d, "jit-maps", KILN_DOC_PROCESS, subject, KILN_DOC_SKIP,
			     NULL, "its memory map could not be read%s%s",
			     found ? "; a perf map is there: " : "", found ? found : "");
		return 0;
	}
	kiln_maps_parse(t->maps.data, t->maps.len, count_anon, &a);
	/* A map with no JIT code to name: most likely left in /tmp by an
	 * earlier process of the same pid (pids are reused). */
	if (found && !a.n)
		kiln_doc_add(d, "jit-maps", KILN_DOC_PROCESS, subject, KILN_DOC_OK,
			     NULL, "no JIT code: no anonymous executable memory "
			     "(%s is there, perhaps left by an earlier process "
			     "with this pid)", found);
	else if (found)
		kiln_doc_add(d, "jit-maps", KILN_DOC_PROCESS, subject, KILN_DOC_OK,
			     NULL, "%s names its JIT code (%llu KiB of anonymous "
			     "executable memory in %u mappings)", found,
			     a.bytes >> 10, a.n);
	else if (a.n)
		kiln_doc_add(d, "jit-maps", KILN_DOC_PROCESS, subject, KILN_DOC_WARN,
			     "have the runtime write /tmp/perf-PID.map: node "
			     "--perf-basic-prof, Java -XX:+UnlockDiagnosticVMOptions "
			     "-XX:+DumpPerfMapAtExit or perf-map-agent, Python 3.12 "
			     "-X perf, .NET DOTNET_PerfMapEnabled=1, LuaJIT/V8 "
			     "embedders: their perf map option",
			     "%llu KiB of anonymous executable memory in %u mappings "
			     "(JIT code) and no %s: those frames will be [unknown]",
			     a.bytes >> 10, a.n, map);
	else
		kiln_doc_add(d, "jit-maps", KILN_DOC_PROCESS, subject, KILN_DOC_OK,
			     NULL, "no JIT code: no anonymous executable memory");
	return 0;
}
