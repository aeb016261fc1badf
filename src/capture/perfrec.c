/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_event records into events (capture stage): a record copied out of
 * a ring (perfring.c) parsed into struct kiln_perf_event -- samples,
 * mappings, comm, fork and exit, context switches, lost records.  See
 * perfint.h.
 */
#include "capture/perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "capture/perfint.h"

/* sample_id trailer of non-sample records: pid, tid, time, cpu+res,
 * then the identifier where asked (PERF_SAMPLE_IDENTIFIER is last). */
#define ID_TRAILER kperf_trailer(s)

/* Bytes before a sample's ip: the identifier where asked (first). */
static size_t sample_head(const struct kiln_perf *s)
{
	return s->attr.sample_type & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
}

size_t kperf_trailer(const struct kiln_perf *s)
{
	return 24 + sample_head(s);
}

uint64_t kperf_rec_id(const struct kiln_perf *s, const char *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t id;

	if (!sample_head(s) || h->size < sizeof(*h) + ID_TRAILER)
		return 0;
	if (h->type == PERF_RECORD_SAMPLE)
		memcpy(&id, rec + sizeof(*h), 8);
	else
		memcpy(&id, rec + h->size - 8, 8);
	return id;
}

uint64_t kperf_rec_time(const struct kiln_perf *s, const char *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t t;

	if (h->type == PERF_RECORD_SAMPLE) {
		/* [identifier], ip, pid/tid, then time. */
		memcpy(&t, rec + sizeof(*h) + sample_head(s) + 16, 8);
		return t;
	}
	if (h->size < sizeof(*h) + ID_TRAILER)
		return 0;
	memcpy(&t, rec + h->size - ID_TRAILER + 8, 8);
	return t;
}

static int parse_sample(const struct kiln_perf *s, const char *rec,
			struct kiln_perf_event *ev)
{
	const struct perf_event_header *h = (const void *)rec;
	const char *p = rec + sizeof(*h) + sample_head(s), *end = rec + h->size;
	struct kiln_perf_sample *sm = &ev->sample;
	uint64_t v;

#define TAKE(dst) do { if (p + 8 > end) return -EINVAL; \
		memcpy(&(dst), p, 8); p += 8; } while (0)
	memset(sm, 0, sizeof(*sm));
	TAKE(sm->ip);
	TAKE(v);
	sm->pid = (uint32_t)v;
	sm->tid = (uint32_t)(v >> 32);
	TAKE(sm->time);
	TAKE(v);
	sm->cpu = (uint32_t)v;
	TAKE(sm->period);
	TAKE(sm->nr);
	if (sm->nr > (uint64_t)(end - p) / 8)
		return -EINVAL;
	sm->ips = (const uint64_t *)p;
	p += sm->nr * 8;
	if (s->attr.sample_type & PERF_SAMPLE_RAW) {
		uint32_t size;

		if (p + 4 > end)
			return -EINVAL;
		memcpy(&size, p, 4);
		if (size > (uint64_t)(end - p) - 4)
			return -EINVAL;
		/* Events without raw data write an empty u32. */
		sm->raw_size = size > 4 ? size : 0;
		sm->raw = p + 4;
		p += 4 + size;
	}
	if (s->attr.sample_type & PERF_SAMPLE_REGS_USER) {
		TAKE(sm->abi);
		if (sm->abi) {
			size_t n = (size_t)__builtin_popcountll(s->regs_mask);

			if (p + n * 8 > end)
				return -EINVAL;
			sm->regs = (const uint64_t *)p;
			p += n * 8;
		}
	}
	if (s->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		TAKE(sm->stack_size);
		if (sm->stack_size) {
			if (sm->stack_size > (uint64_t)(end - p))
				return -EINVAL;
			sm->stack = p;
			p += sm->stack_size;
			TAKE(sm->stack_dyn);
			if (sm->stack_dyn > sm->stack_size)
				sm->stack_dyn = sm->stack_size;
		}
	}
#undef TAKE
	sm->user = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		   PERF_RECORD_MISC_USER;
	ev->time = sm->time;
	return 0;
}

/* A mapping's event, its fields common to MMAP and MMAP2 set, the rest 0. */
static void mmap_event(struct kiln_perf_event *ev, uint32_t pid, uint32_t tid,
		       uint64_t addr, uint64_t len, uint64_t pgoff)
{
	ev->kind = KILN_PERF_MMAP;
	memset(&ev->mmap, 0, sizeof(ev->mmap));
	ev->mmap.pid = pid;
	ev->mmap.tid = tid;
	ev->mmap.start = addr;
	ev->mmap.len = len;
	ev->mmap.pgoff = pgoff;
}

int kperf_parse(const struct kiln_perf *s, const char *rec,
		struct kiln_perf_event *ev)
{
	const struct perf_event_header *h = (const void *)rec;
	const char *body = rec + sizeof(*h);
	size_t blen = h->size - sizeof(*h);

	ev->time = kperf_rec_time(s, rec);
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		ev->kind = KILN_PERF_SAMPLE;
		return parse_sample(s, rec, ev);
	case PERF_RECORD_MMAP2: {
		struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			union {
				struct { uint32_t maj, min; uint64_t ino, gen; };
				struct { uint8_t size, r0; uint16_t r1;
					 uint8_t id[20]; };
			};
			uint32_t prot, flags;
		} m;

		if (blen < sizeof(m) + ID_TRAILER)
			return -EINVAL;
		memcpy(&m, body, sizeof(m));
		mmap_event(ev, m.pid, m.tid, m.addr, m.len, m.pgoff);
		ev->mmap.prot = m.prot;
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			ev->mmap.build_id_size = m.size > 20 ? 20 : m.size;
			memcpy(ev->mmap.build_id, m.id, ev->mmap.build_id_size);
		} else {
			ev->mmap.maj = m.maj;
			ev->mmap.min = m.min;
			ev->mmap.ino = m.ino;
		}
		ev->mmap.filename = body + sizeof(m);
		/* NUL-terminated and padded inside the record. */
		if (!memchr(ev->mmap.filename, 0, blen - sizeof(m)))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_MMAP: {
		struct { uint32_t pid, tid; uint64_t addr, len, pgoff; } m;

		if (blen < sizeof(m) + ID_TRAILER)
			return -EINVAL;
		memcpy(&m, body, sizeof(m));
		mmap_event(ev, m.pid, m.tid, m.addr, m.len, m.pgoff);
		ev->mmap.prot = (h->misc & PERF_RECORD_MISC_MMAP_DATA) ? 1 : 5;
		ev->mmap.filename = body + sizeof(m);
		if (!memchr(ev->mmap.filename, 0, blen - sizeof(m)))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_COMM: {
		uint32_t ids[2];

		if (blen < 8 + ID_TRAILER)
			return -EINVAL;
		memcpy(ids, body, 8);
		ev->kind = KILN_PERF_COMM;
		ev->comm.pid = ids[0];
		ev->comm.tid = ids[1];
		ev->comm.comm = body + 8;
		ev->comm.exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
		if (!memchr(ev->comm.comm, 0, blen - 8))
			return -EINVAL;
		return 0;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		uint32_t ids[4];

		if (blen < 16)
			return -EINVAL;
		memcpy(ids, body, 16);
		ev->kind = h->type == PERF_RECORD_FORK ? KILN_PERF_FORK :
							 KILN_PERF_EXIT;
		ev->task.pid = ids[0];
		ev->task.ppid = ids[1];
		ev->task.tid = ids[2];
		ev->task.ptid = ids[3];
		ev->task.by_tid = ev->task.by_seq = 0;
		return 0;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		/* The trailer names the thread that left (out) or came in. */
		uint32_t ids[2];

		if (h->size < sizeof(*h) + ID_TRAILER)
			return -EINVAL;
		memcpy(ids, rec + h->size - ID_TRAILER, 8);
		ev->kind = KILN_PERF_SWITCH;
		ev->sw.pid = ids[0];
		ev->sw.tid = ids[1];
		ev->sw.out = h->misc & PERF_RECORD_MISC_SWITCH_OUT;
		ev->sw.preempt = ev->sw.out &&
				 (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		return 0;
	}
	case PERF_RECORD_LOST: {
		uint64_t v[2];

		if (blen < 16)
			return -EINVAL;
		memcpy(v, body, 16);
		ev->kind = KILN_PERF_LOST;
		ev->lost.lost = v[1];
		return 0;
	}
	case PERF_RECORD_READ: {
		uint32_t ids[2];

		if (blen < 16 + ID_TRAILER)
			return -EINVAL;
		memcpy(ids, body, 8);
		ev->kind = KILN_PERF_READ;
		ev->read.pid = ids[0];
		ev->read.tid = ids[1];
		memcpy(&ev->read.value, body + 8, 8);
		return 0;
	}
	default:
		return 1;	/* not interesting */
	}
}
