/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf.data reader (format stage): perf's own file format, as written by
 * `perf record` to a file or (pipe mode, `perf record -o -`) to a stream,
 * turned into a profile by the same code that turns kiln record's live
 * perf records into one (session/record.c): per-process mappings from
 * MMAP/MMAP2, thread names from COMM, FORK/EXIT, samples with their call
 * chains, and `--call-graph dwarf` register and stack copies unwound with
 * kiln's DWARF unwinder.
 *
 * This file reads the file's header, event attributes and feature
 * sections; perfdata-records.c notes the records and their times and
 * sorts them; perfdata-decode.c finds the binaries and kernel symbols and
 * decodes the records; session/replay.c drives the whole and replays them
 * in time order.  The file is hostile input: every length, offset and
 * count is checked against the bytes there are before it is used, nothing
 * is read through a pointer that may be misaligned, and the paths it
 * names are opened only when they are regular files.
 *
 * Layout facts from linux tools/perf/Documentation/perf.data-file-format.txt
 * and include/uapi/linux/perf_event.h.  See docs/formats.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>

#include "format/format.h"
#include "format/perfdata.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "util/sort.h"
#include "util/diag.h"
#include "util/perfevent.h"

#define MAGIC 0x32454c4946524550ull	/* "PERFILE2" little-endian */
#define MAGIC_SWAPPED 0x50455246494c4532ull

#define MISC_BUILD_ID_SIZE (1 << 15)	/* build_id_event: size byte valid */
/* ---- attributes ---- */

/*
 * a->regpos: the layout kiln's unwinder reads, the registers of kiln's
 * mask in order, as places in the file's sample (a register's place: the
 * file's registers below it).
 */
static void reg_layout(struct attr *a)
{
	uint64_t want, below;
	int bit;

	a->nwant = 0;
	a->regs_as_is = true;
	a->nregs_user = (uint8_t)__builtin_popcountll(a->regs_user);
	for (want = KILN_PERF_REGS_MASK; want; want &= want - 1) {
		bit = __builtin_ctzll(want);
		below = a->regs_user & ((1ull << bit) - 1);
		a->regpos[a->nwant++] = (a->regs_user >> bit) & 1 ?
			(int8_t)__builtin_popcountll(below) : -1;
		a->regs_as_is &= a->regpos[a->nwant - 1] == a->nwant - 1;
	}
}

/*
 * Reads a perf_event_attr of size bytes at off (the attr's own size field
 * may say less: older perf).  Fields past the given size are zero.
 */
int kiln_perfdata_read_attr(struct pd *pd, size_t off, size_t size,
			    struct attr *a)
{
	char buf[256];
	uint64_t bits;
	uint32_t asize;

	if (size < PERF_ATTR_SIZE_VER0)
		return bad(pd, off, "an event attribute of %zu bytes (at least "
			   "%d expected)", size, PERF_ATTR_SIZE_VER0);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, pd->data + off, size < sizeof(buf) ? size : sizeof(buf));
	asize = u32(buf + 4);
	if (asize && asize < size && asize >= PERF_ATTR_SIZE_VER0)
		memset(buf + asize, 0, sizeof(buf) - (asize < sizeof(buf) ?
						      asize : sizeof(buf)));
	memset(a, 0, sizeof(*a));
	a->type = u32(buf);
	a->config = u64(buf + 8);
	a->period = u64(buf + 16);
	a->sample_type = u64(buf + 24);
	a->read_format = u64(buf + 32);
	bits = u64(buf + 40);
	a->freq = (bits >> 10) & 1;
	a->sample_id_all = (bits >> 18) & 1;
	a->branch_sample_type = u64(buf + 72);
	a->regs_user = u64(buf + 80);
	a->regs_intr = u64(buf + 104);
	reg_layout(a);
	return 0;
}

int kiln_perfdata_add_attr(struct pd *pd, const struct attr *a)
{
	struct attr *n;

	if (pd->nattrs >= MAX_ATTRS)
		return bad(pd, 0, "more than %d event attributes", MAX_ATTRS);
	n = realloc(pd->attrs, (pd->nattrs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	pd->attrs = n;
	pd->attrs[pd->nattrs++] = *a;
	return 0;
}

int kiln_perfdata_set_ids(struct pd *pd, struct attr *a, const char *p,
			  size_t n)
{
	size_t i;

	if (!n)
		return 0;
	a->ids = malloc(n * sizeof(*a->ids));
	if (!a->ids)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		a->ids[i] = u64(p + 8 * i);
	a->nids = n;
	return 0;
}

/* The file header's attrs section: perf_file_attr { attr; section ids },
 * file_attr_size bytes each. */
static int read_attrs(struct pd *pd, uint64_t file_attr_size, uint64_t off,
		      uint64_t size)
{
	uint64_t ent = file_attr_size, attr_size = ent - 16, i;
	int err;

	if (ent < PERF_ATTR_SIZE_VER0 + 16 || ent > 4096)
		return bad(pd, 16, "attribute size %" PRIu64 " is not plausible",
			   ent);
	if (!inside(pd, off, size))
		return bad(pd, 24, "the attribute section (offset %" PRIu64
			   ", %" PRIu64 " bytes) lies past the end of the file "
			   "(%zu bytes: cut short?)", off, size, pd->len);
	if (!size || size % ent)
		return bad(pd, 32, "the attribute section's size %" PRIu64
			   " is not a multiple of %" PRIu64, size, ent);
	for (i = 0; i < size / ent; i++) {
		size_t at = (size_t)(off + i * ent);
		struct attr a;
		uint64_t ioff = u64(pd->data + at + attr_size);
		uint64_t isz = u64(pd->data + at + attr_size + 8);

		err = kiln_perfdata_read_attr(pd, at, (size_t)attr_size, &a);
		if (err)
			return err;
		if (!inside(pd, ioff, isz) || isz % 8) {
			return bad(pd, at + (size_t)attr_size, "event %" PRIu64
				   "'s id list (offset %" PRIu64 ", %" PRIu64
				   " bytes) lies outside the file", i, ioff, isz);
		}
		err = kiln_perfdata_add_attr(pd, &a);
		if (!err)
			err = kiln_perfdata_set_ids(pd, &pd->attrs[pd->nattrs - 1],
				      pd->data + ioff, (size_t)(isz / 8));
		if (err)
			return err;
	}
	return 0;
}

/* ---- feature sections ---- */

/* A perf_header_string: u32 len, then len bytes (NUL-padded). */
static int get_string(struct pd *pd, const char **p, const char *end,
		      char **out)
{
	uint32_t n;

	if (end - *p < 4)
		return bad(pd, (size_t)(*p - pd->data), "a string is cut short");
	n = u32(*p);
	*p += 4;
	if (n > (size_t)(end - *p))
		return bad(pd, (size_t)(*p - pd->data - 4), "a string of %" PRIu32
			   " bytes runs past its section", n);
	*out = strndup(*p, n);
	if (!*out)
		return -ENOMEM;
	*p += n;
	return 0;
}

static int feat_event_desc(struct pd *pd, const char *p, const char *end)
{
	uint32_t nr, asize, i, nids, k;
	int err;

	if (end - p < 8)
		return bad(pd, (size_t)(p - pd->data), "event descriptions cut short");
	nr = u32(p);
	asize = u32(p + 4);
	p += 8;
	if (asize < PERF_ATTR_SIZE_VER0 || asize > 4096)
		return bad(pd, (size_t)(p - pd->data - 4), "event description "
			   "with an attribute of %" PRIu32 " bytes", asize);
	for (i = 0; i < nr; i++) {
		struct attr a;
		char *name = NULL;

		if ((size_t)(end - p) < asize + 4)
			return bad(pd, (size_t)(p - pd->data), "event description "
				   "%" PRIu32 " cut short", i);
		err = kiln_perfdata_read_attr(pd, (size_t)(p - pd->data), asize, &a);
		if (err)
			return err;
		p += asize;
		nids = u32(p);
		p += 4;
		err = get_string(pd, &p, end, &name);
		if (err)
			return err;
		if (nids > (size_t)(end - p) / 8) {
			free(name);
			return bad(pd, (size_t)(p - pd->data), "event description "
				   "%" PRIu32 " lists %" PRIu32 " ids past its "
				   "section", i, nids);
		}
		/* Name the attr that holds its ids (or the i-th). */
		for (k = 0; k < pd->nattrs; k++) {
			struct attr *t = &pd->attrs[k];
			bool match = k == i && (!nids || !t->nids);
			size_t j;

			for (j = 0; nids && j < t->nids; j++)
				if (t->ids[j] == u64(p))
					match = true;
			if (match && !t->name) {
				t->name = name;
				name = NULL;
				break;
			}
		}
		free(name);
		p += 8 * (size_t)nids;
	}
	return 0;
}

int kiln_perfdata_add_bid(struct pd *pd, const char *p, size_t size,
			  size_t off)
{
	/* build_id_event: header, pid, build_id[24], filename[] */
	struct bid b, *n;
	uint16_t misc;
	size_t flen;

	if (size < 8 + 4 + 24 + 1)
		return bad(pd, off, "a build ID record of %zu bytes", size);
	misc = u16(p + 4);
	memset(&b, 0, sizeof(b));
	b.pid = u32(p + 8);
	memcpy(b.id, p + 12, 20);
	b.size = misc & MISC_BUILD_ID_SIZE ? (uint8_t)p[32] : 20;
	if (b.size > 20 || !b.size)
		return bad(pd, off, "a build ID of %u bytes", b.size);
	b.kernel = (misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		   PERF_RECORD_MISC_KERNEL;
	flen = strnlen(p + 36, size - 36);
	b.path = strndup(p + 36, flen);
	if (!b.path)
		return -ENOMEM;
	n = realloc(pd->bids, (pd->nbids + 1) * sizeof(*n));
	if (!n) {
		free(b.path);
		return -ENOMEM;
	}
	pd->bids = n;
	pd->bids[pd->nbids++] = b;
	return 0;
}

static int feat_build_id(struct pd *pd, const char *p, const char *end)
{
	while (p < end) {
		uint16_t size;
		int err;

		if (end - p < 8)
			return bad(pd, (size_t)(p - pd->data), "build ID list cut "
				   "short");
		size = u16(p + 6);
		if (size < 8 || size > (size_t)(end - p))
			return bad(pd, (size_t)(p - pd->data), "a build ID record "
				   "of %u bytes runs past its section", size);
		err = kiln_perfdata_add_bid(pd, p, size, (size_t)(p - pd->data));
		if (err)
			return err;
		p += size;
	}
	return 0;
}

int kiln_perfdata_feature(struct pd *pd, int bit, const char *p,
			  const char *end)
{
	char *s = NULL, *line;
	uint32_t nr, i;
	int err = 0;

	switch (bit) {
	case FEAT_BUILD_ID:
		return feat_build_id(pd, p, end);
	case FEAT_EVENT_DESC:
		return feat_event_desc(pd, p, end);
	case FEAT_HOSTNAME:
		if (!pd->hostname)
			return get_string(pd, &p, end, &pd->hostname);
		return 0;
	case FEAT_OSRELEASE:
		if (!pd->osrelease)
			return get_string(pd, &p, end, &pd->osrelease);
		return 0;
	case FEAT_CMDLINE:
		if (pd->cmdline)
			return 0;
		if (end - p < 4)
			return bad(pd, (size_t)(p - pd->data), "command line cut "
				   "short");
		nr = u32(p);
		p += 4;
		line = strdup("");
		if (!line)
			return -ENOMEM;
		for (i = 0; i < nr && !err; i++) {
			char *t;

			err = get_string(pd, &p, end, &s);
			if (err)
				break;
			if (asprintf(&t, "%s%s%s", line, i ? " " : "", s) < 0)
				err = -ENOMEM;
			else {
				free(line);
				line = t;
			}
			free(s);
		}
		if (err)
			free(line);
		else
			pd->cmdline = line;
		return err;
	}
	return 0;
}

/* The feature sections after the data: one perf_file_section per bit. */
static int read_features(struct pd *pd, const char *bits, uint64_t at)
{
	int bit, k = 0, err;

	for (bit = 0; bit < FEAT_MAX; bit++) {
		uint64_t off, size;
		size_t sec;

		if (!((unsigned char)bits[bit / 8] & (1u << (bit % 8))))
			continue;
		sec = (size_t)(at + 16 * (uint64_t)k++);
		if (!inside(pd, sec, 16))
			return bad(pd, sec < pd->len ? sec : pd->len, "the feature "
				   "table is cut short (feature %d; file of %zu "
				   "bytes: cut short?)", bit, pd->len);
		off = u64(pd->data + sec);
		size = u64(pd->data + sec + 8);
		if (!inside(pd, off, size))
			return bad(pd, sec, "feature %d's section (offset %" PRIu64
				   ", %" PRIu64 " bytes) lies past the end of "
				   "the file", bit, off, size);
		err = kiln_perfdata_feature(pd, bit, pd->data + off, pd->data + off + size);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the whole file ---- */

int kiln_perfdata_read_header(struct pd *pd, size_t *data_off,
			      size_t *data_end)
{
	uint64_t size, attr_size, aoff, asize, doff, dsize;
	int err;

	if (pd->len < 16)
		return bad(pd, 0, "%zu bytes: a perf.data header is 16 bytes or "
			   "more (file cut short?)", pd->len);
	if (u64(pd->data) == MAGIC_SWAPPED)
		return bad(pd, 0, "a big-endian perf.data (recorded on another "
			   "architecture) is not supported");
	if (u64(pd->data) != MAGIC)
		return bad(pd, 0, "not a perf.data file (no \"PERFILE2\" magic; "
			   "the older \"PERFFILE\" format is not supported)");
	size = u64(pd->data + 8);
	if (size == 16) {
		/* Pipe mode: records from here on, attrs among them. */
		pd->pipe = true;
		*data_off = 16;
		*data_end = pd->len;
		return 0;
	}
	if (size != 104 || pd->len < 104)
		return bad(pd, 8, "header size %" PRIu64 " (104 for a file, 16 "
			   "for a pipe%s)", size, pd->len < 104 ?
			   "; file cut short?" : "");
	attr_size = u64(pd->data + 16);
	aoff = u64(pd->data + 24);
	asize = u64(pd->data + 32);
	doff = u64(pd->data + 40);
	dsize = u64(pd->data + 48);
	err = read_attrs(pd, attr_size, aoff, asize);
	if (err)
		return err;
	if (!inside(pd, doff, dsize))
		return bad(pd, 40, "the data section (offset %" PRIu64 ", %"
			   PRIu64 " bytes) lies past the end of the file (%zu "
			   "bytes: cut short, or perf record still running?)",
			   doff, dsize, pd->len);
	*data_off = (size_t)doff;
	*data_end = (size_t)(doff + dsize);
	return read_features(pd, pd->data + 72, doff + dsize);
}

void kiln_perfdata_release(struct pd *pd)
{
	size_t i;

	for (i = 0; i < pd->nattrs; i++) {
		free(pd->attrs[i].ids);
		free(pd->attrs[i].last);
		free(pd->attrs[i].name);
	}
	free(pd->attrs);
	for (i = 0; i < pd->nbids; i++)
		free(pd->bids[i].path);
	free(pd->bids);
	free(pd->hostname);
	free(pd->osrelease);
	free(pd->cmdline);
	free(pd->recs);
	free(pd->bid_dir);
	kiln_perfdata_inflate_release(pd);
	kiln_buf_release(&pd->scratch);
	kiln_buf_release(&pd->path);
	if (pd->ksyms.data)
		kiln_map_release(&pd->ksyms);
}

static char *buildid_dir(void)
{
	const char *e = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char *s;

	if (e && e[0])
		return strdup(e);
	if (!home || !home[0])
		return NULL;
	return asprintf(&s, "%s/.debug", home) < 0 ? NULL : s;
}

bool kiln_perfdata_detect(const char *data, size_t len)
{
	return len >= 8 && (u64(data) == MAGIC || u64(data) == MAGIC_SWAPPED);
}

static const char *want_event;	/* kiln_perfdata_set_event() */

void kiln_perfdata_set_event(const char *name)
{
	want_event = name && *name ? name : NULL;
}

bool kiln_perfdata_clock_event(const struct attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_CPU_CLOCK ||
		a->config == PERF_COUNT_SW_TASK_CLOCK);
}

int kiln_perfdata_pick_events(struct pd *pd, struct kiln_pd_cols *c)
{
	char name[128], known[512];
	size_t i, kl = 0;
	uint32_t k, want = UINT32_MAX;

	c->n = 0;
	for (i = 0; i < pd->nattrs; i++) {
		struct attr *a = &pd->attrs[i];
		const char *nm;

		a->col = -1;
		if (is_dummy(a))
			continue;
		nm = kiln_perfdata_event_name(a, name, sizeof(name));
		for (k = 0; k < c->n; k++)
			if (!strncmp(c->type[k], nm, strlen(nm)) &&
			    c->type[k][strlen(nm)] == '/')
				break;
		if (k == c->n) {
			if (c->n == KILN_PD_MAX_COLUMNS)
				return bad(pd, 0, "more than %d events sampled: "
					   "pick one with --event",
					   KILN_PD_MAX_COLUMNS);
			snprintf(c->type[k], sizeof(c->type[k]), "%s/%s", nm,
				 kiln_perfdata_clock_event(a) ? "nanoseconds" : "count");
			c->first[k] = a;
			c->ptr[k] = c->type[k];
			c->n++;
		}
		a->col = (int)k;
		/* --event NAME: the name kiln gives it or the file's own
		 * ("cycles:u"). */
		if (want_event && want == UINT32_MAX &&
		    (!strcmp(nm, want_event) ||
		     (a->name && !strcmp(a->name, want_event))))
			want = k;
	}
	if (!c->n && pd->nattrs) {
		/* Only dummies: a profile of none of their samples. */
		snprintf(c->type[0], sizeof(c->type[0]), "%s/count",
			 kiln_perfdata_event_name(&pd->attrs[0], name,
						  sizeof(name)));
		c->first[0] = &pd->attrs[0];
		c->ptr[0] = c->type[0];
		c->n = 1;
	}
	if (!want_event)
		return 0;
	if (want == UINT32_MAX) {
		known[0] = '\0';
		for (k = 0; k < c->n && kl < sizeof(known) - 1; k++) {
			int w = snprintf(known + kl, sizeof(known) - kl, "%s%.*s",
					 k ? ", " : "",
					 (int)strcspn(c->type[k], "/"), c->type[k]);

			if (w < 0)
				break;
			kl += (size_t)w;
		}
		return kiln_diag(pd->d, "no event '%s' in the file (it samples %s)",
				 want_event, c->n ? known : "none");
	}
	for (i = 0; i < pd->nattrs; i++)
		pd->attrs[i].col = pd->attrs[i].col == (int)want ? 0 : -1;
	c->first[0] = c->first[want];
	memmove(c->type[0], c->type[want], sizeof(c->type[0]));
	c->n = 1;
	return 0;
}

void kiln_perfdata_find_symbols(struct pd *pd)
{
	pd->bid_dir = buildid_dir();
	if (!kiln_sym_no_local())
		kiln_perfdata_load_kallsyms(pd);
}
