/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last thread of the program (runtime stage): a process lives while any of
 * its threads does, and kiln's threads (the collector, the HTTP server,
 * the heap writer) must not keep one alive.  Without kiln, a program
 * whose main thread ends with pthread_exit() exits when its last thread
 * ends: glibc's count of threads reaches zero there and that thread calls
 * exit(0).  With kiln's threads counted too it never reaches zero, and
 * the process would live on with nothing of the program left in it.
 *
 * So when a thread of the program ends (pthread_exit(), or the return of
 * a thread kiln's pthread_create started) while kiln has threads of its
 * own, a short-lived kiln thread watches: once the ending thread is gone
 * it looks at /proc/self/task, and if no thread of the program is left
 * (kiln's are known by the registry, the main thread's zombie does not
 * count) it calls exit(0) as glibc would have: atexit handlers run, kiln
 * writes its profiles, stdio is flushed.  A thread it cannot tell (not
 * in the registry) counts as the program's: then nothing is done.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/log.h"
#include "runtime/threads.h"

static inline pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* One watcher at a time; a thread ending while it watches asks again. */
static _Atomic bool watching;
static _Atomic unsigned asked;
static _Atomic pid_t last_ending;

/* The state letter of task tid ('R', 'S', 'Z', ...), 0 when it is gone. */
static char task_state(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold anything */
	return p && p[1] == ' ' ? p[2] : 0;
}

static bool dead(char state)
{
	return !state || state == 'Z' || state == 'X' || state == 'x';
}

static bool kiln_thread(pid_t tid)
{
	struct kiln_rt_thread *t = kiln_rt_thread_find(tid);

	return t && t->internal;
}

/* Whether any thread of the program, other than kiln's, still runs. */
static bool program_alive(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	bool alive = false;

	if (!d)
		return true;	/* cannot tell: the program's, then */
	while (!alive && (de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

		if (tid > 0 && !kiln_thread(tid) && !dead(task_state(tid)))
			alive = true;
	}
	closedir(d);
	return alive;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void *watch(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned seen = atomic_load(&asked);
		pid_t ending = atomic_load(&last_ending);
		long ms = 1;

		/* The ending thread is on its way out: its destructors run,
		 * then the kernel reaps it (a main thread stays a zombie). */
		while (!dead(task_state(ending))) {
			pause_ms(ms);
			if (ms < 16)
				ms *= 2;
		}
		if (!program_alive()) {
			kiln_rt_log(KILN_LOG_INFO, "the program's last thread "
				       "ended: exiting as it would without kiln");
			exit(0);
		}
		atomic_store(&watching, false);
		/* Asked again since the look: look again, unless another
		 * watcher took over. */
		if (seen == atomic_load(&asked) || atomic_exchange(&watching, true))
			return NULL;
	}
}

/* The process's threads, zombies included (/proc/self/stat field 20);
 * -1 when not known. */
static long num_threads(void)
{
	char buf[1024], *p;
	ssize_t n;
	int fd, i;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command name may hold anything */
	for (i = 2; i < 20 && p; i++)
		p = strchr(p + 1, ' ');
	return p ? strtol(p + 1, NULL, 10) : -1;
}

void kiln_rt_thread_ending(void)
{
	pthread_t t;
	long ours = 0, all;
	size_t i, hw = atomic_load(&kiln_rt_threads_hw);

	/* Under the program's seccomp filter kiln makes no system call in
	 * its threads (seccomp.c). */
	if ((kiln_rt_self && kiln_rt_self->internal) || kiln_rt_frozen())
		return;
	/* Without a thread of kiln's, glibc's own count does the work. */
	for (i = 0; i < hw; i++)
		ours += atomic_load(&kiln_rt_threads[i].tid) && kiln_rt_threads[i].internal;
	if (!ours)
		return;
	/* Two more threads than kiln's and this one: the program has one
	 * alive for sure (a zombie main thread is counted, one at most).  A
	 * server ending thousands of threads a second reads one small file
	 * for each and starts no watcher. */
	all = num_threads();
	if (all < 0 || all - ours - 1 >= 2)
		return;
	atomic_store(&last_ending, gettid_());
	atomic_fetch_add(&asked, 1);
	if (atomic_exchange(&watching, true))
		return;
	if (kiln_rt_thread_start(&t, "kiln-lastthread", watch, NULL, true))
		atomic_store(&watching, false);
}

