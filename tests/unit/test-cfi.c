/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the in-process unwinder (src/unwind/cfi*.c), on this very
 * process: tables of the loaded modules, the rules of hand-written CFI,
 * call chains interrupted by SIGPROF and unwound from the handler
 * (chain_d -> chain_c -> cfi_asm_call -> chain_b -> chain_a -> run_chain,
 * built without frame pointers in cfi-chain.c, and the same chain with
 * frame pointers from cfi-chain-fp.c), unwinding through the signal
 * trampoline, 100k garbage register sets over a guarded stack buffer,
 * refresh with dlopen/dlclose while per-thread timers unwind on other
 * threads, the cost of one unwind of about 25 frames, and the .eh_frame
 * parser on mutated and truncated copies of this executable's tables.
 *
 * The pcs are named with the symbolizer over /proc/self/maps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/*
 * The unwinder's parser, for its statics (test_parse_mutated); its
 * definitions take the place of kiln_core's copy of cfi-parse.c at link
 * time.  The table sets, the walk and the CFA programs are kiln_core's
 * own (cfi.c, cfi-walk.c, cfi-cfa.c), as libkiln.so has them.
 */
#include "../../src/unwind/cfi-parse.c"
#include "symbolize/symbolize.h"
#include "cfi-chain.h"

#define MAXF 64

static struct kiln_cfi *cfi;
static struct kiln_sym *sym;
static uint64_t main_lo, main_hi;

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t cap = 1 << 16, n = 0, k;
	char *buf = malloc(cap);

	assert_non_null(f);
	assert_non_null(buf);
	while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The bounds of the calling thread's stack. */
static void stack_bounds(uint64_t *lo, uint64_t *hi)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	*lo = (uint64_t)(uintptr_t)addr;
	*hi = *lo + size;
}

static int setup(void **state)
{
	size_t len;
	char *maps;

	cfi = kiln_cfi_new();
	assert_non_null(cfi);
	assert_int_equal(kiln_cfi_refresh(cfi), 0);
	sym = kiln_sym_new(NULL);
	assert_non_null(sym);
	maps = read_all("/proc/self/maps", &len);
	assert_int_equal(kiln_sym_add_maps(sym, maps, len), 0);
	free(maps);
	stack_bounds(&main_lo, &main_hi);
	return 0;
}

static int teardown(void **state)
{
	kiln_cfi_free(cfi);
	kiln_sym_free(sym);
	return 0;
}

/* The (outermost) function name of pcs[i], "?" if none. */
static const char *name_at(const uint64_t *pcs, int i)
{
	struct kiln_sym_info info;

	if (kiln_sym_lookup(sym, i ? pcs[i] - 1 : pcs[i], &info) ||
	    !info.nframes)
		return "?";
	return info.frames[info.nframes - 1].name;
}

static void print_stack(const uint64_t *pcs, int n)
{
	for (int i = 0; i < n; i++)
		print_message("  #%d %#llx %s\n", i, (unsigned long long)pcs[i],
			      name_at(pcs, i));
}

/* Asserts that pcs[from..] name the functions in want, in order. */
static void assert_chain(const uint64_t *pcs, int n, int from,
			 const char *const *want, int nwant)
{
	bool ok = from + nwant <= n;

	for (int i = 0; ok && i < nwant; i++)
		ok = !strcmp(name_at(pcs, from + i), want[i]);
	if (!ok) {
		print_stack(pcs, n);
		fail_msg("stack does not hold the chain from #%d (%s ...)",
			 from, want[0]);
	}
}

static void test_tables(void **state)
{
	struct kiln_cfi_stats st;
	struct kiln_cfi_rule rule;
	int dummy;

	kiln_cfi_stats(cfi, &st);
	/* The test, libc, libdw, libelf, ld.so, vdso at least. */
	assert_true(st.modules >= 5);
	assert_true(st.modules_cfi >= 5);
	assert_true(st.rows > 10000);
	assert_int_equal(st.generation, 1);
	print_message("tables: %zu modules (%zu with CFI), %zu rows, %zu KiB, "
		      "%zu FDEs skipped\n", st.modules, st.modules_cfi, st.rows,
		      st.bytes >> 10, st.fdes_skipped);

	/* What a first scan costs. */
	{
		struct kiln_cfi *c = kiln_cfi_new();
		struct timespec t0, t1;

		assert_non_null(c);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(kiln_cfi_refresh(c), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		print_message("first refresh: %.2f ms\n",
			      (t1.tv_sec - t0.tv_sec) * 1e3 +
			      (t1.tv_nsec - t0.tv_nsec) / 1e6);
		kiln_cfi_free(c);
	}

	/* Nothing was loaded: no new set. */
	assert_int_equal(kiln_cfi_refresh(cfi), 0);
	kiln_cfi_stats(cfi, &st);
	assert_int_equal(st.generation, 1);

	/* Code is known, data is not. */
	assert_int_equal(kiln_cfi_lookup(cfi, (uint64_t)(uintptr_t)&dummy, &rule),
			 -ENOENT);
	assert_int_equal(kiln_cfi_lookup(cfi, (uint64_t)(uintptr_t)chain_d, &rule), 0);
	/* chain_d's first instruction: CFA = rsp + 8, RA at CFA - 8. */
	assert_int_equal(rule.kind, KILN_CFI_RULE);
	assert_int_equal(rule.cfa_reg, KILN_CFI_REG_RSP);
	assert_int_equal(rule.cfa_off, 8);
	assert_int_equal(rule.ra_off, -8);
	/* libc's too. */
	assert_int_equal(kiln_cfi_lookup(cfi, (uint64_t)(uintptr_t)getpid, &rule), 0);
	assert_int_equal(rule.kind, KILN_CFI_RULE);
}

#if defined(__x86_64__)
static void lookup(const void *pc, struct kiln_cfi_rule *rule)
{
	assert_int_equal(kiln_cfi_lookup(cfi, (uint64_t)(uintptr_t)pc, rule), 0);
}

static void test_rules(void **state)
{
	struct kiln_cfi_rule r;

	lookup(cfi_asm_rules, &r);		/* CIE defaults */
	assert_int_equal(r.kind, KILN_CFI_RULE);
	assert_int_equal(r.cfa_reg, KILN_CFI_REG_RSP);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(r.ra_off, -8);
	assert_int_equal(r.fp_off, 0);
	assert_false(r.fp_lost);

	lookup(cfi_asm_r1, &r);			/* push %rbp */
	assert_int_equal(r.cfa_off, 16);
	assert_int_equal(r.fp_off, -16);

	lookup(cfi_asm_r2, &r);			/* mov %rsp, %rbp */
	assert_int_equal(r.kind, KILN_CFI_RULE);
	assert_int_equal(r.cfa_reg, KILN_CFI_REG_RBP);
	assert_int_equal(r.cfa_off, 16);
	assert_int_equal(r.fp_off, -16);

	lookup(cfi_asm_r3, &r);			/* leave; restore %rbp */
	assert_int_equal(r.cfa_reg, KILN_CFI_REG_RSP);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(r.fp_off, 0);

	lookup(cfi_asm_r4, &r);			/* restore_state */
	assert_int_equal(r.kind, KILN_CFI_RULE);
	assert_int_equal(r.cfa_reg, KILN_CFI_REG_RBP);
	assert_int_equal(r.cfa_off, 16);
	assert_int_equal(r.fp_off, -16);

	lookup(cfi_asm_r5, &r);			/* the .plt expression */
	assert_int_equal(r.kind, KILN_CFI_PLT);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(r.plt_at, 11);

	lookup(cfi_asm_r6, &r);			/* another expression */
	assert_int_equal(r.kind, KILN_CFI_UNKNOWN);

	lookup(cfi_asm_r7, &r);			/* rbp by expression */
	assert_int_equal(r.kind, KILN_CFI_RULE);
	assert_int_equal(r.cfa_off, 40);
	assert_true(r.fp_lost);

	lookup(cfi_asm_r8, &r);			/* RA undefined */
	assert_int_equal(r.kind, KILN_CFI_OUTERMOST);

	lookup(cfi_asm_gap, &r);		/* no FDE */
	assert_int_equal(r.kind, KILN_CFI_NONE);

	lookup(cfi_asm_sigframe, &r);
	assert_int_equal(r.kind, KILN_CFI_SIGNAL);
}

/* ---- call chains interrupted by SIGPROF ---- */

enum { MODE_CFI, MODE_FP_ONLY, MODE_SELF };
static volatile int chain_stop, sig_mode, sig_n;
static uint64_t sig_pcs[MAXF];

/* Unwinds from here: through the handler and the signal trampoline. */
static __attribute__((noinline)) int unwind_here(uint64_t *pcs, int max)
{
	ucontext_t uc;
	int n;

	getcontext(&uc);
	n = kiln_cfi_unwind(cfi, &uc, main_lo, main_hi, pcs, max);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
	return n;
}

static void on_chain_prof(int sig, siginfo_t *si, void *ctx)
{
	int saved = errno;
	const ucontext_t *uc = ctx;

	if (!chain_stop) {
		if (sig_mode == MODE_SELF) {
			sig_n = unwind_here(sig_pcs, MAXF);
		} else if (sig_mode == MODE_FP_ONLY) {
			struct kiln_cfi_regs r = {
				.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
				.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
				.fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP],
			};
			sig_n = kiln_cfi_unwind_regs(cfi, &r, main_lo, main_hi,
						     KILN_CFI_FP_ONLY, sig_pcs,
						     MAXF);
		} else {
			sig_n = kiln_cfi_unwind(cfi, ctx, main_lo, main_hi,
						sig_pcs, MAXF);
		}
		chain_stop = 1;
	}
	errno = saved;
}

static __attribute__((noinline)) int run_chain(int (*a)(volatile int *))
{
	struct itimerval on = { { 0, 1000 }, { 0, 1000 } }, off = { 0 };
	int r;

	chain_stop = 0;
	sig_n = 0;
	assert_int_equal(setitimer(ITIMER_PROF, &on, NULL), 0);
	r = a(&chain_stop);
	setitimer(ITIMER_PROF, &off, NULL);
	return r + 1;
}

/*
 * Runs chain a under a 1 ms CPU timer until the handler's sample lands in
 * the leaf (`leaf` named at pcs[at]): returns the number of pcs.
 */
static int capture(int mode, int (*a)(volatile int *), const char *leaf,
		   int at)
{
	struct sigaction sa = { .sa_sigaction = on_chain_prof,
				.sa_flags = SA_SIGINFO | SA_RESTART }, old;

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
	sig_mode = mode;
	for (int tries = 0; tries < 50; tries++) {
		run_chain(a);
		if (sig_n > at && !strcmp(name_at(sig_pcs, at), leaf))
			break;
		/* The tick landed before the leaf: again. */
	}
	sigaction(SIGPROF, &old, NULL);
	if (sig_n <= at || strcmp(name_at(sig_pcs, at), leaf)) {
		print_stack(sig_pcs, sig_n);
		fail_msg("no sample in %s", leaf);
	}
	return sig_n;
}

static const char *const omitfp_chain[] = {
	"chain_d", "chain_c", "cfi_asm_call", "chain_b", "chain_a", "run_chain",
};
static const char *const fp_chain[] = {
	"fp_chain_d", "fp_chain_c", "fp_chain_b", "fp_chain_a", "run_chain",
};

/* No frame pointers, garbage in rbp below cfi_asm_call: CFI does it. */
static void test_chain_cfi(void **state)
{
	int n = capture(MODE_CFI, chain_a, "chain_d", 0);

	assert_chain(sig_pcs, n, 0, omitfp_chain, 6);
	/* ... on to main and beyond. */
	assert_true(n > 8);
}

/* Frame pointers only on the same chain: it must not get through. */
static void test_chain_omitfp_needs_cfi(void **state)
{
	int n = capture(MODE_FP_ONLY, chain_a, "chain_d", 0);

	for (int i = 1; i < n; i++)
		if (!strcmp(name_at(sig_pcs, i), "chain_b"))
			fail_msg("frame pointers alone found chain_b at #%d", i);
}

/* The frame-pointer chain, walked by frame pointers and by CFI. */
static void test_chain_fp(void **state)
{
	int n = capture(MODE_FP_ONLY, fp_chain_a, "fp_chain_d", 0);

	assert_chain(sig_pcs, n, 0, fp_chain, 5);
	n = capture(MODE_CFI, fp_chain_a, "fp_chain_d", 0);
	assert_chain(sig_pcs, n, 0, fp_chain, 5);
}

/* From inside the handler: through the kernel's signal frame. */
static void test_through_signal_frame(void **state)
{
	struct kiln_cfi_rule r;
	int n = capture(MODE_SELF, chain_a, "unwind_here", 0), at = -1;

	for (int i = 0; i < n && at < 0; i++)
		if (!strcmp(name_at(sig_pcs, i), "chain_d"))
			at = i;
	if (at < 3) {
		print_stack(sig_pcs, n);
		fail_msg("chain_d not found after the handler");
	}
	assert_string_equal(name_at(sig_pcs, 1), "on_chain_prof");
	/* at - 1: __restore_rt, whose FDE is a signal frame ... */
	assert_int_equal(kiln_cfi_lookup(cfi, sig_pcs[at - 1] - 1, &r), 0);
	assert_int_equal(r.kind, KILN_CFI_SIGNAL);
	/* ... which gives back the interrupted pc itself. */
	assert_chain(sig_pcs, n, at, omitfp_chain, 6);
}

/* ---- garbage registers ---- */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dull;
}

/* Whether the word v is in buf[0, words). */
static bool on_stack(const uint64_t *buf, size_t words, uint64_t v)
{
	size_t i;

	for (i = 0; i < words; i++)
		if (buf[i] == v)
			return true;
	return false;
}

static void test_garbage(void **state)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 16 * page;
	/* The buffer between two inaccessible pages: a stray read faults. */
	uint8_t *map = mmap(NULL, size + 2 * page, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *buf, lo, hi, pcs[MAXF];
	const uint64_t code[] = {
		(uint64_t)(uintptr_t)chain_c, (uint64_t)(uintptr_t)chain_deep,
		(uint64_t)(uintptr_t)fp_chain_b, (uint64_t)(uintptr_t)getpid,
		(uint64_t)(uintptr_t)memcpy, (uint64_t)(uintptr_t)cfi_asm_rules,
		(uint64_t)(uintptr_t)kiln_cfi_refresh,
	};
	long deep = 0, unknown = 0;

	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, size, PROT_READ | PROT_WRITE), 0);
	buf = (uint64_t *)(map + page);
	lo = (uint64_t)(uintptr_t)buf;
	hi = lo + size;

	for (int iter = 0; iter < 100000; iter++) {
		ucontext_t uc;
		uint64_t *g;
		int n;

		/* Refill part of the stack: pointers into it, code, noise. */
		for (int k = 0; k < 64; k++) {
			uint64_t v, w = rnd() % (size / 8);

			switch (rnd() % 4) {
			case 0: v = lo + (rnd() % size); break;
			case 1: v = lo + (rnd() % (size / 8)) * 8; break;
			case 2: v = code[rnd() % 7] + rnd() % 256; break;
			default: v = rnd(); break;
			}
			buf[w] = v;
		}
		memset(&uc, 0, sizeof(uc));
		g = (uint64_t *)uc.uc_mcontext.gregs;
		g[REG_RIP] = rnd() % 3 ? code[rnd() % 7] + rnd() % 512 : rnd();
		g[REG_RSP] = rnd() % 4 ? lo + rnd() % (size + 64) - 32 : rnd();
		g[REG_RBP] = rnd() % 4 ? lo + rnd() % (size + 64) - 32 : rnd();
		n = kiln_cfi_unwind(cfi, &uc, lo, hi, pcs, MAXF);
		assert_true(n >= 1 && n <= MAXF);
		assert_true(pcs[0] == g[REG_RIP]);
		for (int i = 1; i < n; i++) {
			struct kiln_cfi_rule r;

			/* A caller in known code, or in code no module holds
			 * (JIT code: followed by frame pointers), read from
			 * the stack, never made up. */
			if (kiln_cfi_lookup(cfi, pcs[i], &r) == 0)
				continue;
			assert_true(on_stack(buf, size / 8, pcs[i]));
			unknown++;
		}
		deep += n >= 3;
	}
	print_message("garbage: %ld of 100000 walks went 3 frames deep, %ld "
		      "callers in no module\n", deep, unknown);
	assert_true(deep > 0);	/* the walker did walk */
	munmap(map, size + 2 * page);
}

/* ---- code no module holds (JIT code) ---- */

/*
 * A stack of frame records whose return addresses lie in no module, as
 * V8's compiled code leaves it: followed by its frame pointers to the
 * outermost (saved rbp 0), and no further than a record whose saved rbp
 * points down the stack.  Before, the walk ended at the first caller in
 * no module.
 */
static void test_unknown_code(void **state)
{
	uint64_t stack[64] = { 0 }, pcs[MAXF];
	uint64_t lo = (uint64_t)(uintptr_t)stack, hi = lo + sizeof(stack);
	/* Unmapped here: no module of the set holds them. */
	const uint64_t jit = 0x7e0000001000ull;
	ucontext_t uc;
	uint64_t *g;
	int n;

	(void)state;
	/* Records at words 8, 20, 40: [saved rbp, return address]. */
	stack[8] = lo + 20 * 8;
	stack[9] = jit + 0x200;
	stack[20] = lo + 40 * 8;
	stack[21] = jit + 0x300;
	stack[40] = 0;
	stack[41] = jit + 0x400;
	memset(&uc, 0, sizeof(uc));
	g = (uint64_t *)uc.uc_mcontext.gregs;
	g[REG_RIP] = jit + 0x100;
	g[REG_RSP] = lo + 4 * 8;
	g[REG_RBP] = lo + 8 * 8;
	n = kiln_cfi_unwind(cfi, &uc, lo, hi, pcs, MAXF);
	assert_int_equal(n, 4);
	assert_true(pcs[0] == jit + 0x100 && pcs[1] == jit + 0x200 &&
		    pcs[2] == jit + 0x300 && pcs[3] == jit + 0x400);
	/* A record whose saved rbp points down the stack ends the walk
	 * before its return address. */
	stack[20] = lo + 10 * 8;
	n = kiln_cfi_unwind(cfi, &uc, lo, hi, pcs, MAXF);
	assert_int_equal(n, 2);
}

/* ---- refresh while other threads unwind ---- */

static atomic_int conc_done;
static atomic_long conc_samples, conc_deep, conc_bad, conc_rounds;
static __thread uint64_t tls_lo, tls_hi;

static void on_conc_prof(int sig, siginfo_t *si, void *ctx)
{
	int saved = errno;
	uint64_t pcs[MAXF];
	int n = kiln_cfi_unwind(cfi, ctx, tls_lo, tls_hi, pcs, MAXF);

	atomic_fetch_add(&conc_samples, 1);
	if (n < 1 || !pcs[n - 1])
		atomic_fetch_add(&conc_bad, 1);
	if (n >= 22)
		atomic_fetch_add(&conc_deep, 1);
	errno = saved;
}

static int conc_spin(void *arg)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < 100000 && !atomic_load(&conc_done); i++)
		x += i;
	return (int)(x & 1);
}

static void *conc_worker(void *arg)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGPROF };
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	timer_t t;

	stack_bounds(&tls_lo, &tls_hi);
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t))
		return (void *)1;
	timer_settime(t, 0, &its, NULL);
	while (!atomic_load(&conc_done)) {
		chain_deep(20, conc_spin, NULL);
		fp_chain_deep(20, conc_spin, NULL);
	}
	timer_delete(t);
	return NULL;
}

static char plugin_path[PATH_MAX + 64];

static void *conc_refresher(void *arg)
{
	(void)arg;
	while (!atomic_load(&conc_done)) {
		void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);

		if (kiln_cfi_refresh(cfi))
			return (void *)1;
		if (h)
			dlclose(h);
		if (kiln_cfi_refresh(cfi))
			return (void *)1;
		atomic_fetch_add(&conc_rounds, 1);
		usleep(500);	/* leave the workers CPU on 2 cores */
	}
	return NULL;
}

static void test_concurrent_refresh(void **state)
{
	struct sigaction sa = { .sa_sigaction = on_conc_prof,
				.sa_flags = SA_SIGINFO | SA_RESTART }, old;
	struct kiln_cfi_stats st0, st;
	pthread_t w[2], r;
	long rounds;
	void *ret;
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(k > 0);
	exe[k] = 0;
	*strrchr(exe, '/') = 0;
	snprintf(plugin_path, sizeof(plugin_path), "%s/workloads/libplugin.so",
		 exe);
	if (access(plugin_path, R_OK))
		snprintf(plugin_path, sizeof(plugin_path), "libBrokenLocale.so.1");
	kiln_cfi_stats(cfi, &st0);

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
	atomic_store(&conc_done, 0);
	atomic_store(&conc_rounds, 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, conc_worker, NULL), 0);
	assert_int_equal(pthread_create(&r, NULL, conc_refresher, NULL), 0);
	/* At least a second, then until enough happened: a loaded machine
	 * gives the workers less CPU time (their timers count it), which
	 * must make the test slower, not fail it. */
	sleep(1);
	while (atomic_load(&conc_samples) < 40 || atomic_load(&conc_rounds) < 10)
		usleep(10000);
	atomic_store(&conc_done, 1);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(w[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(pthread_join(r, &ret), 0);
	assert_null(ret);
	sigaction(SIGPROF, &old, NULL);
	rounds = atomic_load(&conc_rounds);

	kiln_cfi_stats(cfi, &st);
	print_message("concurrent: %ld samples (%ld 22+ frames deep), "
		      "%ld dlopen/dlclose rounds, %llu sets published (%s)\n",
		      atomic_load(&conc_samples), atomic_load(&conc_deep), rounds,
		      (unsigned long long)(st.generation - st0.generation),
		      plugin_path);
	assert_int_equal(atomic_load(&conc_bad), 0);
	assert_true(atomic_load(&conc_samples) >= 20);
	assert_true(atomic_load(&conc_deep) * 2 >= atomic_load(&conc_samples));
	assert_true(rounds >= 10);
	assert_true(st.generation - st0.generation >= 2 * (uint64_t)rounds);
	/* No handler runs now: the next refresh frees what was replaced. */
	dlclose(dlopen(plugin_path, RTLD_NOW));
	assert_int_equal(kiln_cfi_refresh(cfi), 0);
	kiln_cfi_stats(cfi, &st);
	assert_int_equal(st.retired, 0);
}

/* ---- cost of one unwind ---- */

struct bench {
	unsigned flags;
	int n;
	uint64_t pcs[MAXF];
	double ns;
};

/* The registers a getcontext() in the caller's frame saw. */
static void regs_of(const ucontext_t *uc, struct kiln_cfi_regs *r)
{
	r->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	r->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	r->fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
}

static __attribute__((noinline)) int bench_fn(void *arg)
{
	struct bench *b = arg;
	const int rounds = 100000;
	struct timespec t0, t1;
	ucontext_t uc;
	struct kiln_cfi_regs r;

	getcontext(&uc);
	regs_of(&uc, &r);
	/* The thread's own CPU time: other processes on a loaded machine do
	 * not count (a bound on wall time would; see test_speed). */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (int i = 0; i < rounds; i++)
		b->n = kiln_cfi_unwind_regs(cfi, &r, main_lo, main_hi, b->flags,
					    b->pcs, MAXF);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	b->ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		rounds;
	__asm__ volatile("" ::: "memory");
	return 0;
}

static int count_named(const uint64_t *pcs, int n, const char *name)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += !strcmp(name_at(pcs, i), name);
	return k;
}

/*
 * Lazy tables: only the program's own rows at first; a lookup in libc
 * asks for libc's, which the next refresh builds (whole: a small
 * library; cfi-parse.c WHOLE_FDES).
 */
static void count_wake(void *arg)
{
	(*(int *)arg)++;
}

static void test_lazy(void **state)
{
	struct kiln_cfi *c = kiln_cfi_new();
	int wakes = 0;
	struct kiln_cfi_stats st;
	struct kiln_cfi_rule rule;
	uint64_t pc = (uint64_t)(uintptr_t)qsort + 1;
	size_t rows0;

	assert_non_null(c);
	kiln_cfi_set_lazy(c, true, count_wake, &wakes);
	assert_int_equal(kiln_cfi_refresh(c), 0);
	kiln_cfi_stats(c, &st);
	assert_true(st.modules > 3);
	assert_int_equal(st.modules_cfi, 1);
	rows0 = st.rows;
	assert_false(kiln_cfi_wanted(c));
	/* No rows yet: no rule, and the module is asked for. */
	assert_int_equal(kiln_cfi_lookup(c, pc, &rule), 0);
	assert_int_equal(rule.kind, KILN_CFI_NONE);
	assert_true(kiln_cfi_wanted(c));
	/* The owner is woken once, not at every lookup. */
	assert_int_equal(wakes, 1);
	assert_int_equal(kiln_cfi_lookup(c, pc, &rule), 0);
	assert_int_equal(wakes, 1);
	assert_int_equal(kiln_cfi_refresh(c), 0);
	assert_false(kiln_cfi_wanted(c));
	kiln_cfi_stats(c, &st);
	assert_int_equal(st.modules_cfi, 2);
	/* libc (under 8192 FDEs) built whole at its first want: a deep
	 * stack through it needs no round per function.  Before: only the
	 * FDE that was needed (fdes_built 1). */
	assert_true(st.fdes_built > 1000);
	assert_true(st.rows > rows0 + 1000);
	assert_int_equal(kiln_cfi_lookup(c, pc, &rule), 0);
	assert_int_equal(rule.kind, KILN_CFI_RULE);
	/* Another function of the library: there already, nothing asked. */
	assert_int_equal(kiln_cfi_lookup(c, (uint64_t)(uintptr_t)bsearch + 1,
					 &rule), 0);
	assert_int_equal(rule.kind, KILN_CFI_RULE);
	assert_false(kiln_cfi_wanted(c));
	assert_int_equal(wakes, 1);
	/* The rows are the eager tables' rows. */
	{
		struct kiln_cfi *e = kiln_cfi_new();
		struct kiln_cfi_rule want;

		assert_non_null(e);
		assert_int_equal(kiln_cfi_refresh(e), 0);
		assert_int_equal(kiln_cfi_lookup(e, pc, &want), 0);
		assert_int_equal(kiln_cfi_lookup(c, pc, &rule), 0);
		assert_memory_equal(&rule, &want, sizeof(rule));
		kiln_cfi_free(e);
	}
	assert_false(kiln_cfi_wanted(c));
	kiln_cfi_free(c);
}

/* Unwinds from its own frame: uncached, then twice through the cache. */
static __attribute__((noinline)) void cached_fn(struct kiln_cfi_cache *cache,
						uint64_t *ref, int *nref,
						uint64_t *got, int *ngot)
{
	ucontext_t uc;
	struct kiln_cfi_regs r;

	getcontext(&uc);
	regs_of(&uc, &r);
	*nref = kiln_cfi_unwind_regs(cfi, &r, main_lo, main_hi, 0, ref, MAXF);
	ngot[0] = kiln_cfi_unwind_cached(cfi, cache, &r, main_lo, main_hi, got, MAXF);
	ngot[1] = kiln_cfi_unwind_cached(cfi, cache, &r, main_lo, main_hi,
					 got + MAXF, MAXF);
	__asm__ volatile("" ::: "memory");
}

/*
 * The cached unwinder gives the same stacks as the plain one, the second
 * time from its cache; entries of another table set are forgotten.
 */
static void test_cached(void **state)
{
	static struct kiln_cfi_cache cache;
	uint64_t ref[MAXF], got[2 * MAXF];
	int nref, ngot[2], i, used = 0;

	cached_fn(&cache, ref, &nref, got, ngot);
	assert_true(nref > 2);
	assert_int_equal(ngot[0], nref);
	assert_int_equal(ngot[1], nref);
	assert_memory_equal(got, ref, (size_t)nref * sizeof(*ref));
	assert_memory_equal(got + MAXF, ref, (size_t)nref * sizeof(*ref));
	assert_true(cache.gen != 0);
	for (i = 0; i < KILN_CFI_CACHE; i++)
		if (cache.e[i].pc && cache.e[i].row)
			used++;
	assert_true(used >= 2);
	/* Entries of an older set (generation) go, rows are looked up anew. */
	for (i = 0; i < KILN_CFI_CACHE; i++)
		cache.e[i].row = NULL;
	cache.gen--;
	cached_fn(&cache, ref, &nref, got, ngot);
	assert_int_equal(ngot[0], nref);
	assert_memory_equal(got, ref, (size_t)nref * sizeof(*ref));
	for (i = 0, used = 0; i < KILN_CFI_CACHE; i++)
		if (cache.e[i].pc && cache.e[i].row)
			used++;
	assert_true(used >= 2);
}

/*
 * Lazy tables that the cached unwinder builds itself (the heap hooks'
 * mode): from a comparator called by libc's qsort, the very first unwind
 * through libc is the eager tables' stack, and only the FDEs it crossed
 * were built.
 */
static struct kiln_cfi *now_cfi;
static struct kiln_cfi_cache now_cache;
static uint64_t now_ref[MAXF], now_got[MAXF];
static int now_nref, now_ngot;

static __attribute__((noinline)) int now_cmp(const void *a, const void *b)
{
	if (!now_nref) {
		ucontext_t uc;
		struct kiln_cfi_regs r;

		getcontext(&uc);
		regs_of(&uc, &r);
		now_nref = kiln_cfi_unwind_regs(cfi, &r, main_lo, main_hi, 0,
						now_ref, MAXF);
		now_ngot = kiln_cfi_unwind_cached(now_cfi, &now_cache, &r,
						  main_lo, main_hi, now_got, MAXF);
	}
	return *(const int *)a - *(const int *)b;
}

static void test_build_now(void **state)
{
	int v[16], i, in_libc = 0;
	struct kiln_cfi_stats st, eager;

	now_cfi = kiln_cfi_new();
	assert_non_null(now_cfi);
	kiln_cfi_set_lazy(now_cfi, true, NULL, NULL);
	kiln_cfi_set_build_now(now_cfi, true);
	assert_int_equal(kiln_cfi_refresh(now_cfi), 0);
	for (i = 0; i < 16; i++)
		v[i] = (i * 7) % 16;
	qsort(v, 16, sizeof(v[0]), now_cmp);
	assert_true(now_nref > 3);
	assert_int_equal(now_ngot, now_nref);
	assert_memory_equal(now_got, now_ref, (size_t)now_nref * sizeof(now_ref[0]));
	/* The stack crossed libc (qsort's frames, without frame pointers). */
	for (i = 0; i < now_nref; i++) {
		Dl_info di;

		if (dladdr((void *)(uintptr_t)(now_got[i] - 1), &di) &&
		    di.dli_fname && strstr(di.dli_fname, "libc.so"))
			in_libc++;
	}
	assert_true(in_libc >= 1);
	kiln_cfi_stats(now_cfi, &st);
	kiln_cfi_stats(cfi, &eager);
	assert_true(st.fdes_built >= 1 && st.fdes_built < 64);
	assert_true(st.rows < eager.rows);
	/* Nothing left for a refresh to do. */
	assert_false(kiln_cfi_wanted(now_cfi));
	kiln_cfi_free(now_cfi);
}

/*
 * The unwinder's cost, printed (bench/ measures speed); the bound, 100
 * times what it takes here in the thread's own CPU time, only catches a
 * walk gone quadratic or a lookup that scans.
 */
static void test_speed(void **state)
{
	struct bench b = { 0 };

	chain_deep(20, bench_fn, &b);
	print_message("unwind, CFI, no frame pointers: %d frames in %.0f ns "
		      "(%.0f ns/frame)\n", b.n, b.ns, b.ns / b.n);
	assert_int_equal(count_named(b.pcs, b.n, "chain_deep"), 21);
	assert_true(b.ns < 50000);

	fp_chain_deep(20, bench_fn, &b);
	print_message("unwind, CFI, frame pointers: %d frames in %.0f ns\n",
		      b.n, b.ns);
	assert_int_equal(count_named(b.pcs, b.n, "fp_chain_deep"), 21);

	b.flags = KILN_CFI_FP_ONLY;
	fp_chain_deep(20, bench_fn, &b);
	print_message("unwind, frame pointers only: %d frames in %.0f ns\n",
		      b.n, b.ns);
	assert_int_equal(count_named(b.pcs, b.n, "fp_chain_deep"), 21);
}
#endif /* __x86_64__ */

/* ---- the parser on damaged tables ---- */

struct seg_find {
	const void *fn;
	const ElfW(Phdr) *hdr, *load;
	uint64_t bias;
};

/* Finds the object holding fn, its PT_GNU_EH_FRAME and the PT_LOAD of it. */
static int find_seg(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct seg_find *f = arg;
	uint64_t at = (uint64_t)(uintptr_t)f->fn;
	bool mine = false;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && at >= info->dlpi_addr + ph->p_vaddr &&
		    at - info->dlpi_addr - ph->p_vaddr < ph->p_memsz)
			mine = true;
		if (ph->p_type == PT_GNU_EH_FRAME)
			f->hdr = ph;
	}
	if (!mine)
		return 0;
	f->bias = info->dlpi_addr;
	f->load = load_of(info, info->dlpi_addr + f->hdr->p_vaddr);
	return 1;
}

/*
 * A plain copy of module memory: the segment also holds .rodata, whose
 * ASan redzones must not count as overflows here.
 */
__attribute__((no_sanitize_address)) static void copy_seg(uint8_t *to,
							   uint64_t from,
							   size_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)from;

	for (size_t i = 0; i < n; i++)
		to[i] = p[i];
}

/*
 * Copies the segment holding this executable's .eh_frame_hdr and
 * .eh_frame into a heap buffer of exactly its size (ASan sees any stray
 * read), damages it, and parses it as a module: never a fault, rows only
 * where they were.
 */
static void test_parse_mutated(void **state)
{
	struct seg_find f = { .fn = (const void *)chain_c };
	ElfW(Phdr) ph[2];
	struct dl_phdr_info info;
	struct cfi_mod mod;
	uint8_t *copy;
	size_t size, intact = 0;

	assert_int_equal(dl_iterate_phdr(find_seg, &f), 1);
	assert_non_null(f.hdr);
	assert_non_null(f.load);
	size = f.load->p_filesz;
	copy = malloc(size);
	assert_non_null(copy);

	/* The copy sits at bias + p_vaddr as the original does. */
	memset(&info, 0, sizeof(info));
	ph[0] = *f.load;
	ph[1] = *f.hdr;
	info.dlpi_addr = (uint64_t)(uintptr_t)copy - f.load->p_vaddr;
	info.dlpi_phdr = ph;
	info.dlpi_phnum = 2;
	for (int iter = 0; iter < 300; iter++) {
		copy_seg(copy, f.bias + f.load->p_vaddr, size);
		ph[0].p_filesz = size;
		if (iter == 0) {
			/* intact: the same rows as the live tables */
		} else if (iter % 3 == 0) {
			/* truncated segment */
			ph[0].p_filesz = rnd() % size;
		} else {
			/* damaged bytes, mostly in .eh_frame_hdr/.eh_frame */
			uint64_t from = f.hdr->p_vaddr - f.load->p_vaddr;

			for (int k = 0; k < 1 + (int)(rnd() % 32); k++) {
				uint64_t at = rnd() % 4 ? from + rnd() % (size - from)
							: rnd() % size;
				copy[at] = (uint8_t)rnd();
			}
		}
		memset(&mod, 0, sizeof(mod));
		assert_true(kcfi_parse_module(&info, &mod));
		if (iter == 0)
			intact = mod.nrows;
		for (size_t i = 1; i < mod.nrows; i++)
			assert_true(mod.rows[i - 1].pc < mod.rows[i].pc);
		for (size_t i = 0; i + 1 < mod.nindex && mod.nrows; i++)
			assert_true(mod.index[i] <= mod.index[i + 1] &&
				    mod.index[i + 1] <= mod.nrows);
		free(mod.rows);
		free(mod.index);
	}
	print_message("parse: %zu rows from the intact copy\n", intact);
	assert_true(intact > 1000);
	free(copy);
}

/* An empty table set knows no code: the walk stops after pcs[0]. */
static void test_empty(void **state)
{
	struct kiln_cfi *c = kiln_cfi_new();
	struct kiln_cfi_regs r = { (uint64_t)(uintptr_t)chain_a,
				   main_hi - 64, main_hi - 32 };
	uint64_t pcs[4];

	assert_non_null(c);
	assert_int_equal(kiln_cfi_unwind_regs(c, &r, main_lo, main_hi, 0, pcs, 4),
			 1);
	assert_int_equal(pcs[0], r.pc);
	assert_int_equal(kiln_cfi_unwind_regs(c, &r, main_lo, main_hi, 0, pcs, 0),
			 0);
	{
		/* A frame record that looks whole (saved fp 0: the
		 * outermost; a return address): still one frame, not a
		 * caller followed by its frame pointer (which read the
		 * empty set's fields: a crash in the host, depending on
		 * what its stack held; seen once under UBSan). */
		uint64_t stk[8] = { 0 };
		struct kiln_cfi_regs f = { (uint64_t)(uintptr_t)chain_a,
					   (uint64_t)(uintptr_t)&stk[0],
					   (uint64_t)(uintptr_t)&stk[2] };

		stk[3] = (uint64_t)(uintptr_t)chain_a + 16;
		assert_int_equal(kiln_cfi_unwind_regs(c, &f, (uint64_t)(uintptr_t)stk,
						      (uint64_t)(uintptr_t)(stk + 8),
						      0, pcs, 4), 1);
	}
	kiln_cfi_free(c);
	kiln_cfi_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_empty),
#if defined(__x86_64__)
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_chain_cfi),
		cmocka_unit_test(test_chain_omitfp_needs_cfi),
		cmocka_unit_test(test_chain_fp),
		cmocka_unit_test(test_through_signal_frame),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_unknown_code),
		cmocka_unit_test(test_concurrent_refresh),
		cmocka_unit_test(test_cached),
		cmocka_unit_test(test_lazy),
		cmocka_unit_test(test_build_now),
		cmocka_unit_test(test_speed),
		cmocka_unit_test(test_parse_mutated),
#endif
	};

	/*
	 * KILN_TEST_FILTER=test_concurrent_refresh runs one test (under TSan,
	 * whose deferred signals never reach a loop without calls).
	 */
	if (getenv("KILN_TEST_FILTER"))
		cmocka_set_test_filter(getenv("KILN_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
