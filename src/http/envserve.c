/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KILN_HTTP: the server libkiln.so starts from the variable at load, and
 * its heir in a daemon's child (http stage).  The endpoints are http.c's.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/guard.h"
#include "cpu/cpu.h"
#include "heap/htrace.h"
#include "http/http.h"
#include "http/workers.h"
#include "runtime/env.h"

static struct kiln_http *http_srv;
/* The process serving KILN_HTTP (its address below), inherited by the
 * children it forks: they take over when it is gone (a daemon). */
static pid_t http_server_pid;
static char *http_addr;
/* The processes between the serving one and this (the serving one
 * first, this one's parent last), inherited and grown at each fork: a
 * child takes over only once all are gone, so that of a daemon whose
 * first process exits, the daemon serves, not the workers it forks (a
 * worker of nginx's would otherwise win the port half the time).  The
 * oldest is dropped past HEIR_DEPTH. */
#define HEIR_DEPTH 16
static pid_t heir_above[HEIR_DEPTH];
static int heir_n;
static pid_t fork_parent;

/* Whether process pid has ended (or never was). */
static bool gone(pid_t pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

/* Whether every process between the serving one and this has ended. */
static bool all_above_gone(void)
{
	int i;

	for (i = 0; i < heir_n; i++)
		if (!gone(heir_above[i]))
			return false;
	return true;
}

/*
 * KILN_HTTP_CHILDREN=1, in a worker whose server is gone (its
 * connection ended, or was never made): a process above that lives may
 * be serving in its place (a daemon's heir), under the same token.  The
 * nearest that answers is joined (each one once: heir_joined).
 */
static pid_t heir_joined;

static void heir_rejoin(void)
{
	int i;

	if (!kiln_env()->http_children || khttp_worker_fd() >= 0 ||
	    !gone(http_server_pid))
		return;
	for (i = heir_n - 1; i >= 0; i--) {
		if (heir_above[i] == heir_joined || gone(heir_above[i]) ||
		    khttp_chan_join(heir_above[i]))
			continue;
		heir_joined = heir_above[i];
		kiln_rt_log(KILN_LOG_INFO, "http: this worker joined process %d, "
			    "which serves now", (int)heir_joined);
		return;
	}
}

/*
 * In a forked child of the served process: a daemon forks away from it
 * and the first process exits (twice over, with setsid between), leaving
 * the child that does the work without a server.  This thread of kiln's
 * waits until the serving process is gone and then serves the same
 * address from here (a sibling that got there first keeps it: the port
 * is the arbiter, tried every second).  A child that execs or exits
 * first takes it along.
 */
static void *http_heir(void *arg)
{
	struct timespec pause = { 0, 200000000 };
	struct kiln_http *srv;
	int err;

	(void)arg;
	for (;;) {
		struct pollfd w = { .fd = khttp_worker_fd(), .events = POLLIN };

		/* A worker (KILN_HTTP_CHILDREN=1, workers.c) waits on its
		 * connection to the serving process meanwhile and answers
		 * its profile requests here. */
		if (w.fd < 0) {
			nanosleep(&pause, NULL);
		} else if (poll(&w, 1, (int)(pause.tv_sec * 1000 +
					     pause.tv_nsec / 1000000)) > 0) {
			khttp_worker_answer();
			continue;
		}
		heir_rejoin();
		if (!gone(http_server_pid) || !all_above_gone())
			continue;
		pause.tv_sec = 1;
		pause.tv_nsec = 0;
		err = kiln_httpd_start(http_addr, &srv);
		if (!err) {
			http_srv = srv;
			http_server_pid = getpid();
			kiln_rt_log(KILN_LOG_INFO, "http: serving here: process %d, "
				       "which served, is gone", (int)http_server_pid);
			/* The workers this process forked before registered
			 * with the one that is gone: they join this one. */
			if (kiln_env()->http_children) {
				kiln_rt_quiet_begin();
				err = khttp_chan_open();
				kiln_rt_quiet_end();
				if (err)
					kiln_rt_log(KILN_LOG_ERROR, "http: cannot open the "
						    "channel to forked workers (their samples "
						    "will be missing): %s", strerror(-err));
			}
			return NULL;
		}
		if (err != -EADDRINUSE) {
			kiln_rt_log(KILN_LOG_ERROR, "cannot serve HTTP on '%s' after "
				       "the serving process: %s", http_addr,
				       strerror(-err));
			return NULL;
		}
	}
}

void kiln_http_load(void)
{
	const struct kiln_env *e = kiln_env();
	int err;

	/* kiln's own work on the program's thread: not in its heap profile. */
	kiln_rt_quiet_begin();
	if (e->http_owner) {
		kiln_rt_log(KILN_LOG_INFO, "not serving HTTP: KILN_HTTP is "
			       "process %d's (KILN_HTTP_INHERIT=1 serves here too)",
			       (int)e->http_owner);
	} else if (e->http) {
		err = kiln_httpd_start(e->http, &http_srv);
		if (err) {
			kiln_rt_log(KILN_LOG_ERROR, "cannot serve HTTP on '%s': %s",
				       e->http, strerror(-err));
		} else {
			http_server_pid = getpid();
			http_addr = strdup(e->http);
		}
	}
	kiln_rt_quiet_end();
}

void kiln_http_fork_prepare(void)
{
	int err;

	fork_parent = getpid();
	/* KILN_HTTP_CHILDREN=1: the channel the children register on,
	 * before the first of them exists. */
	if (!kiln_env()->http_children || !http_srv || http_server_pid != getpid())
		return;
	kiln_rt_quiet_begin();
	err = khttp_chan_open();
	if (!err)
		khttp_chan_tidy();
	kiln_rt_quiet_end();
	if (err)
		kiln_rt_log(KILN_LOG_ERROR, "http: cannot open the channel to forked "
			    "workers (their samples will be missing): %s", strerror(-err));
}

void kiln_http_fork_child(void)
{
	pthread_t heir;

	/* The parent's server is not this process's: its heir, perhaps.
	 * Its socket, if the child keeps it, would hold the very port the
	 * heir binds when the parent is gone: closed here. */
	kiln_httpd_fork_child();
	http_srv = NULL;
	khttp_chan_fork_child();
	if (heir_n == HEIR_DEPTH) {
		memmove(heir_above, heir_above + 1, sizeof(heir_above[0]) * (HEIR_DEPTH - 1));
		heir_n--;
	}
	/* The parent, noted by its prepare handler (getppid() could be
	 * init's already). */
	heir_above[heir_n++] = fork_parent > 0 ? fork_parent : getppid();
	fork_parent = 0;
	heir_joined = 0;
	if (http_server_pid && http_addr)
		kiln_rt_thread_start(&heir, "kiln-http-heir", http_heir, NULL, true);
}
