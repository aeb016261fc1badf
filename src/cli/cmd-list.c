/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln list`: the events this machine can count, grouped as `perf list`
 * groups them (software, hardware, hardware cache, kernel PMU,
 * tracepoints), each probed with perf_event_open so that nothing listed
 * reads <not supported> later; --all also shows the others, marked
 * (cli stage).
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/events.h"
#include "cli/cli.h"

static const struct option opts[] = {
	{ "all", no_argument, NULL, 'A' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct list_ctx {
	const char *filter;
	int kind;		/* -1: any */
	bool all;
	unsigned shown, hidden;
	int tp_probe;		/* 1: not probed yet; else the probe's result */
	int last_kind;
};

/* Names perf list takes for a kind. */
static int kind_of(const char *f)
{
	static const struct { const char *name; int kind; } kinds[] = {
		{ "sw", KILN_EV_SOFTWARE }, { "software", KILN_EV_SOFTWARE },
		{ "hw", KILN_EV_HARDWARE }, { "hardware", KILN_EV_HARDWARE },
		{ "cache", KILN_EV_CACHE }, { "hwcache", KILN_EV_CACHE },
		{ "pmu", KILN_EV_PMU }, { "tracepoint", KILN_EV_TRACEPOINT },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(f, kinds[i].name))
			return kinds[i].kind;
	return -1;
}

static bool matches(const struct list_ctx *c, const char *name, const char *alias)
{
	if (!c->filter || c->kind >= 0)
		return true;
	if (strpbrk(c->filter, "*?["))
		return !fnmatch(c->filter, name, 0) ||
		       (alias && !fnmatch(c->filter, alias, 0));
	return strcasestr(name, c->filter) || (alias && strcasestr(alias, c->filter));
}

static int show(void *ctx, const struct kiln_event *ev, const char *alias)
{
	struct list_ctx *c = ctx;
	char name[300];
	int err;

	if (c->kind >= 0 && (int)ev->kind != c->kind)
		return 0;
	if (!matches(c, ev->name, alias))
		return 0;
	/*
	 * Each event is opened once to see whether it can be counted; the
	 * tracepoints share one probe (opening each of some 2,000 would
	 * patch the kernel's code that many times, and they stand or fall
	 * together on tracefs and perf_event_paranoid).
	 */
	if (ev->kind == KILN_EV_TRACEPOINT) {
		if (c->tp_probe == 1)
			c->tp_probe = kiln_event_probe(ev);
		err = c->tp_probe;
	} else {
		err = kiln_event_probe(ev);
	}
	if (err && !c->all) {
		c->hidden++;
		return 0;
	}
	if (c->last_kind != (int)ev->kind && c->shown)
		putchar('\n');
	c->last_kind = (int)ev->kind;
	if (alias)
		snprintf(name, sizeof(name), "%s OR %s", ev->name, alias);
	else
		snprintf(name, sizeof(name), "%s", ev->name);
	printf("  %-50s [%s]", name, kiln_event_kind_name(ev->kind));
	if (err == -EACCES || err == -EPERM)
		printf("  (not allowed here: %s)", strerror(-err));
	else if (err)
		printf("  (not supported here)");
	putchar('\n');
	c->shown++;
	return 0;
}

int kiln_cmd_list(int argc, char **argv)
{
	struct list_ctx c = { NULL, -1, false, 0, 0, 1, -1 };
	int ch;

	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case 'A': c.all = true; break;
		case 'h': kiln_cli_usage("list", false); return KILN_EXIT_OK;
		default: return kiln_cli_usage_error("list", "unknown option");
		}
	}
	if (argc - optind > 1)
		return kiln_cli_usage_error("list", "give at most one FILTER");
	if (optind < argc) {
		c.filter = argv[optind];
		c.kind = kind_of(c.filter);
	}
	printf("List of %sevents (to be used in -e of kiln stat and kiln record):\n\n",
	       c.all ? "all known " : "the countable ");
	kiln_event_foreach(show, &c);
	if (c.hidden)
		printf("\n(%u more known events cannot be counted here: "
		       "'kiln list --all%s%s' shows them, marked)\n", c.hidden,
		       c.filter ? " " : "", c.filter ? c.filter : "");
	if (!kiln_event_tracefs() && (c.kind < 0 || c.kind == KILN_EV_TRACEPOINT))
		printf("\n(tracepoints are not listed: tracefs is not mounted; as "
		       "root: mount -t tracefs nodev /sys/kernel/tracing)\n");
	if (c.filter && !c.shown && !c.hidden) {
		kiln_cli_error("no event matches '%s'", c.filter);
		return KILN_EXIT_FAIL;
	}
	return KILN_EXIT_OK;
}
