/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The perf.data replay (session stage): a perf.data is a recording session
 * played back.  format/perfdata.c parses the file and notes its records,
 * format/perfdata-decode.c turns each into the kiln_perf_event a live
 * recording would have read; here they go, in time order, through the
 * same machine/thread/map model and sample assembly as `kiln record`'s
 * (session/record.c) in offline mode.  kiln_session_register() hands
 * kiln_perfdata_read() to format/read.c, which cannot include session/.
 */
#include "session/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/format.h"
#include "format/perfdata.h"
#include "profile/profile.h"
#include "session/record.h"

_Static_assert(KILN_PD_MAX_COLUMNS == KILN_REC_MAX_COLUMNS,
	       "a file's events are the recorder's value columns");

/*
 * Replaying records while they are read (see kiln_perfdata_read()): as
 * long as they come in time order, which is the order they are replayed
 * in after the sort, each is replayed as soon as it is noted, while its
 * bytes are still in the cache; a --call-graph dwarf file of a gigabyte
 * was otherwise walked twice, every record a cache and TLB miss each time.
 * The first record out of order, or one that does not replay, ends it:
 * what was replayed is thrown away and everything is replayed again after
 * the sort, as if this had not been tried.
 */
struct stream {
	struct kiln_pd_stream base;	/* first: the reader's view */
	struct kiln_rec *r;		/* the replay so far */
	const struct kiln_rec_opts *o;	/* to start r again */
	size_t nbids;			/* build IDs before (replayed MMAP2
					 * records add theirs) */
	uint64_t *regs;			/* room for 64 registers */
};

/* Ends the replay while reading; r is empty again (NULL: no memory). */
static void stream_stop(struct pd *pd, struct stream *st)
{
	size_t i;

	st->base.on = false;
	kiln_perfdata_forget_counts(pd);
	kiln_rec_free(st->r);
	st->r = kiln_rec_new(st->o);
	for (i = st->nbids; i < pd->nbids; i++)
		free(pd->bids[i].path);
	pd->nbids = st->nbids;
}

/* Record i just noted: replayed now, or the replay while reading ends. */
static void stream_record(struct pd *pd, struct kiln_pd_stream *base,
			  size_t i)
{
	struct stream *st = (struct stream *)base;

	if (i && pd->recs[i].time < pd->recs[i - 1].time) {
		stream_stop(pd, st);
		return;
	}
	if (kiln_perfdata_decode(pd, i, st->regs, kiln_rec_event, st->r))
		stream_stop(pd, st);
}

/* Finds the kernel symbols and fills o for replaying pd's records of
 * the events c (its first one gives the profile's period). */
static void replay_setup(struct pd *pd, const struct kiln_pd_cols *c,
			 struct kiln_rec_opts *o, char *name, size_t n)
{
	const struct attr *ev = c->first[0];

	kiln_perfdata_find_symbols(pd);
	o->event = kiln_perfdata_event_name(ev, name, n);
	o->ns_values = kiln_perfdata_clock_event(ev);
	/* One event: its sample type as before ("cpu/nanoseconds",
	 * "EVENT/count"); several: each by its name. */
	if (c->n > 1) {
		o->columns = c->ptr;
		o->ncolumns = c->n;
	}
	o->period_ns = ev->freq ? (ev->period ? 1000000000ull / ev->period : 0) :
		       ev->period;
	o->callgraph = ev->sample_type & PERF_SAMPLE_STACK_USER ? KILN_CG_DWARF :
		       KILN_CG_FP;
	o->offline = true;
	o->kernel_frames = true;	/* as perf report shows them */
	o->kallsyms = pd->ksyms.len ? pd->ksyms.data : NULL;
	o->kallsyms_len = pd->ksyms.len;
}

int kiln_perfdata_read(struct kiln_prof *p, const char *data, size_t len,
		       struct kiln_diag *d)
{
	struct pd pd = { .data = data, .len = len, .d = d };
	struct kiln_rec_opts o = { 0 };
	struct kiln_rec *r = NULL;
	struct kiln_prof *got, tmp;
	struct kiln_pd_cols *c;
	char name[128];
	uint64_t regs[64];
	struct stream st = { .base.record = stream_record, .o = &o,
			      .regs = regs };
	size_t doff = 0, dend = 0, i;
	int err;

	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = kiln_perfdata_read_header(&pd, &doff, &dend);
	if (err)
		goto out;
	/*
	 * A file (not a pipe) describes its events and build IDs before its
	 * records: the replay can start with the reading.
	 */
	if (!pd.pipe && pd.nattrs) {
		err = kiln_perfdata_pick_events(&pd, c);
		if (err)
			goto out;
		replay_setup(&pd, c, &o, name, sizeof(name));
		st.r = kiln_rec_new(&o);
		if (!st.r) {
			err = -ENOMEM;
			goto out;
		}
		st.base.on = true;
		st.nbids = pd.nbids;
	}
	err = kiln_perfdata_read_records(&pd, doff, dend,
					 st.r ? &st.base : NULL);
	r = st.r;
	if (err)
		goto out;
	if (!pd.nattrs) {
		err = bad(&pd, pd.len, "no event attribute in the file");
		goto out;
	}
	if (!r) {
		/* A pipe: its attrs came among its records. */
		err = kiln_perfdata_pick_events(&pd, c);
		if (err)
			goto out;
		replay_setup(&pd, c, &o, name, sizeof(name));
		r = kiln_rec_new(&o);
	}
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	if (st.base.on)
		goto replayed;	/* in time order, while read */
	kiln_perfdata_sort(&pd);
	for (i = 0; i < pd.nrecs && !err; i++) {
		/*
		 * Out of file order and kilobytes apart: the start of a later
		 * record (its fields, registers and the top of its stack copy,
		 * where an unwind reads: on a --call-graph dwarf file of
		 * ordinary C, every read but a few per thousand within its
		 * first 768 bytes) and the end of one (its stack copy's size)
		 * are asked for while this one is replayed.  The top of the
		 * copy was 60% of the unwinder's time in cache misses.
		 */
		if (i + 6 < pd.nrecs) {
			const char *ahead = at(&pd, pd.recs[i + 4].off);
			size_t sz = u16(ahead + 6);

			/* (Its own size would be one more miss to wait for:
			 * records of one kind tend to have one size.) */
			prefetch_head(at(&pd, pd.recs[i + 6].off), sz);
			__builtin_prefetch(ahead + sz - 8);
		}
		err = kiln_perfdata_decode(&pd, i, regs, kiln_rec_event, r);
	}
	if (err)
		goto out;
replayed:
	got = kiln_rec_detach(r);
	if (!got) {
		err = -ENOMEM;
		goto out;
	}
	/* Hand the contents over to the caller's (empty) profile. */
	tmp = *p;
	*p = *got;
	*got = tmp;
	kiln_prof_free(got);
	/* Several events: the first that has samples is shown by default
	 * (a hybrid CPU's `-e cycles` is two events, cpu_atom's often with
	 * none). */
	for (i = 1; c->n > 1 && i < p->ntypes; i++)
		if (kiln_prof_total(p, i)) {
			p->default_type = p->types[i].type;
			break;
		}
	if (pd.cmdline)
		kiln_prof_add_comment(p, pd.cmdline);
	if (pd.hostname) {
		char c[300];

		snprintf(c, sizeof(c), "hostname: %s%s%s", pd.hostname,
			 pd.osrelease ? ", kernel " : "",
			 pd.osrelease ? pd.osrelease : "");
		kiln_prof_add_comment(p, c);
	}
	if (pd.lost) {
		char c[80];

		snprintf(c, sizeof(c), "perf lost %" PRIu64 " records", pd.lost);
		kiln_prof_add_comment(p, c);
	}
	err = kiln_prof_error(p);
out:
	kiln_rec_free(r);
	kiln_perfdata_release(&pd);
	free(c);
	return err;
}

void kiln_session_register(void)
{
	kiln_fmt_set_perfdata_reader(kiln_perfdata_read);
}
