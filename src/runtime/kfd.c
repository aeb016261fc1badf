/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's own file descriptors in the host process (runtime stage): see
 * kfd.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/kfd.h"
#include "runtime/threads.h"
#include "util/file.h"

/*
 * The fds kiln_kfd_raise_own() moved (libmicrohttpd's epoll fd, its
 * eventfd, the sockets it accepts), with the file each was, so that a
 * forked child, where none of the threads that use them runs, closes its
 * copies (kiln_kfd_raised_fork_child()).  A number is forgotten when
 * kiln closes or moves it; one the library closes itself stays until its
 * number is raised again, and is closed in a child only while it is still
 * that file.  A full table records no more (those copies stay open).
 */
#define RAISED_MAX 64
static struct kiln_kfd raised[RAISED_MAX];
static pthread_mutex_t raised_lock = PTHREAD_MUTEX_INITIALIZER;

/* Never waits: in a fork child's handlers the lock may be a copy that a
 * thread not there held (an entry left is checked before any close). */
static void raised_forget(int fd)
{
	size_t i;

	if (pthread_mutex_trylock(&raised_lock))
		return;
	for (i = 0; i < RAISED_MAX; i++)
		if (raised[i].fd == fd && fd > 0)
			raised[i].fd = 0;
	pthread_mutex_unlock(&raised_lock);
}

static void raised_note(int fd)
{
	struct kiln_kfd k;
	struct stat st;
	size_t i, slot = RAISED_MAX;

	if (fstat(fd, &st))
		return;
	k.fd = fd;
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	pthread_mutex_lock(&raised_lock);
	for (i = 0; i < RAISED_MAX; i++) {
		if (raised[i].fd == fd) {
			slot = i;
			break;
		}
		/* 0: never used (kiln's numbers are high), or forgotten. */
		if (slot == RAISED_MAX && (raised[i].fd <= 0 || !kiln_kfd_ours(&raised[i])))
			slot = i;
	}
	if (slot < RAISED_MAX)
		raised[slot] = k;
	pthread_mutex_unlock(&raised_lock);
}

void kiln_kfd_raised_fork_child(void)
{
	size_t i;

	/* The only thread: the lock, maybe held at the fork, not taken. */
	pthread_mutex_init(&raised_lock, NULL);
	for (i = 0; i < RAISED_MAX; i++) {
		if (raised[i].fd > 0 && kiln_kfd_ours(&raised[i]) &&
		    fcntl(raised[i].fd, F_GETFD) > 0)
			close(raised[i].fd);
		raised[i].fd = 0;
	}
}

int kiln_kfd_base(void)
{
	return kiln_fd_high_base();
}

int kiln_kfd_adopt(struct kiln_kfd *k, int fd)
{
	struct stat st;
	int hi;

	k->fd = -1;
	if (fd < 0)
		return -EBADF;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, kiln_kfd_base());
	if (hi >= 0) {
		close(fd);
		raised_forget(fd);
		fd = hi;
	} else {
		/* No high number free (a limit lowered since): the low one,
		 * still checked before each use. */
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->fd = fd;
	return 0;
}

int kiln_kfd_open(struct kiln_kfd *k, const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_CLOEXEC, mode);

	if (fd < 0) {
		k->fd = -1;
		return -errno;
	}
	return kiln_kfd_adopt(k, fd);
}

bool kiln_kfd_ours(const struct kiln_kfd *k)
{
	struct stat st;
	int saved = errno;
	bool ok;

	ok = k->fd >= 0 && !fstat(k->fd, &st) && st.st_dev == k->dev &&
	     st.st_ino == k->ino;
	errno = saved;
	return ok;
}

int kiln_kfd_write(const struct kiln_kfd *k, const void *buf, size_t len)
{
	const char *p = buf;

	if (!kiln_kfd_ours(k))
		return -EBADF;
	while (len) {
		ssize_t w = write(k->fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (!w)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int kiln_kfd_reopen(struct kiln_kfd *k, const char *path, int flags)
{
	struct kiln_kfd n;
	int err;

	err = kiln_kfd_open(&n, path, flags & ~(O_CREAT | O_TRUNC), 0);
	if (err)
		return err;
	if (n.dev != k->dev || n.ino != k->ino) {
		close(n.fd);
		return -ESTALE;
	}
	/* The old number is the host's now (or nobody's): not closed. */
	k->fd = n.fd;
	return 0;
}

void kiln_kfd_close(struct kiln_kfd *k)
{
	if (kiln_kfd_ours(k)) {
		close(k->fd);
		raised_forget(k->fd);
	}
	k->fd = -1;
}

void kiln_kfd_forget(struct kiln_kfd *k)
{
	k->fd = -1;
}

int kiln_kfd_raise_own(int fd)
{
	int err = errno, hi;

	if (fd < 0 || fd >= kiln_kfd_base() || !kiln_rt_on_own_thread())
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, kiln_kfd_base());
	if (hi >= 0) {
		close(fd);
		fd = hi;
		raised_note(fd);
	}
	errno = err;
	return fd;
}
