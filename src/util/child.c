/*
 * Starting a command to measure (util).  See child.h.
 */
#include "util/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"

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
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (read(go[0], &ch, 1) != 1)
			_exit(127);
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

bool kiln_child_find(const char *cmd)
{
	const char *path = getenv("PATH");
	struct kiln_buf b = KILN_BUF_INIT;
	bool found = false;

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
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
	kiln_buf_release(&b);
	return found;
}
