/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kiln stat`'s printing (session stage): derived metrics and the lines
 * perf stat prints, in its three forms.  See stat-run.h.
 */
#include "session/stat-run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kiln_stat_spread_add(struct kiln_stat_spread *s, double v)
{
	double d = v - s->mean;

	s->n++;
	s->mean += d / s->n;
	s->m2 += d * (v - s->mean);
}

/* perf's "+-": the standard deviation of the mean, relative to it, in %. */
double kiln_stat_spread_pct(const struct kiln_stat_spread *s)
{
	double sd;

	if (s->n < 2 || s->mean == 0)
		return 0;
	sd = sqrt(s->m2 / (s->n - 1) / s->n);
	return 100 * sd / fabs(s->mean);
}

/* ---- derived metrics (perf's stat-shadow.c) ---- */

static int find_event(const struct kiln_stat_opts *o, const struct kiln_stat_vals *v, uint32_t type,
		      uint64_t config)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->evs[i].type == type && o->evs[i].config == config &&
		    v[i].counted)
			return (int)i;
	return -1;
}

static int find_clock(const struct kiln_stat_opts *o, const struct kiln_stat_vals *v)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->evs[i].time_ns && v[i].counted)
			return (int)i;
	return -1;
}

/* "of all L1-dcache accesses" for a cache miss event and its loads. */
static const char *cache_ratio_unit(uint64_t cache)
{
	switch (cache) {
	case 0: return "of all L1-dcache accesses";
	case 1: return "of all L1-icache accesses";
	case 2: return "of all LL-cache accesses";
	case 3: return "of all dTLB cache accesses";
	case 4: return "of all iTLB cache accesses";
	case 5: return "of all branch accesses";
	default: return "of all node accesses";
	}
}

/* Fills the metric of event i; false when it has none. */
static bool metric(const struct kiln_stat_line *c, const struct kiln_stat_vals *v, size_t i,
		   double *mv, char *unit, size_t usize)
{
	const struct kiln_stat_opts *o = c->o;
	const struct kiln_event *ev = &o->evs[i];
	int clk = find_clock(o, v), j;
	double secs;

	if (!v[i].counted)
		return false;
	if (ev->time_ns) {
		if (c->elapsed_ns <= 0)
			return false;
		*mv = v[i].v / c->elapsed_ns;
		snprintf(unit, usize, "CPUs utilized");
		return true;
	}
	if (ev->type == 0 /* PERF_TYPE_HARDWARE */) {
		switch (ev->config) {
		case 0:		/* cycles */
			if (clk < 0 || v[clk].v <= 0)
				break;
			*mv = v[i].v / v[clk].v;
			snprintf(unit, usize, "GHz");
			return true;
		case 1:		/* instructions */
			j = find_event(o, v, 0, 0);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = v[i].v / v[j].v;
			snprintf(unit, usize, "insn per cycle");
			return true;
		case 3:		/* cache-misses */
			j = find_event(o, v, 0, 2);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "of all cache refs");
			return true;
		case 5:		/* branch-misses */
			j = find_event(o, v, 0, 4);
			if (j < 0 || v[j].v <= 0)
				break;
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "of all branches");
			return true;
		}
	}
	if (ev->type == 3 /* PERF_TYPE_HW_CACHE */ && (ev->config >> 16) == 1) {
		/* X-OP-misses against X-OP-accesses. */
		j = find_event(o, v, 3, ev->config & 0xffff);
		if (j >= 0 && v[j].v > 0) {
			*mv = 100 * v[i].v / v[j].v;
			snprintf(unit, usize, "%s", cache_ratio_unit(ev->config & 0xff));
			return true;
		}
	}
	/* A rate, per second of the clock counted (or of the time elapsed). */
	secs = clk >= 0 ? v[clk].v / 1e9 : c->elapsed_ns / 1e9;
	if (secs <= 0)
		return false;
	*mv = v[i].v / secs;
	if (*mv >= 1e9) {
		*mv /= 1e9;
		snprintf(unit, usize, "G/sec");
	} else if (*mv >= 1e6) {
		*mv /= 1e6;
		snprintf(unit, usize, "M/sec");
	} else if (*mv >= 1e3) {
		*mv /= 1e3;
		snprintf(unit, usize, "K/sec");
	} else {
		snprintf(unit, usize, "/sec");
	}
	return true;
}

/* ---- printing ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static const char *event_name(const struct kiln_stat_opts *o, struct kiln_stat *s,
			      size_t i, char *buf, size_t size)
{
	if (s && kiln_stat_user_only(s, i) && !strchr(o->evs[i].name, ':') &&
	    !strchr(o->evs[i].name, '/'))
		snprintf(buf, size, "%s:u", o->evs[i].name);
	else
		snprintf(buf, size, "%s", o->evs[i].name);
	return buf;
}

static void print_line(const struct kiln_stat_line *c, struct kiln_stat *s,
		       const struct kiln_stat_vals *v, size_t i)
{
	const struct kiln_stat_opts *o = c->o;
	FILE *f = o->out;
	const struct kiln_event *ev = &o->evs[i];
	char unit[64], name[160], num[64];
	double mv = 0, shown;
	bool has_metric = metric(c, v, i, &mv, unit, sizeof(unit));
	const char *bad = NULL;

	event_name(o, s, i, name, sizeof(name));
	if (v[i].state == KILN_STAT_UNSUPPORTED)
		bad = "<not supported>";
	else if (!v[i].counted)
		bad = "<not counted>";
	shown = ev->time_ns ? v[i].v / 1e6 : v[i].v * ev->scale;
	if (o->json) {
		fputc('{', f);
		if (c->interval_ts >= 0)
			fprintf(f, "\"interval\" : %.9f, ", c->interval_ts);
		if (c->thread) {
			fputs("\"thread\" : ", f);
			json_str(f, c->thread);
			fputs(", ", f);
		}
		if (bad)
			fprintf(f, "\"counter-value\" : \"%s\", ", bad);
		else
			fprintf(f, "\"counter-value\" : \"%f\", ", shown);
		fputs("\"unit\" : ", f);
		json_str(f, ev->unit);
		fputs(", \"event\" : ", f);
		json_str(f, name);
		if (c->repeat)
			fprintf(f, ", \"variance\" : %.2f", v[i].var);
		fprintf(f, ", \"event-runtime\" : %llu, \"pcnt-running\" : %.2f, "
			"\"metric-value\" : %f, \"metric-unit\" : ",
			(unsigned long long)v[i].run,
			bad ? 100.0 : 100 * v[i].running, has_metric ? mv : 0.0);
		json_str(f, has_metric ? unit : "");
		fputs("}\n", f);
		return;
	}
	if (o->sep) {
		const char *x = o->sep;

		if (c->interval_ts >= 0)
			fprintf(f, "%.9f%s", c->interval_ts, x);
		if (c->thread)
			fprintf(f, "%s%s", c->thread, x);
		if (bad)
			fprintf(f, "%s", bad);
		else if (ev->time_ns || ev->scale != 1)
			fprintf(f, "%.2f", shown);
		else
			fprintf(f, "%.0f", shown);
		fprintf(f, "%s%s%s%s", x, ev->unit, x, name);
		if (c->repeat)
			fprintf(f, "%s%.2f%%", x, v[i].var);
		fprintf(f, "%s%llu%s%.2f%s", x, (unsigned long long)v[i].run, x,
			bad ? 100.0 : 100 * v[i].running, x);
		if (has_metric)
			fprintf(f, "%.3f%s%s", mv, x, unit);
		else
			fputs(x, f);
		fputc('\n', f);
		return;
	}
	if (c->interval_ts >= 0)
		fprintf(f, "%16.9f ", c->interval_ts);
	if (c->thread)
		fprintf(f, "%24s ", c->thread);
	if (bad)
		snprintf(num, sizeof(num), "%s", bad);
	else if (ev->time_ns || ev->scale != 1)
		snprintf(num, sizeof(num), "%'.2f", shown);
	else
		snprintf(num, sizeof(num), "%'.0f", shown);
	fprintf(f, "%18s %-4s %-32s", num, ev->unit, name);
	if (has_metric) {
		if (!strncmp(unit, "of all", 6))
			fprintf(f, " # %7.2f%% %-25s", mv, unit);
		else
			fprintf(f, " # %8.3f %-25s", mv, unit);
	} else if (c->repeat || (!bad && v[i].running < 1)) {
		fprintf(f, "%38s", "");
	}
	if (c->repeat && !bad)
		fprintf(f, "  ( +- %5.2f%% )", v[i].var);
	if (!bad && v[i].running < 1)
		fprintf(f, "  (%.2f%%)", 100 * v[i].running);
	fputc('\n', f);
}

void kiln_stat_print_block(const struct kiln_stat_line *c, struct kiln_stat *s,
			const struct kiln_stat_vals *v)
{
	size_t i;

	for (i = 0; i < c->o->n; i++)
		print_line(c, s, v, i);
}

/* Turns a read value into what is printed. */
void kiln_stat_to_vals(struct kiln_stat *s, size_t i, const struct kiln_stat_value *kv,
		    struct kiln_stat_vals *out)
{
	memset(out, 0, sizeof(*out));
	out->state = kiln_stat_state(s, i);
	out->run = kv->run;
	out->counted = out->state == KILN_STAT_OK &&
		       kiln_stat_scaled(kv, &out->v, &out->running);
}

/* ---- intervals, threads, header ---- */

void kiln_stat_print_interval(const struct kiln_stat_opts *o, struct kiln_stat *s,
			   struct kiln_stat_value *prev, char **names,
			   double ts, double dt, bool *header)
{
	size_t nt = o->per_thread ? kiln_stat_ntargets(s) : 1, t, i;
	struct kiln_stat_vals *v = calloc(o->n ? o->n : 1, sizeof(*v));

	if (!v)
		return;
	if (!*header && !o->sep && !o->json) {
		fprintf(o->out, "#           time %s            counts unit events\n",
			o->per_thread ? "                  thread" : "");
		*header = true;
	}
	for (t = 0; t < nt; t++) {
		struct kiln_stat_line c = { o, ts, o->per_thread ? names[t] : NULL,
				      dt * 1e9, false };

		if (o->per_thread && kiln_stat_target_dropped(s, t))
			continue;
		for (i = 0; i < o->n; i++) {
			struct kiln_stat_value cur, d;
			struct kiln_stat_value *p = &prev[t * o->n + i];

			kiln_stat_read(s, o->per_thread ? t : SIZE_MAX, i, &cur);
			d.val = cur.val - p->val;
			d.ena = cur.ena - p->ena;
			d.run = cur.run - p->run;
			*p = cur;
			kiln_stat_to_vals(s, i, &d, &v[i]);
		}
		kiln_stat_print_block(&c, s, v);
	}
	fflush(o->out);
	free(v);
}

void kiln_stat_print_threads(const struct kiln_stat_opts *o, struct kiln_stat *s,
				char **names, double elapsed_s)
{
	size_t nt = kiln_stat_ntargets(s), t, i;
	struct kiln_stat_vals *v = calloc(o->n ? o->n : 1, sizeof(*v));

	if (!v)
		return;
	for (t = 0; t < nt; t++) {
		struct kiln_stat_line c = { o, -1, names[t], elapsed_s * 1e9, false };

		if (kiln_stat_target_dropped(s, t))
			continue;
		for (i = 0; i < o->n; i++) {
			struct kiln_stat_value kv;

			kiln_stat_read(s, t, i, &kv);
			kiln_stat_to_vals(s, i, &kv, &v[i]);
		}
		kiln_stat_print_block(&c, s, v);
	}
	free(v);
}

void kiln_stat_print_header(const struct kiln_stat_opts *o)
{
	FILE *f = o->out;
	int i;

	fprintf(f, "\n Performance counter stats for ");
	if (o->ncpus && o->all_cpus) {
		fprintf(f, "'system wide'");
	} else if (o->ncpus) {
		fprintf(f, "'CPU(s) %s'", o->cpu_arg);
	} else if (o->npids) {
		fprintf(f, "process id '%s'", o->pid_arg);
	} else {
		fputc('\'', f);
		for (i = 0; i < o->ncmd; i++)
			fprintf(f, "%s%s", i ? " " : "", o->cmd[i]);
		fputc('\'', f);
	}
	if (o->repeat > 1)
		fprintf(f, " (%ld runs)", o->repeat);
	fprintf(f, ":\n\n");
}

/* The totals after the runs: header, a line per event (or per thread),
 * the time elapsed; with -r the means and their spread. */
void kiln_stat_print_final(const struct kiln_stat_opts *o, struct kiln_stat *s,
			   char **names, struct kiln_stat_result *res,
			   const struct kiln_stat_spread *sp,
			   const struct kiln_stat_spread *el)
{
	bool repeat = o->repeat > 1;
	struct kiln_stat_line lc = { o, -1, NULL, el->mean * 1e9, repeat };
	size_t i;

	if (repeat)
		for (i = 0; i < o->n; i++) {
			res->v[i].v = sp[i].mean;
			res->v[i].var = kiln_stat_spread_pct(&sp[i]);
		}
	if (!o->sep && !o->json)
		kiln_stat_print_header(o);
	if (o->per_thread)
		kiln_stat_print_threads(o, s, names, res->elapsed_s);
	else
		kiln_stat_print_block(&lc, s, res->v);
	if (o->sep || o->json)
		return;
	if (repeat) {
		double sd = el->n > 1 ? sqrt(el->m2 / (el->n - 1) / el->n) : 0;

		fprintf(o->out, "\n %17.4f +- %.4f seconds time elapsed  ( +- %5.2f%% )\n\n",
			el->mean, sd, kiln_stat_spread_pct(el));
	} else {
		fprintf(o->out, "\n %17.9f seconds time elapsed\n\n", res->elapsed_s);
		if (res->have_status && !o->npids && !o->ncpus)
			fprintf(o->out, " %17.9f seconds user\n %17.9f seconds sys\n\n",
				(double)res->ru.ru_utime.tv_sec +
					res->ru.ru_utime.tv_usec / 1e6,
				(double)res->ru.ru_stime.tv_sec +
					res->ru.ru_stime.tv_usec / 1e6);
	}
}
