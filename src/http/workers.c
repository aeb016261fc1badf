/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KILN_HTTP_CHILDREN=1: /debug/pprof/profile on the serving process covers
 * the children it fork()s without exec (pre-fork servers' workers: nginx,
 * the postgres postmaster, gunicorn), each sampling itself (http stage).
 *
 * The channel: at the serving process's first fork, a listening unix
 * stream socket with an abstract name made of a random token and the
 * serving process's pid (nothing in the file system; only its
 * descendants know the token), kiln's fd (high, close-on-exec,
 * checked).  A process that takes over serving (a daemon's heir,
 * envserve.c) opens its own under the same token, and the descendants
 * that lost their server join it (khttp_chan_join()).  A forked child
 * closes its copies of the channel's fds, connects to the name (no
 * waiting: a full backlog leaves it out) and says hello (its pid and the
 * token, which only the serving process's descendants know); its
 * connection is its own kiln fd.  Nothing runs for it in the master
 * until a profile is asked for: the profile's job accepts the waiting
 * hellos then, asks every live worker for the same window (seconds,
 * frequency), takes its own, and reads their answers (each a pprof of
 * its own samples, `pid` label and all) into the profile, naming in its
 * comment each worker left out (gone, busy, too slow).  In the child the
 * KILN_HTTP heir thread (envserve.c), which every child of the serving
 * process runs anyway, waits on the connection instead of sleeping and
 * answers a request with the CPU sampler.
 *
 * Messages, host byte order (the same machine):
 *   hello    child -> master   magic, pid, token[16]
 *   ask      master -> child   magic, round, seconds, hz
 *   answer   child -> master   magic, round, status (0 or -errno), length,
 *                              then length bytes of uncompressed pprof
 * An answer to an earlier round (one that came too late) is read and
 * dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpu/cpu.h"
#include "format/format.h"
#include "http/workers.h"
#include "profile/profile.h"
#include "runtime/kfd.h"
#include "runtime/log.h"
#include "util/buf.h"
#include "util/diag.h"

#define MSG_MAGIC 0x6b6c6e77u		/* "klnw" */
#define ANSWER_MAX (256u << 20)		/* the most bytes of an answer */

struct hello { uint32_t magic; int32_t pid; uint8_t token[16]; };
struct ask { uint32_t magic, round, seconds, hz; };
struct answer { uint32_t magic, round; int32_t status; uint32_t len; };

/* The channel, made in the serving process (chan_pid); its token, made
 * once in the first and inherited by every descendant, names it with
 * the pid (chan_name()). */
static struct kiln_kfd chan_listen = KILN_KFD_INIT;
static pid_t chan_pid;
static uint8_t chan_token[16];
static bool chan_token_made;

/* The master's registered workers: a fixed table (a child's copy is
 * walked without the lock, which a job thread may have held at fork). */
struct worker {
	struct kiln_kfd fd;
	pid_t pid;
	/* the answer being read: header, then body */
	struct answer head;
	size_t got;
	struct kiln_buf body;
	bool asked;		/* in the current round */
	bool done;
};
static struct worker workers[KHTTP_WORKERS_MAX];
static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t round_no;

/* The child's connection to the master. */
static struct kiln_kfd conn = KILN_KFD_INIT;

/* The abstract name of process pid's channel: "kiln-http-TOKEN-PID"
 * (TOKEN in hex) after the leading NUL; its length in *len. */
static void chan_name(pid_t pid, struct sockaddr_un *a, socklen_t *len)
{
	char *p = a->sun_path + 1;
	size_t i;
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(p, sizeof(a->sun_path) - 1, "kiln-http-");
	for (i = 0; i < sizeof(chan_token); i++)
		n += snprintf(p + n, sizeof(a->sun_path) - 1 - (size_t)n, "%02x",
			      chan_token[i]);
	n += snprintf(p + n, sizeof(a->sun_path) - 1 - (size_t)n, "-%d", (int)pid);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int khttp_chan_open(void)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd, err;

	if (chan_pid == getpid() && kiln_kfd_ours(&chan_listen))
		return 0;
	/* The token of the first serving process is kept by its heirs: the
	 * descendants that join an heir's channel know only that one. */
	if (!chan_token_made) {
		if (getrandom(chan_token, sizeof(chan_token), GRND_NONBLOCK) !=
		    sizeof(chan_token))
			return -EAGAIN;
		chan_token_made = true;
	}
	chan_name(getpid(), &a, &len);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, len) || listen(fd, 256)) {
		err = -errno;
		close(fd);
		return err;
	}
	err = kiln_kfd_adopt(&chan_listen, fd);
	if (err)
		return err;
	chan_pid = getpid();
	kiln_rt_log(KILN_LOG_DEBUG, "http: workers' channel open");
	return 0;
}

/* A complete write of buf to fd, no SIGPIPE.  0 or -errno. */
static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void worker_drop(struct worker *w)
{
	kiln_kfd_close(&w->fd);
	kiln_buf_release(&w->body);
	memset(w, 0, sizeof(*w));
	w->fd.fd = -1;
}

void khttp_chan_fork_child(void)
{
	size_t i;
	int err;

	/* The copies of the master's fds: not this process's to use (the
	 * lock may have been held at the fork: not taken). */
	pthread_mutex_init(&workers_lock, NULL);
	for (i = 0; i < KHTTP_WORKERS_MAX; i++)
		if (workers[i].fd.fd >= 0 || workers[i].pid)
			kiln_kfd_close(&workers[i].fd);
	memset(workers, 0, sizeof(workers));
	for (i = 0; i < KHTTP_WORKERS_MAX; i++)
		workers[i].fd.fd = -1;
	kiln_kfd_close(&chan_listen);
	kiln_kfd_close(&conn);
	if (!chan_pid)
		return;
	err = khttp_chan_join(chan_pid);
	if (err)
		kiln_rt_log(KILN_LOG_INFO, "http: this worker is left out of the "
			    "serving process's profiles: %s", strerror(-err));
}

int khttp_chan_join(pid_t pid)
{
	struct hello h = { .magic = MSG_MAGIC, .pid = (int32_t)getpid() };
	struct sockaddr_un a;
	socklen_t len;
	int fd, err;

	if (!chan_token_made)
		return -ENOENT;
	kiln_kfd_close(&conn);
	chan_name(pid, &a, &len);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, len)) {
		err = -errno;
		close(fd);
		return err;
	}
	memcpy(h.token, chan_token, sizeof(h.token));
	/* A fresh socket's buffer takes the hello whole. */
	if (send(fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(h)) {
		close(fd);
		return -EPIPE;
	}
	/* Blocking from here: the heir thread waits on it with poll(). */
	fcntl(fd, F_SETFL, 0);
	return kiln_kfd_adopt(&conn, fd);
}

int khttp_worker_fd(void)
{
	return kiln_kfd_ours(&conn) ? conn.fd : -1;
}

/* Reads exactly len bytes from the child's connection.  0 or -errno
 * (-EPIPE at its end). */
static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Waits out the window, or less when the master goes away (its end of
 * the connection closes).
 */
static void window_wait(int fd, int seconds)
{
	struct timespec t0, now;
	int64_t left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (int64_t)seconds * 1000 - ((now.tv_sec - t0.tv_sec) * 1000 +
						  (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return;
		if (poll(&p, 1, (int)left) > 0 &&
		    (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
			return;
	}
}

int khttp_worker_answer(void)
{
	struct answer ans = { .magic = MSG_MAGIC };
	struct kiln_buf b = KILN_BUF_INIT;
	struct kiln_prof *p = NULL;
	struct ask q;
	int fd = khttp_worker_fd(), err;

	if (fd < 0)
		return -EBADF;
	err = recv_all(fd, &q, sizeof(q));
	if (!err && (q.magic != MSG_MAGIC || q.seconds < 1 || q.seconds > 3600))
		err = -EPROTO;
	if (err) {
		/* The master is gone (or speaks nonsense): no more rounds. */
		kiln_kfd_close(&conn);
		return err;
	}
	ans.round = q.round;
	err = kiln_sampler_begin((int)q.hz, false);
	if (!err) {
		window_wait(fd, (int)q.seconds);
		err = kiln_sampler_end(&p);
		if (!err)
			err = kiln_pprof_write(p, &b, false);
		kiln_prof_free(p);
	}
	ans.status = err;
	ans.len = err ? 0 : (uint32_t)b.len;
	err = send_all(fd, &ans, sizeof(ans));
	if (!err && ans.len)
		err = send_all(fd, b.data, b.len);
	kiln_buf_release(&b);
	if (err)
		kiln_kfd_close(&conn);
	return err;
}

/* ---- the master: a round ---- */

/* Takes the hellos waiting on the channel into the table. */
static void accept_waiting(void)
{
	struct hello h;
	size_t i;
	int fd;

	if (chan_pid != getpid() || !kiln_kfd_ours(&chan_listen))
		return;
	while ((fd = accept4(chan_listen.fd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct worker *w = NULL;

		/* The child wrote its hello before the connection was
		 * accepted; one that has none is not a child of ours. */
		if (recv(fd, &h, sizeof(h), MSG_DONTWAIT) != (ssize_t)sizeof(h) ||
		    h.magic != MSG_MAGIC || h.pid <= 0 ||
		    memcmp(h.token, chan_token, sizeof(h.token))) {
			close(fd);
			continue;
		}
		for (i = 0; i < KHTTP_WORKERS_MAX && !w; i++)
			if (!workers[i].pid)
				w = &workers[i];
		if (!w) {
			kiln_rt_log(KILN_LOG_INFO, "http: more than %d workers: "
				    "process %d left out", KHTTP_WORKERS_MAX, (int)h.pid);
			close(fd);
			continue;
		}
		if (kiln_kfd_adopt(&w->fd, fd))
			continue;
		w->pid = h.pid;
	}
}

void khttp_chan_tidy(void)
{
	size_t i;

	if (chan_pid != getpid() || pthread_mutex_trylock(&workers_lock))
		return;
	accept_waiting();
	for (i = 0; i < KHTTP_WORKERS_MAX; i++) {
		struct worker *w = &workers[i];
		struct pollfd p = { .fd = w->fd.fd, .events = POLLRDHUP };

		if (!w->pid || w->asked)
			continue;
		if (!kiln_kfd_ours(&w->fd) ||
		    (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))))
			worker_drop(w);
	}
	pthread_mutex_unlock(&workers_lock);
}

int khttp_workers_ask(int seconds, int hz)
{
	struct ask q = { MSG_MAGIC, 0, (uint32_t)seconds, (uint32_t)hz };
	int asked = 0;
	size_t i;

	pthread_mutex_lock(&workers_lock);
	accept_waiting();
	q.round = ++round_no;
	for (i = 0; i < KHTTP_WORKERS_MAX; i++) {
		struct worker *w = &workers[i];

		w->asked = false;
		if (!w->pid)
			continue;
		if (!kiln_kfd_ours(&w->fd) || send_all(w->fd.fd, &q, sizeof(q))) {
			/* Gone before the window: not one of the workers now. */
			worker_drop(w);
			continue;
		}
		w->asked = true;
		w->done = false;
		w->got = 0;
		kiln_buf_reset(&w->body);
		asked++;
	}
	pthread_mutex_unlock(&workers_lock);
	return asked;
}

/*
 * Reads what worker w has sent: 1 when its answer to this round is whole,
 * 0 for more to come, -errno when the connection is over.
 */
static int read_some(struct worker *w)
{
	for (;;) {
		ssize_t n;

		if (w->got < sizeof(w->head)) {
			n = recv(w->fd.fd, (char *)&w->head + w->got,
				 sizeof(w->head) - w->got, MSG_DONTWAIT);
		} else {
			size_t want = w->head.len - w->body.len;
			int err;

			if (!want)
				goto whole;
			err = kiln_buf_grow(&w->body, want > 65536 ? 65536 : want);
			if (err)
				return err;
			n = recv(w->fd.fd, w->body.data + w->body.len,
				 want > 65536 ? 65536 : want, MSG_DONTWAIT);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		if (w->got < sizeof(w->head)) {
			w->got += (size_t)n;
			if (w->got == sizeof(w->head) &&
			    (w->head.magic != MSG_MAGIC || w->head.len > ANSWER_MAX))
				return -EPROTO;
		} else {
			w->body.len += (size_t)n;
		}
		continue;
whole:
		if (w->head.round == round_no)
			return 1;
		/* A late answer to an earlier round: dropped. */
		w->got = 0;
		kiln_buf_reset(&w->body);
	}
}

/* Leaves out of wp's comments those p has (the same command line):
 * a worker's own (nginx's "nginx: worker process") stays. */
static void drop_known_comments(struct kiln_prof *wp, const struct kiln_prof *p)
{
	size_t i, k, n = 0;

	for (i = 0; i < wp->ncomments; i++) {
		const char *c = kiln_prof_str(wp, wp->comments[i]);
		bool known = false;

		for (k = 0; k < p->ncomments && !known; k++)
			known = !strcmp(c, kiln_prof_str(p, p->comments[k]));
		if (!known)
			wp->comments[n++] = wp->comments[i];
	}
	wp->ncomments = n;
}

/* Adds worker w's answer to p; a line for the comment where it is not. */
static void take_answer(struct worker *w, struct kiln_prof *p, struct kiln_buf *why)
{
	struct kiln_prof *wp;
	struct kiln_diag d;
	int err = w->head.status;

	if (err == -EBUSY) {
		kiln_buf_addf(why, "; worker %d: a CPU profile already runs there", (int)w->pid);
		return;
	}
	if (err) {
		kiln_buf_addf(why, "; worker %d: %s", (int)w->pid, strerror(-err));
		return;
	}
	wp = kiln_prof_new();
	if (!wp) {
		kiln_buf_addf(why, "; worker %d: %s", (int)w->pid, strerror(ENOMEM));
		return;
	}
	d.msg[0] = '\0';
	err = kiln_pprof_read(wp, w->body.data, w->body.len, &d);
	if (!err) {
		int64_t window = p->duration_nanos;

		drop_known_comments(wp, p);
		err = kiln_prof_merge(p, wp, &d);
		/* The same window, not one per process. */
		p->duration_nanos = window;
	}
	if (err)
		kiln_buf_addf(why, "; worker %d: unreadable answer: %s", (int)w->pid,
			      d.msg[0] ? d.msg : strerror(-err));
	kiln_prof_free(wp);
}

int khttp_workers_collect(struct kiln_prof *p, int64_t deadline_ms, bool take)
{
	struct pollfd fds[KHTTP_WORKERS_MAX];
	struct worker *of[KHTTP_WORKERS_MAX];
	struct kiln_buf why = KILN_BUF_INIT;
	int answered = 0, asked = 0;
	size_t i, n;

	pthread_mutex_lock(&workers_lock);
	for (;;) {
		struct timespec now;
		int64_t left;

		for (i = n = 0; i < KHTTP_WORKERS_MAX; i++) {
			struct worker *w = &workers[i];

			if (!w->asked || w->done)
				continue;
			fds[n] = (struct pollfd){ .fd = w->fd.fd, .events = POLLIN };
			of[n++] = w;
		}
		if (!n || !take)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = deadline_ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
		if (left <= 0)
			break;
		if (poll(fds, n, left > 1000 ? 1000 : (int)left) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			struct worker *w = of[i];
			int r;

			if (!fds[i].revents)
				continue;
			r = kiln_kfd_ours(&w->fd) ? read_some(w) : -EBADF;
			if (r > 0) {
				take_answer(w, p, &why);
				w->done = true;
				answered += !w->head.status;
				w->got = 0;
				kiln_buf_reset(&w->body);
			} else if (r < 0) {
				kiln_buf_addf(&why, "; worker %d: gone before it answered",
					      (int)w->pid);
				w->done = true;
				w->pid = -w->pid;	/* dropped below */
			}
		}
	}
	for (i = 0; i < KHTTP_WORKERS_MAX; i++) {
		struct worker *w = &workers[i];

		if (!w->asked)
			continue;
		asked++;
		if (w->pid < 0)
			worker_drop(w);
		else if (!w->done && take)
			kiln_buf_addf(&why, "; worker %d: no answer in time", (int)w->pid);
		w->asked = false;
	}
	pthread_mutex_unlock(&workers_lock);
	if (take && asked) {
		struct kiln_buf c = KILN_BUF_INIT;

		kiln_buf_addf(&c, "forked workers: %d of %d answered%.*s", answered,
			      asked, (int)why.len, why.data ? why.data : "");
		if (c.data)
			kiln_prof_add_comment(p, c.data);
		kiln_buf_release(&c);
	}
	kiln_buf_release(&why);
	return answered;
}
