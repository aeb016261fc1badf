/*
 * The process-wide life of libkiln.so (runtime stage): what each part of
 * the in-process runtime gives runtime.c, the one owner of the library's
 * constructor, destructor and fork handlers.  The parts never register
 * their own: runtime.c calls these in the order it documents.  Each hook
 * does nothing when its part is not in use.
 */
#ifndef KILN_RUNTIME_RUNTIME_H
#define KILN_RUNTIME_RUNTIME_H

/* At load, in this order (runtime.c says why). */
void kiln_heapdump_load(void);		/* agent/heapdump.c: KILN_HEAP dumps */
void kiln_agent_load(void);		/* agent/preload.c: CPU profile, signals */
void kiln_http_load(void);		/* http/envserve.c: KILN_HTTP */
void kiln_heap_load(void);		/* heap/trace.c: hooks, KILN_HEAP_TRACE */

/* At unload (after the program's own destructors and atexit handlers). */
void kiln_heap_fini(void);		/* the end of the heap trace */
void kiln_heapdump_fini(void);		/* the last heap dump */

/* The process's own interposers (process.c) resolved; first at load. */
void kiln_process_load(void);

/*
 * _exit()/_Exit() and exec, which pass no destructor: process.c calls
 * these, in this order, before passing on.  Each writes only in the
 * process that owns its file (never a fork or vfork child).
 */
void kiln_agent_before_exit(void);	/* agent/preload.c: the CPU profile */
void kiln_heap_exit_flush(void);	/* heap/trace.c: the trace's rest, its end */
void kiln_agent_before_exec(void);	/* agent/preload.c: the CPU profile */
void kiln_heap_exec_flush(void);	/* heap/trace.c: the trace so far */
void kiln_heapdump_before_exec(void);	/* agent/heapdump.c: the image's last dump */

/* fork: before, in the parent after, in the child after. */
void kiln_agent_gate_prepare(void);	/* agent/fork.c: kiln's threads idle */
void kiln_agent_gate_parent(void);
void kiln_agent_gate_child(void);
void kiln_heap_fork_prepare(void);	/* heap/trace.c: tables consistent */
void kiln_heap_fork_parent(void);
void kiln_heap_fork_child(void);
void kiln_heapdump_fork_child(void);	/* PREFIX.PID dumps of the child's */
void kiln_agent_cpu_fork_child(void);	/* agent/cpu.c: no profile runs */
void kiln_agent_fork_child(void);	/* agent/preload.c: the parent's files */
void kiln_http_fork_child(void);	/* http/envserve.c: the server's heir */

#endif
