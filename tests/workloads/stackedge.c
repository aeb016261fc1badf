/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: threads that an in-process profiler's SIGPROF handler must not
 * disturb.  Output is deterministic, the same with and without an agent.
 *
 *   stackedge edge       a thread burns CPU about 1 KiB above the end of
 *                        its stack (a guard page below): a handler or a
 *                        kernel signal frame on that stack faults
 *   stackedge edge-alt   the same with the program's own alternate stack
 *                        and a SIGSEGV handler on it that siglongjmps out
 *                        (as language runtimes catch stack overflows);
 *                        prints how many faults it caught
 *   stackedge longjmp    a thread burns CPU with its frame pointer set to
 *                        a PROT_NONE page inside its own stack, so that a
 *                        sampler following it faults; the program's
 *                        SIGSEGV handler siglongjmps out of that fault
 *                        and the program goes on; it must still exit
 */
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK_SIZE (256 * 1024)
#define GUARD 4096
#define MARGIN 1024
#define ITERS 400000000ul

static char *stack_lo;			/* lowest usable byte of the thread stack */
static __thread sigjmp_buf env;
static __thread volatile int jump_ok;
static volatile sig_atomic_t faults;
static const char *mode;

/* A tight loop: no call, almost no stack. */
__attribute__((noinline)) static void edge_burn(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i;
}

/* Recurses by frames of ~256 bytes until MARGIN above the stack's end. */
__attribute__((noinline)) static void descend(unsigned long n)
{
	volatile char pad[192];
	char *sp = (char *)__builtin_frame_address(0);

	pad[0] = 0;
	if (sp - stack_lo > MARGIN + 512)
		descend(n + pad[0]);
	else
		edge_burn(ITERS / 4);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	faults++;
	if (jump_ok)
		siglongjmp(env, 1);
	signal(sig, SIG_DFL);
}

static void host_altstack(void)
{
	stack_t ss = { .ss_size = 64 * 1024, .ss_flags = 0 };

	ss.ss_sp = malloc(ss.ss_size);
	if (!ss.ss_sp || sigaltstack(&ss, NULL)) {
		perror("sigaltstack");
		exit(1);
	}
}

/* rdi: the frame pointer to burn with, rsi: iterations.  No CFI on
 * purpose: an unwinder can only follow the frame pointer. */
void burn_badfp(void *fp, unsigned long n);
#if defined(__x86_64__)
__asm__(".text\n"
	".globl burn_badfp\n"
	".type burn_badfp,@function\n"
	"burn_badfp:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	"1:	dec %rsi\n"
	"	jnz 1b\n"
	"	pop %rbp\n"
	"	ret\n"
	".size burn_badfp, .-burn_badfp\n");
#endif

static void *thread_fn(void *arg)
{
	if (!strcmp(mode, "edge-alt"))
		host_altstack();
	if (!strcmp(mode, "edge") || !strcmp(mode, "edge-alt")) {
		for (volatile int r = 0; r < 4; r++) {
			jump_ok = 1;
			if (!sigsetjmp(env, 1))
				descend(0);
			jump_ok = 0;
		}
		return NULL;
	}
#if defined(__x86_64__)
	{
		/* A page of this frame, above every frame below it. */
		char area[3 * 4096];
		char *page = (char *)(((uintptr_t)area + 4095) & ~(uintptr_t)4095);

		host_altstack();
		memset(area, 0, sizeof(area));
		if (mprotect(page, 4096, PROT_NONE)) {
			perror("mprotect");
			exit(1);
		}
		for (volatile int r = 0; r < 20; r++) {
			jump_ok = 1;
			if (!sigsetjmp(env, 1))
				burn_badfp(page + 64, ITERS / 20);
			jump_ok = 0;
		}
		mprotect(page, 4096, PROT_READ | PROT_WRITE);
		__asm__ volatile("" ::"r"(area) : "memory");
	}
#endif
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_attr_t a;
	pthread_t t;
	char *m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || (strcmp(argv[1], "edge") && strcmp(argv[1], "edge-alt") &&
			 strcmp(argv[1], "longjmp"))) {
		fprintf(stderr, "usage: stackedge edge|edge-alt|longjmp\n");
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "edge")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
	}
	/* The thread's stack, with a guard page right below it. */
	m = mmap(NULL, STACK_SIZE + GUARD, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	mprotect(m, GUARD, PROT_NONE);
	stack_lo = m + GUARD;
	pthread_attr_init(&a);
	pthread_attr_setstack(&a, stack_lo, STACK_SIZE);
	if (pthread_create(&t, &a, thread_fn, NULL))
		return 1;
	pthread_join(t, NULL);
	if (!strcmp(mode, "edge-alt"))
		printf("%s: %d faults caught\n", mode, (int)faults);
	printf("%s: done\n", mode);
	return 0;
}
