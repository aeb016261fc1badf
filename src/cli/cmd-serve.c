/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln serve`: a local web UI over profiles read once (cli stage).  The
 * address is taken first (a bad one refused before any input is read),
 * the files are read and checked before anything is served (a bad one is
 * refused with kiln top's message), then the server runs until Ctrl-C or
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
	{ "token", required_argument, NULL, 'T' },
	{ "source-path", required_argument, NULL, 'S' },
	{ "trim-path", required_argument, NULL, 'R' },
	{ "event", required_argument, NULL, 'E' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Reads every input, refusing bad ones as kiln top does; with traces,
 * the bytes of each heap trace are kept there too.  Exit status. */
static int read_inputs(char **files, int n, struct kiln_prof **profs,
		       const char **formats, struct kiln_buf *traces)
{
	size_t samples = 0;
	double t0 = kiln_cli_now();
	int i, rc;

	for (i = 0; i < n; i++) {
		enum kiln_fmt fmt = KILN_FMT_UNKNOWN;

		if (!kiln_cli_quiet)
			fprintf(stderr, "kiln serve: reading '%s' (%d of %d)...\n",
				files[i], i + 1, n);
		/* A URL is fetched and named by itself in the page. */
		rc = kiln_cli_read_keep(files[i], &profs[i], &fmt,
					traces ? &traces[i] : NULL);
		if (rc)
			return rc;
		formats[i] = kiln_fmt_name(fmt);
		samples += profs[i]->nsamples;
	}
	if (!kiln_cli_quiet)
		fprintf(stderr, "kiln serve: read %d profile%s (%zu distinct "
			"stacks) in %.2f s\n", n, n == 1 ? "" : "s", samples,
			kiln_cli_now() - t0);
	return KILN_EXIT_OK;
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
	struct kiln_prof *base = NULL;
	const char *base_fmt = NULL;
	struct kiln_prof **profs;
	struct kiln_buf *traces = NULL;
	const char **formats;
	struct kiln_web_model *m = NULL;
	struct kiln_web *w = NULL;
	struct kiln_diag d = { "" };
	struct sigaction sa = { 0 };
	sigset_t block, old, wait;
	int c, i, n, rc, err;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'H': addr = optarg; break;
		case 'D': diff = optarg; break;
		case 'T': token = optarg; break;
		case 'S': source_path = optarg; break;
		case 'R': trim_path = optarg; break;
		case 'E': kiln_perfdata_set_event(optarg); break;
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
	profs = calloc((size_t)n, sizeof(*profs));
	formats = calloc((size_t)n, sizeof(*formats));
	traces = calloc((size_t)n, sizeof(*traces));
	if (!profs || !formats || !traces) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	rc = read_inputs(argv + optind, n, profs, formats, traces);
	if (!rc && diff)
		rc = read_inputs((char **)&diff, 1, &base, &base_fmt, NULL);
	if (rc)
		goto out_free;
	kiln_web_enable_callgraph();
	m = kiln_web_model_new(profs, (const char *const *)argv + optind,
			       formats, (size_t)n);
	if (!m) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	if (kiln_web_model_set_source(m, source_path, trim_path)) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	/* Heap traces are analysed again for a time range. */
	for (i = 0; i < n; i++)
		if (traces[i].len)
			kiln_web_model_set_trace(m, (size_t)i, &traces[i]);
	err = base ? kiln_web_model_set_base(m, base, diff, base_fmt) : 0;
	base = NULL;	/* the model's now */
	if (err) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	if (!kiln_cli_quiet)
		fprintf(stderr, "kiln serve: aggregating...\n");
	if (kiln_web_model_warm(m)) {
		kiln_cli_error("out of memory");
		rc = KILN_EXIT_FAIL;
		goto out_free;
	}
	/* Block the stop signals before the server's thread starts, so that
	 * they stay pending for sigsuspend() below and never interrupt it. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	sa.sa_handler = kiln_cli_on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	err = kiln_web_serve(w, m, &d);
	if (err) {
		kiln_cli_error("%s", d.msg);
		rc = KILN_EXIT_FAIL;
		goto out_mask;
	}
	/* Said before the URL: whoever waits for the URL has it all. */
	if (!kiln_web_loopback(w))
		say_addresses(w, addr);
	printf("kiln serve: %s\n", kiln_web_url(w));
	fflush(stdout);
	if (!kiln_cli_quiet)
		fprintf(stderr, "kiln serve: serving; Ctrl-C stops\n");
	wait = old;
	sigdelset(&wait, SIGINT);
	sigdelset(&wait, SIGTERM);
	sigdelset(&wait, SIGHUP);
	while (!kiln_cli_stop_signal)
		sigsuspend(&wait);
	if (!kiln_cli_quiet)
		fprintf(stderr, "kiln serve: stopped by signal %d\n", (int)kiln_cli_stop_signal);
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
out_free:
	kiln_web_stop(w);
	kiln_web_model_free(m);
	if (profs && !m)
		for (i = 0; i < n; i++)
			kiln_prof_free(profs[i]);
	kiln_prof_free(base);
	for (i = 0; traces && i < n; i++)
		kiln_buf_release(&traces[i]);
	free(traces);
	free(profs);
	free(formats);
	return rc;
}
