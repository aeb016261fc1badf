/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server of kiln serve (web stage), on libmicrohttpd: each
 * connection is answered by its own thread (a range analysis of a big
 * heap trace in one holds up no other), from the page compiled into the
 * binary or from the JSON API over the model (which locks itself).  Nothing else is served:
 * no file system path is ever opened for a request, so no traversal can
 * reach outside the inputs.
 *
 * Bounds: at most WEB_CONN_LIMIT connections, idle ones closed after
 * WEB_IDLE_TIMEOUT s; only GET and HEAD.  No per-address limit: every
 * client of a loopback server has the same address.
 *
 * Who may ask (util/origin.h): a loopback server answers only Host
 * values that name loopback (no DNS rebinding) and no page of another
 * site (Sec-Fetch-Site, Origin).  A server listening beyond loopback
 * needs a token (given, or made here and put in the printed URL): the
 * first request brings it as ?token=, an "Authorization: Bearer" header
 * or the cookie that answer sets, so the page's own requests carry it
 * without knowing it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/diag.h"
#include "util/mhd.h"
#include "util/origin.h"
#include "web/web.h"

#define WEB_CONN_LIMIT 128
#define WEB_IDLE_TIMEOUT 30	/* seconds */

#define WEB_COOKIE "kiln_token"

struct kiln_web {
	struct MHD_Daemon *mhd;
	struct kiln_web_model *m;
	int fd;			/* the listening socket until MHD has it */
	int port;
	bool loopback;		/* listening on loopback only */
	bool wildcard;		/* on every address (0.0.0.0, ::) */
	int family;
	char host[INET6_ADDRSTRLEN];	/* of the URL */
	char token[65];		/* "": none asked */
	char url[256];
	/* The tidier: hands idle memory back (kiln_web_model_tidy()) every
	 * second until stopping is set. */
	pthread_t tidier;
	bool tidier_on, stopping;
	pthread_mutex_t tidy_lock;
	pthread_cond_t tidy_cv;
};

static void *tidy_loop(void *arg)
{
	struct kiln_web *w = arg;
	struct timespec until;

	pthread_mutex_lock(&w->tidy_lock);
	while (!w->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec++;
		pthread_cond_timedwait(&w->tidy_cv, &w->tidy_lock, &until);
		if (w->stopping)
			break;
		pthread_mutex_unlock(&w->tidy_lock);
		kiln_web_model_tidy(w->m);
		pthread_mutex_lock(&w->tidy_lock);
	}
	pthread_mutex_unlock(&w->tidy_lock);
	return NULL;
}

/* Starts the tidier (signals blocked by the caller); false if it could
 * not start: memory then stays at its peak, nothing else changes. */
static bool tidy_start(struct kiln_web *w)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&w->tidy_cv, &a);
	pthread_condattr_destroy(&a);
	pthread_mutex_init(&w->tidy_lock, NULL);
	w->tidier_on = !pthread_create(&w->tidier, NULL, tidy_loop, w);
	if (!w->tidier_on) {
		pthread_cond_destroy(&w->tidy_cv);
		pthread_mutex_destroy(&w->tidy_lock);
	}
	return w->tidier_on;
}

/* The states of a request between MHD's calls (*state). */
static const char st_ok[] = "ok", st_cookie[] = "cookie", st_body[] = "body";

static const char *conn_arg(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

/*
 * Queues r for conn; a request that brought the token in its URL gets
 * it back as a cookie, which the page's own requests then carry
 * (HttpOnly: no script reads it; SameSite=Strict: no other site's page
 * sends it).
 */
static enum MHD_Result queue(const struct kiln_web *w,
			     struct MHD_Connection *conn, unsigned status,
			     struct MHD_Response *r, const void *state)
{
	enum MHD_Result ret;

	if (state == st_cookie) {
		char c[sizeof(w->token) + 64];

		snprintf(c, sizeof(c), WEB_COOKIE "=%s; Path=/; HttpOnly; "
			 "SameSite=Strict", w->token);
		MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, c);
	}
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer(const struct kiln_web *w,
			      struct MHD_Connection *conn, unsigned status,
			      const char *type, const void *data, size_t len,
			      enum MHD_ResponseMemoryMode mode, const void *state)
{
	struct MHD_Response *r;

	r = MHD_create_response_from_buffer(len, (void *)data, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free((void *)data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	/* The page loads only its own files and talks only to this server. */
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; "
				"frame-ancestors 'none'");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	return queue(w, conn, status, r, state);
}

static enum MHD_Result text(const struct kiln_web *w,
			    struct MHD_Connection *conn, unsigned status,
			    const char *msg, const void *state)
{
	return answer(w, conn, status, "text/plain; charset=utf-8", msg,
		      strlen(msg), MHD_RESPMEM_MUST_COPY, state);
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/*
 * Whether the request carries the server's token: as ?token= (then
 * *cookie: answer with the cookie), the cookie, or a bearer header.
 */
static bool has_token(const struct kiln_web *w, struct MHD_Connection *conn,
		      bool *cookie)
{
	const char *v;

	*cookie = false;
	if (!w->token[0])
		return true;
	v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
	if (v && kiln_origin_token_eq(w->token, v)) {
		*cookie = true;
		return true;
	}
	v = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, WEB_COOKIE);
	if (v && kiln_origin_token_eq(w->token, v))
		return true;
	v = header(conn, MHD_HTTP_HEADER_AUTHORIZATION);
	return v && !strncasecmp(v, "Bearer ", 7) &&
	       kiln_origin_token_eq(w->token, v + 7);
}

/* The first call for a request (headers only): *state, or an answer. */
static enum MHD_Result admit(struct kiln_web *w, struct MHD_Connection *conn,
			     const char *method, void **state)
{
	struct kiln_origin_req rq = {
		method, header(conn, MHD_HTTP_HEADER_HOST),
		header(conn, "Origin"), header(conn, "Sec-Fetch-Site"),
		header(conn, "Sec-Fetch-Mode"),
	};
	const char *why = kiln_origin_refusal(&rq, w->port, w->loopback);
	char msg[320];
	bool cookie;

	if (why) {
		snprintf(msg, sizeof(msg), "refused: %s\n", why);
		return text(w, conn, MHD_HTTP_FORBIDDEN, msg, NULL);
	}
	/* Anything but GET and HEAD is refused at once, before any body
	 * is read. */
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text(w, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "only GET and HEAD are served\n", NULL);
	if (!has_token(w, conn, &cookie))
		return text(w, conn, MHD_HTTP_UNAUTHORIZED,
			    "this kiln serve needs its token: open the URL it "
			    "printed (with ?token=...)\n", NULL);
	*state = (void *)(cookie ? st_cookie : st_ok);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct kiln_web *w = cls;
	const struct kiln_web_asset *a;

	if (!*state)
		return admit(w, conn, method, state);
	if (*upload_len) {
		*upload_len = 0;	/* a GET with a body: dropped, refused below */
		*state = (void *)st_body;
		return MHD_YES;
	}
	if (*state == st_body)
		return text(w, conn, MHD_HTTP_BAD_REQUEST,
			    "kiln serve takes no request bodies\n", NULL);
	if (!strncmp(url, "/api/", 5)) {
		struct kiln_web_req req = { url, conn_arg, conn, NULL, "" };
		struct kiln_buf out = KILN_BUF_INIT;
		struct MHD_Response *r;
		char disp[200];
		size_t len;
		char *body;
		int status = kiln_web_api(w->m, &req, &out);

		if (status == 500) {
			kiln_buf_release(&out);
			return text(w, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory\n", *state);
		}
		body = kiln_buf_detach(&out, &len);
		if (!req.type)
			return answer(w, conn, (unsigned)status, "application/json",
				      body ? body : "", len,
				      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT,
				      *state);
		/* Another type (the call graph's SVG), or a download: saved
		 * under the name the API chose. */
		r = MHD_create_response_from_buffer(len, body ? body : (char *)"",
						    body ? MHD_RESPMEM_MUST_FREE :
							   MHD_RESPMEM_PERSISTENT);
		if (!r) {
			free(body);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, req.type);
		if (req.filename[0]) {
			snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"",
				 req.filename);
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
						disp);
		}
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
		return queue(w, conn, (unsigned)status, r, *state);
	}
	a = kiln_web_asset(url);
	if (a)
		return answer(w, conn, MHD_HTTP_OK, a->type, a->data, a->len,
			      MHD_RESPMEM_PERSISTENT, *state);
	return text(w, conn, MHD_HTTP_NOT_FOUND,
		    "not found: kiln serve answers /, its page's files and /api/\n",
		    *state);
}

/*
 * Parses addr into host and port as pprof's -http does: "HOST:PORT",
 * "[V6]:PORT", "PORT", ":PORT" and ":" (loopback; an empty port is 0,
 * any free one).  Every address is asked for by name: 0.0.0.0, [::].
 */
static int parse_addr(const char *addr, char *host, size_t hostsz,
		      char *port, size_t portsz)
{
	const char *colon, *p;
	size_t hl;

	for (p = addr; isdigit((unsigned char)*p); p++)
		;
	if (!*addr)
		return -EINVAL;
	if (!*p) {
		snprintf(host, hostsz, "127.0.0.1");
		p = addr;
	} else if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close || close[1] != ':' || close == addr + 1)
			return -EINVAL;
		hl = (size_t)(close - addr - 1);
		if (hl >= hostsz)
			return -EINVAL;
		memcpy(host, addr + 1, hl);
		host[hl] = '\0';
		p = close + 2;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
		if (hl >= hostsz || memchr(addr, ':', hl))
			return -EINVAL;
		memcpy(host, addr, hl);
		host[hl] = '\0';
		if (!hl)
			snprintf(host, hostsz, "127.0.0.1");
		p = colon + 1;
	}
	if (strlen(p) >= portsz || strspn(p, "0123456789") != strlen(p) ||
	    atol(p) > 65535)
		return -EINVAL;
	snprintf(port, portsz, "%s", *p ? p : "0");
	return 0;
}

/* Whether the bound address ss is loopback, or every address. */
static void classify(struct kiln_web *w, const struct sockaddr_storage *ss)
{
	w->family = ss->ss_family;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		w->port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
		w->wildcard = IN6_IS_ADDR_UNSPECIFIED(a);
		w->loopback = IN6_IS_ADDR_LOOPBACK(a) ||
			      (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		w->port = ntohs(a->sin_port);
		w->wildcard = a->sin_addr.s_addr == htonl(INADDR_ANY);
		w->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
}

/* "http://HOST:PORT/" for address ip of family af, with the token. */
static void make_url(const struct kiln_web *w, int af, const char *ip,
		     char *url, size_t n)
{
	snprintf(url, n, af == AF_INET6 ? "http://[%s]:%d/%s%s" :
		 "http://%s:%d/%s%s", ip, w->port, w->token[0] ? "?token=" : "",
		 w->token);
}

static int listen_on(struct kiln_web *w, const char *addr, struct kiln_diag *d)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[8], ip[INET6_ADDRSTRLEN];
	int fd = -1, one = 1, rc, err = 0;

	if (parse_addr(addr, host, sizeof(host), port, sizeof(port)))
		return kiln_diag(d, "bad address '%s': want HOST:PORT, [IPV6]:PORT, "
				 "PORT or :PORT (loopback), 0.0.0.0:PORT (every "
				 "address); port 0 or none: any free one", addr);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return kiln_diag(d, "bad address '%s': %s", addr, gai_strerror(rc));
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) ||
		    listen(fd, SOMAXCONN)) {
			err = -errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		kiln_diag(d, "cannot listen on '%s': %s", addr, strerror(-err));
		return err ? err : -EADDRNOTAVAIL;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		err = -errno;
		close(fd);
		kiln_diag(d, "cannot listen on '%s': %s", addr, strerror(-err));
		return err;
	}
	classify(w, &ss);
	if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip,
			  sizeof(ip));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip,
			  sizeof(ip));
	/* Every address: the URL names loopback, the others are listed by
	 * kiln_web_urls(). */
	if (w->wildcard)
		snprintf(ip, sizeof(ip), ss.ss_family == AF_INET6 ? "::1" : "127.0.0.1");
	snprintf(w->host, sizeof(w->host), "%s", ip);
	return fd;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	/* MHD's own complaints (a client gone mid-answer) are not ours to
	 * print: the library never prints. */
}

int kiln_web_listen(const char *addr, const char *token, struct kiln_web **out,
		    struct kiln_diag *d)
{
	struct kiln_web *w;
	unsigned char rnd[16];
	int fd;

	*out = NULL;
	/* Before the port is taken and the URL printed. */
	fd = kiln_mhd_open(d);
	if (fd)
		return fd;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (token && *token) {
		if (strlen(token) >= sizeof(w->token) ||
		    strspn(token, "0123456789abcdefghijklmnopqrstuvwxyz"
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ-._~") != strlen(token)) {
			free(w);
			return kiln_diag(d, "bad token: at most 64 letters, digits "
					 "and '-._~' (it goes in the URL)");
		}
		snprintf(w->token, sizeof(w->token), "%s", token);
	}
	fd = listen_on(w, addr, d);
	if (fd < 0) {
		free(w);
		return fd;
	}
	/* Beyond loopback, anyone who reaches the port would see the
	 * profiles: a token of 128 random bits unless one was given. */
	if (!w->loopback && !w->token[0]) {
		size_t i;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			int err = -errno;

			close(fd);
			free(w);
			kiln_diag(d, "cannot make a token: %s", strerror(-err));
			return err;
		}
		for (i = 0; i < sizeof(rnd); i++)
			snprintf(w->token + 2 * i, 3, "%02x", rnd[i]);
	}
	make_url(w, w->family, w->host, w->url, sizeof(w->url));
	w->fd = fd;
	*out = w;
	return 0;
}

int kiln_web_serve(struct kiln_web *w, struct kiln_web_model *m,
		   struct kiln_diag *d)
{
	sigset_t all, old;
	int err;

	w->m = m;
	/* A view's big arrays (a filtered copy's samples and time column)
	 * mapped and unmapped whole, so that dropping a view hands its
	 * memory back: glibc's default threshold rises to 32 MiB once such
	 * a block is freed and puts the next ones in the heaps, which keep
	 * their peak. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	/* The polling thread inherits this mask, and the connections'
	 * threads it starts too: Ctrl-C reaches the thread that waits for
	 * it, never the server's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	tidy_start(w);
	w->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
		MHD_USE_AUTO | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, w,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, w,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)w->fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_IDLE_TIMEOUT,
		MHD_OPTION_END);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!w->mhd) {
		err = err ? -err : -EIO;
		kiln_diag(d, "cannot start the HTTP server: %s", strerror(-err));
		return err;
	}
	w->fd = -1;	/* MHD's: closed when it stops */
	return 0;
}

bool kiln_web_loopback(const struct kiln_web *w)
{
	return w->loopback;
}

int kiln_web_urls(const struct kiln_web *w, struct kiln_buf *out)
{
	struct ifaddrs *ifs, *i;
	char ip[INET6_ADDRSTRLEN], url[256];
	int err = 0;

	if (!w->wildcard)
		return kiln_buf_addf(out, "%s\n", w->url);
	if (getifaddrs(&ifs))
		return -errno;
	for (i = ifs; i && !err; i = i->ifa_next) {
		const void *a;
		int af;

		if (!i->ifa_addr)
			continue;
		af = i->ifa_addr->sa_family;
		/* An IPv4 socket takes IPv4 only; an IPv6 one takes both
		 * unless the system says v6only (Linux does not by default). */
		if (af == AF_INET)
			a = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		else if (af == AF_INET6 && w->family == AF_INET6)
			a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		else
			continue;
		if (af == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)a))
			continue;	/* needs a zone to be reached */
		inet_ntop(af, a, ip, sizeof(ip));
		make_url(w, af, ip, url, sizeof(url));
		err = kiln_buf_addf(out, "%s\n", url);
	}
	freeifaddrs(ifs);
	return err;
}

const char *kiln_web_url(const struct kiln_web *w)
{
	return w->url;
}

void kiln_web_stop(struct kiln_web *w)
{
	if (!w)
		return;
	if (w->tidier_on) {
		pthread_mutex_lock(&w->tidy_lock);
		w->stopping = true;
		pthread_cond_signal(&w->tidy_cv);
		pthread_mutex_unlock(&w->tidy_lock);
		pthread_join(w->tidier, NULL);
		pthread_cond_destroy(&w->tidy_cv);
		pthread_mutex_destroy(&w->tidy_lock);
	}
	if (w->mhd)
		MHD_stop_daemon(w->mhd);	/* closes the listening socket */
	else if (w->fd >= 0)
		close(w->fd);
	free(w);
}
