/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The /debug/pprof/ HTTP endpoints (http stage), served by libmicrohttpd
 * from inside the profiled process, compatible with Go's net/http/pprof
 * so that `go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=5`,
 * Grafana Alloy/Pyroscope and Parca can fetch CPU profiles of a running
 * program (SPEC section 4, docs/http.md).
 *
 * The server must never hurt its host:
 * - one internal polling thread (epoll) serves every connection; a CPU
 *   profile request is suspended (MHD suspend/resume) while a worker
 *   thread of its own waits out the seconds, so a 30 s profile blocks
 *   nothing else;
 * - at most HTTP_CONN_LIMIT connections, idle ones closed after
 *   HTTP_IDLE_TIMEOUT s, request bodies capped at HTTP_BODY_MAX bytes
 *   (HTTP_BODY_MAX_OPEN without a token: anyone may send one);
 * - slow clients cannot lock the others out (see "the connection guard"):
 *   a connection has HTTP_REQUEST_DEADLINE s to send a whole request,
 *   however it trickles its bytes, and at most HTTP_UNPROVEN_QUOTA
 *   connections may wait longer than HTTP_GRACE_MS without having sent
 *   an authorized request: a new one sheds the oldest of them;
 * - the bearer token is checked from the headers, before any body is read,
 *   and so are Host, Origin and Sec-Fetch-Site (util/origin.h): a
 *   loopback server answers no DNS-rebound name and no other site's page;
 * - its threads start with every asynchronous signal blocked: the host's
 *   SIGTERM/SIGINT handlers never run on them, SIGPROF timers aimed at
 *   them stay pending (the sampler does not count the server as the
 *   host's work), and a SIGPIPE from a socket whose peer left (MHD sends
 *   with MSG_NOSIGNAL anyway) can never kill the process;
 * - the listening socket is close-on-exec.
 *
 * This file holds the server and its threads (libmicrohttpd loaded, the
 * servers, the connection guard, the listening socket, start and stop);
 * request.c the dispatch of a request; the endpoints are in profile.c
 * (answered by a worker thread) and endpoints.c, their answers built with
 * respond.c (httpint.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "kiln/kiln.h"
#include "cpu/cpu.h"
#include "http/http.h"
#include "http/parse.h"
#include "runtime/env.h"
#include "http/httpint.h"
#include "util/diag.h"

/*
 * The servers running, stopped when the process exits so that requests
 * still waiting (a CPU profile over seconds) get a 503 instead of a
 * connection closed without an answer.  A forked child's copies are not
 * its own (their threads stayed in the parent) and are left alone.
 */
static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kiln_http *servers;
static pthread_once_t servers_once = PTHREAD_ONCE_INIT;

static void servers_stop_at_exit(void)
{
	struct kiln_http *srv;

	for (;;) {
		pthread_mutex_lock(&servers_lock);
		for (srv = servers; srv && srv->pid != getpid(); srv = srv->next)
			;
		pthread_mutex_unlock(&servers_lock);
		if (!srv)
			return;
		kiln_rt_log(KILN_LOG_DEBUG, "http: stopping %s at exit", srv->name);
		kiln_httpd_stop(srv);
	}
}

static void servers_init(void)
{
	atexit(servers_stop_at_exit);
}

void kiln_httpd_fork_child(void)
{
	struct kiln_http *srv;

	/* (The lock may have been held by a thread that is not here: the
	 * list is read as it was at the fork, in the only thread there is.) */
	for (srv = servers; srv; srv = srv->next)
		if (srv->pid != getpid()) {
			kiln_kfd_close(&srv->listen);
			kiln_kfd_close(&srv->wake);
		}
	/* libmicrohttpd's own (its epoll fd and eventfd, the connections
	 * open at the fork): its threads are not in the child. */
	kiln_kfd_raised_fork_child();
}

static void servers_add(struct kiln_http *srv)
{
	pthread_once(&servers_once, servers_init);
	srv->pid = getpid();
	pthread_mutex_lock(&servers_lock);
	srv->next = servers;
	servers = srv;
	pthread_mutex_unlock(&servers_lock);
}

static void servers_del(struct kiln_http *srv)
{
	struct kiln_http **pp;

	pthread_mutex_lock(&servers_lock);
	for (pp = &servers; *pp && *pp != srv; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = srv->next;
	pthread_mutex_unlock(&servers_lock);
}

/* ---- the connection guard ---- */

static void conn_unlink(struct kiln_http *srv, struct conn *k)
{
	*(k->prev ? &k->prev->next : &srv->conns_head) = k->next;
	*(k->next ? &k->next->prev : &srv->conns_tail) = k->prev;
	k->prev = k->next = NULL;
}

void khttp_conn_set_proven(struct kiln_http *srv, struct conn *k, bool proven)
{
	if (k->proven == proven)
		return;
	k->proven = proven;
	if (proven) {
		srv->unproven--;
	} else {
		srv->unproven++;
		k->waiting_ms = khttp_now_ms();
	}
}

/* Unproven for longer than the grace: what the quota counts. */
static bool conn_stale(const struct conn *k, int64_t now)
{
	return k->fd >= 0 && !k->proven && now - k->waiting_ms > HTTP_GRACE_MS;
}

/*
 * Shuts down connections past their deadline and, while more than quota
 * connections have been unproven for over the grace, the oldest of them.  MHD sees the
 * socket end and closes the connection on its next turn.
 */
static void conn_shed(struct kiln_http *srv, unsigned quota)
{
	int64_t now = khttp_now_ms();
	unsigned stale = 0, over;
	struct conn *k, *next;

	for (k = srv->conns_head; k; k = k->next)
		stale += conn_stale(k, now);
	over = stale > quota ? stale - quota : 0;
	for (k = srv->conns_head; k; k = next) {
		next = k->next;
		if (k->fd < 0)
			continue;
		if (now > k->deadline_ms || (over && conn_stale(k, now))) {
			struct stat st;

			kiln_rt_log(KILN_LOG_DEBUG, "http: dropping a %s connection",
				       now > k->deadline_ms ? "slow" : "waiting");
			if (!fstat(k->fd, &st) && st.st_dev == k->dev &&
			    st.st_ino == k->ino)
				shutdown(k->fd, SHUT_RDWR);
			if (!k->proven) {
				/* counted out now: it cannot be shed twice */
				khttp_conn_set_proven(srv, k, true);
				if (over)
					over--;
			}
			k->fd = -1;
		}
	}
}

/* MHD's accept policy: runs on MHD's thread before a connection is
 * accepted, so a full table of slow clients makes room for the new one. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr,
				 socklen_t len)
{
	struct kiln_http *srv = cls;

	pthread_mutex_lock(&srv->glock);
	conn_shed(srv, HTTP_UNPROVEN_QUOTA - 1);
	pthread_mutex_unlock(&srv->glock);
	return MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx,
			  enum MHD_ConnectionNotificationCode what)
{
	struct kiln_http *srv = cls;
	struct conn *k = *ctx;

	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci;

		k = calloc(1, sizeof(*k));
		if (!k)
			return;		/* unguarded, still limited by MHD */
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k->fd = ci ? ci->connect_fd : -1;
		if (k->fd >= 0) {
			struct stat st;

			if (fstat(k->fd, &st))
				k->fd = -1;
			k->dev = st.st_dev;
			k->ino = st.st_ino;
		}
		k->srv = srv;
		k->deadline_ms = khttp_now_ms() + HTTP_REQUEST_DEADLINE * 1000;
		k->proven = true;
		pthread_mutex_lock(&srv->glock);
		khttp_conn_set_proven(srv, k, false);
		k->prev = srv->conns_tail;
		*(k->prev ? &k->prev->next : &srv->conns_head) = k;
		srv->conns_tail = k;
		pthread_mutex_unlock(&srv->glock);
		*ctx = k;
	} else if (what == MHD_CONNECTION_NOTIFY_CLOSED && k) {
		pthread_mutex_lock(&srv->glock);
		khttp_conn_set_proven(srv, k, true);
		conn_unlink(srv, k);
		pthread_mutex_unlock(&srv->glock);
		free(k);
		*ctx = NULL;
	}
}

struct conn *khttp_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* A request that waits seconds for its answer (a profile over time) gets
 * them on top of its deadline. */
void khttp_conn_extend(struct MHD_Connection *c, long seconds)
{
	struct conn *k = khttp_conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&k->srv->glock);
	k->deadline_ms += seconds * 1000;
	pthread_mutex_unlock(&k->srv->glock);
}

/* The guard thread: sheds slow and stale connections every second,
 * whether or not new ones arrive, until the server stops. */
static void *guard_main(void *arg)
{
	struct kiln_http *srv = arg;
	struct timespec t;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec++;
		pthread_cond_timedwait(&srv->guard_cv, &srv->lock, &t);
		if (srv->stopping)
			break;
		pthread_mutex_unlock(&srv->lock);
		pthread_mutex_lock(&srv->glock);
		conn_shed(srv, HTTP_UNPROVEN_QUOTA);
		pthread_mutex_unlock(&srv->glock);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static void guard_stop(struct kiln_http *srv)
{
	if (!srv->guard_on)
		return;
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->guard_cv);
	pthread_mutex_unlock(&srv->lock);
	kiln_rt_thread_join(srv->guard);
	srv->guard_on = false;
}

/* ---- the listening socket ---- */

static int listen_on(const struct sockaddr *sa, socklen_t len, bool dual)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1, zero = 0, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, len) || listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Opens the listening socket; fills srv->port and srv->name.  fd or -errno. */
static int open_listener(struct kiln_http *srv, const char *addr)
{
	char host[256], portstr[8], ip[INET6_ADDRSTRLEN];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned port;
	int fd, err;

	err = kiln_http_parse_addr(addr, host, sizeof(host), &port);
	if (err)
		return err;
	if (!*host) {
		/* ":PORT": every address, IPv6 and IPv4 where there is IPv6 */
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
					   .sin6_addr = IN6ADDR_ANY_INIT,
					   .sin6_port = htons((uint16_t)port) };
		struct sockaddr_in a4 = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_ANY),
					  .sin_port = htons((uint16_t)port) };

		fd = listen_on((struct sockaddr *)&a6, sizeof(a6), true);
		if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
			fd = listen_on((struct sockaddr *)&a4, sizeof(a4), false);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_NUMERICSERV };
		struct addrinfo *res, *ai;
		int rc;

		snprintf(portstr, sizeof(portstr), "%u", port);
		rc = getaddrinfo(host, portstr, &hints, &res);
		if (rc)
			return rc == EAI_SYSTEM ? -errno : rc == EAI_MEMORY ? -ENOMEM : -EINVAL;
		fd = -EADDRNOTAVAIL;
		for (ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = listen_on(ai->ai_addr, ai->ai_addrlen, false);
		freeaddrinfo(res);
	}
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		srv->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
				(IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) &&
				 a->sin6_addr.s6_addr[12] == 127);
		srv->port = ntohs(a->sin6_port);
		snprintf(srv->name, sizeof(srv->name), "[%s]:%d", ip, srv->port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		srv->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
		srv->port = ntohs(a->sin_port);
		snprintf(srv->name, sizeof(srv->name), "%s:%d", ip, srv->port);
	}
	return fd;
}

/* ---- the API ---- */

int kiln_httpd_start(const char *addr, struct kiln_http **out)
{
	struct kiln_http *srv;
	const char *tok = kiln_env_http_token();
	sigset_t all, old;
	int fd, mfd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	{
		struct kiln_diag d = { "" };

		err = kiln_mhd_open(&d);
		if (err) {
			kiln_rt_log(KILN_LOG_ERROR, "http: %s", d.msg);
			return -ELIBACC;
		}
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->wake.fd = -1;
	srv->listen.fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->idle, &ca);
		pthread_cond_init(&srv->guard_cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&srv->glock, NULL);
	}
	if (tok && *tok) {
		srv->token = strdup(tok);
		if (!srv->token) {
			err = -ENOMEM;
			goto out_free;
		}
		srv->token_len = strlen(tok);
	}
	/* At a high number, checked before each use: runtime/kfd.h. */
	err = kiln_kfd_adopt(&srv->wake, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (err)
		goto out_free;
	fd = open_listener(srv, addr);
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	/*
	 * MHD closes the socket it is given when it stops; whether it does
	 * when it fails to start is not said, so it gets a copy and ours is
	 * closed here either way: never a double close in the host.
	 */
	mfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mfd < 0) {
		err = -errno;
		close(fd);
		goto out_free;
	}
	close(fd);
	/* A high number, remembered: closed at the stop only if ours. */
	err = kiln_kfd_adopt(&srv->listen, mfd);
	if (err)
		goto out_free;
	mfd = srv->listen.fd;
	/* MHD's thread (and the profile workers it starts) inherits this
	 * mask: no asynchronous signal of the host ever runs on them. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGABRT);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* libmicrohttpd's thread, the guard and the jobs they start are
	 * kiln's: never sampled, never in a goroutine dump. */
	kiln_rt_creating_internal(true);
	srv->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
		MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
		0, on_accept, srv, khttp_on_request, srv,
		/* first, or MHD prints the messages of the other options */
		MHD_OPTION_EXTERNAL_LOGGER, khttp_on_mhd_log, srv,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)mfd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT,
		MHD_OPTION_NOTIFY_COMPLETED, khttp_on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_END);
	err = errno;
	/* The guard inherits the same mask: no signal of the host on it. */
	if (srv->mhd)
		srv->guard_on = !kiln_rt_thread_start(&srv->guard, "kiln-http-guard",
							 guard_main, srv, false);
	kiln_rt_creating_internal(false);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!srv->mhd) {
		err = err ? -err : -ENOMEM;
		goto out_free;
	}
	kiln_rt_log(KILN_LOG_INFO, "http on %s%s", srv->name,
		       srv->token ? " (bearer token required)" : "");
	/* /debug/pprof/heap answers from the start, as Go's does: heap
	 * profiling in sampling mode unless it is on already; without the
	 * malloc interposer the heap paths answer empty (khttp_do_heap_off()). */
	if (kiln_htrace_available())
		kiln_htrace_profile_start();
	else
		kiln_rt_log(KILN_LOG_INFO, "http: heap profiling off (libkiln-malloc.so "
			       "not loaded): /debug/pprof/heap and allocs answer empty");
	servers_add(srv);
	*out = srv;
	return 0;
out_free:
	kiln_kfd_close(&srv->wake);
	free(srv->token);
	pthread_cond_destroy(&srv->idle);
	pthread_cond_destroy(&srv->guard_cv);
	pthread_mutex_destroy(&srv->glock);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return err;
}

int kiln_httpd_stop(struct kiln_http *srv)
{
	uint64_t one = 1;
	struct timespec deadline;
	MHD_socket lfd;
	int rc = 0;

	if (!srv)
		return 0;
	servers_del(srv);
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	pthread_mutex_unlock(&srv->lock);
	if (!kiln_kfd_ours(&srv->listen)) {
		/*
		 * The program closed the server's fds (a daemon closing every
		 * fd as it detaches): libmicrohttpd's numbers may be the
		 * program's files now, and stopping it would remove them from
		 * its epoll set, close them, or abort the process when that
		 * fails.  The server is left as it is (it serves nothing).
		 */
		kiln_rt_log(KILN_LOG_DEBUG, "http: the program closed the "
			       "server's file descriptors: not stopped");
		guard_stop(srv);
		kiln_kfd_forget(&srv->listen);
		kiln_kfd_close(&srv->wake);
		return 0;
	}
	/* No new connections; the listening socket is ours to close now,
	 * after MHD_stop_daemon() (its thread may still look at it). */
	lfd = MHD_quiesce_daemon(srv->mhd);
	/* Wakes every profile worker: each ends its profile, resumes its
	 * connection with a 503 and leaves.  MHD must see no suspended
	 * connection when it stops. */
	if ((rc = kiln_kfd_write(&srv->wake, &one, sizeof(one))))
		kiln_rt_log(KILN_LOG_DEBUG, "http: cannot wake the workers: %s",
			       strerror(-rc));
	rc = 0;
	pthread_mutex_lock(&srv->lock);
	while (srv->jobs)
		pthread_cond_wait(&srv->idle, &srv->lock);
	/*
	 * A resumed request is answered by MHD's thread later: stopping the
	 * daemon at once closed its socket before the 503 went out (the
	 * client saw no answer at all).  Each is counted until MHD completes
	 * it; a client that does not read is not waited for long.
	 */
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += HTTP_STOP_FLUSH_MS / 1000;
	deadline.tv_nsec += (long)(HTTP_STOP_FLUSH_MS % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	while (srv->suspended && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&srv->idle, &srv->lock, &deadline);
	if (srv->suspended)
		kiln_rt_log(KILN_LOG_DEBUG, "http: %u answer(s) not sent after "
			       "%d ms: closing anyway", srv->suspended,
			       HTTP_STOP_FLUSH_MS);
	pthread_mutex_unlock(&srv->lock);
	guard_stop(srv);
	MHD_stop_daemon(srv->mhd);
	if (lfd != MHD_INVALID_SOCKET && lfd == srv->listen.fd)
		kiln_kfd_close(&srv->listen);
	kiln_kfd_close(&srv->wake);
	free(srv->token);
	pthread_cond_destroy(&srv->idle);
	pthread_cond_destroy(&srv->guard_cv);
	pthread_mutex_destroy(&srv->glock);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return 0;
}

int kiln_httpd_port(const struct kiln_http *srv)
{
	return srv ? srv->port : -EINVAL;
}
