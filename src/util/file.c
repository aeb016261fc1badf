/* SPDX-License-Identifier: Apache-2.0 */
/* Safe output (util stage): temporary names, .old copies, files written
 * in place; high fds.  Whole-file input is input.c's. */
#include "util/file.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"

static int write_fd(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A fresh random name for a temporary beside name: "NAME.tmp.XXXXXX". */
static int tmp_name(const char *name, struct kiln_buf *tmp)
{
	static unsigned counter;
	unsigned long r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = ((unsigned long)getpid() << 20) ^ ++counter ^
		    (unsigned long)time(NULL);
	kiln_buf_reset(tmp);
	return kiln_buf_addf(tmp, "%s.tmp.%06lx", name, r & 0xffffff);
}

/*
 * The file the data goes to, in dirfd beside name, readable too (a copy
 * is made from it when the process gives up privileges).  First an
 * unnamed one (O_TMPFILE: a process killed before the commit leaves
 * nothing; *tmp stays NULL), else, where the file system has none, a
 * fresh name created with O_EXCL (*tmp, malloc'd).  The mode is 0664
 * less the umask: a user's usual 0644 or 0664, and never writable by
 * others, even where a daemon set umask 0 (nginx does) before kiln's
 * agent in it writes a profile.  A descriptor or -errno.
 */
static int make_temp(int dirfd, const char *name, char **tmp)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int fd, tries, err = 0;

	*tmp = NULL;
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0664);
	if (fd >= 0)
		return fd;
	/* EOPNOTSUPP, EISDIR (no O_TMPFILE in the kernel), EINVAL: named. */
	if (errno == EACCES || errno == EPERM || errno == EROFS ||
	    errno == ENOSPC || errno == EDQUOT || errno == EMFILE)
		return -errno;
	for (tries = 0; tries < 100; tries++) {
		err = tmp_name(name, &b);
		if (err)
			break;
		fd = openat(dirfd, b.data, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
		if (fd >= 0) {
			*tmp = kiln_buf_detach(&b, NULL);
			return fd;
		}
		err = -errno;
		if (err != -EEXIST)
			break;
	}
	kiln_buf_release(&b);
	return err;
}

/* Links the unnamed file fd into dirfd as to: with AT_EMPTY_PATH where
 * that is allowed (CAP_DAC_READ_SEARCH), else through /proc/self/fd.
 * 0 or -errno (-EEXIST: to is taken). */
static int link_fd(int fd, int dirfd, const char *to)
{
	char proc[64];

	if (!linkat(fd, "", dirfd, to, AT_EMPTY_PATH))
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, to, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/* Gives the unnamed file fd a fresh temporary name beside name (*tmp,
 * malloc'd), for the renames of the commit.  0 or -errno. */
static int name_temp(int fd, int dirfd, const char *name, char **tmp)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int tries, err = 0;

	for (tries = 0; tries < 100; tries++) {
		err = tmp_name(name, &b);
		if (!err)
			err = link_fd(fd, dirfd, b.data);
		if (err != -EEXIST)
			break;
	}
	if (!err)
		*tmp = kiln_buf_detach(&b, NULL);
	kiln_buf_release(&b);
	return err;
}

/* The output's data file beside its final name (make_temp()). */
static int create_tmp(struct kiln_out *o)
{
	o->fd = make_temp(o->dirfd, o->name, &o->tmp);
	if (o->fd < 0) {
		int err = o->fd;

		o->fd = -1;
		return err;
	}
	o->anon = !o->tmp;
	return 0;
}

/* Output beside the final name: hold its folder, create the temporary. */
static int open_beside(struct kiln_out *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int err;

	if (slash && !slash[1])
		return -EISDIR;		/* "out/" names a folder */
	dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
		    : strdup(".");
	o->name = strdup(slash ? slash + 1 : path);
	if (!dir || !o->name) {
		free(dir);
		return -ENOMEM;
	}
	o->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = o->dirfd < 0 ? -errno : 0;
	free(dir);
	if (err)
		return err;
	return create_tmp(o);
}

/* Output written in place: a character device or a FIFO.  A FIFO with no
 * reader fails with ENXIO instead of blocking until one comes. */
static int open_in_place(struct kiln_out *o, const char *path)
{
	int fl;

	o->fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0)
		return -errno;
	fl = fcntl(o->fd, F_GETFL);
	if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK))
		return -errno;
	return 0;
}

int kiln_out_open(struct kiln_out *o, const char *path)
{
	struct stat st;
	char *real = NULL;
	int err;

	*o = (struct kiln_out)KILN_OUT_INIT;
	if (!strcmp(path, "-")) {
		o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
		return o->fd < 0 ? -errno : 0;
	}
	if (stat(path, &st)) {
		if (errno != ENOENT)
			return -errno;
		err = open_beside(o, path);	/* new, or a dangling link */
	} else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		err = open_in_place(o, path);
	} else if (S_ISDIR(st.st_mode)) {
		return -EISDIR;
	} else if (!S_ISREG(st.st_mode)) {
		return -EINVAL;		/* a block device, a socket */
	} else {
		/* A link to a regular file: replace the file, keep the link. */
		real = realpath(path, NULL);
		err = real ? open_beside(o, real) : -errno;
		free(real);
	}
	if (err)
		kiln_out_abort(o);
	return err;
}

int kiln_out_write(struct kiln_out *o, const void *data, size_t len)
{
	return o->fd < 0 ? -EBADF : write_fd(o->fd, data, len);
}

static void out_release(struct kiln_out *o)
{
	if (o->dirfd >= 0)
		close(o->dirfd);
	if (o->place_fd >= 0)
		close(o->place_fd);
	free(o->name);
	free(o->tmp);
	*o = (struct kiln_out)KILN_OUT_INIT;
}

void kiln_out_abort(struct kiln_out *o)
{
	struct stat st, at;

	/* Given the final name by kiln_out_keep_in_place() and not
	 * committed: removed while the name is still this very file. */
	if (o->placed && o->fd >= 0 && !fstat(o->fd, &st) &&
	    !fstatat(o->dirfd, o->name, &at, AT_SYMLINK_NOFOLLOW) &&
	    at.st_dev == st.st_dev && at.st_ino == st.st_ino)
		unlinkat(o->dirfd, o->name, 0);
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlinkat(o->dirfd, o->tmp, 0);
	out_release(o);
}

/*
 * Renames tmp over name, keeping a regular file that was there as
 * name.old (and putting it back if the last rename fails).  An older
 * name.old (a regular file) is removed first, only now that the new file
 * is whole, so that neither rename replaces a file: ext4 flushes the data
 * of a file renamed over another (auto_da_alloc: here the previous
 * profile's, often still unwritten), 0.3-3 ms inside the rename, which
 * for the agent's profiles falls in the program's exit.
 */
static int put_in_place(struct kiln_out *o)
{
	struct kiln_buf old = KILN_BUF_INIT;
	struct stat st;
	bool kept = false;
	int err;

	err = kiln_buf_addf(&old, "%s.old", o->name);
	if (err)
		return err;
	if (!fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode)) {
		if (!fstatat(o->dirfd, old.data, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			unlinkat(o->dirfd, old.data, 0);
		if (renameat(o->dirfd, o->name, o->dirfd, old.data)) {
			err = -errno;
			goto out;
		}
		kept = true;
	}
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->name)) {
		err = -errno;
		if (kept)
			renameat(o->dirfd, old.data, o->dirfd, o->name);
	}
out:
	kiln_buf_release(&old);
	return err;
}

/* Copies all of in (from its start) to out at its offset.  0 or -errno. */
static int copy_fd(int in, int out)
{
	char buf[16384];
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(in, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return 0;
		if (write_fd(out, buf, (size_t)n))
			return -errno;
		off += n;
	}
}

/* The file at the final name gets the data, in place: the folder is
 * closed to the process now (kiln_out_keep_in_place()). */
static int write_in_place(struct kiln_out *o)
{
	int err;

	if (ftruncate(o->place_fd, 0) || lseek(o->place_fd, 0, SEEK_SET))
		return -errno;
	err = copy_fd(o->fd, o->place_fd);
	if (!err && !o->no_sync && fsync(o->place_fd))
		err = -errno;
	return err;
}

/* A copy of the regular file name in dirfd as name.old, replacing an
 * older one: made whole under a temporary name, then renamed. */
static int copy_to_old(int dirfd, const char *name)
{
	struct kiln_buf old = KILN_BUF_INIT;
	char *tmp = NULL;
	int in, out, err;

	in = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = make_temp(dirfd, name, &tmp);
	if (out < 0) {
		close(in);
		return out;
	}
	err = copy_fd(in, out);
	if (!err && !tmp)
		err = name_temp(out, dirfd, name, &tmp);
	if (!err)
		err = kiln_buf_addf(&old, "%s.old", name);
	if (!err && renameat(dirfd, tmp, dirfd, old.data))
		err = -errno;
	if (err && tmp)
		unlinkat(dirfd, tmp, 0);
	close(out);
	close(in);
	free(tmp);
	kiln_buf_release(&old);
	return err;
}

int kiln_out_keep_in_place(struct kiln_out *o)
{
	struct stat st;
	int err;

	if (o->fd < 0 || o->dirfd < 0 || o->placed || o->place_fd >= 0)
		return 0;
	if (!fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		err = copy_to_old(o->dirfd, o->name);
		if (err)
			return err;
		o->place_fd = openat(o->dirfd, o->name,
				     O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		return o->place_fd < 0 ? -errno : 0;
	}
	if (errno != ENOENT)
		return -errno;
	if (o->tmp) {
		if (renameat(o->dirfd, o->tmp, o->dirfd, o->name))
			return -errno;
		free(o->tmp);
		o->tmp = NULL;
	} else {
		err = link_fd(o->fd, o->dirfd, o->name);
		if (err)
			return err;
	}
	o->placed = true;
	return 0;
}

int kiln_out_commit(struct kiln_out *o)
{
	struct stat st;
	int err = 0;

	if (o->fd < 0)
		return -EBADF;
	/* Only a regular file can be flushed; a device or a pipe cannot. */
	if (!o->no_sync && !fstat(o->fd, &st) && S_ISREG(st.st_mode) &&
	    fsync(o->fd))
		err = -errno;
	/* The unnamed file gets its name before its fd is closed. */
	if (!err && o->anon && !o->placed)
		err = name_temp(o->fd, o->dirfd, o->name, &o->tmp);
	if (!err && o->tmp)
		err = put_in_place(o);
	/* The folder is closed to the process since it gave up privileges:
	 * the file kept open at the final name gets the data. */
	if ((err == -EACCES || err == -EPERM) && o->place_fd >= 0) {
		if (o->tmp)
			unlinkat(o->dirfd, o->tmp, 0);
		free(o->tmp);
		o->tmp = NULL;
		err = write_in_place(o);
	}
	if (close(o->fd) && !err && errno != EINTR)
		err = -errno;
	o->fd = -1;
	o->placed = false;	/* whole now: never removed by the abort */
	if (err)
		kiln_out_abort(o);
	else
		out_release(o);
	return err;
}

int kiln_write_atomic(const char *path, const void *data, size_t len)
{
	struct kiln_out o;
	int err = kiln_out_open(&o, path);

	if (!err)
		err = kiln_out_write(&o, data, len);
	if (!err)
		return kiln_out_commit(&o);
	kiln_out_abort(&o);
	return err;
}

bool kiln_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, "-") || !strcmp(b, "-"))
		return false;
	if (stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

unsigned long long kiln_process_start_ns(void)
{
	char buf[1024], *p;
	struct timespec rt, bt;
	unsigned long long ticks, age;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, i;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return 0;
	buf[n] = '\0';
	/* Field 22; the command name (field 2) may hold spaces. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return 0;
	clock_gettime(CLOCK_BOOTTIME, &bt);
	clock_gettime(CLOCK_REALTIME, &rt);
	age = (unsigned long long)bt.tv_sec * 1000000000ull + (unsigned long long)bt.tv_nsec -
	      ticks * (1000000000ull / (unsigned long long)hz);
	return (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec - age;
}

bool kiln_written_since(const char *name, unsigned long long started, void *arg)
{
	struct stat st;

	(void)arg;
	return !stat(name, &st) && S_ISREG(st.st_mode) &&
	       (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
	       (unsigned long long)st.st_mtim.tv_nsec + 20000000ull >= started;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int kiln_pid_siblings(const char *path, unsigned long long since,
		      struct kiln_buf *names, int *n)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup("./");
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base), nf = 0, alloc = 0, i;
	char **found = NULL;
	struct dirent *de;
	DIR *d;
	int err = 0;

	*n = 0;
	if (!dir)
		return -ENOMEM;
	d = opendir(dir);
	if (!d) {
		err = -errno;
		free(dir);
		return err;
	}
	while (!err && (de = readdir(d))) {
		const char *p = de->d_name + blen;
		char *full, after;

		/* base.PID, or base.PID.old... (an exec after the fork) */
		if (strncmp(de->d_name, base, blen) || *p != '.' ||
		    p[1] < '0' || p[1] > '9')
			continue;
		after = p[1 + strspn(p + 1, "0123456789")];
		if (after && after != '.')
			continue;
		if (asprintf(&full, "%s%s", slash ? dir : "", de->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		if (!kiln_written_since(full, since, NULL)) {
			free(full);
			continue;
		}
		if (KILN_GROW(found, alloc, nf + 1, 8)) {
			err = -ENOMEM;
			free(full);
			break;
		}
		found[nf++] = full;
	}
	closedir(d);
	free(dir);
	if (nf)
		qsort(found, nf, sizeof(*found), cmp_str);
	for (i = 0; i < nf; i++) {
		if (!err && kiln_buf_add(names, found[i], strlen(found[i]) + 1))
			err = -ENOMEM;
		free(found[i]);
	}
	free(found);
	if (!err)
		*n = (int)nf;
	return err;
}

int kiln_keep_as_old(const char *path)
{
	size_t n = strlen(path) + 8;
	char *old;
	struct stat st;
	int err = 0;

	if (lstat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	old = malloc(n);
	if (!old)
		return -ENOMEM;
	snprintf(old, n, "%s.old", path);
	if (rename(path, old))
		err = -errno;
	free(old);
	return err;
}

int kiln_keep_earlier_image(const char *path,
			    bool (*mine)(const char *name, unsigned long long started,
					 void *arg),
			    void *arg, char **kept)
{
	unsigned long long started = kiln_process_start_ns();
	size_t n = strlen(path) + 32;
	char *old;
	int i;

	*kept = NULL;
	if (!started || !mine(path, started, arg))
		return 0;
	old = malloc(n);
	if (!old)
		return -ENOMEM;
	for (i = 1; i < 100000; i++) {
		if (i == 1)
			snprintf(old, n, "%s.old", path);
		else
			snprintf(old, n, "%s.old.%d", path, i);
		if (!mine(old, started, arg))
			break;
	}
	if (rename(path, old)) {
		int err = -errno;

		free(old);
		return err;
	}
	*kept = old;
	return 0;
}

/*
 * The base: 64 under the soft RLIMIT_NOFILE, itself counted as at most
 * 1024 (a limit of a million would otherwise make the kernel's fd table
 * of the process that large).  A tiny limit gets its upper half.
 */
static _Atomic int high_base;

int kiln_fd_high_base(void)
{
	int b = atomic_load_explicit(&high_base, memory_order_relaxed);
	struct rlimit rl;
	rlim_t lim = 1024;

	if (b)
		return b;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < lim)
		lim = rl.rlim_cur;
	b = lim > 256 ? (int)lim - 64 : (int)lim / 2;
	if (b < 3)
		b = 3;
	atomic_store_explicit(&high_base, b, memory_order_relaxed);
	return b;
}

int kiln_fd_raise(int fd)
{
	int lo = kiln_fd_high_base() / 2, hi;

	if (fd < 0 || fd >= lo)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, lo);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}
