/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the gperftools CPU profile reader (src/format/gperf.c):
 * files built here in all four encodings (32/64-bit, little/big-endian)
 * over the `shares` workload placed at a made-up address, symbolized on
 * reading; a real libprofiler file from tests/fixtures/gperf/ whose binary
 * is gone; and truncated or malformed files refused with a byte offset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

static char build_dir[PATH_MAX - 64];

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* ---- the workload's layout ---- */

struct layout {
	char path[PATH_MAX];
	uint64_t text_vaddr, text_off, text_end;	/* executable PT_LOAD */
	uint64_t burn_a, burn_b, stage_a, stage_a_end, run, main_fn;
};

static void read_layout(struct layout *l)
{
	Elf_Scn *scn = NULL;
	size_t i, n;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	snprintf(l->path, sizeof(l->path), "%s/workloads/shares", build_dir);
	fd = open(l->path, O_RDONLY);
	if (fd < 0)
		fail_msg("workload %s is not built", l->path);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(gelf_getehdr(elf, &eh));
	/* The maps below place it at a made-up address: PIE only. */
	assert_int_equal(eh.e_type, ET_DYN);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		gelf_getphdr(elf, (int)i, &ph);
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			l->text_vaddr = ph.p_vaddr & ~0xfffull;
			l->text_off = ph.p_offset & ~0xfffull;
			l->text_end = ph.p_vaddr + ph.p_memsz;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			gelf_getsym(data, (int)i, &s);
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!strcmp(name, "burn_a"))
				l->burn_a = s.st_value;
			else if (!strcmp(name, "burn_b"))
				l->burn_b = s.st_value;
			else if (!strcmp(name, "stage_a")) {
				l->stage_a = s.st_value;
				l->stage_a_end = s.st_value + s.st_size;
			} else if (!strcmp(name, "run"))
				l->run = s.st_value;
			else if (!strcmp(name, "main"))
				l->main_fn = s.st_value;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(l->burn_a && l->burn_b && l->stage_a && l->run &&
		    l->main_fn && l->text_end);
}

/* ---- writing gperftools files ---- */

struct enc {
	unsigned wsize;
	bool big;
	uint64_t base;
};

static const struct enc encs[] = {
	{ 8, false, 0x555555554000ull },
	{ 4, false, 0x56555000ull },
	{ 8, true, 0x555555554000ull },
	{ 4, true, 0x56555000ull },
};

static void word(struct kiln_buf *b, const struct enc *e, uint64_t v)
{
	unsigned char c[8];
	unsigned i;

	for (i = 0; i < e->wsize; i++) {
		unsigned shift = 8 * (e->big ? e->wsize - 1 - i : i);

		c[i] = (unsigned char)(v >> shift);
	}
	assert_int_equal(kiln_buf_add(b, c, e->wsize), 0);
}

static void record(struct kiln_buf *b, const struct enc *e, uint64_t count,
		   const uint64_t *pcs, unsigned n)
{
	unsigned i;

	word(b, e, count);
	word(b, e, n);
	for (i = 0; i < n; i++)
		word(b, e, pcs[i]);
}

/*
 * A profile of three stacks: burn_a <- stage_a <- run <- main (3 samples,
 * stage_a's frame being the return address at stage_a's very end),
 * burn_b alone (1), and an address in a library that is not there (2).
 * Returns the offset where the trailer ends in *records_end.
 */
static void make_file(struct kiln_buf *b, const struct enc *e,
		      const struct layout *l, size_t *records_end)
{
	uint64_t B = e->base;
	uint64_t s1[] = { B + l->burn_a + 2, B + l->stage_a_end, B + l->run + 9,
			  B + l->main_fn + 5 };
	uint64_t s2[] = { B + l->burn_b + 1 };
	uint64_t s3[] = { 0x70001234, B + l->main_fn + 5 };

	word(b, e, 0);
	word(b, e, 3);
	word(b, e, 0);
	word(b, e, 10000);	/* 100 Hz */
	word(b, e, 0);
	record(b, e, 3, s1, 4);
	record(b, e, 1, s2, 1);
	record(b, e, 2, s3, 2);
	word(b, e, 0);
	word(b, e, 1);
	word(b, e, 0);
	*records_end = b->len;
	kiln_buf_addf(b, "%08llx-%08llx r--p 00000000 08:01 42   %s\n",
		      (unsigned long long)B, (unsigned long long)(B + 0x1000),
		      l->path);
	kiln_buf_addf(b, "%08llx-%08llx r-xp %08llx 08:01 42   %s\n",
		      (unsigned long long)(B + l->text_vaddr),
		      (unsigned long long)(B + l->text_end),
		      (unsigned long long)l->text_off, l->path);
	kiln_buf_addf(b, "%08llx-%08llx rw-p 00000000 00:00 0   [heap]\n",
		      (unsigned long long)(B + 0x100000),
		      (unsigned long long)(B + 0x200000));
	kiln_buf_addf(b, "70000000-70010000 r-xp 00000000 08:01 43   "
			 "/nonexistent/libfoo.so\n");
}

static const char *fn_name(struct kiln_prof *p, uint32_t loc)
{
	const struct kiln_location *l = &p->locations[loc];

	if (!l->nlines)
		return NULL;
	return kiln_prof_str(p, p->functions[p->lines[l->line0].function].name);
}

static void test_encodings(void **state)
{
	struct layout l = { "" };
	size_t k;

	read_layout(&l);
	for (k = 0; k < sizeof(encs) / sizeof(encs[0]); k++) {
		const struct enc *e = &encs[k];
		struct kiln_buf b = KILN_BUF_INIT;
		struct kiln_prof *p = kiln_prof_new();
		struct kiln_diag d = { "" };
		struct kiln_frame *fr = NULL;
		size_t cap = 0, end, i;
		bool seen_a = false, seen_b = false, seen_lib = false;
		uint32_t exe = 0;

		make_file(&b, e, &l, &end);
		assert_int_equal(kiln_fmt_detect(b.data, b.len) ==
					 KILN_FMT_GPERFTOOLS,
				 !e->big);
		if (kiln_gperf_read(p, b.data, b.len, &d))
			fail_msg("encoding %zu: %s", k, d.msg);
		assert_int_equal(p->ntypes, 2);
		assert_string_equal(kiln_prof_str(p, p->types[0].type), "samples");
		assert_string_equal(kiln_prof_str(p, p->types[0].unit), "count");
		assert_string_equal(kiln_prof_str(p, p->types[1].type), "cpu");
		assert_string_equal(kiln_prof_str(p, p->types[1].unit),
				    "nanoseconds");
		assert_string_equal(kiln_prof_str(p, p->period_type.type), "cpu");
		assert_int_equal(p->period, 10000000);
		assert_int_equal(kiln_prof_total(p, 0), 6);
		assert_int_equal(kiln_prof_total(p, 1), 60000000);
		/* Only the executable mappings. */
		assert_int_equal(p->nmappings, 2);
		for (i = 1; i <= p->nmappings; i++)
			if (!strcmp(kiln_prof_str(p, p->mappings[i].file), l.path))
				exe = (uint32_t)i;
		assert_true(exe);
		assert_int_equal(p->mappings[exe].start, e->base + l.text_vaddr);
		assert_int_equal(p->mappings[exe].offset, l.text_off);
		assert_true(p->mappings[exe].has_functions);
		assert_true(p->mappings[exe].has_line_numbers);
		assert_int_equal(kiln_prof_strlen(p, p->mappings[exe].build_id),
				 40);

		for (i = 0; i < p->nsamples; i++) {
			const struct kiln_sample *s = &p->samples[i];
			const uint32_t *locs = kiln_prof_sample_locs(p, s);
			long n = kiln_prof_frames(p, s, &fr, &cap);

			assert_true(n > 0);
			if (s->depth == 4) {
				seen_a = true;
				assert_int_equal(kiln_prof_value(p, i, 0), 3);
				assert_int_equal(kiln_prof_value(p, i, 1), 30000000);
				assert_string_equal(fn_name(p, locs[0]), "burn_a");
				/* The return address minus 1 is inside stage_a. */
				assert_string_equal(fn_name(p, locs[1]), "stage_a");
				assert_int_equal(p->locations[locs[1]].address,
						 e->base + l.stage_a_end - 1);
				assert_int_equal(p->locations[locs[0]].address,
						 e->base + l.burn_a + 2);
				assert_string_equal(fn_name(p, locs[2]), "run");
				assert_string_equal(fn_name(p, locs[3]), "main");
				assert_string_equal(kiln_prof_str(p, fr[0].name),
						    "burn_a");
				assert_true(ends_with(kiln_prof_str(p,
					p->functions[fr[0].function].filename),
					"/shares.c"));
				assert_true(fr[0].line > 0);
			} else if (s->depth == 1) {
				seen_b = true;
				assert_string_equal(fn_name(p, locs[0]), "burn_b");
			} else {
				seen_lib = true;
				assert_int_equal(s->depth, 2);
				assert_int_equal(kiln_prof_value(p, i, 0), 2);
				assert_null(fn_name(p, locs[0]));
				/* Named by its module; the address stays. */
				assert_string_equal(kiln_prof_str(p, fr[0].name),
						    "[libfoo.so]");
				assert_true(p->locations[locs[0]].address != 0);
				assert_string_equal(kiln_prof_str(p, fr[1].name),
						    "main");
			}
		}
		assert_true(seen_a && seen_b && seen_lib);
		free(fr);
		kiln_prof_free(p);
		kiln_buf_release(&b);
	}
}

/* Every prefix of a valid file that cuts the binary part is refused. */
static void test_truncated(void **state)
{
	struct layout l = { "" };
	size_t k;

	read_layout(&l);
	for (k = 0; k < 2; k++) {
		struct kiln_buf b = KILN_BUF_INIT;
		size_t end, n;

		make_file(&b, &encs[k], &l, &end);
		for (n = 0; n < end; n++) {
			/* An exact-size copy, so that ASan sees overreads. */
			char *copy = malloc(n ? n : 1);
			struct kiln_prof *p = kiln_prof_new();
			struct kiln_diag d = { "" };

			memcpy(copy, b.data, n);
			assert_int_equal(kiln_gperf_read(p, copy, n, &d), -EINVAL);
			assert_memory_equal(d.msg, "byte ", 5);
			free(copy);
			kiln_prof_free(p);
		}
		kiln_buf_release(&b);
	}
}

/* One malformed file: its error message. */
static void expect_error(const uint64_t *w, size_t n, const char *msg)
{
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_diag d = { "" };

	assert_int_equal(kiln_gperf_read(p, (const char *)w, n * 8, &d),
			 -EINVAL);
	assert_string_equal(d.msg, msg);
	kiln_prof_free(p);
}

static void test_malformed(void **state)
{
	const uint64_t version[] = { 0, 3, 2, 10000, 0, 0, 1, 0 };
	const uint64_t period[] = { 0, 3, 0, 0, 0, 0, 1, 0 };
	const uint64_t trailer[] = { 0, 3, 0, 10000, 0, 0, 2, 0, 0 };
	const uint64_t deep[] = { 0, 3, 0, 10000, 0, 1, 1000000, 0, 0 };
	const uint64_t short_rec[] = { 0, 3, 0, 10000, 0, 1, 3, 0x10, 0x20 };
	const uint64_t header[] = { 0, 3, 0, 10000 };
	const uint64_t noend[] = { 0, 3, 0, 10000, 0, 1, 1, 0x10 };
	/* Two counts each in range (10 ms periods: at most 922,337,203,685),
	 * their cpu total not (found by fuzz-gperf: kiln wrote a pprof it
	 * then refused). */
	const uint64_t total[] = { 0, 3, 0, 10000, 0, 500000000000ull, 1, 0x10,
				   500000000000ull, 1, 0x20, 0, 1, 0 };

	expect_error(version, 8, "byte 16: unknown format version 2 "
		     "(0 for C/C++, 1 for Java)");
	expect_error(period, 8, "byte 24: bad sampling period 0 microseconds");
	expect_error(trailer, 9, "byte 40: bad end-of-data trailer "
				 "(expected 0, 1, 0)");
	expect_error(deep, 9, "byte 48: stack depth 1000000 is too large "
			      "(at most 4096)");
	expect_error(short_rec, 9, "byte 40: record truncated: 3 addresses "
				   "announced, 16 bytes left");
	expect_error(header, 4, "byte 32: header truncated: 32 bytes of 40");
	expect_error(noend, 8, "byte 64: record truncated (the file ends "
			       "without the end-of-data trailer)");
	expect_error(total, 14, "byte 64: sample count 500000000000 makes the "
				"total of 'cpu' overflow 64 bits");
}

/* A real libprofiler file whose binary was deleted after profiling. */
static void test_fixture(void **state)
{
	const char *dir = getenv("KILN_FIXTURES");
	char path[PATH_MAX];
	struct kiln_prof *p = NULL;
	struct kiln_diag d = { "" };
	enum kiln_fmt fmt;
	struct kiln_frame *fr = NULL;
	size_t cap = 0, i;
	bool exe = false, found = false;

	if (!dir)
		skip();
	snprintf(path, sizeof(path), "%s/gperf/shares-250hz.prof", dir);
	if (kiln_read_profile(path, &p, &fmt, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(fmt, KILN_FMT_GPERFTOOLS);
	assert_int_equal(p->period, 4000000);
	assert_int_equal(kiln_prof_total(p, 0), 99);
	assert_int_equal(kiln_prof_total(p, 1), 396000000);
	for (i = 1; i <= p->nmappings; i++) {
		const char *f = kiln_prof_str(p, p->mappings[i].file);

		if (!strcmp(f, "/tmp/kiln-fixture-gone/shares")) {
			exe = true;
			assert_false(p->mappings[i].has_functions);
		}
	}
	assert_true(exe);
	/* Unknown frames are named by their module; the address stays in
	 * the location (file offset 0x11aa, in burn_a at 0x1181). */
	for (i = 0; i < p->nsamples; i++) {
		long n = kiln_prof_frames(p, &p->samples[i], &fr, &cap);
		const struct kiln_location *l;
		const struct kiln_mapping *m;

		assert_true(n >= 6);
		if (strcmp(kiln_prof_str(p, fr[0].name), "[shares]"))
			continue;
		l = &p->locations[fr[0].location];
		m = &p->mappings[l->mapping];
		if (l->address - m->start + m->offset == 0x11aa)
			found = true;
	}
	assert_true(found);
	free(fr);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encodings),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_fixture),
	};
	ssize_t n = readlink("/proc/self/exe", build_dir, sizeof(build_dir) - 1);
	char *slash;

	if (n <= 0)
		return 1;
	build_dir[n] = '\0';
	slash = strrchr(build_dir, '/');
	if (slash)
		*slash = '\0';
	return cmocka_run_group_tests(tests, NULL, NULL);
}
