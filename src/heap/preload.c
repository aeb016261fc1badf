/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the heap tracer sits in the process (heap stage): the malloc
 * interposer (libkiln-malloc.so) found and its interface checked, whether
 * the program's calls reach it (an allocator linked into the program or
 * preloaded before it is not seen: said), whether libkiln.so is in front
 * of the C library (its _exit, exec and fork hooks reached), and the
 * LD_PRELOAD that fixes each.  Run once at load or at the first start,
 * never in hook context.
 */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "heap/htrace.h"
#include "heap/heapint.h"
#include "heap/traceint.h"
#include "runtime/guard.h"
#include "runtime/log.h"

struct in_main {
	uint64_t addr;
	bool yes;
};

static int in_main_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct in_main *m = arg;
	int i;

	/* The first object is the main program. */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < lo + ph->p_memsz)
			m->yes = true;
	}
	return 1;
}

/* The loaded objects in lookup order, up to the interposer (not included). */
struct before_kiln {
	uint64_t kiln_base;
	int n;
	bool reached;
	struct {
		const char *name;
		uint64_t base;
	} obj[32];
};

static int before_kiln_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct before_kiln *b = arg;

	if (info->dlpi_addr == b->kiln_base) {
		b->reached = true;
		return 1;
	}
	if (b->n < (int)(sizeof(b->obj) / sizeof(b->obj[0]))) {
		b->obj[b->n].name = info->dlpi_name;
		b->obj[b->n].base = info->dlpi_addr;
		b->n++;
	}
	return 0;
}

/*
 * The malloc that the program's calls reach when the program itself does
 * not define one: the first definition in the objects loaded after it
 * (preloaded ones first), ours unless a library preloaded before
 * libkiln-malloc.so brings its own.  NULL: ours (or not known).
 */
static void *first_malloc_after_main(uint64_t kiln_base)
{
	struct before_kiln b = { .kiln_base = kiln_base };
	int i;

	dl_iterate_phdr(before_kiln_cb, &b);
	/* The first object is the program: skipped.  dlopen() outside
	 * dl_iterate_phdr(), which holds the loader's lock. */
	for (i = 1; i < b.n && b.reached; i++) {
		void *h, *p;
		Dl_info di;

		if (!b.obj[i].name || !*b.obj[i].name)
			continue;
		h = dlopen(b.obj[i].name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		/* The object's own definition comes first in its scope. */
		p = dlsym(h, "malloc");
		dlclose(h);
		if (p && dladdr(p, &di) &&
		    (uint64_t)(uintptr_t)di.dli_fbase == b.obj[i].base)
			return p;
	}
	return NULL;
}

/* The program's malloc is not ours (linked into it, or preloaded first). */
void kheap_check_allocator(void)
{
	void *def = dlsym(RTLD_DEFAULT, "malloc");
	const ElfW(Sym) *sym = NULL;
	Dl_info self, di;
	char exe[PATH_MAX];
	ssize_t n;

	/* "self": the interposer (its table is in it), whose malloc the
	 * program should reach. */
	if (!def || !dladdr((const void *)kheap_malloc_lib, &self) ||
	    !dladdr1(def, &di, (void **)&sym, RTLD_DL_SYMENT) ||
	    di.dli_fbase == self.dli_fbase)
		return;
	if (sym && sym->st_shndx == SHN_UNDEF) {
		/*
		 * A program built without PIE that takes malloc's address: its
		 * PLT entry is malloc's canonical address, an undefined symbol
		 * with a value, which dlsym() returns.  The program defines no
		 * malloc: its calls reach the next definition.
		 */
		def = first_malloc_after_main((uint64_t)(uintptr_t)self.dli_fbase);
		if (!def || !dladdr(def, &di) || di.dli_fbase == self.dli_fbase)
			return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	{
		struct in_main m = { (uint64_t)(uintptr_t)def, false };

		dl_iterate_phdr(in_main_cb, &m);
		if (!m.yes && di.dli_fname && *di.dli_fname) {
			kiln_rt_log(KILN_LOG_ERROR, "heap profiling cannot see "
				       "the program's allocations: malloc comes "
				       "from '%s', loaded before libkiln-malloc.so",
				       di.dli_fname);
			return;
		}
	}
	kiln_rt_log(KILN_LOG_ERROR, "heap profiling cannot see the "
		       "program's allocations: its allocator is linked "
		       "statically into '%s'", exe);
}

/*
 * Why heap profiling cannot start without the interposer, and the fix:
 * the path of the interposer beside this libkiln.so.
 */
/* The folder of this libkiln.so with its '/' (*len bytes of the result;
 * 0 when unknown), for the messages that give the LD_PRELOAD to use. */
static const char *own_dir(int *len)
{
	Dl_info self;
	const char *slash;

	*len = 0;
	if (!dladdr((void *)own_dir, &self) || !self.dli_fname ||
	    !(slash = strrchr(self.dli_fname, '/')))
		return "";
	*len = (int)(slash - self.dli_fname + 1);
	return self.dli_fname;
}

void kheap_say_no_interposer(const char *path)
{
	int len;
	const char *dir = own_dir(&len);

	kiln_rt_log(KILN_LOG_ERROR, "%s off: heap profiling needs kiln's malloc "
		       "interposer, which is not loaded: preload it beside libkiln.so, "
		       "LD_PRELOAD='%.*slibkiln-malloc.so %.*slibkiln.so', or run "
		       "'kiln heap -- CMD'", path ? "heap trace" : "heap profile",
		       len, dir, len, dir);
}

/*
 * Finds the malloc interposer by name: it is in the process only when it
 * was preloaded (or linked), and libkiln.so never loads it.  A table of
 * another build's hooks is refused.
 */
static pthread_once_t interposer_once = PTHREAD_ONCE_INIT;

static void find_interposer(void)
{
	const struct kheap_interposer *ip;

	kiln_rt_guard++;
	ip = dlsym(RTLD_DEFAULT, KHEAP_INTERPOSER_SYM);
	kiln_rt_guard--;
	if (ip && ip->abi != KHEAP_ABI) {
		kiln_rt_log(KILN_LOG_ERROR, "heap profiling off: the malloc "
			       "interposer loaded is of another kiln build "
			       "(interface %u, want %u)", ip->abi, KHEAP_ABI);
		return;
	}
	kheap_malloc_lib = ip;
}

/*
 * libkiln.so's own hooks (_exit, exec, fork, pthread_create) are reached
 * only when it is in front of the C library: preloaded, or linked by the
 * program.  Loaded as the interposer's dependency alone, it comes after;
 * said, with the fix.
 */
void kheap_check_in_front(void)
{
	void *f = dlsym(RTLD_DEFAULT, "_exit");
	Dl_info got, self;
	const char *dir;
	int len;

	if (!f || !dladdr(f, &got) || !dladdr((void *)kheap_check_in_front, &self) ||
	    got.dli_fbase == self.dli_fbase)
		return;
	dir = own_dir(&len);
	kiln_rt_log(KILN_LOG_ERROR, "libkiln.so is loaded behind the C library "
		       "(libkiln-malloc.so preloaded without it?): its hooks of "
		       "_exit, exec and fork are not reached, and heap data is lost "
		       "there; preload both: LD_PRELOAD='%.*slibkiln-malloc.so "
		       "%.*slibkiln.so'", len, dir, len, dir);
}


bool kiln_htrace_available(void)
{
	pthread_once(&interposer_once, find_interposer);
	return kheap_malloc_lib != NULL;
}
