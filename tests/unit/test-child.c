/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for util/child.c, the one way kiln starts, waits for and
 * ends a workload: the exit status of a wait status (128+signal), a
 * failed exec told through the pipe (the child exits 127), the setup hook
 * run in the child before exec, a held child killed before it runs, and
 * the PATH search.  session/targets.c's lists ride along.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/targets.h"
#include "util/buf.h"
#include "util/child.h"

static void test_exit_status(void **state)
{
	(void)state;
	assert_int_equal(kiln_child_exit_status(0), 0);
	assert_int_equal(kiln_child_exit_status(3 << 8), 3);
	assert_int_equal(kiln_child_exit_status(SIGKILL), 128 + SIGKILL);
	assert_int_equal(kiln_child_exit_status(SIGINT), 128 + SIGINT);
}

static void run_status(char **argv, int want)
{
	struct kiln_child c = KILN_CHILD_INIT;
	int status = -1;

	assert_int_equal(kiln_child_spawn(&c, argv), 0);
	assert_true(c.pid > 0);
	assert_int_equal(kiln_child_start(&c), 0);
	assert_int_equal(kiln_child_wait(&c, true, &status, NULL), 1);
	assert_int_equal(c.pid, 0);
	assert_int_equal(kiln_child_exit_status(status), want);
	kiln_child_release(&c);
}

static void test_run(void **state)
{
	char *ok[] = { "sh", "-c", "exit 0", NULL };
	char *three[] = { "sh", "-c", "exit 3", NULL };
	char *killed[] = { "sh", "-c", "kill -TERM $$", NULL };

	(void)state;
	run_status(ok, 0);
	run_status(three, 3);
	run_status(killed, 128 + SIGTERM);
}

static void test_exec_error(void **state)
{
	char *argv[] = { "/nonexistent/kiln-no-such-program", NULL };
	struct kiln_child c = KILN_CHILD_INIT;
	int status = -1;

	(void)state;
	assert_int_equal(kiln_child_spawn(&c, argv), 0);
	assert_int_equal(kiln_child_start(&c), -ENOENT);
	assert_int_equal(kiln_child_wait(&c, true, &status, NULL), 1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 127);
	assert_int_equal(kiln_child_wait(&c, false, &status, NULL), -ECHILD);
	kiln_child_release(&c);
}

static void set_var(void *arg)
{
	setenv("KILN_TEST_CHILD", arg, 1);
}

static void test_setup(void **state)
{
	char *argv[] = { "sh", "-c", "test \"$KILN_TEST_CHILD\" = yes", NULL };
	struct kiln_child c = KILN_CHILD_INIT;
	int status = -1;

	(void)state;
	unsetenv("KILN_TEST_CHILD");
	c.setup = set_var;
	c.setup_arg = "yes";
	assert_int_equal(kiln_child_spawn(&c, argv), 0);
	assert_int_equal(kiln_child_start(&c), 0);
	assert_int_equal(kiln_child_wait(&c, true, &status, NULL), 1);
	assert_int_equal(kiln_child_exit_status(status), 0);
	/* Only the child's environment changed. */
	assert_null(getenv("KILN_TEST_CHILD"));
	kiln_child_release(&c);
}

static void test_stop(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	struct kiln_child c = KILN_CHILD_INIT;
	int status = -1;

	(void)state;
	/* Held before exec: killed and reaped. */
	assert_int_equal(kiln_child_spawn(&c, argv), 0);
	kiln_child_kill(&c);
	assert_int_equal(c.pid, 0);
	assert_int_equal(c.go_fd, -1);
	/* Running: stopped with a signal, its status returned. */
	assert_int_equal(kiln_child_spawn(&c, argv), 0);
	assert_int_equal(kiln_child_start(&c), 0);
	assert_int_equal(kiln_child_wait(&c, false, &status, NULL), 0);
	kiln_child_stop(&c, SIGTERM, &status, NULL);
	assert_int_equal(c.pid, 0);
	assert_int_equal(kiln_child_exit_status(status), 128 + SIGTERM);
	kiln_child_release(&c);
}

static void test_find(void **state)
{
	struct kiln_buf where = KILN_BUF_INIT;

	(void)state;
	assert_true(kiln_child_find("sh", &where));
	assert_non_null(where.data);
	assert_non_null(strchr(where.data, '/'));
	assert_int_equal(access(where.data, X_OK), 0);
	assert_false(kiln_child_find("kiln-no-such-program", NULL));
	kiln_buf_reset(&where);
	assert_false(kiln_child_find("/nonexistent/x", &where));
	assert_string_equal(where.data, "/nonexistent/x");
	kiln_buf_release(&where);
}

static void test_targets(void **state)
{
	pid_t *pids = NULL, self = getpid();
	int *cpus = NULL, n = 0;

	(void)state;
	assert_int_equal(kiln_targets_parse_list("0-3,7", &cpus, &n, true), 0);
	assert_int_equal(n, 5);
	assert_int_equal(cpus[3], 3);
	assert_int_equal(cpus[4], 7);
	assert_int_equal(kiln_targets_parse_list("1-3", &cpus, &n, false), -EINVAL);
	assert_int_equal(kiln_targets_parse_list("", &cpus, &n, true), -EINVAL);
	assert_int_equal(kiln_targets_parse_pids("12,34", &pids, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(pids[1], 34);
	assert_int_equal(kiln_targets_parse_pids("0", &pids, &n), -EINVAL);
	assert_int_equal(kiln_targets_parse_pids("1,,2", &pids, &n), -EINVAL);
	assert_true(kiln_targets_alive(&self, 1));
	assert_int_equal(kiln_targets_first_gone(&self, 1), -1);
	assert_int_equal(kiln_targets_tgid(self), self);
	free(pids);
	free(cpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_run),
		cmocka_unit_test(test_exec_error),
		cmocka_unit_test(test_setup),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
