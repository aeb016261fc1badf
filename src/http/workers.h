/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KILN_HTTP_CHILDREN=1 (http stage, workers.c): the serving process's
 * CPU profiles cover the children it fork()s, each sampling itself.
 * The master's side runs on a profile job's thread (profile.c), the
 * child's on the KILN_HTTP heir thread (envserve.c).
 */
#ifndef KILN_HTTP_WORKERS_H
#define KILN_HTTP_WORKERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct kiln_prof;

/* The most workers a serving process keeps track of. */
#define KHTTP_WORKERS_MAX 256

/* In the serving process before a fork: the channel its children
 * register on, made once (idempotent).  0 or -errno. */
int khttp_chan_open(void);

/* In the serving process before a fork: the registrations waiting are
 * taken and the workers that ended forgotten, so that a server that
 * forks and execs helpers all day (each child registers until its exec)
 * fills neither the channel's backlog nor the table.  Never waits: a
 * profile's job holding the table skips it. */
void khttp_chan_tidy(void);

/* In a forked child (the fork handler): the channel's and the workers'
 * fds that are the parent's closed; where a channel is known, this child
 * connects to it and says hello.  Starts no thread. */
void khttp_chan_fork_child(void);

/* In a child: connects to process pid's channel (the same token) and
 * says hello, in place of any connection it had.  0, or -errno
 * (-ECONNREFUSED: pid opened none, or not yet; -ENOENT: no channel was
 * ever made in this family).  For a descendant whose server is gone and
 * whose ancestor serves in its place. */
int khttp_chan_join(pid_t pid);

/* In a child: its connection to the master (poll it for POLLIN), -1 for
 * none. */
int khttp_worker_fd(void);

/* In a child, the connection readable: reads the master's request,
 * samples this process for its window and sends the profile back.  0,
 * or -errno (the connection is then closed: the master is gone). */
int khttp_worker_answer(void);

/* In the master, a profile starting: every registered live worker is
 * asked for the same window.  The number asked. */
int khttp_workers_ask(int seconds, int hz);

/*
 * In the master, its own window over: the workers' answers read until
 * deadline_ms (CLOCK_MONOTONIC) and merged into p, a comment saying how
 * many answered and which were left out and why.  take false (the
 * request was cut short): nothing is read or merged (late answers are
 * dropped at the next round).  The number merged.
 */
int khttp_workers_collect(struct kiln_prof *p, int64_t deadline_ms, bool take);

#endif
