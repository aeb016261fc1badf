/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen-perfscript: writes realistic `perf script -F +pid` text for the
 * benchmarks in bench/ (not part of kiln itself; built by bench/run.sh).
 *
 * The output looks like what `perf record -g` of a C++ server followed by
 * `perf script -F +pid` gives: a header per sample
 *
 *         kvstored  4242/4250  [001] 12345.678901:    1001001 cpu-clock:pppH:
 *
 * then one line per frame, leaf first,
 *
 *             55d4c0a1b2c3 rocksdb::DBImpl::Get(...)+0x4f (/usr/lib/...)
 *
 * and a blank line.  Function names come from a table of a few thousand
 * made-up but realistically shaped names: C++ (namespaces, templates,
 * argument lists, demangled as perf prints them) for the program and its
 * C++ libraries, short C names for libc, zlib and the kernel.  Stacks are
 * random walks over a fixed random call graph from realistic roots
 * (_start -> __libc_start_main -> main, clone3 -> start_thread, the idle
 * loop of swapper), often ending in a system call into [kernel.kallsyms];
 * call-site addresses depend on the (caller, callee) pair, as in a real
 * binary.  A fixed set of distinct stacks (-k) is drawn first; samples then
 * pick stacks with a Zipf law, so a few stacks are hot and most are rare.
 *
 * Everything is deterministic given the seed (-s), and the stack set does
 * not depend on the sample count (-n): inputs of different length share
 * their stacks, which is what the memory-scaling benchmark needs.
 *
 * usage: gen-perfscript [-n SAMPLES] [-k STACKS] [-f FUNCS] [-s SEED]
 *                       [-d MEAN_EXTRA_DEPTH] [--no-symoff] [-o FILE]
 * Prints a one-line summary on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- deterministic random numbers (xoshiro256**, seeded by splitmix64) */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform in [0, n). */
static uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [0, 1). */
static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

#define PICK(r, arr) (arr[rng_below(r, sizeof(arr) / sizeof(arr[0]))])

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "gen-perfscript: out of memory\n");
		exit(1);
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "gen-perfscript: out of memory\n");
		exit(1);
	}
	return p;
}

/* ---- a small growable string */

struct str {
	char *s;
	size_t len, cap;
};

static void str_add(struct str *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void str_adds(struct str *b, const char *s)
{
	str_add(b, s, strlen(s));
}

static void str_addf(struct str *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void str_addf(struct str *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	str_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* ---- the binaries */

enum dso_id { D_EXE, D_ROCKS, D_STDCXX, D_SSL, D_Z, D_LIBC, D_KERNEL, ND };

static const struct {
	const char *path;
	uint64_t base;
	double share;	/* of the function table */
	int cxx;	/* C++ names? */
} dsos[ND] = {
	[D_EXE] = { "/usr/local/bin/kvstored", 0x55d4c0a00000ULL, 0.36, 1 },
	[D_ROCKS] = { "/usr/lib/x86_64-linux-gnu/librocksdb.so.7.8",
		      0x7f3a1c000000ULL, 0.16, 1 },
	[D_STDCXX] = { "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
		       0x7f3a1b800000ULL, 0.07, 1 },
	[D_SSL] = { "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
		    0x7f3a1b000000ULL, 0.05, 0 },
	[D_Z] = { "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
		  0x7f3a1ae00000ULL, 0.02, 0 },
	[D_LIBC] = { "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f3a1aa00000ULL,
		     0.06, 0 },
	[D_KERNEL] = { "[kernel.kallsyms]", 0xffffffff81000000ULL, 0.28, 0 },
};

/* ---- words for names */

static const char *const c_subsys[] = {
	"tcp", "udp", "ext4", "vfs", "mm", "sched", "page", "futex", "ep",
	"sock", "skb", "ip", "net", "blk", "bio", "xfs", "irq", "rcu", "hrtimer",
	"kmem", "slab", "folio", "filemap", "iov", "copy", "lock", "mutex",
	"raw_spin", "queue", "nvme", "virtio", "dev", "napi", "inet", "do",
	"generic", "fs", "percpu", "task", "pick", "update", "security",
	"apparmor", "fsnotify", "cgroup", "memcg", "lru", "swap", "zone",
};
static const char *const c_verb[] = {
	"read", "write", "alloc", "free", "lookup", "insert", "remove", "get",
	"put", "send", "recv", "poll", "wait", "wake", "queue", "flush",
	"commit", "map", "unmap", "fault", "copy", "fill", "init", "release",
	"try_to", "lock", "unlock", "enqueue", "dequeue", "balance", "charge",
	"uncharge", "update", "account", "handle", "submit", "complete",
	"prepare", "finish", "switch", "select", "find", "splice", "iter",
};
static const char *const c_noun[] = {
	"page", "pages", "folio", "entity", "task", "msg", "skb", "buffer",
	"iter", "range", "fair", "common", "locked", "slowpath", "fastpath",
	"nocache", "one", "many", "node", "inode", "dentry", "file", "sk",
	"queue", "rq", "cpu", "stat", "mapping", "vma", "pte", "pmd", "irqs",
	"sync", "async", "bulk", "batch", "head", "tail", "list", "tree",
};
static const char *const cxx_ns[] = {
	"kv", "kv::storage", "kv::net", "kv::raft", "rocksdb", "rocksdb::port",
	"grpc", "grpc_core", "absl::lts_20220623", "folly", "boost::asio",
	"kv::server", "kv::index", "kv::wal", "kv::compaction", "kv::util",
	"std", "std::__detail", "__gnu_cxx",
};
static const char *const std_ns[] = {
	"std", "std::__detail", "__gnu_cxx", "std::__cxx11", "std::chrono",
};
/* Prefixes of the C libraries' own names. */
static const char *const ssl_prefix[] = {
	"ossl_", "EVP_", "BN_", "CRYPTO_", "aesni_", "sha256_", "ssl3_",
};
static const char *const z_prefix[] = { "deflate_", "inflate_", "zng_" };
static const char *const cxx_word[] = {
	"DB", "Impl", "Write", "Read", "Batch", "Table", "Block", "Cache",
	"Index", "Filter", "Memtable", "Version", "Set", "Edit", "Log",
	"Reader", "Writer", "Iterator", "Merging", "Compaction", "Job",
	"Thread", "Pool", "Env", "Posix", "File", "Random", "Access",
	"Sequential", "Builder", "Handle", "Arena", "Skip", "List", "Hash",
	"Bloom", "Policy", "Stats", "Histogram", "Lock", "Mutex", "Cond",
	"Channel", "Server", "Call", "Completion", "Queue", "Request",
	"Response", "Raft", "Node", "Peer", "Entry", "Snapshot", "Region",
	"Key", "Value", "Slice", "Status", "Options", "Column", "Family",
};
static const char *const cxx_method[] = {
	"Get", "Put", "Delete", "Write", "Read", "Seek", "Next", "Prev",
	"Append", "Flush", "Sync", "Run", "Schedule", "Process", "Handle",
	"Insert", "Lookup", "Find", "Add", "Finish", "Open", "Close",
	"operator()", "operator=", "Encode", "Decode", "Compare", "Hash",
	"MaybeScheduleFlushOrCompaction", "BackgroundCallCompaction",
	"WriteToWAL", "PreprocessWrite", "GetImpl", "Step", "Tick",
	"OnMessage", "AppendEntries", "ApplyCommitted", "~", "_M_realloc_insert",
	"_M_emplace_hint_unique", "_M_rehash", "reserve", "push_back", "find",
};
static const char *const cxx_type[] = {
	"int", "unsigned long", "bool", "char const*", "unsigned int",
	"kv::Slice const&", "rocksdb::Slice const&", "rocksdb::ReadOptions const&",
	"rocksdb::WriteOptions const&", "rocksdb::WriteBatch*",
	"std::string const&", "std::string*", "void*", "long",
	"std::shared_ptr<kv::storage::Region>",
	"std::function<void (kv::Status)>",
	"std::vector<kv::Slice, std::allocator<kv::Slice> > const&",
	"std::unique_ptr<rocksdb::Iterator, std::default_delete<rocksdb::Iterator> >",
	"grpc::ServerContext*", "kv::net::Request const&", "kv::net::Response*",
	"std::chrono::duration<long, std::ratio<1l, 1000000000l> >",
	"rocksdb::ColumnFamilyHandle*", "rocksdb::PinnableSlice*",
	"absl::lts_20220623::string_view",
};
static const char *const libc_names[] = {
	"__memmove_avx_unaligned_erms", "__memset_avx2_unaligned_erms",
	"__memcmp_avx2_movbe", "__strlen_avx2", "malloc", "free", "_int_malloc",
	"_int_free", "malloc_consolidate", "__libc_calloc", "__libc_realloc",
	"cfree@GLIBC_2.2.5", "pthread_mutex_lock@@GLIBC_2.2.5",
	"___pthread_mutex_unlock", "pthread_cond_wait@@GLIBC_2.3.2",
	"__futex_abstimed_wait_common", "__GI___lll_lock_wait", "__libc_write",
	"__libc_read", "__libc_pwrite64", "__libc_pread64", "__GI___writev",
	"epoll_wait", "__libc_sendmsg", "__libc_recvmsg", "__fdatasync",
	"__GI___clock_gettime", "__vdso_clock_gettime", "sched_yield",
	"__GI___poll", "__lseek64", "__mmap64", "__munmap", "__madvise",
	"_IO_fwrite", "__vfprintf_internal", "__strchr_avx2", "qsort_r",
	"__memchr_avx2", "__GI___libc_open",
};
/* Which libc calls enter the kernel, and through which system call. */
static const char *const sys_names[] = {
	"__x64_sys_write", "__x64_sys_read", "__x64_sys_pwrite64",
	"__x64_sys_pread64", "__x64_sys_writev", "__x64_sys_epoll_wait",
	"__x64_sys_sendmsg", "__x64_sys_recvmsg", "__x64_sys_fdatasync",
	"__x64_sys_futex", "__x64_sys_sched_yield", "__x64_sys_poll",
	"__x64_sys_mmap", "__x64_sys_munmap", "__x64_sys_madvise",
	"__x64_sys_openat", "__x64_sys_lseek", "__x64_sys_clock_nanosleep",
};

/* ---- the function table */

struct func {
	char *name;
	uint64_t addr;
	uint32_t size;
	uint8_t dso;
	uint32_t ncallees;
	uint32_t *callees;
};

static struct func *funcs;
static uint32_t nfuncs;
/* Functions of each dso, by index into funcs. */
static uint32_t *by_dso[ND];
static uint32_t nby_dso[ND];

/* Open-addressed set of names, to keep them unique. */
static char **name_set;
static size_t name_cap;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int name_add(const char *s)
{
	size_t i = hash_str(s) & (name_cap - 1);

	while (name_set[i]) {
		if (!strcmp(name_set[i], s))
			return 0;
		i = (i + 1) & (name_cap - 1);
	}
	name_set[i] = (char *)s;
	return 1;
}

static void camel(struct rng *r, struct str *b, int words)
{
	for (int i = 0; i < words; i++)
		str_adds(b, PICK(r, cxx_word));
}

static void make_c_name(struct rng *r, struct str *b, enum dso_id d)
{
	int form = (int)rng_below(r, 10), kernel = d == D_KERNEL;

	if (d == D_SSL)
		str_adds(b, PICK(r, ssl_prefix));
	else if (d == D_Z)
		str_adds(b, PICK(r, z_prefix));
	else if (kernel && form == 0)
		str_adds(b, "__");
	else if (!kernel && form < 2)
		str_adds(b, "_");
	str_adds(b, PICK(r, c_subsys));
	str_adds(b, "_");
	str_adds(b, PICK(r, c_verb));
	if (form & 1) {
		str_adds(b, "_");
		str_adds(b, PICK(r, c_noun));
	}
	if (form == 9)
		str_adds(b, ".isra.0");
	else if (form == 7 && !kernel)
		str_adds(b, ".part.0");
}

static void make_cxx_name(struct rng *r, struct str *b, int std)
{
	const char *method = PICK(r, cxx_method);
	int nargs = (int)rng_below(r, 5);
	struct str cls = { 0 };

	camel(r, &cls, 1 + (int)rng_below(r, 3));
	str_adds(b, std ? PICK(r, std_ns) : PICK(r, cxx_ns));
	str_adds(b, "::");
	str_adds(b, cls.s);
	if (rng_below(r, 5) == 0) {
		str_adds(b, "<");
		str_adds(b, PICK(r, cxx_type));
		str_adds(b, ">");
	}
	str_adds(b, "::");
	if (!strcmp(method, "~")) {
		str_adds(b, "~");
		str_adds(b, cls.s);
	} else {
		str_adds(b, method);
	}
	if (rng_below(r, 12) == 0)
		str_adds(b, "::{lambda()#1}::operator()");
	str_adds(b, "(");
	for (int i = 0; i < nargs; i++) {
		if (i)
			str_adds(b, ", ");
		str_adds(b, PICK(r, cxx_type));
	}
	str_adds(b, ")");
	if (rng_below(r, 4) == 0)
		str_adds(b, " const");
	free(cls.s);
}

/* A new function named by the caller-supplied text, or a made-up one. */
static uint32_t add_func(struct rng *r, enum dso_id d, const char *fixed,
			 uint64_t *next_addr)
{
	struct str b = { 0 };
	struct func *f;
	int tries = 0;

	for (;;) {
		b.len = 0;
		if (fixed)
			str_adds(&b, fixed);
		else if (dsos[d].cxx && !(d == D_STDCXX && rng_below(r, 4) == 0))
			make_cxx_name(r, &b, d == D_STDCXX);
		else
			make_c_name(r, &b, d);
		if (tries++ > 8)
			str_addf(&b, "_%u", nfuncs);
		if (name_add(b.s))
			break;
		if (fixed)
			return UINT32_MAX; /* already there */
		free(b.s);
		b = (struct str){ 0 };
	}
	funcs = xrealloc(funcs, (nfuncs + 1) * sizeof(*funcs));
	f = &funcs[nfuncs];
	f->name = b.s;
	f->size = 16 + (uint32_t)(rng_unit(r) * rng_unit(r) * 4000);
	f->size &= ~15u;
	f->addr = next_addr[d];
	next_addr[d] += f->size + 16 * rng_below(r, 4);
	f->dso = (uint8_t)d;
	f->ncallees = 0;
	f->callees = NULL;
	by_dso[d] = xrealloc(by_dso[d], (nby_dso[d] + 1) * sizeof(uint32_t));
	by_dso[d][nby_dso[d]++] = nfuncs;
	return nfuncs++;
}

static uint32_t find_func(const char *name)
{
	for (uint32_t i = 0; i < nfuncs; i++)
		if (!strcmp(funcs[i].name, name))
			return i;
	fprintf(stderr, "gen-perfscript: internal: no function '%s'\n", name);
	exit(1);
}

/* Fixed names of the roots and of the kernel's entry and idle paths. */
static const char *const fixed_names[][2] = {
	{ "e", "_start" }, { "e", "main" },
	{ "e", "kv::server::Server::Run()" },
	{ "e", "kv::server::Worker::Loop(std::stop_token)" },
	{ "c", "__libc_start_main_impl" }, { "c", "__libc_start_call_main" },
	{ "c", "__clone3" }, { "c", "start_thread" },
	{ "s", "execute_native_thread_routine" },
	{ "r", "rocksdb::ThreadPoolImpl::Impl::BGThread(unsigned long)" },
	{ "r", "rocksdb::ThreadPoolImpl::Impl::BGThreadWrapper(void*)" },
	{ "k", "entry_SYSCALL_64_after_hwframe" }, { "k", "do_syscall_64" },
	{ "k", "syscall_exit_to_user_mode" },
	{ "k", "asm_sysvec_apic_timer_interrupt" },
	{ "k", "sysvec_apic_timer_interrupt" },
	{ "k", "__sysvec_apic_timer_interrupt" }, { "k", "hrtimer_interrupt" },
	{ "k", "asm_exc_page_fault" }, { "k", "exc_page_fault" },
	{ "k", "do_user_addr_fault" }, { "k", "handle_mm_fault" },
	{ "k", "secondary_startup_64_no_verify" }, { "k", "start_secondary" },
	{ "k", "cpu_startup_entry" }, { "k", "do_idle" },
	{ "k", "default_idle_call" }, { "k", "default_idle" },
	{ "k", "native_safe_halt" }, { "k", "schedule" }, { "k", "__schedule" },
	{ "k", "finish_task_switch.isra.0" },
};

static enum dso_id dso_of_letter(char c)
{
	switch (c) {
	case 'e': return D_EXE;
	case 'c': return D_LIBC;
	case 's': return D_STDCXX;
	case 'r': return D_ROCKS;
	default: return D_KERNEL;
	}
}

/* Random callees: user code calls user and library code; libraries call
 * lower libraries and libc; the kernel calls the kernel. */
static void wire_callees(struct rng *r)
{
	for (uint32_t i = 0; i < nfuncs; i++) {
		struct func *f = &funcs[i];
		enum dso_id d = (enum dso_id)f->dso;
		uint32_t n = 2 + rng_below(r, 7);

		if (d == D_LIBC || d == D_Z)
			n = rng_below(r, 3);
		f->callees = xmalloc(n * sizeof(uint32_t));
		for (uint32_t j = 0; j < n; j++) {
			enum dso_id to;
			double u = rng_unit(r);

			switch (d) {
			case D_EXE:
				to = u < 0.62 ? D_EXE : u < 0.82 ? D_ROCKS :
				     u < 0.90 ? D_STDCXX : u < 0.94 ? D_SSL :
				     u < 0.96 ? D_Z : D_LIBC;
				break;
			case D_ROCKS:
				to = u < 0.70 ? D_ROCKS : u < 0.85 ? D_STDCXX :
				     u < 0.90 ? D_Z : D_LIBC;
				break;
			case D_STDCXX:
				to = u < 0.6 ? D_STDCXX : D_LIBC;
				break;
			case D_SSL:
				to = u < 0.85 ? D_SSL : D_LIBC;
				break;
			case D_KERNEL:
				to = D_KERNEL;
				break;
			default:
				to = D_LIBC;
				break;
			}
			f->callees[j] = by_dso[to][rng_below(r, nby_dso[to])];
		}
		f->ncallees = n;
	}
}

/* ---- stacks */

struct frame {
	uint32_t fn;
	uint32_t off;	/* ip - function start */
};

struct stack {
	char *text;	/* the frame lines, leaf first, ending in "\n" */
	uint32_t len;
	uint32_t nframes;
	uint8_t thread_class;	/* 0 main, 1 worker, 2 rocksdb bg, 3 idle */
};

static int symoff = 1;

static uint32_t call_site(uint32_t caller, uint32_t callee)
{
	uint64_t h = ((uint64_t)caller << 32 | callee) * 0x9e3779b97f4a7c15ULL;
	uint32_t size = funcs[caller].size;

	/* a return address: somewhere after the prologue, inside the body */
	return (uint32_t)(5 + (h >> 33) % (size > 10 ? size - 5 : 5));
}

static void add_frame_line(struct str *b, uint32_t fn, uint32_t off)
{
	const struct func *f = &funcs[fn];

	if (symoff)
		str_addf(b, "\t%16" PRIx64 " %s+0x%x (%s)\n", f->addr + off,
			 f->name, off, dsos[f->dso].path);
	else
		str_addf(b, "\t%16" PRIx64 " %s (%s)\n", f->addr + off, f->name,
			 dsos[f->dso].path);
}

/* Ids of the fixed functions, looked up once. */
static struct {
	uint32_t start, main, run, wloop, lsm_impl, lsm_call, clone3, sthread,
		exec_native, bg, bg_wrap, entry, do_sys, sys_exit, apic, sysvec,
		sysvec2, hrtimer, pf, exc_pf, user_fault, mm_fault, sec_start,
		start_sec, cpu_entry, do_idle, idle_call, def_idle, halt, sched,
		__sched, finish_switch;
	uint32_t sys[sizeof(sys_names) / sizeof(sys_names[0])];
} F;

static void make_stack(struct rng *r, struct stack *s, struct str *b)
{
	struct frame fr[64];
	int n = 0, target, broken;
	double u = rng_unit(r), depth_u;

	b->len = 0;
	/* roots, outermost first */
	if (u < 0.05) {
		s->thread_class = 3;
		fr[n++] = (struct frame){ F.sec_start, 0 };
		fr[n++] = (struct frame){ F.start_sec, 0 };
		fr[n++] = (struct frame){ F.cpu_entry, 0 };
		fr[n++] = (struct frame){ F.do_idle, 0 };
		fr[n++] = (struct frame){ F.idle_call, 0 };
		fr[n++] = (struct frame){ F.def_idle, 0 };
		fr[n++] = (struct frame){ F.halt, 0 };
		goto emit;
	} else if (u < 0.20) {
		s->thread_class = 0;
		fr[n++] = (struct frame){ F.start, 0 };
		fr[n++] = (struct frame){ F.lsm_impl, 0 };
		fr[n++] = (struct frame){ F.lsm_call, 0 };
		fr[n++] = (struct frame){ F.main, 0 };
		fr[n++] = (struct frame){ F.run, 0 };
	} else if (u < 0.75) {
		s->thread_class = 1;
		fr[n++] = (struct frame){ F.clone3, 0 };
		fr[n++] = (struct frame){ F.sthread, 0 };
		fr[n++] = (struct frame){ F.exec_native, 0 };
		fr[n++] = (struct frame){ F.wloop, 0 };
	} else {
		s->thread_class = 2;
		fr[n++] = (struct frame){ F.clone3, 0 };
		fr[n++] = (struct frame){ F.sthread, 0 };
		fr[n++] = (struct frame){ F.bg_wrap, 0 };
		fr[n++] = (struct frame){ F.bg, 0 };
	}
	/* total depth 5..40, most stacks 8..20 deep, a long tail */
	depth_u = rng_unit(r);
	target = 5 + (int)(35.0 * pow(depth_u, 2.2));
	if (target < n + 1)
		target = n + 1;
	/* a user-space walk over the call graph from the last root */
	while (n < target) {
		const struct func *cur = &funcs[fr[n - 1].fn];

		if (!cur->ncallees)
			break;
		fr[n].fn = cur->callees[rng_below(r, cur->ncallees)];
		fr[n].off = 0;
		n++;
		/* stop early in libc sometimes: a leaf memcpy or malloc */
		if (funcs[fr[n - 1].fn].dso == D_LIBC && rng_below(r, 3) == 0)
			break;
		/* don't let kernel functions into user stacks */
	}
	u = rng_unit(r);
	if (u < 0.30 && n < 60) {
		/* a system call: libc wrapper -> entry -> do_syscall_64 -> sys */
		int kdepth = 1 + (int)rng_below(r, 10);
		uint32_t k;

		if (funcs[fr[n - 1].fn].dso != D_LIBC && n < 60)
			fr[n++] = (struct frame){
				by_dso[D_LIBC][rng_below(r, nby_dso[D_LIBC])], 0 };
		fr[n++] = (struct frame){ F.entry, 0 };
		fr[n++] = (struct frame){ F.do_sys, 0 };
		k = F.sys[rng_below(r, sizeof(F.sys) / sizeof(F.sys[0]))];
		fr[n++] = (struct frame){ k, 0 };
		for (int i = 0; i < kdepth && n < 62; i++) {
			const struct func *cur = &funcs[fr[n - 1].fn];

			if (!cur->ncallees)
				break;
			fr[n++] = (struct frame){
				cur->callees[rng_below(r, cur->ncallees)], 0 };
		}
		if (rng_below(r, 4) == 0 && n < 61) {
			/* blocked: the sample lands in the scheduler */
			fr[n++] = (struct frame){ F.sched, 0 };
			fr[n++] = (struct frame){ F.__sched, 0 };
			fr[n++] = (struct frame){ F.finish_switch, 0 };
		}
	} else if (u < 0.36 && n < 58) {
		/* timer interrupt on top of user code */
		fr[n++] = (struct frame){ F.apic, 0 };
		fr[n++] = (struct frame){ F.sysvec, 0 };
		fr[n++] = (struct frame){ F.sysvec2, 0 };
		fr[n++] = (struct frame){ F.hrtimer, 0 };
	} else if (u < 0.40 && n < 58) {
		/* page fault */
		fr[n++] = (struct frame){ F.pf, 0 };
		fr[n++] = (struct frame){ F.exc_pf, 0 };
		fr[n++] = (struct frame){ F.user_fault, 0 };
		fr[n++] = (struct frame){ F.mm_fault, 0 };
	}
emit:
	if (n > 40)
		n = 40;	/* the deepest realistic stacks; the leaf end goes */
	/* return addresses from the (caller, callee) pairs; the leaf anywhere */
	for (int i = 0; i + 1 < n; i++)
		fr[i].off = call_site(fr[i].fn, fr[i + 1].fn);
	fr[n - 1].off = rng_below(r, funcs[fr[n - 1].fn].size);
	/* broken frame-pointer chains: the stack ends in [unknown] */
	broken = s->thread_class != 3 && rng_below(r, 40) == 0;
	for (int i = n - 1; i >= 0; i--) {
		if (broken && i < n / 3)
			continue; /* outer frames lost */
		add_frame_line(b, fr[i].fn, fr[i].off);
	}
	if (broken)
		str_adds(b, "\tffffffffffffffff [unknown] ([unknown])\n");
	s->nframes = 0;
	for (size_t i = 0; i < b->len; i++)
		s->nframes += b->s[i] == '\n';
	s->text = xmalloc(b->len);
	memcpy(s->text, b->s, b->len);
	s->len = (uint32_t)b->len;
}

/* ---- threads */

struct thread {
	const char *comm;
	int pid, tid;
};

static const struct thread threads_main[] = { { "kvstored", 4242, 4242 } };
static const struct thread threads_worker[] = {
	{ "kv-worker", 4242, 4250 }, { "kv-worker", 4242, 4251 },
	{ "kv-worker", 4242, 4252 }, { "kv-worker", 4242, 4253 },
	{ "grpc_global_tim", 4242, 4260 }, { "pool worker", 4242, 4261 },
	{ "pool worker", 4242, 4262 }, { "kv-raft", 4242, 4270 },
};
static const struct thread threads_bg[] = {
	{ "rocksdb:low", 4242, 4280 }, { "rocksdb:low", 4242, 4281 },
	{ "rocksdb:high", 4242, 4282 },
};
static const struct thread threads_idle[] = { { "swapper", 0, 0 } };

static const struct {
	const struct thread *t;
	uint32_t n;
} classes[4] = {
	{ threads_main, 1 },
	{ threads_worker, sizeof(threads_worker) / sizeof(threads_worker[0]) },
	{ threads_bg, sizeof(threads_bg) / sizeof(threads_bg[0]) },
	{ threads_idle, 1 },
};

/* ---- output */

static char obuf[1 << 20];
static size_t olen;
static FILE *out;
static uint64_t out_bytes;

static void oflush(void)
{
	if (olen && fwrite(obuf, 1, olen, out) != olen) {
		fprintf(stderr, "gen-perfscript: write: %s\n", strerror(errno));
		exit(1);
	}
	out_bytes += olen;
	olen = 0;
}

static void owrite(const char *s, size_t n)
{
	if (olen + n > sizeof(obuf))
		oflush();
	if (n > sizeof(obuf)) {
		if (fwrite(s, 1, n, out) != n)
			exit(1);
		out_bytes += n;
		return;
	}
	memcpy(obuf + olen, s, n);
	olen += n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gen-perfscript [-n SAMPLES] [-k STACKS] [-f FUNCS] [-s SEED]\n"
		"                      [--no-symoff] [-o FILE]\n");
	exit(2);
}

static unsigned long long num_arg(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !*s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	unsigned long long nsamples = 1000000, nstacks = 100000, nf = 3000,
			   seed = 1;
	const char *path = NULL;
	uint64_t next_addr[ND];
	struct rng r, rs;
	struct stack *stacks;
	double *cdf, total = 0, zipf_s = 1.0;
	struct str b = { 0 };
	unsigned long long t_us;
	uint32_t *rank;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			nsamples = num_arg(argv[++i]);
		else if (!strcmp(argv[i], "-k") && i + 1 < argc)
			nstacks = num_arg(argv[++i]);
		else if (!strcmp(argv[i], "-f") && i + 1 < argc)
			nf = num_arg(argv[++i]);
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			seed = num_arg(argv[++i]);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--no-symoff"))
			symoff = 0;
		else
			usage();
	}
	if (!nstacks || nstacks > 10000000 || nf < 200 || nf > 1000000)
		usage();

	/* the function table: fixed names first, then made-up ones */
	rng_seed(&r, seed);
	for (int d = 0; d < ND; d++)
		next_addr[d] = dsos[d].base + 0x1000 + 16 * rng_below(&r, 4096);
	name_cap = 1;
	while (name_cap < nf * 4)
		name_cap <<= 1;
	name_set = calloc(name_cap, sizeof(char *));
	if (!name_set)
		return 1;
	for (size_t i = 0; i < sizeof(fixed_names) / sizeof(fixed_names[0]); i++)
		add_func(&r, dso_of_letter(fixed_names[i][0][0]),
			 fixed_names[i][1], next_addr);
	for (size_t i = 0; i < sizeof(libc_names) / sizeof(libc_names[0]); i++)
		add_func(&r, D_LIBC, libc_names[i], next_addr);
	for (size_t i = 0; i < sizeof(sys_names) / sizeof(sys_names[0]); i++)
		add_func(&r, D_KERNEL, sys_names[i], next_addr);
	while (nfuncs < nf) {
		double u = rng_unit(&r), acc = 0;
		int d;

		for (d = 0; d < ND - 1; d++) {
			acc += dsos[d].share;
			if (u < acc)
				break;
		}
		add_func(&r, (enum dso_id)d, NULL, next_addr);
	}
	wire_callees(&r);
	F.start = find_func("_start");
	F.main = find_func("main");
	F.run = find_func("kv::server::Server::Run()");
	F.wloop = find_func("kv::server::Worker::Loop(std::stop_token)");
	F.lsm_impl = find_func("__libc_start_main_impl");
	F.lsm_call = find_func("__libc_start_call_main");
	F.clone3 = find_func("__clone3");
	F.sthread = find_func("start_thread");
	F.exec_native = find_func("execute_native_thread_routine");
	F.bg = find_func("rocksdb::ThreadPoolImpl::Impl::BGThread(unsigned long)");
	F.bg_wrap = find_func("rocksdb::ThreadPoolImpl::Impl::BGThreadWrapper(void*)");
	F.entry = find_func("entry_SYSCALL_64_after_hwframe");
	F.do_sys = find_func("do_syscall_64");
	F.sys_exit = find_func("syscall_exit_to_user_mode");
	F.apic = find_func("asm_sysvec_apic_timer_interrupt");
	F.sysvec = find_func("sysvec_apic_timer_interrupt");
	F.sysvec2 = find_func("__sysvec_apic_timer_interrupt");
	F.hrtimer = find_func("hrtimer_interrupt");
	F.pf = find_func("asm_exc_page_fault");
	F.exc_pf = find_func("exc_page_fault");
	F.user_fault = find_func("do_user_addr_fault");
	F.mm_fault = find_func("handle_mm_fault");
	F.sec_start = find_func("secondary_startup_64_no_verify");
	F.start_sec = find_func("start_secondary");
	F.cpu_entry = find_func("cpu_startup_entry");
	F.do_idle = find_func("do_idle");
	F.idle_call = find_func("default_idle_call");
	F.def_idle = find_func("default_idle");
	F.halt = find_func("native_safe_halt");
	F.sched = find_func("schedule");
	F.__sched = find_func("__schedule");
	F.finish_switch = find_func("finish_task_switch.isra.0");
	for (size_t i = 0; i < sizeof(sys_names) / sizeof(sys_names[0]); i++)
		F.sys[i] = find_func(sys_names[i]);

	/* the stack set (independent of the sample count) */
	stacks = xmalloc(nstacks * sizeof(*stacks));
	for (unsigned long long i = 0; i < nstacks; i++)
		make_stack(&r, &stacks[i], &b);

	/* Zipf weights over a random permutation of the stacks */
	rank = xmalloc(nstacks * sizeof(*rank));
	for (uint32_t i = 0; i < nstacks; i++)
		rank[i] = i;
	for (uint32_t i = (uint32_t)nstacks - 1; i > 0; i--) {
		uint32_t j = rng_below(&r, i + 1), t = rank[i];

		rank[i] = rank[j];
		rank[j] = t;
	}
	cdf = xmalloc(nstacks * sizeof(*cdf));
	for (unsigned long long i = 0; i < nstacks; i++) {
		total += 1.0 / pow((double)(i + 1), zipf_s);
		cdf[i] = total;
	}

	out = stdout;
	if (path && strcmp(path, "-")) {
		out = fopen(path, "w");
		if (!out) {
			fprintf(stderr, "gen-perfscript: cannot open '%s': %s\n",
				path, strerror(errno));
			return 1;
		}
	}

	/* the samples: their own random stream, so -n does not move stacks */
	rng_seed(&rs, seed ^ 0x5eed5eed5eedULL);
	t_us = 12345678901ULL;
	{
		uint8_t *seen = calloc(nstacks, 1);
		unsigned long long distinct = 0, frames = 0;

		if (!seen)
			return 1;
		for (unsigned long long i = 0; i < nsamples; i++) {
			double x = rng_unit(&rs) * total;
			size_t lo = 0, hi = nstacks - 1;
			const struct stack *s;
			const struct thread *t;
			char hdr[160];
			int hl;

			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (cdf[mid] < x)
					lo = mid + 1;
				else
					hi = mid;
			}
			s = &stacks[rank[lo]];
			if (!seen[rank[lo]]) {
				seen[rank[lo]] = 1;
				distinct++;
			}
			t = &classes[s->thread_class]
				     .t[rng_below(&rs, classes[s->thread_class].n)];
			t_us += 400 + rng_below(&rs, 200);
			hl = snprintf(hdr, sizeof(hdr),
				      "%16s %5d/%-5d [%03u] %llu.%06llu: %10u cpu-clock:pppH: \n",
				      t->comm, t->pid, t->tid, rng_below(&rs, 2),
				      t_us / 1000000, t_us % 1000000,
				      1001001u - 40u + rng_below(&rs, 80));
			owrite(hdr, (size_t)hl);
			owrite(s->text, s->len);
			owrite("\n", 1);
			frames += s->nframes;
		}
		oflush();
		if (out != stdout && fclose(out)) {
			fprintf(stderr, "gen-perfscript: write: %s\n",
				strerror(errno));
			return 1;
		} else if (out == stdout && fflush(stdout)) {
			return 1;
		}
		fprintf(stderr,
			"gen-perfscript: %llu samples, %llu distinct stacks "
			"(of %llu), %u functions, mean depth %.1f, %.1f MB\n",
			nsamples, distinct, nstacks, nfuncs,
			nsamples ? (double)frames / (double)nsamples : 0.0,
			(double)out_bytes / 1e6);
		free(seen);
	}
	for (unsigned long long i = 0; i < nstacks; i++)
		free(stacks[i].text);
	for (uint32_t i = 0; i < nfuncs; i++) {
		free(funcs[i].name);
		free(funcs[i].callees);
	}
	for (int d = 0; d < ND; d++)
		free(by_dso[d]);
	free(funcs);
	free(stacks);
	free(rank);
	free(cdf);
	free(name_set);
	free(b.s);
	return 0;
}
