/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The modules this process has had mapped (cpu stage): the shared
 * libraries the loader reports (dl_iterate_phdr), each with its path,
 * load address and executable segments, noted whenever the CPU sampler's
 * collector sees the set change and just before every dlclose() while a
 * CPU profile runs.  A profile is written from /proc/self/maps; a library
 * dlclose()d before that is no longer there, and its samples would be
 * bare addresses: kiln_procprof_modules_add_gone() gives the address ranges
 * no current mapping covers the last module known there, so that the
 * symbolizer names them from the file on disk.  Never in a handler or a
 * malloc hook.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "profile/profile.h"
#include "profile/maptab.h"
#include "cpu/procprof.h"
#include "util/buf.h"

/* One executable segment, page-aligned as /proc/PID/maps shows it. */
struct seg {
	uint64_t start, end, offset;
};

struct module {
	char *name;		/* as the loader has it (dlopen's argument) */
	char *path;		/* that resolved, as /proc/self/maps says it */
	uint64_t base;
	struct seg segs[4];
	unsigned nsegs;
};

/*
 * A bound on the modules remembered: a program that dlopens and closes
 * libraries in a loop at new addresses must not grow kiln without end.
 */
#define MAX_MODULES 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *mods;
static size_t nmods, mods_alloc;

/*
 * Takes the lock, waiting 100 ms at most: after a fork, the child may
 * hold a copy that a thread of the parent had locked (a dlclose racing
 * the fork), which nothing would ever release.  False: not taken.
 */
static bool take_lock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return !pthread_mutex_timedlock(&lock, &ts);
}

static int note_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct module *m;
	size_t i;

	(void)size;
	(void)arg;
	/* The program itself ("") is never unloaded. */
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	for (i = 0; i < nmods; i++)
		if (mods[i].base == info->dlpi_addr &&
		    !strcmp(mods[i].name, info->dlpi_name))
			return 0;
	if (nmods == MAX_MODULES)
		return 1;
	if (KILN_GROW(mods, mods_alloc, nmods + 1, 32))
		return 1;
	m = &mods[nmods];
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum && m->nsegs < 4; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo, hi;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		lo = info->dlpi_addr + ph->p_vaddr;
		hi = lo + ph->p_memsz;
		m->segs[m->nsegs].start = lo & ~(uint64_t)4095;
		m->segs[m->nsegs].end = (hi + 4095) & ~(uint64_t)4095;
		m->segs[m->nsegs].offset = ph->p_offset & ~(uint64_t)4095;
		m->nsegs++;
	}
	if (!m->nsegs)
		return 0;
	/* The name dlopen() was given may be relative (to the directory of
	 * then, which is still the one of now, most likely) or go through
	 * links; the kernel's maps, and kiln record, say the file's own
	 * path.  The vDSO's name is no file's: skipped. */
	m->path = realpath(info->dlpi_name, NULL);
	if (!m->path)
		return errno == ENOMEM;
	m->name = strdup(info->dlpi_name);
	if (!m->name) {
		free(m->path);
		return 1;
	}
	nmods++;
	return 0;
}

void kiln_procprof_modules_note(void)
{
	if (!take_lock())
		return;
	dl_iterate_phdr(note_one, NULL);
	pthread_mutex_unlock(&lock);
}

/* Whether [start, end) overlaps a range of t (sorted by start). */
static bool overlaps(const struct kiln_maptab *t, uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->r[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->r[lo].start < end;
}

int kiln_procprof_modules_add_gone(struct kiln_maptab *t, struct kiln_prof *p)
{
	int err = 0;
	size_t i;

	if (!take_lock())
		return 0;
	/* The latest first: of two modules once at one address, the one
	 * mapped last is the one the later samples there were taken in. */
	for (i = nmods; i-- > 0 && !err;) {
		const struct module *m = &mods[i];

		for (unsigned j = 0; j < m->nsegs && !err; j++) {
			const struct seg *s = &m->segs[j];

			if (overlaps(t, s->start, s->end))
				continue;
			err = kiln_maptab_add(t, p, m->path, s->start, s->end,
					      s->offset);
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

