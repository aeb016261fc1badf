/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache of decompressed separate debug files (symbolize stage): see
 * debugcache.h and docs/symbols.md.
 */
#include "symbolize/debugcache.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "util/file.h"

static char *cache_dir;		/* NULL: no cache */
static bool cache_writable;
static atomic_bool cache_closed;	/* kiln_sym_close_debug_cache() */

int kiln_sym_set_debug_cache(const char *dir, bool writable)
{
	char *copy = NULL;

	if (dir && *dir) {
		copy = strdup(dir);
		if (!copy)
			return -ENOMEM;
	}
	free(cache_dir);
	cache_dir = copy;
	cache_writable = writable;
	return 0;
}

void kiln_sym_close_debug_cache(void)
{
	atomic_store(&cache_closed, true);
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (p) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

/*
 * secure_getenv(): in a set-user-ID program (libkiln.so in one) the
 * caller's variables would make it parse ELF files of the caller's
 * choosing with the program's privileges.
 */
char *kiln_sym_debug_cache_env(void)
{
	const char *v = secure_getenv("KILN_CACHE_DIR");

	if (v)
		return *v ? strdup(v) : NULL;
	/* The XDG spec ignores a relative XDG_CACHE_HOME. */
	v = secure_getenv("XDG_CACHE_HOME");
	if (v && *v == '/')
		return join(v, "kiln/debug");
	v = secure_getenv("HOME");
	if (v && *v == '/')
		return join(v, ".cache/kiln/debug");
	return NULL;
}

/* DIR/xx/yyyy.debug; NULL (no cache, a build ID too short, no memory). */
static char *entry_path(const unsigned char *id, size_t len)
{
	size_t dl, i;
	char *p, *q;

	if (!cache_dir || len < 2 || len > 64)
		return NULL;
	dl = strlen(cache_dir);
	p = malloc(dl + 2 * len + sizeof("/xx/.debug"));
	if (!p)
		return NULL;
	q = p + dl;
	memcpy(p, cache_dir, dl);
	for (i = 0; i < len; i++) {
		if (i == 0)
			*q++ = '/';
		q += sprintf(q, "%02x", id[i]);
		if (i == 0)
			*q++ = '/';
	}
	strcpy(q, ".debug");
	return p;
}

/* Whether elf's GNU build ID note is id[0..len). */
static bool same_build_id(Elf *elf, const unsigned char *id, size_t len)
{
	const void *bits;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);

	return n > 0 && (size_t)n == len && !memcmp(bits, id, len);
}

/* A section named .zdebug_* (GNU compression, renamed when inflated). */
static bool gnu_compressed(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	return name && !strncmp(name, ".zdebug", 7);
}

/*
 * Whether the file of fd (size bytes) is a usable copy: ELF, its section
 * header table and every section with contents inside the file (a copy
 * cut short by a full disk or a crash fails this), none compressed, and
 * build ID id.  The contents of the sections are not checked byte by
 * byte: the copy is trusted as the original is.
 */
static bool usable_copy(int fd, off_t size, const unsigned char *id, size_t len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shnum, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	bool ok = false;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getshdrnum(elf, &shnum) || elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	/* libelf counts no sections when their table is cut short. */
	if (!shnum || (eh.e_shnum && shnum != eh.e_shnum) ||
	    !eh.e_shoff || eh.e_shoff > (uint64_t)size ||
	    (uint64_t)shnum * eh.e_shentsize > (uint64_t)size - eh.e_shoff)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED) ||
		    gnu_compressed(elf, shstrndx, &sh))
			goto out;
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > (uint64_t)size ||
		     sh.sh_size > (uint64_t)size - sh.sh_offset))
			goto out;
	}
	ok = same_build_id(elf, id, len);
out:
	elf_end(elf);
	return ok;
}

int kiln_debugcache_open(const unsigned char *id, size_t len, char **path)
{
	struct stat st;
	char *p;
	int fd;

	if (atomic_load(&cache_closed) || !(p = entry_path(id, len)))
		return -1;
	elf_version(EV_CURRENT);
	fd = kiln_open_regular(p);
	if (fd >= 0 && (fstat(fd, &st) || !usable_copy(fd, st.st_size, id, len))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && path)
		*path = p;
	else
		free(p);
	return fd;
}

/* mkdir -p of path's folder (path is changed and restored). */
static int make_parents(char *path)
{
	char *slash = strrchr(path, '/');
	struct stat st;
	int err = 0;

	if (!slash || slash == path)
		return 0;
	*slash = '\0';
	if (stat(path, &st)) {
		err = make_parents(path);
		if (!err && mkdir(path, 0755) && errno != EEXIST)
			err = -errno;
	} else if (!S_ISDIR(st.st_mode)) {
		err = -ENOTDIR;
	}
	*slash = '/';
	return err;
}

/*
 * Writes a copy of in to fd with every SHF_COMPRESSED section inflated
 * (libelf's elf_compress(scn, 0, 0), as eu-elfcompress -t none does); the
 * section numbering, headers and program headers stay as they were, libelf
 * lays out the contents.  0 or -errno.
 */
static int write_inflated(Elf *in, int fd)
{
	Elf *out = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf_Scn *scn = NULL;
	size_t phnum, shstrndx, i;
	GElf_Ehdr eh;
	int err = -EIO;

	if (!out || !gelf_getehdr(in, &eh) || elf_getphdrnum(in, &phnum) ||
	    elf_getshdrstrndx(in, &shstrndx) ||
	    !gelf_newehdr(out, gelf_getclass(in)))
		goto out;
	if (phnum && !gelf_newphdr(out, phnum))
		goto out;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(in, (int)i, &ph) ||
		    !gelf_update_phdr(out, (int)i, &ph))
			goto out;
	}
	while ((scn = elf_nextscn(in, scn))) {
		Elf_Scn *to = elf_newscn(out);
		Elf_Data *d = NULL, *nd;
		GElf_Shdr sh;

		if (!to || !gelf_getshdr(scn, &sh))
			goto out;
		if ((sh.sh_flags & SHF_COMPRESSED) &&
		    (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh)))
			goto out;
		while ((d = elf_getdata(scn, d))) {
			nd = elf_newdata(to);
			if (!nd)
				goto out;
			*nd = *d;
		}
		if (!gelf_update_shdr(to, &sh))
			goto out;
	}
	/* A section header string table numbered past 0xff00 is named by
	 * section 0's sh_link. */
	if (shstrndx < SHN_LORESERVE) {
		eh.e_shstrndx = (GElf_Half)shstrndx;
	} else {
		Elf_Scn *zero = elf_getscn(out, 0);
		GElf_Shdr sh;

		if (!zero || !gelf_getshdr(zero, &sh))
			goto out;
		sh.sh_link = (GElf_Word)shstrndx;
		if (!gelf_update_shdr(zero, &sh))
			goto out;
		eh.e_shstrndx = SHN_XINDEX;
	}
	if (!gelf_update_ehdr(out, &eh))
		goto out;
	if (elf_update(out, ELF_C_WRITE) < 0)
		goto out;
	err = 0;
out:
	elf_end(out);
	return err;
}

int kiln_debugcache_add(const unsigned char *id, size_t len, const char *src)
{
	char *final = NULL, *tmp = NULL;
	Elf_Scn *scn = NULL;
	bool compressed = false;
	size_t shstrndx;
	Elf *in = NULL;
	int in_fd, fd = -1, err = 0;

	if (!cache_writable || !(final = entry_path(id, len)))
		return 0;
	elf_version(EV_CURRENT);
	in_fd = kiln_open_regular(src);
	if (in_fd < 0) {
		err = in_fd;
		goto out_free;
	}
	/* ELF_C_READ: the sections are read into memory, where
	 * elf_compress() may replace them with their inflated bytes. */
	in = elf_begin(in_fd, ELF_C_READ, NULL);
	if (!in || elf_kind(in) != ELF_K_ELF || elf_getshdrstrndx(in, &shstrndx) ||
	    !same_build_id(in, id, len)) {
		err = -EINVAL;
		goto out_end;
	}
	while ((scn = elf_nextscn(in, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			err = -EINVAL;
			goto out_end;
		}
		/* GNU .zdebug sections would need renaming: not cached. */
		if (gnu_compressed(in, shstrndx, &sh))
			goto out_end;
		compressed |= (sh.sh_flags & SHF_COMPRESSED) != 0;
	}
	if (!compressed)
		goto out_end;
	err = make_parents(final);
	if (err)
		goto out_end;
	tmp = malloc(strlen(final) + sizeof(".tmp.XXXXXX"));
	if (!tmp) {
		err = -ENOMEM;
		goto out_end;
	}
	sprintf(tmp, "%s.tmp.XXXXXX", final);
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out_end;
	}
	/* As the files it copies: readable by all (mkstemp gives 0600). */
	fchmod(fd, 0644);
	err = write_inflated(in, fd);
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	if (!err && rename(tmp, final))
		err = -errno;
	if (err)
		unlink(tmp);
out_end:
	if (fd >= 0)
		close(fd);
	elf_end(in);
	close(in_fd);
out_free:
	free(tmp);
	free(final);
	return err;
}
