/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-file input (util stage): a file mapped or read whole
 * (kiln_map_*), the files of /proc read by read(2).  Output is file.c's.
 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/exename.h"
#include "util/limit.h"

static int read_all(int fd, struct kiln_map *m)
{
	struct kiln_buf b = KILN_BUF_INIT;
	int err;

	for (;;) {
		ssize_t n;

		/* Never more than the limit and a read's worth. */
		err = kiln_buf_grow_most(&b, 1 << 16,
					 kiln_input_limit() + (1 << 16) + 2);
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
		/* An endless input (/dev/zero, a pipe that never closes)
		 * stops here rather than at the end of memory. */
		if (b.len > kiln_input_limit()) {
			err = -EFBIG;
			goto out_free;
		}
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

/* Mappings at least this large are unmapped by a thread of their own:
 * the kernel takes 40-60 ms to tear down a gigabyte's page tables. */
#define UNMAP_LATER_MIN ((size_t)64 << 20)

static void *unmap_now(void *arg)
{
	struct kiln_map *m = arg;

	munmap((void *)m->data, m->len);
	free(m);
	return NULL;
}

void kiln_map_release_later(struct kiln_map *m)
{
	struct kiln_map *c;
	pthread_attr_t a;
	pthread_t t;
	int err = -1;

	if (m->mapped && m->len >= UNMAP_LATER_MIN && (c = malloc(sizeof(*c)))) {
		*c = *m;
		if (!pthread_attr_init(&a)) {
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			err = pthread_create(&t, &a, unmap_now, c);
			pthread_attr_destroy(&a);
		}
		if (!err) {
			m->data = NULL;
			m->len = 0;
			m->mapped = false;
			return;
		}
		free(c);
	}
	kiln_map_release(m);
}

int kiln_read_proc(int dirfd, const char *path, struct kiln_buf *out)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		err = kiln_buf_grow(out, 65536);
		if (err)
			break;
		n = read(fd, out->data + out->len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		out->len += (size_t)n;
		out->data[out->len] = '\0';
	}
	close(fd);
	return err;
}

const char *kiln_self_maps_path(void)
{
	/* Linux 3.17 and later. */
	return access("/proc/thread-self/maps", R_OK) ? "/proc/self/maps" :
	       "/proc/thread-self/maps";
}

int kiln_read_self_maps(struct kiln_buf *out)
{
	size_t from = out->len;
	int err = kiln_read_proc(AT_FDCWD, kiln_self_maps_path(), out);

	/* The executable named as it was run (util/exename.h). */
	return err ? err : kiln_self_maps_alias(out, from);
}
