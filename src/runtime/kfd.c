/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kiln's own file descriptors in the host process (runtime stage): see
 * kfd.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/kfd.h"
#include "runtime/threads.h"
#include "util/file.h"

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
	if (kiln_kfd_ours(k))
		close(k->fd);
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
	}
	errno = err;
	return fd;
}
