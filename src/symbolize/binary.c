/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profile symbolized with a binary the user names (symbolize stage):
 * pprof's `pprof BINARY PROFILE` form, for profiles whose main program
 * is not at the path they name (taken on another machine, in a
 * container, or a binary moved since).  See kiln_sym_prof_binary().
 */
#include "symbolize/symbolize.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "symbolize/symint.h"
#include "util/diag.h"

/* The binary's GNU build ID in lower-case hex into hex ("" if none);
 * -EINVAL (d filled) when path is not an ELF file, -errno from open(). */
static int binary_build_id(const char *path, char *hex, size_t size,
			   struct kiln_diag *d)
{
	const unsigned char *bits;
	Elf *elf;
	ssize_t n, i;
	int fd, err = 0;

	hex[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = kiln_diag(d, "'%s' is not an ELF file", path);
		goto out;
	}
	n = dwelf_elf_gnu_build_id(elf, (const void **)&bits);
	for (i = 0; i < n && (size_t)(2 * i + 2) < size; i++)
		sprintf(hex + 2 * i, "%02x", bits[i]);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* The main mapping's id (see kiln_sym_prof_binary()), 0 with d filled. */
static uint32_t main_mapping(const struct kiln_prof *p, const char *path,
			     const char *id, struct kiln_diag *d)
{
	const struct kiln_mapping *m;
	const char *mid;
	size_t i;

	if (!p->nmappings) {
		kiln_diag(d, "the profile has no mappings: its addresses cannot "
			  "be placed in '%s'", path);
		return 0;
	}
	for (i = 1; *id && i <= p->nmappings; i++)
		if (!strcmp(kiln_prof_str(p, p->mappings[i].build_id), id))
			return (uint32_t)i;
	m = &p->mappings[1];
	mid = kiln_prof_str(p, m->build_id);
	if (*mid && *id) {
		kiln_diag(d, "'%s' (build ID %s) is not the program the profile "
			  "was taken from: its main mapping '%s' has build ID %s",
			  path, id, kiln_prof_str(p, m->file), mid);
		return 0;
	}
	if (m->limit <= m->start) {
		kiln_diag(d, "the profile's main mapping '%s' has no address "
			  "range to place '%s' at", kiln_prof_str(p, m->file),
			  path);
		return 0;
	}
	return 1;
}

int kiln_sym_prof_binary(struct kiln_prof *p, const char *path,
			 size_t *named, struct kiln_diag *d)
{
	struct kiln_sym_opts opts = { 0 };
	struct kiln_sym *s;
	char id[2 * 64 + 1];
	uint32_t mi, before = 0, after = 0;
	size_t i;
	int err;

	if (named)
		*named = 0;
	err = binary_build_id(path, id, sizeof(id), d);
	if (err)
		return err;
	mi = main_mapping(p, path, id, d);
	if (!mi)
		return -EINVAL;
	p->mappings[mi].file = kiln_prof_interns(p, path);
	if (p->err)
		return p->err;
	for (i = 1; i <= p->nlocations; i++)
		before += p->locations[i].mapping == mi && p->locations[i].nlines;
	s = kiln_sym_new(&opts);
	if (!s)
		return -ENOMEM;
	err = ksym_prof_only(s, p, 0, mi);
	kiln_sym_free(s);
	if (err)
		return err;
	for (i = 1; i <= p->nlocations; i++)
		after += p->locations[i].mapping == mi && p->locations[i].nlines;
	if (named)
		*named = after - before;
	return 0;
}
