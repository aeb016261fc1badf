/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The name a program was run by (util stage): see exename.h.
 */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/exename.h"
#include "util/maps.h"

/* The kernel keeps 15 characters of a program's name (TASK_COMM_LEN). */
#define COMM_MAX 15

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Whether path is another name of the file mapped (st). */
static bool leads_to(const char *path, const struct stat *st)
{
	struct stat s;

	return !stat(path, &s) && s.st_dev == st->st_dev &&
	       s.st_ino == st->st_ino;
}

/* The name in dir starting with a comm cut to COMM_MAX that leads to st. */
static bool find_cut(const char *dir, size_t dirlen, const char *comm,
		     const struct stat *st, char *out, size_t n)
{
	DIR *d;
	struct dirent *de;
	bool found = false;

	snprintf(out, n, "%.*s", (int)dirlen, dir);
	d = opendir(out);
	while (d && !found && (de = readdir(d))) {
		if (strncmp(de->d_name, comm, COMM_MAX) ||
		    (size_t)snprintf(out, n, "%.*s/%s", (int)dirlen, dir,
				     de->d_name) >= n)
			continue;
		found = leads_to(out, st);
	}
	if (d)
		closedir(d);
	return found;
}

bool kiln_exe_alias(const char *mapped, const char *invoked, char *out,
		    size_t n)
{
	const char *base = base_of(mapped);
	size_t dirlen = (size_t)(base - mapped - 1);
	char cwd[PATH_MAX];
	struct stat st;
	int len;

	if (mapped[0] != '/' || !invoked || !*invoked ||
	    !strcmp(base_of(invoked), base) || stat(mapped, &st))
		return false;
	if (strchr(invoked, '/')) {
		/* Its folder made absolute and plain ("./x", "bin/../x"). */
		char dir[PATH_MAX], real_dir[PATH_MAX];
		const char *b = base_of(invoked);

		if (invoked[0] == '/')
			len = snprintf(dir, sizeof(dir), "%.*s",
				       (int)(b - invoked), invoked);
		else
			len = getcwd(cwd, sizeof(cwd)) ?
			      snprintf(dir, sizeof(dir), "%s/%.*s", cwd,
				       (int)(b - invoked), invoked) : -1;
		len = len < 0 || (size_t)len >= sizeof(dir) ||
		      !realpath(dir, real_dir) ? -1 :
		      snprintf(out, n, "%s%s%s", real_dir,
			       strcmp(real_dir, "/") ? "/" : "", b);
	} else {
		len = snprintf(out, n, "%.*s/%s", (int)dirlen, mapped, invoked);
	}
	if (len < 0 || (size_t)len >= n)
		return false;
	/* Not a name a reader elsewhere can open: /proc/self/exe (a
	 * program that re-executes itself), /dev/fd/N (fexecve). */
	if (!strncmp(out, "/proc/", 6) || !strncmp(out, "/dev/", 5))
		return false;
	if (leads_to(out, &st))
		return true;
	/* A comm cut short: the one name in mapped's folder it begins. */
	return !strchr(invoked, '/') && strlen(invoked) == COMM_MAX &&
	       strncmp(base, invoked, COMM_MAX) &&
	       find_cut(mapped, dirlen, invoked, &st, out, n);
}

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static char self_target[PATH_MAX], self_alias[PATH_MAX];
static bool self_has;

static void find_self(void)
{
	const char *run = (const char *)getauxval(AT_EXECFN);
	ssize_t len = readlink("/proc/self/exe", self_target,
			       sizeof(self_target) - 1);

	if (len <= 0 || !run)
		return;
	self_target[len] = '\0';
	self_has = kiln_exe_alias(self_target, run, self_alias,
				  sizeof(self_alias));
}

bool kiln_self_exe_alias(const char **target, const char **alias)
{
	pthread_once(&self_once, find_self);
	*target = self_target;
	*alias = self_alias;
	return self_has;
}

int kiln_exe_alias_maps(struct kiln_buf *b, size_t from, const char *target,
			const char *alias)
{
	struct kiln_buf out = KILN_BUF_INIT;
	size_t tlen = strlen(target);
	const char *p = b->data + from, *end = b->data + b->len;
	int err = 0;

	while (p < end && !err) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct kiln_maps_entry e;

		if (kiln_maps_parse_line(p, eol, &e) && e.pathlen == tlen &&
		    !memcmp(e.path, target, tlen)) {
			err = kiln_buf_add(&out, p, (size_t)(e.path - p));
			err = err ? err : kiln_buf_adds(&out, alias);
		} else {
			err = kiln_buf_add(&out, p, (size_t)(eol - p));
		}
		if (!err && nl)
			err = kiln_buf_addc(&out, '\n');
		p = nl ? nl + 1 : end;
	}
	if (!err) {
		b->len = from;
		err = kiln_buf_add(b, out.data, out.len);
	}
	kiln_buf_release(&out);
	return err;
}

int kiln_self_maps_alias(struct kiln_buf *b, size_t from)
{
	const char *target, *alias;

	return kiln_self_exe_alias(&target, &alias) ?
	       kiln_exe_alias_maps(b, from, target, alias) : 0;
}
