/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File descriptors that kiln holds inside someone else's process (agent
 * stage).  The host may close any fd number at any time (daemons close
 * 3..1023 as they detach) and reuse it for its own files, pipes and
 * sockets; an fd kiln kept by number alone would then write kiln's data
 * into the host's file, or close the host's pipe.  So every fd kiln keeps
 * lives at a high number (F_DUPFD_CLOEXEC from a base under
 * RLIMIT_NOFILE, away from the low numbers programs use and from
 * select()'s range), and is checked to still be the file kiln opened
 * (device and inode remembered at open) before each use: one that is not
 * is never written, read or closed again.
 *
 * A check and the use after it are two system calls: a host that reuses
 * the very number in between wins the race; at a number that high it
 * would have to open hundreds of files to do so.
 */
#ifndef KILN_RUNTIME_KFD_H
#define KILN_RUNTIME_KFD_H

#include <stdbool.h>
#include <sys/types.h>

struct kiln_kfd {
	int fd;			/* -1: none */
	dev_t dev;
	ino_t ino;
};
#define KILN_KFD_INIT { -1, 0, 0 }

/* The first number kiln's fds take (computed once from RLIMIT_NOFILE). */
int kiln_kfd_base(void);

/*
 * Takes fd over: moves it to a high number (the low one is closed) and
 * remembers which file it is.  On failure fd is closed.  0 or -errno.
 */
int kiln_kfd_adopt(struct kiln_kfd *k, int fd);

/* open(2) of path with O_CLOEXEC, then kiln_kfd_adopt().  0 or -errno. */
int kiln_kfd_open(struct kiln_kfd *k, const char *path, int flags, mode_t mode);

/* Whether k's fd is still the file kiln opened.  Async-signal-safe. */
bool kiln_kfd_ours(const struct kiln_kfd *k);

/*
 * Writes all of buf (retrying short writes and EINTR) if k is still
 * kiln's.  0, -EBADF when it is not (or none), or -errno.
 * Async-signal-safe.
 */
int kiln_kfd_write(const struct kiln_kfd *k, const void *buf, size_t len);

/*
 * Reopens path (flags without O_CREAT or O_TRUNC: the same file is
 * wanted) in place of k's fd, which the host closed or took: kept only if
 * it is the very file k had (same device and inode).  0, -ESTALE when
 * path now names another file, or -errno.
 */
int kiln_kfd_reopen(struct kiln_kfd *k, const char *path, int flags);

/* Closes k's fd if it is still kiln's (never the host's) and forgets it. */
void kiln_kfd_close(struct kiln_kfd *k);

/*
 * For the fd a library just made on a thread of kiln's
 * (kiln_rt_on_own_thread(): libmicrohttpd's epoll fd, its eventfd, the
 * sockets it accepts): moved to kiln's high range, close-on-exec, the
 * low number closed, so that the host's low numbers stay free and no
 * child it starts inherits it.  The new number, or fd itself when it is
 * not on such a thread, fd < 0, or no high number is free.  errno kept.
 */
int kiln_kfd_raise_own(int fd);

/*
 * In a forked child (its fork handler, the only thread): closes the
 * copies of the fds kiln_kfd_raise_own() moved in the parent that are
 * still those files.  They belong to the parent's threads (its HTTP
 * server's epoll fd and eventfd, its connections): a pre-fork server's
 * every worker held them for its life.
 */
void kiln_kfd_raised_fork_child(void);

/* Forgets k's fd without closing it (a fork child's copy of the parent's
 * state, say, whose fd it will not use). */
void kiln_kfd_forget(struct kiln_kfd *k);

#endif
