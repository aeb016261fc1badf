/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the symbolizer (src/symbolize/): names, files and lines of
 * the workload binaries placed at a made-up load address, inline chains
 * of tests/workloads/inlined.c, a function's split-off part inlined back
 * into it (splitpart.c), C++ names of tests/workloads/cxxnames.cc,
 * this process through /proc/self/maps,
 * demangling of C++ and Rust names, perf JIT maps, symbolizing a
 * whole profile in place, and the load bias of every linker's layout
 * (tests/fixtures/elf/).
 *
 * The workloads are found next to this test: <build>/workloads/NAME.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "symbolize/elfbias.h"
#include "symbolize/symbolize.h"
#include "util/diag.h"

/* PIE workloads are placed here, as the loader would place them. */
#define BASE 0x555555554000ull

static char build_dir[PATH_MAX - 64];

static void workload(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/workloads/%s", build_dir, name);
	if (access(path, R_OK))
		fail_msg("workload %s is not built", path);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

/*
 * Adds the mappings the loader would make for ELF file path at bias
 * (one per PT_LOAD) and returns the bias (BASE for PIE, 0 for ET_EXEC)
 * and symbol `fn`'s value and size.
 */
static void map_elf(struct kiln_sym *s, const char *path, const char *fn,
		    uint64_t *bias, uint64_t *value, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t i, n;
	bool found = false;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_non_null(gelf_getehdr(elf, &eh));
	*bias = eh.e_type == ET_DYN ? BASE : 0;
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD)
			continue;
		assert_int_equal(
			kiln_sym_add_mapping(s, path,
					     *bias + (ph.p_vaddr & ~0xfffull),
					     *bias + ph.p_vaddr + ph.p_memsz,
					     ph.p_offset & ~0xfffull), 0);
	}
	while (fn && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			gelf_getsym(data, (int)i, &sym);
			if (!strcmp(elf_strptr(elf, sh.sh_link, sym.st_name),
				    fn)) {
				*value = sym.st_value;
				*size = sym.st_size;
				found = true;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (fn && !found)
		fail_msg("no symbol %s in %s", fn, path);
}

/* The line of the first line of the source file holding marker. */
static int marker_line(const char *file, const char *marker)
{
	char buf[512];
	FILE *f = fopen(file, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, marker)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("no %s in %s", marker, file);
	return 0;
}

/* ---- demangling ---- */

static void test_demangle(void **state)
{
	char *r;

	r = kiln_sym_demangle("_ZN3foo3barEv");
	assert_non_null(r);
	assert_string_equal(r, "foo::bar()");
	free(r);
	r = kiln_sym_demangle("_ZN4core3fmt5write17h0123456789abcdefE");
	assert_non_null(r);
	assert_string_equal(r, "core::fmt::write");
	free(r);
	r = kiln_sym_demangle("_RNvCs15kBYyAo9fc_7mycrate7example");
	assert_non_null(r);
	assert_string_equal(r, "mycrate::example");
	free(r);
	r = kiln_sym_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	assert_non_null(r);
	assert_string_equal(r, "std::vector<int, std::allocator<int> >::"
			       "push_back(int const&)");
	free(r);
	assert_null(kiln_sym_demangle("main"));
	assert_null(kiln_sym_demangle("burn_a"));
	assert_null(kiln_sym_demangle("_Z"));
	assert_null(kiln_sym_demangle(NULL));
}

/* ---- workloads at a made-up address ---- */

static void test_shares_burn_a(void **state)
{
	char path[PATH_MAX];
	struct kiln_sym *s = kiln_sym_new(NULL);
	struct kiln_sym_info a, b;
	uint64_t bias, value, size;
	size_t i;

	assert_non_null(s);
	workload("shares", path, sizeof(path));
	map_elf(s, path, "burn_a", &bias, &value, &size);
	assert_int_equal(kiln_sym_lookup(s, bias + value + 4, &a), 0);
	assert_int_equal(a.nframes, 1);
	assert_string_equal(a.frames[0].name, "burn_a");
	assert_string_equal(a.frames[0].system_name, "burn_a");
	assert_true(ends_with(a.frames[0].file, "/shares.c"));
	assert_true(ends_with(a.frames[0].func_file, "/shares.c"));
	assert_true(a.frames[0].line >= a.frames[0].start_line);
	assert_int_equal(a.frames[0].start_line,
			 marker_line(a.frames[0].file, "void burn_a("));
	assert_true(a.has_dwarf);
	assert_string_equal(a.module, path);
	assert_int_equal(a.file_offset, value + 4);
	/* The build ID is a GNU one: 20 bytes in lower-case hex. */
	assert_non_null(a.build_id);
	assert_int_equal(strlen(a.build_id), 40);
	for (i = 0; i < 40; i++)
		assert_non_null(strchr("0123456789abcdef", a.build_id[i]));
	/* Cached: the same results come back. */
	assert_int_equal(kiln_sym_lookup(s, bias + value + 4, &b), 0);
	assert_ptr_equal(a.frames, b.frames);
	/* An address outside every mapping, and one in the ELF header. */
	assert_int_equal(kiln_sym_lookup(s, 0x1000, &b), 0);
	assert_int_equal(b.nframes, 0);
	assert_null(b.module);
	kiln_sym_free(s);
}

/* The inline chain of the `inlined` workload (or a copy of it at path):
 * mix_inner in mix_middle in outer_loop, each at its marked line. */
static void check_inline_chain(const char *path)
{
	char src[PATH_MAX];
	struct kiln_sym *s = kiln_sym_new(NULL);
	uint64_t bias, value, size, a;
	bool found = false;

	assert_non_null(s);
	map_elf(s, path, "outer_loop", &bias, &value, &size);
	for (a = value; a < value + size && !found; a++) {
		struct kiln_sym_info in;

		assert_int_equal(kiln_sym_lookup(s, bias + a, &in), 0);
		assert_true(in.nframes >= 1 && in.nframes <= 3);
		/* The outermost frame is always the real function. */
		assert_string_equal(in.frames[in.nframes - 1].name,
				    "outer_loop");
		/* (clang gives some instructions of the inlined code line 0,
		 * "no source line", in DWARF 5 as in 4: the first with a
		 * line is checked.) */
		if (in.nframes < 3 || !in.frames[0].line)
			continue;
		found = true;
		assert_string_equal(in.frames[0].name, "mix_inner");
		assert_string_equal(in.frames[1].name, "mix_middle");
		assert_true(ends_with(in.frames[0].file, "/inlined.c"));
		snprintf(src, sizeof(src), "%s", in.frames[0].file);
		assert_int_equal(in.frames[0].line,
				 marker_line(src, "INNER-LINE"));
		assert_int_equal(in.frames[1].line,
				 marker_line(src, "CALL-INNER"));
		assert_int_equal(in.frames[2].line,
				 marker_line(src, "CALL-MIDDLE"));
		assert_true(in.frames[0].start_line > 0 &&
			    in.frames[0].start_line < in.frames[0].line);
		assert_true(ends_with(in.frames[1].func_file, "/inlined.c"));
	}
	assert_true(found);
	kiln_sym_free(s);
}

static void test_inline_chain(void **state)
{
	char path[PATH_MAX];

	workload("inlined", path, sizeof(path));
	check_inline_chain(path);
}

/*
 * The same from a copy without .debug_aranges (as clang builds files):
 * libdwfl 0.188 finds no unit for any address of it, and the symbolizer
 * reads the units' own ranges instead (symbolize/cuaddr.c).
 */
static void test_no_aranges(void **state)
{
	char path[PATH_MAX], dir[] = "/tmp/kiln-aranges-XXXXXX";
	char copy[PATH_MAX], cmd[4 * PATH_MAX + 128];

	workload("inlined", path, sizeof(path));
	if (system("command -v objcopy >/dev/null && command -v readelf >/dev/null"))
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/inlined", dir);
	snprintf(cmd, sizeof(cmd),
		 "objcopy --remove-section=.debug_aranges '%s' '%s' && "
		 "! readelf -S '%s' | grep -q debug_aranges", path, copy, copy);
	assert_int_equal(system(cmd), 0);
	check_inline_chain(copy);
	unlink(copy);
	rmdir(dir);
}

/*
 * Whether libdw's scope chain holds, at chain[j], a function's split-off
 * part inlined back into it: an inlined subroutine of the same function
 * as the next function out, "called" at that function's declaration line
 * (GCC's partial inlining; tests/workloads/splitpart.c).  kiln gives it no
 * frame of its own (docs/symbols.md).
 */
static bool split_part_at(Dwarf_Die *chain, int n, int j)
{
	Dwarf_Attribute a;
	Dwarf_Word call;
	Dwarf_Die o[2];
	int decl, k;

	if (dwarf_tag(&chain[j]) != DW_TAG_inlined_subroutine)
		return false;
	for (k = j + 1; k < n; k++)
		if (dwarf_tag(&chain[k]) == DW_TAG_subprogram ||
		    dwarf_tag(&chain[k]) == DW_TAG_inlined_subroutine)
			break;
	if (k == n)
		return false;
	o[0] = chain[j];
	o[1] = chain[k];
	for (int i = 0; i < 2; i++)
		while (dwarf_attr(&o[i], DW_AT_abstract_origin, &a) &&
		       dwarf_formref_die(&a, &o[i]))
			;
	return o[0].addr == o[1].addr &&
	       !dwarf_formudata(dwarf_attr(&chain[j], DW_AT_call_line, &a),
				&call) &&
	       !dwarf_decl_line(&chain[j], &decl) && call == (Dwarf_Word)decl;
}

/*
 * A function whose tail GCC split off and inlined back (splitpart.c:
 * DWARF says split_work is inlined into split_work at its declaration
 * line, around the loop): one frame, split_work, at every address, the
 * loop's addresses at the loop's line, as without DWARF.  libc's write()
 * is such a function (__libc_write inlined into __libc_write around the
 * system call): its frames there were "__libc_write;write" with libc's
 * DWARF, "write" without.
 */
static void test_split_part(void **state)
{
	static const Dwfl_Callbacks offline = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	char path[PATH_MAX], src[PATH_MAX] = "";
	struct kiln_sym *s = kiln_sym_new(NULL);
	Dwfl *ref = dwfl_begin(&offline);
	uint64_t bias, value, size, a;
	int split = 0, at_loop = 0;
	Dwfl_Module *m;

	assert_non_null(s);
	assert_non_null(ref);
	workload("splitpart", path, sizeof(path));
	map_elf(s, path, "split_work", &bias, &value, &size);
	m = dwfl_report_elf(ref, path, path, -1, bias, false);
	assert_non_null(m);
	dwfl_report_end(ref, NULL, NULL);
	for (a = bias + value; a < bias + value + size; a++) {
		struct kiln_sym_info in;
		Dwarf_Addr b;
		Dwarf_Die *cu = dwfl_module_addrdie(m, a, &b);
		Dwarf_Die *scopes = NULL, *chain = NULL;
		int n = 0;

		/* libdw's view: split_work inlined into split_work here? */
		if (cu && dwarf_getscopes(cu, a - b, &scopes) > 0)
			n = dwarf_getscopes_die(&scopes[0], &chain);
		for (int j = 0; j < n; j++)
			if (split_part_at(chain, n, j)) {
				split++;
				break;
			}
		free(scopes);
		free(chain);
		assert_int_equal(kiln_sym_lookup(s, a, &in), 0);
		if (in.nframes != 1 || strcmp(in.frames[0].name, "split_work"))
			fail_msg("+%#" PRIx64 ": %u frames, the first %s", a - bias - value,
				 in.nframes, in.nframes ? in.frames[0].name : "-");
		assert_true(ends_with(in.frames[0].file, "/splitpart.c"));
		if (!*src)
			snprintf(src, sizeof(src), "%s", in.frames[0].file);
		at_loop += in.frames[0].line == marker_line(src, "SPLIT-LINE");
	}
	dwfl_end(ref);
	kiln_sym_free(s);
	if (!split)
		skip();		/* not built by GCC: no split-off part */
	assert_true(at_loop > 0);
}

/* C++: names demangled from DW_AT_linkage_name, overloads kept apart. */
static void test_cxx_names(void **state)
{
	static const struct {
		const char *sym, *name;
	} want[] = {
		{ "_ZN7kiln_wl7Counter4stepEm",
		  "kiln_wl::Counter::step(unsigned long)" },
		{ "_ZN7kiln_wl4spinEi", "kiln_wl::spin(int)" },
		{ "_ZN7kiln_wl4spinEd", "kiln_wl::spin(double)" },
		{ "_ZN7kiln_wl5twiceIdEET_S1_", "double kiln_wl::twice<double>(double)" },
	};
	char path[PATH_MAX];
	size_t i;

	workload("cxxnames", path, sizeof(path));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct kiln_sym *s = kiln_sym_new(NULL);
		struct kiln_sym_info in;
		uint64_t bias, value, size;

		assert_non_null(s);
		map_elf(s, path, want[i].sym, &bias, &value, &size);
		assert_int_equal(kiln_sym_lookup(s, bias + value + 1, &in), 0);
		assert_int_equal(in.nframes, 1);
		assert_string_equal(in.frames[0].name, want[i].name);
		assert_string_equal(in.frames[0].system_name, want[i].sym);
		assert_true(ends_with(in.frames[0].file, "/cxxnames.cc"));
		assert_true(in.frames[0].line > 0);
		kiln_sym_free(s);
	}
}

/* ---- this process ---- */

__attribute__((noinline)) int local_marker_fn(int x)
{
	return x * 3 + 1;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n;

	assert_non_null(f);
	*len = 0;
	do {
		if (*len + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n);
	fclose(f);
	return buf;
}

static void test_self_maps(void **state)
{
	struct kiln_sym *s = kiln_sym_new(NULL);
	struct kiln_sym_info in;
	size_t len;
	char *maps = read_all("/proc/self/maps", &len);

	assert_non_null(s);
	assert_int_equal(kiln_sym_add_maps(s, maps, len), 0);
	free(maps);
	assert_int_equal(
		kiln_sym_lookup(s, (uint64_t)(uintptr_t)&local_marker_fn, &in),
		0);
	assert_int_equal(in.nframes, 1);
	assert_string_equal(in.frames[0].name, "local_marker_fn");
	assert_true(ends_with(in.frames[0].file, "/test-symbolize.c"));
	assert_int_equal(in.frames[0].start_line,
			 marker_line(in.frames[0].file,
				     "int local_marker_fn(int x)"));
	/* A libc function (one ASan does not intercept): at least its ELF
	 * symbol name. */
	assert_int_equal(kiln_sym_lookup(s, (uint64_t)(uintptr_t)&getpid, &in),
			 0);
	assert_true(in.nframes >= 1);
	assert_non_null(strstr(in.frames[in.nframes - 1].name, "getpid"));
	assert_non_null(strstr(in.module, "libc"));
	kiln_sym_free(s);
}

/*
 * A function with aliases is named by the same one in every session,
 * whether or not the library's full symbol table (libc6-dbg) or its DWARF
 * is read: libc's write() is "write", not "__write" (libdwfl's pick from
 * the dynamic symbols) or "__libc_write" (its DWARF name).
 */
static void test_alias_names(void **state)
{
	struct kiln_sym_opts light = { .light = true };
	struct kiln_sym *ss[2] = { kiln_sym_new(&light), kiln_sym_new(NULL) };
	/* libc's own write: under ASan, `write` here is the sanitizer's
	 * interceptor. */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	ssize_t (*volatile wr)(int, const void *, size_t) =
		(ssize_t (*)(int, const void *, size_t))(libc ? dlsym(libc, "write") : NULL);
	size_t len;
	char *maps = read_all("/proc/self/maps", &len);

	assert_non_null(wr);

	for (int i = 0; i < 2; i++) {
		struct kiln_sym_info in;

		assert_non_null(ss[i]);
		assert_int_equal(kiln_sym_add_maps(ss[i], maps, len), 0);
		/* Inside the function, past its first instruction. */
		assert_int_equal(kiln_sym_lookup(ss[i], (uint64_t)(uintptr_t)wr + 4,
						 &in), 0);
		assert_true(in.nframes >= 1);
		assert_string_equal(in.frames[in.nframes - 1].name, "write");
		assert_string_equal(in.frames[in.nframes - 1].system_name, "write");
		kiln_sym_free(ss[i]);
	}
	free(maps);
	dlclose(libc);
}

/*
 * The symbolizer's own indexes (the symbol names of a module by interval,
 * a unit's functions by address) give what libdwfl gives when asked
 * directly: libdwfl's nearest symbol for every sampled address of libc,
 * and dwarf_getscopes()' chain of inlined functions for every address of
 * this program's code.
 */
static char *dbg_path;
static const Dwfl_Callbacks ref_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &dbg_path,
};

static int inlined_seen;	/* inlined frames check_module() compared */

/* Whether name (without a version) is a function symbol of m at addr,
 * where sym, libdwfl's symbol there, is a function too. */
static bool func_alias(Dwfl_Module *m, uint64_t addr, const GElf_Sym *sym,
		       const char *name)
{
	int i, n = dwfl_module_getsymtab(m), t = GELF_ST_TYPE(sym->st_info);

	if (t != STT_FUNC && t != STT_GNU_IFUNC)
		return false;
	for (i = 0; i < n; i++) {
		GElf_Sym s;
		GElf_Addr a;
		const char *nm = dwfl_module_getsym_info(m, i, &s, &a, NULL,
							 NULL, NULL);

		t = GELF_ST_TYPE(s.st_info);
		if (nm && a == addr && (t == STT_FUNC || t == STT_GNU_IFUNC) &&
		    strcspn(nm, "@") == strlen(name) &&
		    !strncmp(nm, name, strlen(name)))
			return true;
	}
	return false;
}

/* The unit holding a, as libdwfl finds it (through .debug_aranges), else
 * by a walk of every unit's ranges: clang writes no .debug_aranges, and
 * libdwfl 0.188 finds no unit without them. */
static Dwarf_Die *ref_cu(Dwfl_Module *m, Dwarf_Addr a, Dwarf_Addr *b)
{
	Dwarf_Die *cu = dwfl_module_addrdie(m, a, b);

	if (cu)
		return cu;
	while ((cu = dwfl_module_nextcu(m, cu, b))) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0)
			if (a - *b >= lo && a - *b < hi)
				return cu;
	}
	return NULL;
}

static void check_module(struct kiln_sym *s, Dwfl_Module *m, uint64_t step,
			 bool chains, int *checked)
{
	GElf_Addr bias;
	Elf *elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	size_t phnum, i;

	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &phnum), 0);
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t a;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		for (a = bias + ph.p_vaddr; a < bias + ph.p_vaddr + ph.p_memsz;
		     a += step) {
			struct kiln_sym_info in;
			GElf_Off off;
			GElf_Sym sym;
			const char *want = dwfl_module_addrinfo(m, a, &off, &sym,
							       NULL, NULL, NULL);
			const char *got;

			assert_int_equal(kiln_sym_lookup(s, a, &in), 0);
			(*checked)++;
			if (!chains) {
				size_t n = want ? strcspn(want, "@") : 0;

				if (!n) {
					/* No symbol: nothing, or a PLT stub
					 * named from its relocation. */
					if (in.nframes) {
						const char *nm = in.frames[0].name;
						size_t l = strlen(nm);

						assert_int_equal(in.nframes, 1);
						assert_true(l > 4 && !strcmp(nm + l - 4, "@plt"));
					}
					continue;
				}
				assert_true(in.nframes >= 1);
				got = in.frames[in.nframes - 1].system_name;
				/* libdwfl's symbol, or a function symbol at its
				 * address (the alias kiln prefers). */
				if ((strlen(got) != n || strncmp(got, want, n)) &&
				    !func_alias(m, a - off, &sym, got))
					fail_msg("%#" PRIx64 ": %s, libdwfl: %s", a,
						 got, want);
				continue;
			}
			{
				Dwarf_Addr b;
				Dwarf_Die *cu = ref_cu(m, a, &b);
				Dwarf_Die *scopes = NULL, *chain = NULL;
				int n, k = 0, j;

				if (!cu || dwarf_getscopes(cu, a - b, &scopes) <= 0) {
					free(scopes);
					continue;
				}
				n = dwarf_getscopes_die(&scopes[0], &chain);
				free(scopes);
				for (j = 0; j < n; j++) {
					int tag = dwarf_tag(&chain[j]);

					if (tag != DW_TAG_subprogram &&
					    tag != DW_TAG_inlined_subroutine)
						continue;
					if (tag != DW_TAG_inlined_subroutine)
						break;
					/* A split-off part inlined back: no
					 * frame (test_split_part). */
					if (split_part_at(chain, n, j))
						continue;
					/* An inlined frame: its name, in order. */
					assert_true(k < (int)in.nframes);
					if (strcmp(in.frames[k].name,
						   dwarf_diename(&chain[j])))
						fail_msg("%#" PRIx64 " frame %d: %s, "
							 "libdw: %s", a, k,
							 in.frames[k].name,
							 dwarf_diename(&chain[j]));
					k++;
					inlined_seen++;
				}
				free(chain);
				/* Then the function itself, and no more. */
				assert_int_equal((int)in.nframes, k + 1);
			}
		}
	}
}

static void test_matches_libdw(void **state)
{
	struct kiln_sym_opts light = { .light = true };
	struct kiln_sym *s = kiln_sym_new(&light), *full = kiln_sym_new(NULL);
	Dwfl *ref = dwfl_begin(&ref_callbacks);
	size_t len;
	char *maps = read_all("/proc/self/maps", &len);
	int checked = 0;

	assert_non_null(s);
	assert_non_null(full);
	assert_non_null(ref);
	assert_int_equal(kiln_sym_add_maps(s, maps, len), 0);
	assert_int_equal(kiln_sym_add_maps(full, maps, len), 0);
	free(maps);
	assert_int_equal(dwfl_linux_proc_report(ref, getpid()), 0);
	assert_int_equal(dwfl_report_end(ref, NULL, NULL), 0);
	check_module(s, dwfl_addrmodule(ref, (uint64_t)(uintptr_t)&getpid), 211,
		     false, &checked);
	check_module(full,
		     dwfl_addrmodule(ref, (uint64_t)(uintptr_t)&local_marker_fn),
		     7, true, &checked);
	assert_true(checked > 5000);
	dwfl_end(ref);
	kiln_sym_free(s);
	kiln_sym_free(full);
	/* Programs built to inline deeply (C, C++): every address. */
	for (int w = 0; w < 2; w++) {
		static const Dwfl_Callbacks offline = {
			.find_elf = dwfl_build_id_find_elf,
			.find_debuginfo = dwfl_standard_find_debuginfo,
			.section_address = dwfl_offline_section_address,
			.debuginfo_path = &dbg_path,
		};
		char path[PATH_MAX];
		uint64_t bias, value, size;
		Dwfl_Module *m;

		workload(w ? "cxxnames" : "inlined", path, sizeof(path));
		s = kiln_sym_new(NULL);
		ref = dwfl_begin(&offline);
		assert_non_null(s);
		assert_non_null(ref);
		map_elf(s, path, NULL, &bias, &value, &size);
		m = dwfl_report_elf(ref, path, path, -1, bias, false);
		assert_non_null(m);
		dwfl_report_end(ref, NULL, NULL);
		checked = 0;
		inlined_seen = 0;
		check_module(s, m, 1, true, &checked);
		assert_true(checked > 200);
		/* `inlined` is built to inline three deep. */
		assert_true(w || inlined_seen > 20);
		dwfl_end(ref);
		kiln_sym_free(s);
	}
}

/* ---- perf maps ---- */

/* Appends a jitdump code-load record (perf's jitdump format) to buf. */
static size_t jd_load(char *buf, size_t at, uint64_t addr, uint64_t size,
		      const char *name)
{
	uint32_t type = 0, total = (uint32_t)(16 + 40 + strlen(name) + 1 + 4);
	uint64_t t = 1, zero = 0;
	uint32_t pid = 4242, tid = 4242;

	memcpy(buf + at, &type, 4);
	memcpy(buf + at + 4, &total, 4);
	memcpy(buf + at + 8, &t, 8);
	memcpy(buf + at + 16, &pid, 4);
	memcpy(buf + at + 20, &tid, 4);
	memcpy(buf + at + 24, &addr, 8);	/* vma */
	memcpy(buf + at + 32, &addr, 8);	/* code address */
	memcpy(buf + at + 40, &size, 8);
	memcpy(buf + at + 48, &zero, 8);	/* code index */
	memcpy(buf + at + 56, name, strlen(name) + 1);
	memset(buf + at + 56 + strlen(name) + 1, 0xc3, 4);	/* "code" */
	return at + total;
}

static void test_jitdump(void **state)
{
	char buf[512] = { 0 };
	uint32_t magic = 0x4A695444, version = 1, hsize = 40, mach = 62,
		 pid = 4242;
	size_t n, n3;
	uint64_t off = 0;
	struct kiln_sym *s = kiln_sym_new(NULL);
	struct kiln_sym_info in;
	struct kiln_diag d = { "" };

	(void)state;
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 4);
	memcpy(buf + 8, &hsize, 4);
	memcpy(buf + 12, &mach, 4);
	memcpy(buf + 20, &pid, 4);
	n = jd_load(buf, 40, 0x7f0000010000ull, 0x80, "JS:*hot /srv/a.js:1:1");
	n = jd_load(buf, n, 0x7f0000020000ull, 0x40, "Builtin:Fast");
	/* A third record half written: read up to it, then on from it. */
	n3 = jd_load(buf, n, 0x7f0000030000ull, 0x10, "JS:~late");
	assert_non_null(s);
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n + 20, 4242, &off, &d), 0);
	assert_int_equal(off, n);
	assert_int_equal(kiln_sym_lookup(s, 0x7f000001007full, &in), 0);
	assert_int_equal(in.nframes, 1);
	assert_string_equal(in.frames[0].name, "JS:*hot /srv/a.js:1:1");
	assert_int_equal(kiln_sym_lookup(s, 0x7f0000020010ull, &in), 0);
	assert_string_equal(in.frames[0].name, "Builtin:Fast");
	n = n3;
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n, 4242, &off, &d), 0);
	assert_int_equal(off, n);
	assert_int_equal(kiln_sym_lookup(s, 0x7f0000030001ull, &in), 0);
	assert_string_equal(in.frames[0].name, "JS:~late");
	/* Another process's dump, another byte order, not a dump, a record
	 * that claims less than its header: refused, said. */
	off = 0;
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n, 7, &off, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "process 4242, not 7"));
	magic = 0x4454694A;
	memcpy(buf, &magic, 4);
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n, 4242, &off, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "other byte order"));
	memcpy(buf, "XXXX", 4);
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n, 4242, &off, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "not a jitdump file"));
	magic = 0x4A695444;
	memcpy(buf, &magic, 4);
	hsize = 8;
	memcpy(buf + 44, &hsize, 4);	/* the first record's size */
	assert_int_equal(kiln_sym_add_jitdump(s, buf, n, 4242, &off, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "record of 8 bytes"));
	/* Too short for a header yet: nothing, no error. */
	assert_int_equal(kiln_sym_add_jitdump(s, buf, 10, 4242, &off, &d), 0);
	kiln_sym_free(s);
}

static void test_perfmap(void **state)
{
	static const char text[] =
		"0x10000 20 jit_compiled_fn\n"
		"20000 0x10 _ZN3foo3barEv\n"
		"\n"
		"7f0000001000 100 LazyCompile:~handler /srv/app.js:12\n";
	struct kiln_sym *s = kiln_sym_new(NULL);
	struct kiln_sym_info in;
	struct kiln_diag d = { "" };

	assert_non_null(s);
	assert_int_equal(kiln_sym_add_perfmap(s, text, sizeof(text) - 1, &d),
			 0);
	assert_int_equal(kiln_sym_lookup(s, 0x1001f, &in), 0);
	assert_int_equal(in.nframes, 1);
	assert_string_equal(in.frames[0].name, "jit_compiled_fn");
	assert_int_equal(kiln_sym_lookup(s, 0x10020, &in), 0);
	assert_int_equal(in.nframes, 0);
	assert_int_equal(kiln_sym_lookup(s, 0x20008, &in), 0);
	assert_string_equal(in.frames[0].name, "foo::bar()");
	assert_string_equal(in.frames[0].system_name, "_ZN3foo3barEv");
	assert_int_equal(kiln_sym_lookup(s, 0x7f0000001080ull, &in), 0);
	assert_string_equal(in.frames[0].name,
			    "LazyCompile:~handler /srv/app.js:12");

	assert_int_equal(kiln_sym_add_perfmap(s, "1000 10 ok\nzz 10 bad\n",
					      21, &d), -EINVAL);
	assert_string_equal(d.msg, "line 2: expected \"START SIZE name\" in "
				   "hexadecimal");
	assert_int_equal(kiln_sym_add_perfmap(s, "1000 0 empty\n", 13, &d),
			 -EINVAL);
	assert_non_null(strstr(d.msg, "line 1: bad size"));
	assert_int_equal(kiln_sym_add_perfmap(s, "1000\n", 5, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "line 1:"));
	kiln_sym_free(s);
	/* No map for this pid: nothing to do. */
	s = kiln_sym_new(NULL);
	assert_int_equal(kiln_sym_load_perfmap(s, 999999999, &d), 0);
	kiln_sym_free(s);
}

/* ---- whole profiles ---- */

static void test_profile_in_place(void **state)
{
	static const char *const types[] = { "samples/count" };
	char path[PATH_MAX];
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_sym *s = kiln_sym_new(NULL), *probe = kiln_sym_new(NULL);
	struct kiln_mapping m = { 0 }, vdso = { 0 };
	uint64_t bias, a_val, a_size, st_val, st_size, run_val, run_size;
	uint32_t mid, vid, leaf, caller, ret, unknown, other, locs[3];
	struct kiln_frame *fr = NULL;
	size_t cap = 0;
	int64_t one = 1;
	long n;

	assert_non_null(p);
	assert_non_null(s);
	workload("shares", path, sizeof(path));
	map_elf(probe, path, "burn_a", &bias, &a_val, &a_size);
	map_elf(probe, path, "stage_a", &bias, &st_val, &st_size);
	map_elf(probe, path, "run", &bias, &run_val, &run_size);
	kiln_sym_free(probe);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	/* One mapping over the whole file is enough for this test. */
	m.start = bias;
	m.limit = bias + 0x10000;
	m.offset = 0;
	m.file = kiln_prof_interns(p, path);
	mid = kiln_prof_mapping(p, &m);
	vdso.start = 0x7fff0000;
	vdso.limit = 0x7fff1000;
	vdso.file = kiln_prof_interns(p, "[vdso]");
	vid = kiln_prof_mapping(p, &vdso);

	leaf = kiln_prof_location(p, mid, bias + a_val + 2, NULL, 0);
	/* A return address just past the end of stage_a: only a caller,
	 * so it is looked up one byte back, inside stage_a. */
	caller = kiln_prof_location(p, mid, bias + st_val + st_size, NULL, 0);
	/* run's first byte, in a caller position and as a leaf: as is. */
	ret = kiln_prof_location(p, mid, bias + run_val, NULL, 0);
	unknown = kiln_prof_location(p, mid, bias + 0xf000, NULL, 0);
	other = kiln_prof_location(p, vid, 0x7fff0100, NULL, 0);
	locs[0] = leaf;
	locs[1] = caller;
	locs[2] = ret;
	assert_true(kiln_prof_add_sample(p, locs, 3, &one, 0) >= 0);
	locs[0] = ret;
	assert_true(kiln_prof_add_sample(p, locs, 1, &one, 0) >= 0);
	locs[0] = unknown;
	locs[1] = other;
	assert_true(kiln_prof_add_sample(p, locs, 2, &one, 0) >= 0);

	assert_int_equal(kiln_sym_prof(s, p, KILN_SYM_RETURN_ADDRS), 0);
	assert_int_equal(p->locations[leaf].nlines, 1);
	assert_string_equal(kiln_prof_str(p, p->functions[p->lines[
		p->locations[leaf].line0].function].name), "burn_a");
	assert_true(ends_with(kiln_prof_str(p, p->functions[p->lines[
		p->locations[leaf].line0].function].filename), "/shares.c"));
	assert_true(p->lines[p->locations[leaf].line0].line > 0);
	assert_int_equal(p->locations[caller].nlines, 1);
	assert_string_equal(kiln_prof_str(p, p->functions[p->lines[
		p->locations[caller].line0].function].name), "stage_a");
	assert_string_equal(kiln_prof_str(p, p->functions[p->lines[
		p->locations[ret].line0].function].name), "run");
	/* The address is kept; only lines are added. */
	assert_int_equal(p->locations[caller].address,
			 bias + st_val + st_size);
	assert_int_equal(p->locations[unknown].nlines, 0);
	assert_int_equal(p->locations[other].nlines, 0);

	/* The mapping says what it has now. */
	assert_true(p->mappings[mid].has_functions);
	assert_true(p->mappings[mid].has_filenames);
	assert_true(p->mappings[mid].has_line_numbers);
	assert_true(p->mappings[mid].has_inline_frames);
	assert_int_equal(kiln_prof_strlen(p, p->mappings[mid].build_id), 40);
	assert_false(p->mappings[vid].has_functions);
	assert_int_equal(p->mappings[vid].build_id, 0);

	/* Frames: names, and "[module]" for the unknown one. */
	n = kiln_prof_frames(p, &p->samples[0], &fr, &cap);
	assert_int_equal(n, 3);
	assert_string_equal(kiln_prof_str(p, fr[0].name), "burn_a");
	assert_string_equal(kiln_prof_str(p, fr[1].name), "stage_a");
	assert_string_equal(kiln_prof_str(p, fr[2].name), "run");
	n = kiln_prof_frames(p, &p->samples[2], &fr, &cap);
	assert_int_equal(n, 2);
	assert_string_equal(kiln_prof_str(p, fr[0].name), "[shares]");
	/* The symbolized location is found again by its lines. */
	{
		const struct kiln_location *l = &p->locations[leaf];

		assert_int_equal(kiln_prof_location(p, mid, l->address,
						    p->lines + l->line0, 1),
				 leaf);
	}
	free(fr);
	kiln_sym_free(s);
	kiln_prof_free(p);
}

/* A file that is not ELF, and one that does not exist: no names. */
static void test_not_elf(void **state)
{
	struct kiln_sym *s = kiln_sym_new(&(struct kiln_sym_opts){ .pid = 0 });
	struct kiln_sym_info in;

	assert_non_null(s);
	assert_int_equal(kiln_sym_add_mapping(s, "/etc/passwd", 0x1000,
					      0x2000, 0), 0);
	assert_int_equal(kiln_sym_add_mapping(s, "/nonexistent/lib.so",
					      0x3000, 0x4000, 0), 0);
	assert_int_equal(kiln_sym_add_mapping(s, "x", 0x5000, 0x5000, 0),
			 -EINVAL);
	assert_int_equal(kiln_sym_lookup(s, 0x1800, &in), 0);
	assert_int_equal(in.nframes, 0);
	assert_string_equal(in.module, "/etc/passwd");
	assert_int_equal(in.file_offset, 0x800);
	assert_int_equal(kiln_sym_lookup(s, 0x3800, &in), 0);
	assert_int_equal(in.nframes, 0);
	assert_null(in.build_id);
	kiln_sym_free(s);
	kiln_sym_free(NULL);
}

/* ---- load bias over every linker's layout ---- */

/* The fixtures of tests/fixtures/elf/ (README there): golden.c linked by
 * each linker Debian has, LLD's and mold's code segment starting inside
 * the read-only segment's last page. */
static const char *const linked[] = {
	"golden-bfd", "golden-bfd-noseparate", "golden-gold", "golden-lld",
	"golden-lld-nopie", "golden-mold", "libgolden-lld.so",
};

static void fixture(const char *name, char *path, size_t size)
{
	const char *dir = getenv("KILN_FIXTURES");

	if (!dir)
		fail_msg("KILN_FIXTURES is not set (run through ctest)");
	snprintf(path, size, "%s/elf/%s", dir, name);
}

/*
 * Each executable segment of each fixture mapped where the loader maps it
 * (from its first page, and from a later page as a split mapping would
 * start): kiln_sym_elf_bias() gives the bias it was placed at.
 */
static void test_elf_bias(void **state)
{
	size_t f;

	for (f = 0; f < sizeof(linked) / sizeof(linked[0]); f++) {
		char path[PATH_MAX];
		GElf_Ehdr eh;
		uint64_t want, got;
		size_t i, n, nx = 0;
		Elf *elf;
		int fd;

		fixture(linked[f], path, sizeof(path));
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		elf_version(EV_CURRENT);
		elf = elf_begin(fd, ELF_C_READ, NULL);
		assert_non_null(gelf_getehdr(elf, &eh));
		want = eh.e_type == ET_DYN ? BASE : 0;
		assert_int_equal(elf_getphdrnum(elf, &n), 0);
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;
			uint64_t start, off, last;

			assert_non_null(gelf_getphdr(elf, (int)i, &ph));
			if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
				continue;
			nx++;
			start = want + (ph.p_vaddr & ~0xfffull);
			off = ph.p_offset & ~0xfffull;
			got = 1;
			assert_true(kiln_sym_elf_bias(elf, start, off, &got));
			if (got != want)
				fail_msg("%s: segment %zu (off 0x%" PRIx64 ")"
					 ": bias 0x%" PRIx64 ", want 0x%" PRIx64,
					 linked[f], i, (uint64_t)ph.p_offset,
					 got, want);
			last = (ph.p_offset + ph.p_filesz - 1) & ~0xfffull;
			if (last > off) {
				got = 1;
				assert_true(kiln_sym_elf_bias(
					elf, start + (last - off), last, &got));
				assert_int_equal(got, want);
			}
		}
		assert_int_equal(nx, 1);
		/* An offset past every segment's file bytes. */
		if (eh.e_type == ET_DYN)
			assert_false(kiln_sym_elf_bias(elf, BASE, 1ull << 40,
						       &got));
		elf_end(elf);
		close(fd);
	}
}

/* Names in the code of each fixture mapped as the loader maps it. */
static void test_linker_names(void **state)
{
	static const char *const fns[] = { "leaf", "outer", "work", "main" };
	size_t f, k;

	for (f = 0; f < sizeof(linked) / sizeof(linked[0]); f++) {
		char path[PATH_MAX];

		fixture(linked[f], path, sizeof(path));
		for (k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
			struct kiln_sym *s = kiln_sym_new(NULL);
			struct kiln_sym_info in;
			uint64_t bias, value, size;

			assert_non_null(s);
			map_elf(s, path, fns[k], &bias, &value, &size);
			assert_int_equal(kiln_sym_lookup(s, bias + value + 1, &in), 0);
			if (in.nframes != 1 || strcmp(in.frames[0].name, fns[k]))
				fail_msg("%s: %s+1 named %s", linked[f], fns[k],
					 in.nframes ? in.frames[0].name : "nothing");
			kiln_sym_free(s);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_shares_burn_a),
		cmocka_unit_test(test_inline_chain),
		cmocka_unit_test(test_no_aranges),
		cmocka_unit_test(test_split_part),
		cmocka_unit_test(test_cxx_names),
		cmocka_unit_test(test_self_maps),
		cmocka_unit_test(test_alias_names),
		cmocka_unit_test(test_matches_libdw),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_jitdump),
		cmocka_unit_test(test_profile_in_place),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_elf_bias),
		cmocka_unit_test(test_linker_names),
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
