/*
 * Source text for kiln serve's source view (web stage): a file named by
 * the profile's line table, read from this machine when it is a readable
 * regular text file of bounded size, and split into lines.  Which files
 * may be read is decided by the caller: only the files of the function
 * the request names, never a path from the request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/file.h"
#include "web/webint.h"

#define WEB_SOURCE_MAX (8u << 20)	/* bytes of one source file */

int kiln_web_source_read(const char *path, struct web_source *src,
			 const char **why)
{
	struct kiln_buf b = KILN_BUF_INIT;
	struct stat st;
	size_t i, n;
	int fd, err = 0;

	memset(src, 0, sizeof(*src));
	*why = NULL;
	if (!path || path[0] != '/') {
		*why = "not an absolute path: where the program was built is unknown";
		return 0;
	}
	fd = kiln_open_regular(path);
	if (fd < 0) {
		*why = fd == -EINVAL || fd == -EISDIR ? "not a regular file" :
		       "not readable on this machine";
		return 0;
	}
	if (fstat(fd, &st) || st.st_size > WEB_SOURCE_MAX) {
		*why = "larger than 8 MiB";
		close(fd);
		return 0;
	}
	for (;;) {
		ssize_t r;

		if (kiln_buf_grow(&b, 65536)) {
			err = -ENOMEM;
			break;
		}
		r = read(fd, b.data + b.len, 65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = "not readable on this machine";
			break;
		}
		if (r == 0)
			break;
		b.len += (size_t)r;
		if (b.len > WEB_SOURCE_MAX) {
			*why = "larger than 8 MiB";
			break;
		}
	}
	close(fd);
	if (!err && !*why && memchr(b.data ? b.data : "", '\0', b.len))
		*why = "not text";
	if (!err && !*why && kiln_buf_addc(&b, '\0'))
		err = -ENOMEM;
	if (err || *why) {
		kiln_buf_release(&b);
		return err;
	}
	for (n = 1, i = 0; i + 1 < b.len; i++)
		if (b.data[i] == '\n' && i + 2 < b.len)
			n++;
	src->line = malloc((n + 1) * sizeof(*src->line));
	if (!src->line) {
		kiln_buf_release(&b);
		return -ENOMEM;
	}
	src->line[0] = 0;
	for (n = 1, i = 0; i + 1 < b.len; i++)
		if (b.data[i] == '\n' && i + 2 < b.len)
			src->line[n++] = i + 1;
	src->line[n] = b.len;		/* one past the NUL: the end */
	src->n = n;
	src->text = kiln_buf_detach(&b, &i);
	return 0;
}

const char *kiln_web_source_line(const struct web_source *src, size_t line,
				 size_t *len)
{
	size_t a, e;

	if (!line || line > src->n) {
		*len = 0;
		return NULL;
	}
	a = src->line[line - 1];
	e = src->line[line] - 1;	/* the next line's start, less one */
	while (e > a && (src->text[e - 1] == '\n' || src->text[e - 1] == '\r' ||
			 src->text[e - 1] == '\0'))
		e--;
	*len = e - a;
	return src->text + a;
}

void kiln_web_source_release(struct web_source *src)
{
	free(src->text);
	free(src->line);
	memset(src, 0, sizeof(*src));
}
