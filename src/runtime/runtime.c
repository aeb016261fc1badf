/*
 * The one owner of libkiln.so's process-wide life (runtime stage): its
 * only constructor, its only destructor and its only pthread_atfork
 * triple; the variables are parsed by env.c; _exit and exec, which pass
 * no destructor, are interposed by process.c, which calls the parts'
 * hooks in the order it states.  The parts of the runtime
 * (CPU sampler, heap hooks and trace, heap dumps, HTTP server) expose
 * hooks (runtime.h) and never register their own, so the order below is the order, whatever the link order of
 * the files.  See docs/design.md.
 */
#include <pthread.h>
#include <stdlib.h>

#include "agent/agent.h"
#include "agent/relay.h"
#include "runtime/env.h"
#include "runtime/runtime.h"
#include "symbolize/symbolize.h"

/* fork(), in the forking thread, before the copy. */
static void prepare(void)
{
	/*
	 * Heap tables first (it takes kiln's heap locks), then the gate
	 * (waits for kiln's busy threads).  This is the order the separate
	 * registrations gave (prepare handlers run last-registered first):
	 * kept as it was.  The exported fork() closes the gate before any
	 * prepare handler runs anyway (agent/fork.c); the gate's prepare is
	 * for forks that bypass it (daemon(), forkpty()).
	 */
	kiln_heap_fork_prepare();
	kiln_agent_gate_prepare();
}

/* fork(), in the parent, after the copy. */
static void parent(void)
{
	kiln_agent_gate_parent();
	kiln_heap_fork_parent();
}

/* fork(), in the child: one thread, the parent's memory. */
static void child(void)
{
	/* The gate first: every hook below that starts a thread of kiln's
	 * (the relay, KILN_HTTP's heir, the heap writer) passes it
	 * (kiln_agent_thread_start()), and it writes nothing.  Then dumps:
	 * their prefix becomes the child's before anything else could write
	 * one (the heap writer's interval dumps, the heir's server).  The
	 * relay after the parts that clear the jobs a child must not run
	 * (the CPU profile's toggle and exit write: the parent's file), and
	 * before the heap writer, which may ask it for an interval dump. */
	kiln_agent_gate_child();
	kiln_heapdump_fork_child();
	kiln_agent_cpu_fork_child();
	kiln_agent_fork_child();
	kiln_http_fork_child();
	kiln_relay_fork_child();
	kiln_heap_fork_child();
}

/*
 * Load order: heap dumps, then the CPU agent (it registers the calling
 * thread with the sampler), the KILN_HTTP server (after the sampler: a
 * profile request may come at once), then the heap hooks and trace --
 * the order the three constructors ran in before they were one (link
 * order), kept.  The fork handlers are registered before any
 * of them can start a thread of kiln's.
 */
__attribute__((constructor)) static void kiln_runtime_load(void)
{
	/*
	 * The first allocation is a malloc.  A sanitizer's runtime preloaded
	 * into a program not built with it (LD_PRELOAD="libasan.so
	 * libkiln.so" timeout PROG: timeout is one) is started by its own
	 * constructor, which runs after this one.  Until then GCC 12's ASan
	 * answers strdup() from its internal allocator (internal_strdup),
	 * and its free() takes such a pointer for one allocated inside
	 * dlsym, finds no LSan root region for it and ends the process with
	 * status 0 before main(): "__lsan_unregister_root_region(): region
	 * ... has not been registered", the host's work and output lost
	 * (t731).  Its malloc() starts the runtime first (ENSURE_ASAN_INITED),
	 * so every strdup() after this one is its ordinary heap's.  (Through
	 * a volatile pointer: the compiler drops a bare free(malloc(1)).)
	 */
	void *volatile first = malloc(1);

	free(first);
	kiln_agent_log_init();
	/* Every variable parsed (and a bad one said) before any part acts
	 * on one. */
	kiln_env();
	kiln_process_load();
	pthread_atfork(prepare, parent, child);
	kiln_heapdump_load();
	kiln_agent_load();
	kiln_http_load();
	kiln_heap_load();
}

/* The trace's end first, then the last heap dump (the order the two
 * destructors ran in: last-linked first). */
__attribute__((destructor)) static void kiln_runtime_fini(void)
{
	/* Light at exit: the last heap dump reads no DWARF from the debug
	 * file cache that its session had not read before. */
	kiln_sym_close_debug_cache();
	kiln_heap_fini();
	kiln_heapdump_fini();
}
