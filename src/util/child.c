/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a command to measure (util).  See child.h.
 */
#include "util/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"

/*
 * In the child: the signals kiln catches to stop (SIGINT, SIGTERM,
 * SIGHUP) back to their defaults while it waits to exec; one that kiln
 * ignores (inherited from nohup) stays ignored through exec.
 */
static void default_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!sigaction(sigs[i], NULL, &sa) && sa.sa_handler != SIG_IGN)
			signal(sigs[i], SIG_DFL);
}

int kiln_child_spawn(struct kiln_child *c, char **argv)
{
	int go[2], errp[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return -e;
	}
	if (pid == 0) {
		char ch;
		int e;

		close(go[1]);
		close(errp[0]);
		default_signals();
		if (read(go[0], &ch, 1) != 1)
			_exit(127);
		if (c->setup)
			c->setup(c->setup_arg);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	c->pid = pid;
	c->go_fd = go[1];
	c->err_fd = errp[0];
	return 0;
}

int kiln_child_start(struct kiln_child *c)
{
	char ch = 'g';
	int e = 0;
	ssize_t n;

	if (write(c->go_fd, &ch, 1) != 1)
		return -errno;
	close(c->go_fd);
	c->go_fd = -1;
	do
		n = read(c->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	return n == sizeof(e) ? -e : 0;
}

void kiln_child_release(struct kiln_child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->go_fd = c->err_fd = -1;
}

int kiln_child_wait(struct kiln_child *c, bool block, int *status,
		    struct rusage *ru)
{
	pid_t w;

	if (c->pid <= 0)
		return -ECHILD;
	w = wait4(c->pid, status, block ? 0 : WNOHANG, ru);
	if (w < 0)
		return -errno;
	if (w == 0)
		return 0;
	c->pid = 0;
	return 1;
}

void kiln_child_stop(struct kiln_child *c, int sig, int *status,
		     struct rusage *ru)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, sig);
	while (wait4(c->pid, status, 0, ru) < 0 && errno == EINTR)
		;
	c->pid = 0;
}

int kiln_child_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

void kiln_child_kill(struct kiln_child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
		c->pid = 0;
	}
	kiln_child_release(c);
}

void kiln_child_preload(struct kiln_buf *pre, const char *lib)
{
	const char *old = getenv("LD_PRELOAD");

	kiln_buf_adds(pre, lib);
	if (old && *old)
		kiln_buf_addf(pre, ":%s", old);
}

bool kiln_child_find(const char *cmd, struct kiln_buf *where)
{
	const char *path = getenv("PATH");
	struct kiln_buf b = KILN_BUF_INIT;
	bool found = false;

	if (strchr(cmd, '/')) {
		if (where)
			kiln_buf_adds(where, cmd);
		return access(cmd, X_OK) == 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path && !found) {
		size_t n = strcspn(path, ":");

		kiln_buf_reset(&b);
		if (n)
			kiln_buf_add(&b, path, n);
		else
			kiln_buf_addc(&b, '.');
		kiln_buf_addc(&b, '/');
		kiln_buf_adds(&b, cmd);
		if (b.data && !access(b.data, X_OK)) {
			struct stat st;

			found = !stat(b.data, &st) && S_ISREG(st.st_mode);
		}
		path += n;
		if (*path == ':')
			path++;
	}
	if (found && where)
		kiln_buf_adds(where, b.data);
	kiln_buf_release(&b);
	return found;
}
