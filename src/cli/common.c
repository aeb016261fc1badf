/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Input handling shared by the commands that read profiles (cli stage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "format/format.h"
#include "profile/profile.h"
#include "profile/transform.h"
#include "session/targets.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"
#include "util/diag.h"

int kiln_cli_read_keep(const char *path, struct kiln_prof **out,
		       enum kiln_fmt *fmt, struct kiln_buf *trace)
{
	struct kiln_buf body = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	int err, rc;

	if (kiln_cli_is_url(path)) {
		/* A fetched body goes through the detection a file's bytes do. */
		rc = kiln_cli_fetch(path, &body);
		if (rc) {
			kiln_buf_release(&body);
			return rc;
		}
		err = kiln_read_profile_data(path, body.data ? body.data : "",
					     body.len, out, fmt, trace, &d);
		kiln_buf_release(&body);
	} else {
		err = kiln_read_profile_keep(path, out, fmt, trace, &d);
	}
	if (!err) {
		kiln_cli_read_warning(&d);
		return KILN_EXIT_OK;
	}
	if (err == -EINVAL)
		kiln_cli_error("%s", d.msg);
	else if (err == -ENOMEM)
		kiln_cli_error("'%s': out of memory", path);
	else
		kiln_cli_error("cannot read '%s': %s", path, strerror(-err));
	return err == -ENOMEM ? KILN_EXIT_FAIL : KILN_EXIT_USAGE;
}

int kiln_cli_read(const char *path, struct kiln_prof **out)
{
	return kiln_cli_read_keep(path, out, NULL, NULL);
}

const char *kiln_cli_input_stem(const char *input, size_t *len)
{
	static const char *const exts[] = { ".pb.gz", ".pb", ".gz", ".perf",
					    ".script", ".collapsed", ".folded",
					    ".txt", ".prof", ".data", ".zst" };
	const char *base, *end = input + strlen(input);
	size_t n, i;

	if (kiln_cli_is_url(input)) {
		/* Past "scheme://host": the path ends at the query or fragment. */
		const char *path = strchr(strstr(input, "//") + 2, '/');

		if (!path) {
			*len = strlen("profile");
			return "profile";
		}
		end = path + strcspn(path, "?#");
		while (end > path + 1 && end[-1] == '/')
			end--;
	}
	for (base = end; base > input && base[-1] != '/'; base--)
		;
	n = (size_t)(end - base);
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t el = strlen(exts[i]);

		if (n > el && !strncmp(end - el, exts[i], el)) {
			n -= el;
			break;
		}
	}
	if (!n) {
		*len = strlen("profile");
		return "profile";
	}
	*len = n;
	return base;
}

/* Whether path is a local ELF file (pprof's BINARY PROFILE form). */
static bool is_elf(const char *path)
{
	char magic[4];
	FILE *f;
	bool elf;

	if (kiln_cli_is_url(path) || !(f = fopen(path, "rb")))
		return false;
	elf = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4);
	fclose(f);
	return elf;
}

const char *kiln_cli_take_binary(int argc, char **argv, int *optindp)
{
	if (argc - *optindp < 2 || !is_elf(argv[*optindp]))
		return NULL;
	return argv[(*optindp)++];
}

/* Names p's main mapping's addresses with the binary given first. */
static int use_binary(struct kiln_prof *p, const char *binary)
{
	struct kiln_diag d = { "" };
	char *abs = realpath(binary, NULL);
	size_t named = 0;
	int err;

	if (!abs) {
		kiln_cli_error("cannot read '%s': %s", binary, strerror(errno));
		return KILN_EXIT_USAGE;
	}
	err = kiln_sym_prof_binary(p, abs, &named, &d);
	free(abs);
	if (err == -EINVAL) {
		kiln_cli_error("%s", d.msg);
		return KILN_EXIT_USAGE;
	}
	if (err) {
		kiln_cli_error("cannot symbolize with '%s': %s", binary,
			       strerror(-err));
		return err == -ENOMEM ? KILN_EXIT_FAIL : KILN_EXIT_USAGE;
	}
	if (!named && !kiln_cli_quiet)
		fprintf(stderr, "kiln: warning: '%s' named none of the profile's "
			"addresses (they have names already, or it has no "
			"symbols for them)\n", binary);
	return KILN_EXIT_OK;
}

int kiln_cli_load(char **files, int nfiles, const struct kiln_cli_input *in,
		  struct kiln_prof **out, int *type)
{
	struct kiln_prof *p = NULL;
	struct kiln_diag d = { "" };
	const char *binary = in->binary;
	int i, rc, err;

	*out = NULL;
	/* The perf.data reader takes it as --no-local-symbols is taken. */
	kiln_perfdata_set_event(in->event);
	for (i = 0; i < nfiles; i++) {
		struct kiln_prof *q;

		rc = kiln_cli_read(files[i], &q);
		if (rc)
			goto out_free;
		if (!p) {
			p = q;
			continue;
		}
		err = kiln_prof_merge(p, q, &d);
		kiln_prof_free(q);
		if (err) {
			if (err == -EINVAL)
				kiln_cli_error("cannot merge '%s' into '%s': %s",
					       files[i], files[0], d.msg);
			else
				kiln_cli_error("cannot merge '%s': %s", files[i],
					       strerror(-err));
			rc = err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
			goto out_free;
		}
	}
	if (binary && (rc = use_binary(p, binary)))
		goto out_free;
	err = kiln_prof_filter(p, in->focus, in->ignore, &d);
	if (!err)
		err = kiln_prof_hide(p, in->hide, &d);
	if (!err && in->transform && *in->transform) {
		struct kiln_tf_list l = KILN_TF_LIST_INIT;

		err = kiln_tf_parse(&l, in->transform, &d);
		if (!err)
			err = kiln_prof_transform(p, &l);
		kiln_tf_release(&l);
	}
	if (err) {
		if (err == -EINVAL)
			kiln_cli_error("%s", d.msg);
		else
			kiln_cli_error("filtering: %s", strerror(-err));
		rc = err == -EINVAL ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
		goto out_free;
	}
	*type = kiln_prof_type_index(p, in->sample_type, &d);
	if (*type < 0) {
		kiln_cli_error("'%s': %s", files[0], d.msg);
		rc = KILN_EXIT_USAGE;
		goto out_free;
	}
	*out = p;
	return KILN_EXIT_OK;
out_free:
	kiln_prof_free(p);
	return rc;
}

int kiln_cli_find_agent(struct kiln_buf *path, const char *lib)
{
	const char *env = getenv("KILN_AGENT");
	char exe[4096];
	ssize_t n;
	char *slash;

	if (env && *env) {
		const char *dir_end = strrchr(env, '/');

		if (!strcmp(lib, "libkiln.so"))
			kiln_buf_adds(path, env);
		else if (dir_end)
			kiln_buf_addf(path, "%.*s/%s", (int)(dir_end - env), env, lib);
		else
			kiln_buf_adds(path, lib);
		return !path->data || access(path->data, R_OK) ? -ENOENT : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	kiln_buf_addf(path, "%s/%s", exe, lib);
	if (path->data && !access(path->data, R_OK))
		return 0;
	kiln_buf_reset(path);
	kiln_buf_addf(path, "%s/../lib/%s", exe, lib);
	return !path->data || access(path->data, R_OK) ? -ENOENT : 0;
}

volatile sig_atomic_t kiln_cli_stop_signal;

void kiln_cli_on_stop(int sig)
{
	kiln_cli_stop_signal = sig;
}

double kiln_cli_now(void)
{
	return kiln_session_now();
}
