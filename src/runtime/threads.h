/*
 * kiln's own threads in the host process (runtime stage): the one thread
 * starter and the registry of every thread the process has, kiln's marked
 * (threads.c), and the watch for the program's last thread (lastthread.c).
 */
#ifndef KILN_RUNTIME_THREADS_H
#define KILN_RUNTIME_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * kiln's one thread starter: every thread of kiln's own (the collector,
 * the wall ticker, the relay, the HTTP heir thread, the heap writer, the
 * HTTP profile jobs and guard) starts here, running fn(arg)
 * named name (up to 15 characters; NULL: unnamed): all signals blocked,
 * its allocations never recorded (the heap guard, for good) and it never
 * sampled nor in a goroutine dump, whatever the symbol order (started
 * through pthread_create by name, so that a sanitizer's interceptor sees
 * it); kept out of
 * the program's forks (see
 * kiln_rt_busy_begin()) from its creation until fn runs (a sanitizer's
 * runtime allocates while it sets a thread up) and, unless detached, from
 * fn's return until kiln_rt_thread_join() (it tears the thread down),
 * which such a thread needs.  0 or -errno.
 */

/*
 * pthread_create() of the program (and of kiln, which starts its own by
 * that name: see kiln_rt_thread_start()), passed on to real: the new
 * thread starts in kiln's trampoline, registered (kiln's when the
 * creating thread is), with kiln's alternate signal stack.
 */
typedef int (*kiln_rt_pthread_create_fn)(pthread_t *, const pthread_attr_t *,
					 void *(*)(void *), void *);
int kiln_rt_thread_create(kiln_rt_pthread_create_fn real, pthread_t *thread,
			  const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

int kiln_rt_thread_start(pthread_t *t, const char *name, void *(*fn)(void *),
			    void *arg, bool detached);

/*
 * Called by a thread of the program as it ends (pthread_exit(), the end
 * of a thread kiln's pthread_create started): when it is the program's
 * last, the process exits as it would without kiln's threads
 * (lastthread.c).  Never from kiln's own threads (they return at once).
 */
void kiln_rt_thread_ending(void);

/*
 * For threads of kiln's started by a library kiln calls (libmicrohttpd's):
 * while on, the calling thread's pthread_create makes kiln threads (never
 * sampled, never in a snapshot; threads they start are kiln's too).
 */
void kiln_rt_creating_internal(bool on);

/* The code range of kiln's frames that sit between the program's own
 * (the thread-start trampoline): unwinders skip them. */
void kiln_rt_own_frames(uint64_t *lo, uint64_t *hi);

/* Joins a thread started by kiln_rt_thread_start(); its return value
 * is lost.  0 or -errno. */
int kiln_rt_thread_join(pthread_t t);

#endif
