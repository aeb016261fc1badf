/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a small multi-threaded "server" for the tests of the HTTP
 * endpoints (tests/e2e/t6*-http-*.sh).  Worker threads handle made-up
 * requests until the program is stopped: handle_request() spends about
 * three quarters of its time in hash_payload() and a quarter in
 * parse_header() (all noinline).  The main thread answers its own TCP
 * port on loopback: each connection gets "ok N\n", N the requests handled
 * so far, so a test sees that the host keeps working while its
 * /debug/pprof/ endpoints are hammered.
 *
 * Options:
 *   --http ADDR    call kiln_http_start(ADDR) (libkiln.so preloaded or
 *                  linked; found with dlsym) and print "http PORT", or
 *                  "http error -ERRNO" and exit 3
 *   --own-sigprof  install a SIGPROF handler of its own first
 *   --threads N    worker threads (default 2)
 *   --idle         the workers sleep instead of burning CPU
 * Prints "work PORT", "hash_payload 0xADDR" and "nanosleep 0xADDR" (for
 * the symbol endpoint),
 * then runs until SIGTERM or SIGINT, stops the HTTP server and exits 0.
 */
#include <dlfcn.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct kiln_http;

static volatile sig_atomic_t stop;
static atomic_ulong handled;
static int idle;
volatile uint64_t serve_sink;

static void on_stop(int sig)
{
	stop = 1;
}

static void on_prof(int sig)
{
}

__attribute__((noinline)) uint64_t hash_payload(uint64_t seed)
{
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 150000; i++) {
		h ^= h >> 31;
		h *= 0xbf58476d1ce4e5b9ull;
	}
	return h;
}

__attribute__((noinline)) uint64_t parse_header(uint64_t seed)
{
	uint64_t h = seed;

	for (int i = 0; i < 50000; i++) {
		h ^= h >> 29;
		h *= 0x94d049bb133111ebull;
	}
	return h;
}

__attribute__((noinline)) void handle_request(uint64_t n)
{
	serve_sink += parse_header(n) + hash_payload(n);
}

static void *worker(void *arg)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	uint64_t n = (uintptr_t)arg << 32;

	while (!stop) {
		if (idle)
			nanosleep(&nap, NULL);
		else
			handle_request(n++);
		atomic_fetch_add(&handled, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int (*http_start)(const char *, struct kiln_http **);
	int (*http_port)(const struct kiln_http *);
	int (*http_stop)(struct kiln_http *);
	struct kiln_http *srv = NULL;
	const char *addr = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int nthreads = 2, fd, one = 1, i;
	pthread_t t[64];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--http") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "--own-sigprof"))
			signal(SIGPROF, on_prof);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--idle"))
			idle = 1;
		else {
			fprintf(stderr, "httpserve: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64)
		nthreads = 2;
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	setvbuf(stdout, NULL, _IOLBF, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 64) || getsockname(fd, (struct sockaddr *)&sin, &sl)) {
		perror("httpserve: own port");
		return 1;
	}
	printf("work %d\n", ntohs(sin.sin_port));
	printf("hash_payload %p\n", (void *)hash_payload);
	printf("nanosleep %p\n", (void *)nanosleep);

	http_start = (int (*)(const char *, struct kiln_http **))dlsym(RTLD_DEFAULT, "kiln_http_start");
	http_port = (int (*)(const struct kiln_http *))dlsym(RTLD_DEFAULT, "kiln_http_port");
	http_stop = (int (*)(struct kiln_http *))dlsym(RTLD_DEFAULT, "kiln_http_stop");
	if (addr) {
		int err;

		if (!http_start || !http_port || !http_stop) {
			fprintf(stderr, "httpserve: kiln_http_start not found (preload libkiln.so)\n");
			return 1;
		}
		err = http_start(addr, &srv);
		if (err) {
			printf("http error %d\n", err);
			return 3;
		}
		printf("http %d\n", http_port(srv));
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	printf("ready\n");

	while (!stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char line[64];
		int c, n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		n = snprintf(line, sizeof(line), "ok %lu\n", atomic_load(&handled));
		if (send(c, line, (size_t)n, MSG_NOSIGNAL) < 0)
			perror("httpserve: send");
		close(c);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	if (srv && http_stop(srv))
		return 1;
	printf("stopped\n");
	return 0;
}
