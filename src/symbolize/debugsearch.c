/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfutils' standard debug file search without its debuginfod client
 * where that client could not answer (symbolize stage).
 *
 * dwfl_standard_find_debuginfo() looks for a module's separate debug file
 * by build ID under /usr/lib/debug/.build-id, then by name next to the
 * file, in its .debug/ and under /usr/lib/debug, and last asks
 * debuginfod.  For that last step libdwfl dlopen()s libdebuginfod, and
 * with it libcurl, TLS, Kerberos and LDAP libraries: 4 ms of a 35 ms
 * `kiln top perf.data`, for the one module there that has a build ID and
 * no debug file (the [vdso]).  Without DEBUGINFOD_URLS (unset or empty)
 * the client answers ENOSYS before looking at anything, not even its
 * cache (debuginfod-client.c: "Don't even access the cache"), so the
 * search's answer is what the local steps found.  This file takes those
 * steps itself where it can see that they find nothing, and calls
 * elfutils' function for everything else.
 *
 * The local steps, from elfutils 0.188 libdwfl/find-debuginfo.c, for the
 * default path ":.debug:/usr/lib/debug" and a module without a
 * .gnu_debuglink (which is also never the search for a dwz alternate
 * file: that one always has a name).  Where any name the search would
 * open exists (other than the module's own file), or the file's real path
 * differs from its name, elfutils' function does the whole search: it
 * then looks at what it finds, which this file does not do.
 */
#include "symbolize/debugsearch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether elfutils' debuginfod client has a server to ask (none in a
 * set-user-ID program: the caller's servers are not its to trust). */
static bool debuginfod_servers(void)
{
	const char *urls = secure_getenv("DEBUGINFOD_URLS");

	return urls && urls[0];
}

/*
 * try_open() of find-debuginfo.c for [dir/][subdir/]file: 1 when a file
 * other than main is there (the search would look at it, or name too
 * long to tell), 0 when none is (errno ENOENT or ENOTDIR; the module's
 * own file counts as none, as there), -1 when the open fails otherwise
 * (errno set: the search stops there).
 */
static int probe(const struct stat *main, const char *dir, const char *subdir,
		 const char *file)
{
	char path[PATH_MAX];
	struct stat st;
	int n, fd;
	bool same;

	if (!dir && !subdir)
		n = snprintf(path, sizeof(path), "%s", file);
	else if (!subdir)
		n = snprintf(path, sizeof(path), "%s/%s", dir, file);
	else if (!dir)
		n = snprintf(path, sizeof(path), "%s/%s", subdir, file);
	else
		n = snprintf(path, sizeof(path), "%s/%s/%s", dir, subdir, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 1;
	/* Without blocking: a FIFO there is left to elfutils' own open. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	same = !fstat(fd, &st) && st.st_ino == main->st_ino &&
	       st.st_dev == main->st_dev;
	close(fd);
	if (!same)
		return 1;
	errno = ENOENT;
	return 0;
}

/*
 * One element of the path: file, then (a made-up name) base, in
 * [dir/][subdir/]; after a miss with a subdir, the same with the
 * subdir's first part off, then with none (find-debuginfo.c's
 * explore_dir, for the main module's search).
 */
static int probe_dir(const struct stat *main, const char *dir,
		     const char *subdir, const char *file, const char *base)
{
	int r;

	for (;;) {
		r = probe(main, dir, subdir, file);
		if (!r && base)
			r = probe(main, dir, subdir, base);
		if (r || !subdir)
			return r;
		subdir = strchr(subdir, '/');
		if (subdir)
			subdir++;
		if (subdir && !*subdir)
			return 0;
	}
}

/*
 * find_debuginfo_in_path() of find-debuginfo.c for file_name without a
 * debuglink, default path, main module: 1 when it would look at some
 * file, 0 when it finds none (errno 0), -1 when it stops on an error
 * (errno set).
 */
static int path_search(const char *file_name)
{
	const char *slash = strrchr(file_name, '/');
	const char *base = slash ? slash + 1 : file_name;
	char local[NAME_MAX + sizeof(".debug")], *dir = NULL;
	struct stat main;
	int r;

	/* elfutils compares with the module's open file; its name is that
	 * file here (else elfutils decides). */
	if (stat(file_name, &main))
		return 1;
	if (strlen(base) > NAME_MAX)
		return 1;
	snprintf(local, sizeof(local), "%s.debug", base);
	if (slash) {
		dir = strndup(file_name, (size_t)(slash - file_name));
		if (!dir)
			return 1;
	}
	/* "": the file's own folder. */
	r = probe(&main, dir, NULL, local);
	/* ".debug": there, then (a miss) the folder itself again. */
	if (!r)
		r = probe_dir(&main, dir, ".debug", local, base);
	/* "/usr/lib/debug": under it, the file's folder, then that folder
	 * less a leading part at a time, then none. */
	if (!r && dir && dir[0] == '/' && dir[1])
		r = probe_dir(&main, "/usr/lib/debug", dir + 1, local, base);
	free(dir);
	if (!r)
		errno = 0;
	return r;
}

int kiln_debugsearch_standard(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name,
			      const char *debuglink_file,
			      GElf_Word debuglink_crc,
			      char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	char *canon;
	bool other;
	int fd;

	if (debuginfod_servers() || debuglink_file || !file_name || !mod)
		goto standard;
	/* By build ID: what it finds, or an error, is the answer. */
	if (dwfl_module_build_id(mod, &bits, &vaddr) > 0) {
		fd = dwfl_build_id_find_debuginfo(mod, NULL, NULL, 0, NULL, NULL,
						  0, debuginfo_file_name);
		if (fd >= 0 || errno != 0)
			return fd;
	}
	/* A file to look at, or an error to stop at: elfutils decides. */
	if (path_search(file_name))
		goto standard;
	/* A symlink's target is searched too. */
	canon = realpath(file_name, NULL);
	other = canon && strcmp(canon, file_name);
	free(canon);
	if (other)
		goto standard;
	/* debuginfod: no server, no answer; a failed search, not an error
	 * (errno 0: libdwfl then falls back to the file's own symbols, as it
	 * does after the client's ENOSYS). */
	errno = 0;
	return -1;
standard:
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base,
					    file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}
