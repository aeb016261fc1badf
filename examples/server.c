/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Example: embedding kiln in a server.  Serves /debug/pprof/ on
 * 127.0.0.1:PORT (default 6060) for `go tool pprof`, and writes a CPU
 * profile of its first SECONDS (default 2) of work to example.cpu.pb.gz
 * through the API.
 *
 *   cc -O2 -g examples/server.c $(pkg-config --cflags --libs kiln) -lpthread
 *   ./a.out 6060 2 &
 *   go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/kiln.h>

static volatile sig_atomic_t stop;
volatile unsigned long example_sink;

__attribute__((noinline)) static void handle_request(unsigned n)
{
	unsigned long h = n;

	for (int i = 0; i < 200000; i++)
		h = h * 1099511628211ul ^ (unsigned long)i;
	example_sink += h;
}

static void *worker(void *arg)
{
	unsigned n = 0;

	while (!stop)
		handle_request(n++);
	return NULL;
}

static void on_stop(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *port = argc > 1 ? argv[1] : "6060";
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	struct kiln_cpu_opts opts = { .hz = 199 };
	struct kiln_http *srv;
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	char addr[64];
	pthread_t t[2];
	int err;

	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	snprintf(addr, sizeof(addr), "127.0.0.1:%s", port);
	err = kiln_http_start(addr, &srv);
	if (err) {
		fprintf(stderr, "example: cannot serve on %s: %s\n", addr, strerror(-err));
		return 1;
	}
	printf("example: serving /debug/pprof/ on port %d\n", kiln_http_port(srv));
	fflush(stdout);
	err = kiln_cpu_start(&opts);
	if (err)
		fprintf(stderr, "example: kiln_cpu_start: %s\n", strerror(-err));
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	nanosleep(&ts, NULL);
	err = kiln_cpu_stop_write("example.cpu.pb.gz");
	printf("example: wrote example.cpu.pb.gz: %s\n", err ? strerror(-err) : "ok");
	fflush(stdout);
	while (!stop)
		nanosleep(&ts, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	kiln_http_stop(srv);
	return 0;
}
