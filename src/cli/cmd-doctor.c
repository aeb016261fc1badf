/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln doctor [-p PID | -- CMD | BINARY]`: what decides whether profiles
 * will be good here, and the fix for each (cli stage: options and
 * printing; the checks are src/doctor/).  Exit status 0 when no check
 * found a problem, 1 when one did, 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "doctor/doctor.h"
#include "session/targets.h"
#include "util/buf.h"

static const struct option opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void json_str(struct kiln_buf *b, const char *s)
{
	if (!s) {
		kiln_buf_adds(b, "null");
		return;
	}
	kiln_buf_add_json(b, s, strlen(s));	/* quoted */
}

static void print_json(const struct kiln_doctor *d)
{
	struct kiln_buf b = KILN_BUF_INIT;
	size_t i;

	kiln_buf_addf(&b, "{\"problems\": %zu, \"warnings\": %zu, \"rows\": [",
		      kiln_doctor_count(d, KILN_DOC_PROBLEM),
		      kiln_doctor_count(d, KILN_DOC_WARN));
	for (i = 0; i < d->nrows; i++) {
		const struct kiln_doc_row *r = &d->rows[i];

		kiln_buf_adds(&b, i ? ",\n  {\"check\": " : "\n  {\"check\": ");
		json_str(&b, r->check);
		kiln_buf_adds(&b, ", \"applies_to\": ");
		json_str(&b, kiln_doctor_scope_name(r->scope));
		kiln_buf_adds(&b, ", \"subject\": ");
		json_str(&b, r->subject);
		kiln_buf_adds(&b, ", \"status\": ");
		json_str(&b, kiln_doctor_status_name(r->status));
		kiln_buf_adds(&b, ", \"finding\": ");
		json_str(&b, r->finding);
		kiln_buf_adds(&b, ", \"fix\": ");
		json_str(&b, r->fix);
		kiln_buf_addc(&b, '}');
	}
	kiln_buf_adds(&b, "\n]}\n");
	if (b.data)
		fputs(b.data, stdout);
	kiln_buf_release(&b);
}

/* Rows grouped by subject, in the order subjects first appear. */
static void print_table(const struct kiln_doctor *d)
{
	bool *done = calloc(d->nrows ? d->nrows : 1, sizeof(bool));
	size_t i, j;

	if (!done)
		return;
	printf("%-8s %-20s %s\n", "STATUS", "CHECK", "FINDING (and fix)");
	for (i = 0; i < d->nrows; i++) {
		if (done[i])
			continue;
		printf("\n%s %s\n", kiln_doctor_scope_name(d->rows[i].scope),
		       d->rows[i].subject);
		for (j = i; j < d->nrows; j++) {
			const struct kiln_doc_row *r = &d->rows[j];

			if (done[j] || strcmp(r->subject, d->rows[i].subject))
				continue;
			done[j] = true;
			printf("%-8s %-20s %s\n", kiln_doctor_status_name(r->status),
			       r->check, r->finding);
			if (r->fix && r->status != KILN_DOC_OK)
				printf("%-8s %-20s fix: %s\n", "", "", r->fix);
		}
	}
	free(done);
	printf("\n%zu problem%s, %zu warning%s\n",
	       kiln_doctor_count(d, KILN_DOC_PROBLEM),
	       kiln_doctor_count(d, KILN_DOC_PROBLEM) == 1 ? "" : "s",
	       kiln_doctor_count(d, KILN_DOC_WARN),
	       kiln_doctor_count(d, KILN_DOC_WARN) == 1 ? "" : "s");
}

int kiln_cmd_doctor(int argc, char **argv)
{
	struct kiln_doctor_opts o = { 0 };
	struct kiln_doctor d = KILN_DOCTOR_INIT;
	struct sigaction sa;
	bool json = false;
	pid_t *pids = NULL;
	int ch, npids = 0, err, ret;

	while ((ch = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			free(pids);
			pids = NULL;
			if (kiln_targets_parse_pids(optarg, &pids, &npids) || npids != 1) {
				free(pids);
				return kiln_cli_usage_error("doctor", "bad -p '%s': want "
							    "one process ID", optarg);
			}
			o.pid = pids[0];
			free(pids);
			break;
		case 'j': json = true; break;
		case 'h': kiln_cli_usage("doctor", false); return KILN_EXIT_OK;
		default: return kiln_cli_usage_error("doctor", "unknown option");
		}
	}
	if (optind < argc && !strcmp(argv[optind - 1], "--")) {
		o.cmd = argv + optind;
	} else if (optind < argc) {
		if (optind + 1 < argc)
			return kiln_cli_usage_error("doctor", "give one BINARY (a "
						    "command goes after --)");
		o.binary = argv[optind];
	}
	if (!!o.pid + !!o.cmd + !!o.binary > 1)
		return kiln_cli_usage_error("doctor", "give one of -p PID, -- CMD "
					    "and BINARY");
	if (o.cmd) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = kiln_cli_on_stop;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		o.stop = &kiln_cli_stop_signal;
	}
	err = kiln_doctor_run(&d, &o);
	if (err == -ESRCH) {
		kiln_cli_error("no process %d", (int)o.pid);
		ret = KILN_EXIT_USAGE;
	} else if (err == -ENOEXEC) {
		kiln_cli_error("'%s' is not an ELF file", o.binary ? o.binary : o.cmd[0]);
		ret = KILN_EXIT_USAGE;
	} else if (err == -ENOENT && o.cmd) {
		kiln_cli_error("cannot run '%s': command not found", o.cmd[0]);
		ret = KILN_EXIT_USAGE;
	} else if (err) {
		kiln_cli_error("cannot examine '%s': %s", o.binary ? o.binary :
			       o.cmd ? o.cmd[0] : "this machine", strerror(-err));
		ret = err == -ENOMEM ? KILN_EXIT_FAIL : KILN_EXIT_USAGE;
	} else {
		if (json)
			print_json(&d);
		else
			print_table(&d);
		ret = kiln_doctor_count(&d, KILN_DOC_PROBLEM) ? KILN_EXIT_FAIL :
		      KILN_EXIT_OK;
	}
	kiln_doctor_release(&d);
	return ret;
}
