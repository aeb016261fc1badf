/* Whole-file input and atomic output (util stage). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"

static int read_all(int fd, struct kiln_map *m)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int err;

	for (;;) {
		ssize_t n;

		err = kiln_buf_grow(&b, 1 << 16);
		if (err)
			goto out_free;
		n = read(fd, b.data + b.len, b.cap - b.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		b.len += (size_t)n;
	}
	m->data = kiln_buf_detach(&b, &m->len);
	m->mapped = false;
	return 0;
out_free:
	kiln_buf_release(&b);
	return err;
}

int kiln_map_open(struct kiln_map *m, const char *path)
{
	struct stat st;
	int fd, err = 0;

	m->data = NULL;
	m->len = 0;
	m->mapped = false;
	if (!strcmp(path, "-"))
		return read_all(STDIN_FILENO, m);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		err = read_all(fd, m);
		goto out_close;
	}
	m->data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m->data == MAP_FAILED) {
		m->data = NULL;
		err = read_all(fd, m);
		goto out_close;
	}
	m->len = (size_t)st.st_size;
	m->mapped = true;
	madvise((void *)m->data, m->len, MADV_SEQUENTIAL);
out_close:
	close(fd);
	return err;
}

void kiln_map_release(struct kiln_map *m)
{
	if (m->mapped)
		munmap((void *)m->data, m->len);
	else
		free((void *)m->data);
	m->data = NULL;
	m->len = 0;
	m->mapped = false;
}

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

int kiln_write_atomic(const char *path, const void *data, size_t len)
{
	struct kiln_buf tmp = KILN_BUF_INIT;
	int fd, err;

	if (!strcmp(path, "-"))
		return write_fd(STDOUT_FILENO, data, len);
	err = kiln_buf_addf(&tmp, "%s.tmp.XXXXXX", path);
	if (err)
		return err;
	fd = mkostemp(tmp.data, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	/* mkostemp creates 0600; give the file the usual umask'ed mode. */
	{
		mode_t um = umask(0);

		umask(um);
		fchmod(fd, 0666 & ~um);
	}
	err = write_fd(fd, data, len);
	if (!err && close(fd))
		err = -errno;
	else if (err)
		close(fd);
	if (!err && rename(tmp.data, path))
		err = -errno;
	if (err)
		unlink(tmp.data);
out_free:
	kiln_buf_release(&tmp);
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
