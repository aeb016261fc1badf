/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KDE heaptrack's traces, `heaptrack.NAME.PID.zst` / `.gz` (format stage),
 * read: the interpreted trace heaptrack leaves after its run, as a heap
 * profile with the sample types of kiln's own heap traces (allocated/bytes,
 * calls/count, peak/bytes, leaked/bytes, temporary/count), each figure
 * counted as heaptrack_print counts it (src/analyze/accumulatedtracedata.cpp),
 * so that the totals are heaptrack_print's.  kiln_read_profile() undoes
 * the zstd or gzip compression first.
 *
 * The text (heaptrack's src/track/ and src/interpret/; numbers in hex):
 *
 *   v 10400 3              heaptrack's version, the file format's (<= 3)
 *   X ./prog args          the command
 *   I 1000 5e2990          page size, pages
 *   s 4 main               a string (#1, 2, ...; from version 3 sized)
 *   i 55c4d652e476 1 14 15 71 [f2 fl2 l2 ...]
 *                          an instruction pointer (#1, ...): address,
 *                          module string, then function, file, line of
 *                          the frame and of the frames inlined there
 *   t 8 7                  a trace node (#1, ...): ip, parent node (0: root)
 *   a 64 a                 an allocation kind (#0, ...): size, trace node
 *   + 1  /  - 1            an allocation, a free, of an allocation kind
 *   c 1f4                  the time, milliseconds
 *   R 9a  A  S ...  #      RSS pages, attached, suppression, comment
 *
 * A trace written by the recorder alone (`heaptrack -r`) has `m` module
 * records and raw addresses instead: refused, naming heaptrack_interpret.
 *
 * heaptrack's arithmetic, kept exactly: a free subtracts its kind's size
 * whatever was allocated; a free is temporary when the previous record of
 * the two was the allocation of the same kind (kind numbers, so kind 0
 * right after a free counts too, as in heaptrack); the peak is the
 * largest running total, each stack's share the bytes it had live when
 * that total was first reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "util/buf.h"

struct str { const char *s; uint32_t len; };
struct ip { uint64_t addr; uint32_t module, frame0, nframes, loc; bool opnew; };
struct frame { uint32_t fn, file; int64_t line; };
struct node { uint32_t ip, parent; };
struct kind { uint64_t size; uint32_t node; };

/* One stack's figures (a trace node's).  peak is filled lazily: a site
 * not changed since the latest new peak still holds what it held then. */
struct site {
	int64_t calls, allocated, temporary, live, peak;
	uint64_t epoch;
};

struct ht {
	struct str *strs;	size_t nstrs, astrs;	/* [1..] */
	struct ip *ips;		size_t nips, aips;	/* [1..] */
	struct frame *frames;	size_t nframes, aframes;
	struct node *nodes;	size_t nnodes, anodes;	/* [1..] */
	struct kind *kinds;	size_t nkinds, akinds;	/* [0..] */
	struct site *sites;	size_t nsites;		/* [0..nnodes] */
	int64_t total, peak;
	uint64_t epoch;
	int64_t last_alloc;	/* heaptrack's lastAllocationPtr */
	unsigned version;
};

/* Room for index n in *a (capacity *alloc, elements of size bytes). */
static int grow(void **a, size_t *alloc, size_t n, size_t size)
{
	return kiln_array_grow_from(a, alloc, n + 1, size, 256);
}

/* A hex number at *s (blanks before it skipped); false if none. */
static bool hex(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int n = 0;

	while (p < end && *p == ' ')
		p++;
	for (; p < end; p++, n++) {
		unsigned c = (unsigned char)*p, dv;

		if (c >= '0' && c <= '9')
			dv = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			dv = (c | 0x20) - 'a' + 10;
		else
			break;
		if (n == 16)
			return false;
		x = x << 4 | dv;
	}
	if (!n || (p < end && *p != ' ' && *p != '\n' && *p != '\r'))
		return false;
	*s = p;
	*v = x;
	return true;
}

bool kiln_heaptrack_detect(const char *data, size_t len)
{
	const char *end = data + (len < 64 ? len : 64), *s = data + 2;
	uint64_t a, b;

	return len > 4 && data[0] == 'v' && data[1] == ' ' &&
	       hex(&s, end, &a) && hex(&s, end, &b) &&
	       s < end && (*s == '\n' || *s == '\r');
}

/* The site of trace node n, its figures changed next: first its peak
 * share brought up to date. */
static struct site *touch(struct ht *h, uint32_t n)
{
	struct site *s = &h->sites[n];

	if (s->epoch != h->epoch) {
		s->peak = s->live;
		s->epoch = h->epoch;
	}
	return s;
}

static int alloc_rec(struct ht *h, uint64_t k)
{
	struct kind *kd = &h->kinds[k];
	struct site *s = touch(h, kd->node);

	s->calls++;
	s->allocated += (int64_t)kd->size;
	s->live += (int64_t)kd->size;
	h->total += (int64_t)kd->size;
	h->last_alloc = (int64_t)k;
	if (h->total > h->peak) {
		/* A new peak: every site's share is what it holds now. */
		h->peak = h->total;
		h->epoch++;
	}
	return 0;
}

static void free_rec(struct ht *h, uint64_t k)
{
	struct kind *kd = &h->kinds[k];
	struct site *s = touch(h, kd->node);

	s->live -= (int64_t)kd->size;
	h->total -= (int64_t)kd->size;
	if (h->last_alloc == (int64_t)k)
		s->temporary++;
	h->last_alloc = 0;
}

/* The location of ip i: its frames as lines (the frame, then those
 * inlined there), its module as a mapping for an unnamed one. */
static uint32_t ip_loc(struct kiln_prof *p, struct ht *h, uint32_t i)
{
	struct kiln_line lines[64];
	struct ip *ip = &h->ips[i];
	uint32_t k, n = 0, map = 0;

	if (ip->loc)
		return ip->loc;
	if (ip->module && ip->module < h->nstrs + 1) {
		struct kiln_mapping m = { 0 };

		m.file = kiln_prof_intern(p, h->strs[ip->module].s,
					  h->strs[ip->module].len);
		m.has_functions = true;
		map = kiln_prof_mapping(p, &m);
	}
	for (k = 0; k < ip->nframes && n < 64; k++) {
		struct frame *f = &h->frames[ip->frame0 + k];
		uint32_t name, file = 0;

		if (!f->fn || f->fn > h->nstrs)
			continue;
		name = kiln_prof_intern(p, h->strs[f->fn].s, h->strs[f->fn].len);
		if (f->file && f->file <= h->nstrs)
			file = kiln_prof_intern(p, h->strs[f->file].s,
						h->strs[f->file].len);
		lines[n].function = kiln_prof_function(p, name, name, file, 0);
		lines[n++].line = f->line;
	}
	ip->loc = kiln_prof_location(p, map, ip->addr, lines, n);
	return ip->loc;
}

/* Whether string i is the name of operator new (heaptrack's list). */
static bool is_opnew(const struct ht *h, uint32_t i)
{
	static const char *const names[] = {
		"operator new(unsigned long)", "operator new[](unsigned long)",
		"operator new(unsigned int)", "operator new[](unsigned int)",
	};
	size_t k;

	if (!i || i > h->nstrs)
		return false;
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (h->strs[i].len == strlen(names[k]) &&
		    !memcmp(h->strs[i].s, names[k], h->strs[i].len))
			return true;
	return false;
}

/* The records of one line; 1 when it is malformed (d says why). */
static int record(struct ht *h, char mode, const char *s, const char *end,
		  size_t no, struct kiln_diag *d)
{
	struct node node;
	uint64_t a, b, c;
	int err;

	switch (mode) {
	case 'v':
		if (!hex(&s, end, &a))
			return kiln_diag(d, "line %zu: no version", no);
		if (!hex(&s, end, &b))
			b = a == 0x010200 ? 1 : 0;
		if (b < 1 || b > 3)
			return kiln_diag(d, "line %zu: file format version %" PRIu64
					 " (versions 1 to 3 are read)", no, b);
		h->version = (unsigned)b;
		return 0;
	case 'm':
		return kiln_diag(d, "line %zu: a raw trace (written by heaptrack -r, "
				 "addresses not resolved): run heaptrack_interpret on "
				 "it, or read the .zst heaptrack leaves after its run", no);
	case 's':
		if (h->version >= 3) {
			if (!hex(&s, end, &a) || s == end || (uint64_t)(end - s - 1) != a)
				return kiln_diag(d, "line %zu: a string's length does "
						 "not match", no);
		}
		if (s < end && *s == ' ')
			s++;
		if (grow((void **)&h->strs, &h->astrs, h->nstrs + 1, sizeof(*h->strs)))
			return -ENOMEM;
		h->strs[++h->nstrs] = (struct str){ s, (uint32_t)(end - s) };
		return 0;
	case 'i': {
		struct ip ip = { 0 };

		if (!hex(&s, end, &ip.addr) || !hex(&s, end, &a))
			return 1;
		ip.module = a <= h->nstrs ? (uint32_t)a : 0;
		ip.frame0 = (uint32_t)h->nframes;
		/* A function alone (no file, line) is a frame too: heaptrack
		 * keeps the name it read before the rest failed. */
		while (hex(&s, end, &a)) {
			struct frame f = { (uint32_t)(a <= h->nstrs ? a : 0), 0, 0 };

			if (hex(&s, end, &b) && hex(&s, end, &c)) {
				f.file = (uint32_t)(b <= h->nstrs ? b : 0);
				f.line = (int64_t)(c & 0x7fffffff);
			}
			if (grow((void **)&h->frames, &h->aframes, h->nframes,
				 sizeof(*h->frames)))
				return -ENOMEM;
			h->frames[h->nframes++] = f;
			ip.nframes++;
		}
		ip.opnew = ip.nframes && is_opnew(h, h->frames[ip.frame0].fn);
		if (grow((void **)&h->ips, &h->aips, h->nips + 1, sizeof(*h->ips)))
			return -ENOMEM;
		h->ips[++h->nips] = ip;
		return 0;
	}
	case 't':
		if (!hex(&s, end, &a) || !hex(&s, end, &b))
			return 1;
		/* Parents come first: a node's stack ends at the root. */
		if (!a || a > h->nips || b > h->nnodes)
			return 1;
		if (grow((void **)&h->nodes, &h->anodes, h->nnodes + 1,
			 sizeof(*h->nodes)) ||
		    grow((void **)&h->sites, &h->nsites, h->nnodes + 1,
			 sizeof(*h->sites)))
			return -ENOMEM;
		node = (struct node){ (uint32_t)a, (uint32_t)b };
		/* operator new at the start of a trace is left out, as
		 * heaptrack_print leaves it: the node is its caller's. */
		while (node.ip && h->ips[node.ip].opnew)
			node = node.parent ? h->nodes[node.parent] :
			       (struct node){ 0, 0 };
		h->nodes[++h->nnodes] = node;
		memset(&h->sites[h->nnodes], 0, sizeof(*h->sites));
		return 0;
	case 'a':
		if (!hex(&s, end, &a) || !hex(&s, end, &b) || b > h->nnodes ||
		    a > INT64_MAX / 2)
			return 1;
		if (grow((void **)&h->kinds, &h->akinds, h->nkinds, sizeof(*h->kinds)))
			return -ENOMEM;
		h->kinds[h->nkinds++] = (struct kind){ a, (uint32_t)b };
		return 0;
	case '+':
	case '-':
		if (!hex(&s, end, &a) || a >= h->nkinds)
			return 1;
		if (mode == '+')
			err = alloc_rec(h, a);
		else
			free_rec(h, a), err = 0;
		return err;
	case 'c': case 'R': case 'I': case 'X': case 'A': case 'S': case '#':
		return 0;
	}
	return 1;
}

int kiln_heaptrack_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	static const char *const types[] = {
		"allocated/bytes", "calls/count", "peak/bytes", "leaked/bytes",
		"temporary/count",
	};
	struct kiln_text_skips skips = { 0 };
	struct kiln_diag why = { "" };
	struct ht h = { 0 };
	const char *at = data, *end = data + len;
	uint32_t *stack = NULL;
	size_t no = 0, good = 0, astack = 0, i;
	int err;

	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	if (!kiln_heaptrack_detect(data, len))
		return kiln_diag(d, "line 1: \"v VERSION FILEVERSION\" expected "
				 "(heaptrack's first line)");
	/* Site 0: allocations without a stack. */
	if (grow((void **)&h.sites, &h.nsites, 1, sizeof(*h.sites)))
		return -ENOMEM;
	memset(h.sites, 0, sizeof(*h.sites));
	while (at < end) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		const char *le = nl ? nl : end, *s = at;

		at = nl ? nl + 1 : end;
		no++;
		while (le > s && le[-1] == '\r')
			le--;
		if (le == s)
			continue;
		if (le - s > 1 && s[1] != ' ')
			err = 1;
		else
			err = record(&h, s[0], s + (le - s > 1 ? 2 : 1), le, no, &why);
		if (err == 1) {
			kiln_diag(&why, "line %zu: not a heaptrack record: '%.*s'", no,
				  (int)(le - s > 40 ? 40 : le - s), s);
			kiln_text_skip(&skips, no, &why);
			continue;
		}
		if (err) {
			if (err == -EINVAL)
				kiln_diag(d, "%s", why.msg);
			goto out_free;
		}
		good++;
	}
	err = kiln_text_skips_end(&skips, good, d);
	if (err)
		goto out_free;
	err = kiln_prof_set_types_str(p, types, 5);
	if (err)
		goto out_free;
	p->default_type = p->types[0].type;
	p->period_type.type = kiln_prof_interns(p, "space");
	p->period_type.unit = kiln_prof_interns(p, "bytes");
	p->period = 1;
	for (i = 0; i <= h.nnodes; i++) {
		struct site *s = touch(&h, (uint32_t)i);
		int64_t v[5] = { s->allocated, s->calls, s->peak, s->live,
				 s->temporary };
		uint32_t n = 0, k;

		if (!s->calls && !s->temporary && !s->live && !s->peak)
			continue;
		for (k = (uint32_t)i; k; k = h.nodes[k].parent) {
			if (grow((void **)&stack, &astack, n, sizeof(*stack))) {
				err = -ENOMEM;
				goto out_free;
			}
			if (h.nodes[k].ip)
				stack[n++] = ip_loc(p, &h, h.nodes[k].ip);
		}
		if (kiln_prof_add_sample(p, stack, n, v, 0) < 0)
			break;
	}
	err = kiln_prof_error(p);
out_free:
	free(stack);
	free(h.strs);
	free(h.ips);
	free(h.frames);
	free(h.nodes);
	free(h.kinds);
	free(h.sites);
	return err;
}
