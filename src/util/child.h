/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a command to measure (util), the one way kiln starts a
 * workload (record, stat, heap): forked at once but held before exec
 * until the caller has set up what must see its first instruction (perf
 * events opened with enable_on_exec), then released; a failed exec is
 * reported back through a close-on-exec pipe.  Also waits for it (the one
 * wait, with or without blocking, rusage if asked), stops it, and turns
 * its wait status into kiln's exit status (the one place that does).
 * Finds a command in PATH before anything starts, so that "command not
 * found" costs nothing.
 */
#ifndef KILN_UTIL_CHILD_H
#define KILN_UTIL_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

struct kiln_buf;
struct rusage;

struct kiln_child {
	pid_t pid;		/* 0: none (or reaped) */
	int go_fd;		/* write end: lets the child exec */
	int err_fd;		/* read end: errno if exec failed */
	/*
	 * Optional, set before kiln_child_spawn(): called in the child
	 * just before exec (after kiln_child_start()), to change its
	 * environment (LD_PRELOAD and the agent's variables).
	 */
	void (*setup)(void *arg);
	void *setup_arg;
};

#define KILN_CHILD_INIT { 0, -1, -1, NULL, NULL }

/*
 * Forks argv[0] (looked up in PATH), stopped before exec until
 * kiln_child_start().  Of SIGINT, SIGTERM and SIGHUP, those kiln handles
 * are set back to their defaults in the child (one kiln ignores stays
 * ignored, as exec would leave it).  0 or -errno.
 */
int kiln_child_spawn(struct kiln_child *c, char **argv);

/* Lets the child exec.  0, or the exec's -errno (the child has exited). */
int kiln_child_start(struct kiln_child *c);

/*
 * Whether the child has ended: 1 when it has (reaped: *status, and *ru
 * when not NULL, filled; c->pid becomes 0), 0 while it runs (block
 * false), or -errno: -EINTR when a signal came while blocked, -ECHILD
 * with no child to wait for.
 */
int kiln_child_wait(struct kiln_child *c, bool block, int *status,
		    struct rusage *ru);

/*
 * Sends sig to a running child and waits until it ends (signals that
 * come meanwhile do not end the wait); *status and *ru (NULL: unused)
 * get its end.  Nothing happens with no child.
 */
void kiln_child_stop(struct kiln_child *c, int sig, int *status,
		     struct rusage *ru);

/*
 * The exit status kiln gives for a command's wait status: its own exit
 * status, or 128 + the signal that killed it (as a shell says); 1 for
 * anything else.
 */
int kiln_child_exit_status(int status);

/* Kills (SIGKILL) and reaps a child that was spawned, closes the pipes. */
void kiln_child_kill(struct kiln_child *c);

/* Closes the pipes that are still open (after start or kill). */
void kiln_child_release(struct kiln_child *c);

/* The LD_PRELOAD a command runs with: lib, then what kiln's had. */
void kiln_child_preload(struct kiln_buf *pre, const char *lib);

/*
 * Whether cmd is runnable: a path that can be executed, or found in PATH.
 * Its path is appended to where (may be NULL): cmd itself when it has a
 * slash, else the file found.
 */
bool kiln_child_find(const char *cmd, struct kiln_buf *where);

#endif
