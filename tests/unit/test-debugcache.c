/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the debug file cache (src/symbolize/debugcache.c): libc's
 * addresses symbolized from its separate debug file (Debian's libc6-dbg,
 * compressed DWARF) with the cache in a fresh folder give the same names,
 * files and lines as without it; the first session writes
 * xx/yyyy.debug with no compressed section, a light session (the agent's)
 * then reads lines from it; every address of those functions has one name
 * with and without the cache or DWARF; an unwritable folder changes
 * nothing; a truncated, garbled or foreign file under the build ID is not
 * trusted.
 *
 * Exits 77 when libc has no separate debug file with compressed sections
 * under /usr/lib/debug/.build-id (libc6-dbg not installed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

/* libc functions that ASan does not intercept, looked up in libc itself. */
static const char *const fns[] = { "qsort", "strtol", "getpid", "abort",
				   "__libc_start_main", "fopen", "write" };
#define NFN (sizeof(fns) / sizeof(fns[0]))

static char *maps;
static size_t maps_len;
static uint64_t addrs[NFN];
static char libc_id[160];		/* xx/yyyy.debug */
static char tmpdir[] = "/tmp/kiln-debugcache.XXXXXX";

/* One address's result, copied out of its session. */
struct res {
	char name[256], file[512];
	int line;
	unsigned nframes;
};

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n, cap = 0;

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (*len + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* Symbolizes addrs[] with a fresh session; returns how many had a line. */
static int symbolize(bool light, struct res out[NFN])
{
	struct kiln_sym_opts o = { .light = light };
	struct kiln_sym *s = kiln_sym_new(&o);
	int lines = 0;

	assert_non_null(s);
	assert_int_equal(kiln_sym_add_maps(s, maps, maps_len), 0);
	for (size_t i = 0; i < NFN; i++) {
		struct kiln_sym_info in;

		/* Inside the function, past its first instruction. */
		assert_int_equal(kiln_sym_lookup(s, addrs[i] + 4, &in), 0);
		assert_true(in.nframes >= 1);
		memset(&out[i], 0, sizeof(out[i]));
		out[i].nframes = in.nframes;
		snprintf(out[i].name, sizeof(out[i].name), "%s", in.frames[0].name);
		snprintf(out[i].file, sizeof(out[i].file), "%s",
			 in.frames[0].file ? in.frames[0].file : "");
		out[i].line = in.frames[0].line;
		lines += out[i].line > 0;
	}
	kiln_sym_free(s);
	return lines;
}

static void assert_same(const struct res a[NFN], const struct res b[NFN])
{
	for (size_t i = 0; i < NFN; i++) {
		assert_string_equal(a[i].name, b[i].name);
		assert_string_equal(a[i].file, b[i].file);
		assert_int_equal(a[i].line, b[i].line);
		assert_int_equal(a[i].nframes, b[i].nframes);
	}
}

/* Whether ELF file path has a section with SHF_COMPRESSED; -1: not ELF. */
static int has_compressed(const char *path)
{
	int fd = open(path, O_RDONLY), r = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		r = -1;
	while (r == 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			r = 1;
	}
	elf_end(elf);
	close(fd);
	return r;
}

static void path_in(char *buf, size_t size, const char *dir)
{
	if ((size_t)snprintf(buf, size, "%s/%s", dir, libc_id) >= size)
		fail_msg("path too long");
}

static struct res ref[NFN];	/* no cache */

/* The first session writes the copy; later ones, full or light, read it. */
static void test_write_then_read(void **state)
{
	struct res got[NFN], light[NFN];
	char dir[PATH_MAX], entry[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/fresh", tmpdir);
	path_in(entry, sizeof(entry), dir);
	/* Without a cache, a light session reads no separate debug file. */
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
	assert_int_equal(symbolize(true, light), 0);

	assert_int_equal(kiln_sym_set_debug_cache(dir, true), 0);
	symbolize(false, got);
	assert_same(ref, got);
	assert_int_equal(has_compressed(entry), 0);

	symbolize(false, got);
	assert_same(ref, got);
	/* Read-only (the agent): lines for libc from the copy. */
	assert_int_equal(kiln_sym_set_debug_cache(dir, false), 0);
	assert_true(symbolize(true, light) > 0);
	for (size_t i = 0; i < NFN; i++) {
		print_message("%s %s:%d / %s %s:%d\n", ref[i].name, ref[i].file, ref[i].line, light[i].name, light[i].file, light[i].line);
		assert_string_equal(light[i].name, ref[i].name);
		if (light[i].line)
			assert_string_equal(light[i].file, ref[i].file);
	}
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
}

/* A cache that cannot be written: the same results, nothing written. */
static void test_unwritable(void **state)
{
	struct res got[NFN];
	char file[PATH_MAX], dir[PATH_MAX + 16];
	int fd;

	/* A folder under a regular file: refused even to root. */
	snprintf(file, sizeof(file), "%s/a-file", tmpdir);
	fd = open(file, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(dir, sizeof(dir), "%s/cache", file);
	assert_int_equal(kiln_sym_set_debug_cache(dir, true), 0);
	symbolize(false, got);
	assert_same(ref, got);
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
}

static void copy_prefix(const char *from, const char *to, size_t n)
{
	size_t len;
	char *data = read_all(from, &len);
	char slashed[PATH_MAX + 64], *slash;
	FILE *f;

	assert_non_null(data);
	snprintf(slashed, sizeof(slashed), "%s", to);
	slash = strrchr(slashed, '/');
	*slash = '\0';
	*strrchr(slashed, '/') = '\0';
	mkdir(slashed, 0755);		/* DIR */
	*strrchr(slashed, '\0') = '/';
	mkdir(slashed, 0755);		/* DIR/xx */
	f = fopen(to, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n < len ? n : len, f), n < len ? n : len);
	fclose(f);
	free(data);
}

/* Replaces the last byte of the first copy of libc's build ID in path. */
static void garble_build_id(const char *path)
{
	size_t len, idlen;
	char *data = read_all(path, &len);
	const void *bits;
	char *hit;
	int fd = open(path, O_RDONLY);
	Elf *elf;
	FILE *f;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	idlen = (size_t)dwelf_elf_gnu_build_id(elf, &bits);
	assert_true(idlen >= 2 && idlen < 64);
	hit = memmem(data, len, bits, idlen);
	assert_non_null(hit);
	hit[idlen - 1] ^= 0xff;
	elf_end(elf);
	close(fd);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	free(data);
}

/* Looks addrs[i] up in s as symbolize() does; whether it has a line. */
static bool lookup_res(struct kiln_sym *s, size_t i, struct res *r)
{
	struct kiln_sym_info in;

	assert_int_equal(kiln_sym_lookup(s, addrs[i] + 4, &in), 0);
	assert_true(in.nframes >= 1);
	memset(r, 0, sizeof(*r));
	r->nframes = in.nframes;
	snprintf(r->name, sizeof(r->name), "%s", in.frames[0].name);
	snprintf(r->file, sizeof(r->file), "%s",
		 in.frames[0].file ? in.frames[0].file : "");
	r->line = in.frames[0].line;
	return r->line > 0;
}

static void *read_lines(void *arg)
{
	static struct kiln_sym_lines l;

	kiln_sym_lines_read(arg, &l);
	return &l;
}

/*
 * defer_cached_lines (the agent's CPU collector): a light session reads
 * no line from the cache's copy when it looks an address up, the same
 * name; kiln_sym_fill_lines() gives each address looked up before it the
 * answer a session without the option gives (name, file, line, frames);
 * an address looked up after it has none until the next fill, here
 * through kiln_sym_lines_read() on another thread and
 * kiln_sym_lines_take().
 */
static void test_deferred(void **state)
{
	struct kiln_sym_opts o = { .light = true, .defer_cached_lines = true };
	struct res got[NFN], ref_light[NFN];
	char dir[PATH_MAX];
	struct kiln_sym *s;
	size_t half = NFN / 2;
	pthread_t t;
	void *lp;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fresh", tmpdir);	/* written above */
	assert_int_equal(kiln_sym_set_debug_cache(dir, false), 0);
	assert_true(symbolize(true, ref_light) > 0);
	s = kiln_sym_new(&o);
	assert_non_null(s);
	assert_int_equal(kiln_sym_add_maps(s, maps, maps_len), 0);
	assert_false(kiln_sym_lines_pending(s));
	assert_int_equal(kiln_sym_fill_lines(s), 0);	/* nothing to read */
	for (size_t i = 0; i < half; i++) {
		assert_false(lookup_res(s, i, &got[i]));
		assert_string_equal(got[i].name, ref_light[i].name);
	}
	assert_true(kiln_sym_lines_pending(s));
	assert_int_equal(kiln_sym_fill_lines(s), (int)half);
	assert_false(kiln_sym_lines_pending(s));
	assert_int_equal(kiln_sym_fill_lines(s), 0);
	for (size_t i = half; i < NFN; i++) {
		assert_false(lookup_res(s, i, &got[i]));
		assert_string_equal(got[i].name, ref_light[i].name);
	}
	assert_true(kiln_sym_lines_pending(s));
	assert_int_equal(pthread_create(&t, NULL, read_lines, s), 0);
	assert_int_equal(pthread_join(t, &lp), 0);
	assert_int_equal(kiln_sym_lines_take(s, lp), (int)(NFN - half));
	assert_false(kiln_sym_lines_pending(s));
	for (size_t i = 0; i < NFN; i++)
		lookup_res(s, i, &got[i]);
	assert_same(got, ref_light);
	kiln_sym_free(s);
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
}

/*
 * A copy cut short, garbage, or another build's file under libc's name:
 * not used (a light session finds no lines in it, a full one gives the
 * original's results), and a session that may write replaces it.
 */
static void test_corrupt(void **state)
{
	char good[PATH_MAX + 64], dir[PATH_MAX], entry[PATH_MAX + 64];
	struct res got[NFN];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/fresh", tmpdir);
	path_in(good, sizeof(good), dir);
	assert_int_equal(stat(good, &st), 0);	/* from test_write_then_read */
	snprintf(dir, sizeof(dir), "%s/corrupt", tmpdir);
	path_in(entry, sizeof(entry), dir);
	for (int kind = 0; kind < 4; kind++) {
		switch (kind) {
		case 0: /* cut in the middle of its sections */
			copy_prefix(good, entry, (size_t)st.st_size / 2);
			break;
		case 1: /* only the section headers missing */
			copy_prefix(good, entry, (size_t)st.st_size - 64);
			break;
		case 2: /* not ELF */
			copy_prefix("/etc/passwd", entry, 4096);
			break;
		case 3: /* another build ID */
			copy_prefix(good, entry, (size_t)st.st_size);
			garble_build_id(entry);
			break;
		}
		print_message("kind %d\n", kind);
		assert_int_equal(kiln_sym_set_debug_cache(dir, false), 0);
		assert_int_equal(symbolize(true, got), 0);
		print_message("light ok\n");
		symbolize(false, got);
		assert_same(ref, got);
		print_message("full ok\n");
		/* A writing session replaces it with a good copy. */
		assert_int_equal(kiln_sym_set_debug_cache(dir, true), 0);
		symbolize(false, got);
		assert_same(ref, got);
		assert_int_equal(has_compressed(entry), 0);
		assert_int_equal(kiln_sym_set_debug_cache(dir, false), 0);
		assert_true(symbolize(true, got) > 0);
		assert_int_equal(unlink(entry), 0);
	}
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
}

/* The names of the frames of addr in session s, innermost first, joined
 * by ';'. */
static void frame_names(struct kiln_sym *s, uint64_t addr, char *buf,
			size_t size)
{
	struct kiln_sym_info in;
	size_t len = 0;

	assert_int_equal(kiln_sym_lookup(s, addr, &in), 0);
	buf[0] = '\0';
	for (unsigned k = 0; k < in.nframes && len < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					k ? ";" : "", in.frames[k].name);
}

/*
 * One name per address, whatever the path: at every address of each
 * function, a light session without the cache (libc's symbol table, no
 * DWARF: the agent before the cache), full and light sessions with the
 * cache, and a full one without it (DWARF from the compressed original)
 * name the function alike, by the same frame at the same place.  In a
 * fresh session the first lookups ask libdwfl and the later ones the
 * per-interval name cache (sym_cache): both paths are taken.  libc's
 * write() is "write" at every address, also where its DWARF says
 * __libc_write is inlined into __libc_write (the split-off part of its
 * multithreaded path: its system call, where the agent's samples of it
 * land).
 */
static void test_one_name(void **state)
{
	static const struct {
		bool light;
		const char *cache;	/* under tmpdir; NULL: none */
	} how[] = { { true, NULL }, { false, NULL }, { true, "fresh" },
		    { false, "fresh" } };
	struct kiln_sym *ss[4];
	char dir[PATH_MAX], first[512];
	size_t checked = 0;

	for (size_t h = 0; h < 4; h++) {
		struct kiln_sym_opts o = { .light = how[h].light };

		snprintf(dir, sizeof(dir), "%s/%s", tmpdir,
			 how[h].cache ? how[h].cache : "");
		/* The setting is read when libc is resolved, in the first
		 * lookup: before the next session's setting. */
		assert_int_equal(kiln_sym_set_debug_cache(how[h].cache ? dir :
							  NULL, false), 0);
		ss[h] = kiln_sym_new(&o);
		assert_non_null(ss[h]);
		assert_int_equal(kiln_sym_add_maps(ss[h], maps, maps_len), 0);
		frame_names(ss[h], addrs[0], first, sizeof(first));
	}
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
	for (size_t i = 0; i < NFN; i++) {
		const ElfW(Sym) *sym = NULL;
		Dl_info info;

		assert_true(dladdr1((void *)(uintptr_t)addrs[i], &info,
				    (void **)&sym, RTLD_DL_SYMENT));
		assert_non_null(sym);
		for (uint64_t a = addrs[i]; a < addrs[i] + sym->st_size; a++) {
			char want[512], got[512];

			frame_names(ss[0], a, want, sizeof(want));
			/* Without DWARF: one frame, the function's name. */
			assert_null(strchr(want, ';'));
			if (!strcmp(fns[i], "write"))
				assert_string_equal(want, "write");
			for (size_t h = 1; h < 4; h++) {
				char *last;

				frame_names(ss[h], a, got, sizeof(got));
				last = strrchr(got, ';');
				last = last ? last + 1 : got;
				if (strcmp(last, want))
					fail_msg("%s+%#" PRIx64 " (session %zu): "
						 "%s, without DWARF: %s", fns[i],
						 a - addrs[i], h, got, want);
				/* write() inlines nothing: one frame. */
				if (!strcmp(fns[i], "write"))
					assert_string_equal(got, want);
			}
			checked++;
		}
	}
	assert_true(checked > 200);
	for (size_t h = 0; h < 4; h++)
		kiln_sym_free(ss[h]);
}

/* libc's build ID as "xx/yyyy.debug", from its mapped file; 0 or -1. */
static int libc_build_id(const char *path)
{
	int fd = open(path, O_RDONLY), r = -1;
	const unsigned char *bits;
	ssize_t n;
	Elf *elf;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&bits) : -1;
	if (n >= 2) {
		char *p = libc_id;

		for (ssize_t i = 0; i < n; i++)
			p += sprintf(p, i == 0 ? "%02x/" : "%02x", bits[i]);
		strcpy(p, ".debug");
		r = 0;
	}
	elf_end(elf);
	close(fd);
	return r;
}

/*
 * kiln_sym_close_debug_cache() (the agent at a program's exit): a light
 * session that read libc's copy before keeps its lines; one that reports
 * libc after reads no copy (the same names, no line).  Last: the close is
 * for the process's life.
 */
static void test_closed(void **state)
{
	struct kiln_sym_opts o = { .light = true };
	struct res after[NFN];
	char dir[PATH_MAX];
	struct kiln_sym *warm;
	int lines = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fresh", tmpdir);	/* written above */
	assert_int_equal(kiln_sym_set_debug_cache(dir, false), 0);
	warm = kiln_sym_new(&o);
	assert_non_null(warm);
	assert_int_equal(kiln_sym_add_maps(warm, maps, maps_len), 0);
	/* The collector's session: libc reported while the program runs. */
	{
		struct kiln_sym_info in;

		assert_int_equal(kiln_sym_lookup(warm, addrs[0] + 4, &in), 0);
		assert_true(in.nframes >= 1 && in.frames[0].line > 0);
	}
	kiln_sym_close_debug_cache();
	for (size_t i = 0; i < NFN; i++) {
		struct kiln_sym_info in;

		assert_int_equal(kiln_sym_lookup(warm, addrs[i] + 4, &in), 0);
		assert_true(in.nframes >= 1);
		assert_string_equal(in.frames[0].name, ref[i].name);
		lines += in.frames[0].line > 0;
	}
	assert_true(lines > 0);
	kiln_sym_free(warm);
	/* Reported after the close: the symbol table only. */
	assert_int_equal(symbolize(true, after), 0);
	for (size_t i = 0; i < NFN; i++)
		assert_string_equal(after[i].name, ref[i].name);
	assert_int_equal(kiln_sym_set_debug_cache(NULL, false), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_deferred),
		cmocka_unit_test(test_one_name),
		cmocka_unit_test(test_unwritable),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_closed),	/* last: closes the cache */
	};
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	char debug[PATH_MAX + 64], cmd[sizeof(tmpdir) + 16];
	Dl_info info;
	int rc, lines;

	if (!libc || !dlsym(libc, "qsort") ||
	    !dladdr(dlsym(libc, "qsort"), &info) || libc_build_id(info.dli_fname)) {
		printf("SKIP: cannot find libc.so.6 and its build ID\n");
		return 77;
	}
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%s", libc_id);
	if (has_compressed(debug) != 1) {
		printf("SKIP: no debug file with compressed sections for libc "
		       "(%s; Debian: apt install libc6-dbg)\n", debug);
		return 77;
	}
	for (size_t i = 0; i < NFN; i++) {
		addrs[i] = (uint64_t)(uintptr_t)dlsym(libc, fns[i]);
		if (!addrs[i]) {
			printf("SKIP: libc has no %s\n", fns[i]);
			return 77;
		}
	}
	maps = read_all("/proc/self/maps", &maps_len);
	if (!maps || !mkdtemp(tmpdir))
		return 1;
	kiln_sym_set_debug_cache(NULL, false);
	lines = symbolize(false, ref);
	if (!lines) {
		printf("SKIP: libc6-dbg gives no line for libc here\n");
		return 77;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	/* KILN_TEST_KEEP=1 keeps the folder to look at. */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (!getenv("KILN_TEST_KEEP") && system(cmd))
		rc = rc ? rc : 1;
	return rc;
}
