/*
 * The HTTP server of kiln serve (web stage), on libmicrohttpd: one
 * polling thread answers every request, from the page compiled into the
 * binary or from the JSON API over the model.  Nothing else is served:
 * no file system path is ever opened for a request, so no traversal can
 * reach outside the inputs.
 *
 * Bounds: at most WEB_CONN_LIMIT connections, idle ones closed after
 * WEB_IDLE_TIMEOUT s; only GET and HEAD.  No per-address limit: every
 * client of a loopback server has the same address.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"

#define WEB_CONN_LIMIT 128
#define WEB_IDLE_TIMEOUT 30	/* seconds */

struct kiln_web {
	struct MHD_Daemon *mhd;
	struct kiln_web_model *m;
	char url[128];
};

static const char *conn_arg(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status,
			      const char *type, const void *data, size_t len,
			      enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

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
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status,
			    const char *msg)
{
	return answer(conn, status, "text/plain; charset=utf-8", msg,
		      strlen(msg), MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct kiln_web *w = cls;
	const struct kiln_web_asset *a;

	/* First call: headers only.  Anything but GET and HEAD is refused
	 * at once, before any body is read. */
	if (!*state) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "only GET and HEAD are served\n");
		*state = (void *)"";
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0;	/* a GET with a body: dropped, refused below */
		*state = (void *)"body";
		return MHD_YES;
	}
	if (**(const char **)state)
		return text(conn, MHD_HTTP_BAD_REQUEST, "kiln serve takes no request bodies\n");
	if (!strncmp(url, "/api/", 5)) {
		struct kiln_web_req req = { url, conn_arg, conn, NULL, "" };
		struct kiln_buf out = KILN_BUF_INIT;
		struct MHD_Response *r;
		enum MHD_Result ret;
		char disp[200];
		size_t len;
		char *body;
		int status = kiln_web_api(w->m, &req, &out);

		if (status == 500) {
			kiln_buf_release(&out);
			return text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory\n");
		}
		body = kiln_buf_detach(&out, &len);
		if (!req.type)
			return answer(conn, (unsigned)status, "application/json",
				      body ? body : "", len,
				      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
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
		ret = MHD_queue_response(conn, (unsigned)status, r);
		MHD_destroy_response(r);
		return ret;
	}
	a = kiln_web_asset(url);
	if (a)
		return answer(conn, MHD_HTTP_OK, a->type, a->data, a->len,
			      MHD_RESPMEM_PERSISTENT);
	return text(conn, MHD_HTTP_NOT_FOUND,
		    "not found: kiln serve answers /, its page's files and /api/\n");
}

/* Parses addr into host (empty: every address) and port. */
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
		p = colon + 1;
	}
	if (!*p || strlen(p) >= portsz || strspn(p, "0123456789") != strlen(p) ||
	    atol(p) > 65535)
		return -EINVAL;
	snprintf(port, portsz, "%s", p);
	return 0;
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
				 ":PORT (every address) or PORT (loopback)", addr);
	rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);
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
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(w->url, sizeof(w->url), "http://[%s]:%d/",
			 IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr) ? "::1" : ip,
			 ntohs(a->sin6_port));
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(w->url, sizeof(w->url), "http://%s:%d/",
			 a->sin_addr.s_addr == htonl(INADDR_ANY) ? "127.0.0.1" : ip,
			 ntohs(a->sin_port));
	}
	return fd;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	/* MHD's own complaints (a client gone mid-answer) are not ours to
	 * print: the library never prints. */
}

int kiln_web_start(struct kiln_web_model *m, const char *addr,
		   struct kiln_web **out, struct kiln_diag *d)
{
	struct kiln_web *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int fd, err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->m = m;
	fd = listen_on(w, addr, d);
	if (fd < 0) {
		free(w);
		return fd;
	}
	/* The polling thread inherits this mask: Ctrl-C reaches the thread
	 * that waits for it, never the server's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	w->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, w,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, w,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONN_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WEB_IDLE_TIMEOUT,
		MHD_OPTION_END);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!w->mhd) {
		close(fd);
		free(w);
		err = err ? -err : -EIO;
		kiln_diag(d, "cannot start the HTTP server on '%s': %s", addr,
			  strerror(-err));
		return err;
	}
	*out = w;
	return 0;
}

const char *kiln_web_url(const struct kiln_web *w)
{
	return w->url;
}

void kiln_web_stop(struct kiln_web *w)
{
	if (!w)
		return;
	MHD_stop_daemon(w->mhd);	/* closes the listening socket */
	free(w);
}
