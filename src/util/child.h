/*
 * Starting a command to measure (util): forked at once but held before
 * exec until the caller has set up what must see its first instruction
 * (perf events opened with enable_on_exec), then released; a failed exec
 * is reported back through a close-on-exec pipe.  Also finds a command in
 * PATH before anything starts, so that "command not found" costs nothing.
 */
#ifndef KILN_UTIL_CHILD_H
#define KILN_UTIL_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

struct kiln_child {
	pid_t pid;		/* 0: none */
	int go_fd;		/* write end: lets the child exec */
	int err_fd;		/* read end: errno if exec failed */
};

#define KILN_CHILD_INIT { 0, -1, -1 }

/*
 * Forks argv[0] (looked up in PATH), stopped before exec until
 * kiln_child_start().  The child's SIGINT, SIGTERM and SIGHUP are set back
 * to their defaults.  0 or -errno.
 */
int kiln_child_spawn(struct kiln_child *c, char **argv);

/* Lets the child exec.  0, or the exec's -errno (the child has exited). */
int kiln_child_start(struct kiln_child *c);

/* Kills (SIGKILL) and reaps a child that was spawned, closes the pipes. */
void kiln_child_kill(struct kiln_child *c);

/* Closes the pipes that are still open (after start or kill). */
void kiln_child_release(struct kiln_child *c);

/* Whether cmd is runnable: a path that can be executed, or found in PATH. */
bool kiln_child_find(const char *cmd);

#endif
