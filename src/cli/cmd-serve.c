/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln serve`: a local web UI over profiles read once (cli stage).  The
 * address is taken first (a bad one refused before any input is read),
 * the server answers and its URL is printed, then the files are read one
 * by one, each said as it loads (a bad one is refused with kiln top's
 * message and exit status 2), and the server runs until Ctrl-C or
 * SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "format/format.h"
#include "util/buf.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "web/web.h"

static const struct option opts[] = {
	{ "http", required_argument, NULL, 'H' },
	{ "diff", required_argument, NULL, 'D' },
	{ "diff-by", required_argument, NULL, 'B' },
	{ "token", required_argument, NULL, 'T' },
	{ "source-path", required_argument, NULL, 'S' },
	{ "trim-path", required_argument, NULL, 'R' },
	{ "event", required_argument, NULL, 'E' },
	{ "cache-mb", required_argument, NULL, 'C' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * Reads every input into the model, which is already served, saying each
 * as it loads; refuses a bad one as kiln top does (its message, exit
 * status 2).  A stop signal ends the reading between inputs, or a heap
 * trace's analysis at its next frame (exit 0).
 * Exit status.
 */
static int load_inputs(struct kiln_web_model *m, char **files, int n,
		       const char *diff)
{
	struct kiln_diag d = { "" };
	double t0 = kiln_cli_now(), t;
	char what[300];
	int i, rc = KILN_EXIT_OK;

	for (i = 0; i < n + (diff != NULL) && !kiln_cli_stop_signal; i++) {
		const char *f = i < n ? files[i] : diff;
		enum kiln_fmt fmt = KILN_FMT_UNKNOWN;
		struct kiln_buf trace = KILN_BUF_INIT;
		struct kiln_prof *p = NULL;
		int err;

		t = kiln_cli_now();
		if (i < n)
			snprintf(what, sizeof(what), "reading '%s' (%d of %d)", f,
				 i + 1, n);
		else
			snprintf(what, sizeof(what), "reading the diff base '%s'", f);
		kiln_web_model_loading(m, what);
		if (!kiln_cli_quiet)
			fprintf(stderr, "kiln serve: %s...\n", what);
		/* A URL is fetched and named by itself in the page. */
		rc = kiln_cli_read_keep(f, &p, &fmt, i < n ? &trace : NULL);
		if (rc) {
			kiln_buf_release(&trace);
			break;
		}
		if (i == n) {
			err = kiln_web_model_set_base(m, p, f, kiln_fmt_name(fmt));
		} else {
			/* A heap trace comes unread (p NULL): the model
			 * reads it once, for everything it needs. */
			if (trace.len) {
				snprintf(what, sizeof(what), "analysing the heap "
					 "trace '%s'", f);
				kiln_web_model_loading(m, what);
			}
			err = kiln_web_model_set_input(m, (size_t)i, p,
						       kiln_fmt_name(fmt),
						       &trace, &d);
		}
		kiln_buf_release(&trace);
		if (err == -ECANCELED && kiln_cli_stop_signal)
			break;
		if (err) {
			if (err == -EINVAL)
				kiln_cli_error("'%s': %s", f, d.msg);
			else
				kiln_cli_error("'%s': out of memory", f);
			rc = err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
			break;
		}
		if (!kiln_cli_quiet)
			fprintf(stderr, "kiln serve: read '%s' in %.2f s\n", f,
				kiln_cli_now() - t);
	}
	if (kiln_cli_stop_signal)
		return KILN_EXIT_OK;
	if (!rc && !kiln_cli_quiet)
		fprintf(stderr, "kiln serve: read %d profile%s in %.2f s\n", n,
			n == 1 ? "" : "s", kiln_cli_now() - t0);
	return rc;
}

/* Beyond loopback: every address it answers on, and a warning. */
static void say_addresses(const struct kiln_web *w, const char *addr)
{
	struct kiln_buf urls = KILN_BUF_INIT;

	if (!kiln_web_urls(w, &urls) && urls.len) {
		kiln_buf_addc(&urls, '\0');
		fprintf(stderr, "kiln serve: listening on:\n");
		for (char *l = strtok(urls.data, "\n"); l; l = strtok(NULL, "\n"))
			fprintf(stderr, "  %s\n", l);
	}
	kiln_buf_release(&urls);
	fprintf(stderr, "kiln serve: warning: '%s' is not loopback: whoever can "
		"reach this machine and has the URL's token sees the profiles "
		"(plain HTTP: the token crosses the network unencrypted)\n", addr);
}

int kiln_cmd_serve(int argc, char **argv)
{
	const char *addr = "127.0.0.1:8080", *diff = NULL, *token = NULL;
	const char *source_path = NULL, *trim_path = NULL;
	bool by_function = false;
	long cache_mb = -1;
	char *end;
	struct kiln_web_model *m = NULL;
	struct kiln_web *w = NULL;
	struct kiln_diag d = { "" };
	struct sigaction sa = { 0 };
	sigset_t block, old, wait;
	int c, n, rc, err;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'H': addr = optarg; break;
		case 'D': diff = optarg; break;
		case 'B':
			if (!strcmp(optarg, "function"))
				by_function = true;
			else if (strcmp(optarg, "path"))
				return kiln_cli_usage_error("serve",
					"bad --diff-by '%s': want path or function",
					optarg);
			break;
		case 'T': token = optarg; break;
		case 'S': source_path = optarg; break;
		case 'R': trim_path = optarg; break;
		case 'E': kiln_perfdata_set_event(optarg); break;
		case 'C':
			errno = 0;
			cache_mb = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || cache_mb < 0 ||
			    cache_mb > 1L << 30)
				return kiln_cli_usage_error("serve",
					"bad --cache-mb '%s': want a whole number of MiB",
					optarg);
			break;
		case 'q': kiln_cli_quiet = true; break;
		case 'h': kiln_cli_usage("serve", false); return 0;
		default: return kiln_cli_usage_error("serve", "unknown option");
		}
	}
	if (optind >= argc)
		return kiln_cli_usage_error("serve", "no input file");
	n = argc - optind;
	/* The address first: a bad one (or one in use) is said before the
	 * inputs are read, which may take long. */
	err = kiln_web_listen(addr, token, &w, &d);
	if (err) {
		kiln_cli_error("%s", d.msg);
		return err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
	}
	m = kiln_web_model_new_pending((const char *const *)argv + optind,
				       (size_t)n);
	if (!m || kiln_web_model_set_source(m, source_path, trim_path)) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	kiln_web_enable_callgraph();
	kiln_web_model_diff_by_function(m, by_function);
	if (cache_mb >= 0)
		kiln_web_model_set_cache(m, (size_t)cache_mb << 20);
	kiln_web_enable_disasm();
	kiln_web_model_stop_on(m, &kiln_cli_stop_signal);
	/* A stop signal sets a flag: the reading stops between inputs (and a
	 * heap trace's analysis at its next frame), the wait below ends. */
	sa.sa_handler = kiln_cli_on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* Served before the inputs are read (which may take a minute): the
	 * page shows the reading, requests for data wait for it. */
	err = kiln_web_serve(w, m, &d);
	if (err) {
		kiln_cli_error("%s", d.msg);
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	/* Said before the URL: whoever waits for the URL has it all. */
	if (!kiln_web_loopback(w))
		say_addresses(w, addr);
	printf("kiln serve: %s\n", kiln_web_url(w));
	fflush(stdout);
	rc = load_inputs(m, argv + optind, n, diff);
	if (!rc && !kiln_cli_stop_signal) {
		if (!kiln_cli_quiet)
			fprintf(stderr, "kiln serve: aggregating...\n");
		if (kiln_web_model_warm(m)) {
			kiln_cli_error("out of memory");
			rc = KILN_EXIT_FAIL;
		}
	}
	kiln_web_model_ready(m, kiln_cli_stop_signal ? "kiln serve is stopping" :
			     rc ? "kiln serve could not read its inputs (its "
			     "terminal says why)" : NULL);
	if (rc)
		goto out_free;
	/* Block the stop signals, then wait for one: one that came before
	 * stays pending for sigsuspend() and never slips between. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (!kiln_cli_quiet && !kiln_cli_stop_signal)
		fprintf(stderr, "kiln serve: serving; Ctrl-C stops\n");
	wait = old;
	sigdelset(&wait, SIGINT);
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGHUP);
	while (!kiln_cli_stop_signal)
		sigsuspend(&wait);
	if (!kiln_cli_quiet)
		fprintf(stderr, "kiln serve: stopped by signal %d\n", (int)kiln_cli_stop_signal);
	sigprocmask(SIG_SETMASK, &old, NULL);
out_free:
	if (m)
		kiln_web_model_cancel(m);	/* no range analysis holds up the stop */
	kiln_web_stop(w);
	kiln_web_model_free(m);
	return rc;
}
