/* SPDX-License-Identifier: Apache-2.0 */
/* Opening files that must be regular files (util stage). */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int kiln_open_regular(const char *path)
{
	struct stat st;
	int fd, fl;

	/* O_NONBLOCK: opening a FIFO for reading waits for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		fl = -errno;
		close(fd);
		return fl;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		fl = -errno;
		close(fd);
		return fl;
	}
	return fd;
}
