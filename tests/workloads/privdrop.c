/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload: a program started as root that gives up its privileges, as
 * servers do.  Burns CPU in before_drop_burn, then (when root) becomes
 * nobody (setgroups, setgid, setuid to 65534), then allocates and frees
 * in after_drop_alloc and burns CPU in after_drop_burn, and exits 0.
 * Prints which user it ends as.  Its profile's folder is root's: only
 * what was opened before the drop can still be written.
 * Usage: privdrop [SECONDS]    CPU seconds per phase (default 0.3)
 *        privdrop wait         prints "ready", then burns CPU until killed
 *        privdrop same [SECONDS]  calls every set*id function with the
 *                              ids it has (changing nothing) between the
 *                              phases instead of becoming nobody
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long pd_sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double seconds)
{
	double end = cpu_now() + seconds;

	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			pd_sink += (unsigned long)i;
}

__attribute__((noinline)) void before_drop_burn(double s)
{
	spin(s);
	pd_sink++;	/* no tail call: this frame stays in the stack */
}

__attribute__((noinline)) void after_drop_burn(double s)
{
	spin(s);
	pd_sink++;	/* no tail call: this frame stays in the stack */
}

__attribute__((noinline)) void after_drop_alloc(void)
{
	for (int i = 0; i < 20000; i++) {
		char *volatile p = malloc(4096 + (size_t)(i % 64) * 64);

		if (p)
			p[0] = (char)i;
		if (i % 2)
			free(p);	/* half of them live at the end */
	}
}

int main(int argc, char **argv)
{
	double s;

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			before_drop_burn(1);
	}
	if (argc > 1 && !strcmp(argv[1], "same")) {
		uid_t ru, eu, su;
		gid_t rg, eg, sg;

		s = argc > 2 ? atof(argv[2]) : 0.3;
		before_drop_burn(s);
		if (getresuid(&ru, &eu, &su) || getresgid(&rg, &eg, &sg) ||
		    setgid(getgid()) || setegid(getegid()) || setregid(rg, eg) ||
		    setregid((gid_t)-1, (gid_t)-1) || setresgid(rg, eg, sg) ||
		    setresgid((gid_t)-1, (gid_t)-1, (gid_t)-1) ||
		    seteuid(geteuid()) || setreuid(ru, eu) ||
		    setresuid(ru, eu, su) || setresuid((uid_t)-1, (uid_t)-1, (uid_t)-1) ||
		    (ru == eu && eu == su && setuid(getuid()))) {
			perror("privdrop: a set*id call with the same ids failed");
			return 1;
		}
		after_drop_alloc();
		after_drop_burn(s);
		printf("running as uid %u\n", (unsigned)getuid());
		return 0;
	}
	s = argc > 1 ? atof(argv[1]) : 0.3;
	before_drop_burn(s);
	if (getuid() == 0) {
		gid_t g = 65534;

		if (setgroups(1, &g) || setgid(65534) || setuid(65534)) {
			perror("privdrop: cannot become nobody");
			return 1;
		}
	}
	after_drop_alloc();
	after_drop_burn(s);
	printf("running as uid %u\n", (unsigned)getuid());
	return 0;
}
