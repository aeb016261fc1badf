/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor's binary checks (doctor stage), one row per ELF file from
 * its facts (elfscan.c): frame pointers, unwind tables, debug info, build
 * ID; and the program's allocator, for heap profiling.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/docint.h"
#include "symbolize/symbolize.h"

bool kiln_doc_has_fp(const struct kiln_doc_elf *e)
{
	return e->fp_nonleaf && e->fp_set * 100 / e->fp_nonleaf >= 80;
}

#define FP_FIX "rebuild with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer " \
	"(CFLAGS, and RUSTFLAGS=-Cforce-frame-pointers=yes); meanwhile record " \
	"with --call-graph dwarf (kiln record's default, auto, does where " \
	"there is CFI)"

int kiln_doc_framepointers(struct kiln_doctor *d, const struct kiln_doc_target *t,
			   const struct kiln_doc_elf *e, bool program)
{
	const char *c = "frame-pointers";
	bool cfi = e->cfi_funcs ? (e->cfi_eh > e->cfi_debug ? e->cfi_eh : e->cfi_debug)
				  * 100 / e->cfi_funcs >= 80 : e->eh_frame || e->debug_frame;
	unsigned pct;

	if (e->fp_err == -ENOENT) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_SKIP,
			     "apt install " KILN_PKG_CAPSTONE,
			     "not judged: capstone, which reads the prologues, "
			     "cannot be loaded");
		return 0;
	}
	if (e->fp_err == -ENOTSUP) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_SKIP, NULL,
			     "not judged: only x86-64 prologues are read");
		return 0;
	}
	if (e->fp_err == -ENODATA || !e->fp_nonleaf) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_SKIP, NULL,
			     "not judged: %s", e->fp_err ? "no function symbols to "
			     "find the prologues by" : "no function that calls another");
		return 0;
	}
	pct = e->fp_set * 100 / e->fp_nonleaf;
	if (kiln_doc_has_fp(e)) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_OK, NULL,
			     "yes: %u of %u non-leaf functions sampled set up %%rbp "
			     "(push %%rbp; mov %%rsp,%%rbp)%s", e->fp_set, e->fp_nonleaf,
			     e->fp_from_cfi ? "; functions found from .eh_frame_hdr "
			     "(no symbols)" : "");
		return 0;
	}
	kiln_doc_add(d, c, KILN_DOC_BINARY, e->path,
		     cfi ? KILN_DOC_WARN : KILN_DOC_PROBLEM, cfi ? FP_FIX :
		     "rebuild with -fno-omit-frame-pointer "
		     "-mno-omit-leaf-frame-pointer, or at least without "
		     "-fno-asynchronous-unwind-tables, so that DWARF unwinding "
		     "can pass it",
		     "%s: %u of %u non-leaf functions sampled set up %%rbp "
		     "(built with -fomit-frame-pointer, gcc's default at -O1 and "
		     "up): frame-pointer unwinding (--call-graph fp, -a's default, "
		     "perf -g) loses callers%s%s", pct >= 20 ? "partly" : "no",
		     e->fp_set, e->fp_nonleaf,
		     e->fp_from_cfi ? " (functions found from .eh_frame_hdr: no "
		     "symbols)" : "",
		     cfi ? "; DWARF unwinding works" : ", and no unwind tables "
		     "either: stacks stop here");
	return 0;
}

#define CFI_FIX "build without -fno-asynchronous-unwind-tables / " \
	"-fno-unwind-tables (gcc's default on x86-64 keeps .eh_frame), and do " \
	"not remove .eh_frame"

int kiln_doc_unwindtables(struct kiln_doctor *d, const struct kiln_doc_target *t,
			  const struct kiln_doc_elf *e, bool program)
{
	const char *c = "unwind-tables";
	bool fp = kiln_doc_has_fp(e);

	if (!e->cfi_funcs) {
		/* No function symbols to sample: the sections tell. */
		if (e->eh_frame || e->debug_frame)
			kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_OK, NULL,
				     "%s (no function symbols to check it per "
				     "function)", e->eh_frame ? ".eh_frame" :
				     ".debug_frame");
		else
			kiln_doc_add(d, c, KILN_DOC_BINARY, e->path,
				     KILN_DOC_PROBLEM, CFI_FIX, "no .eh_frame and no "
				     ".debug_frame: DWARF unwinding cannot pass this file");
		return 0;
	}
	if (e->cfi_eh * 100 / e->cfi_funcs >= 80)
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_OK, NULL,
			     ".eh_frame covers %u of %u functions sampled%s: DWARF "
			     "unwinding (--call-graph dwarf, auto) works", e->cfi_eh,
			     e->cfi_funcs, e->eh_frame_hdr ? "" : " (no .eh_frame_hdr)");
	else if (e->cfi_debug * 100 / e->cfi_funcs >= 80)
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_WARN, CFI_FIX,
			     ".eh_frame covers %u of %u functions sampled, "
			     ".debug_frame%s %u: kiln record reads it, in-process "
			     "unwinders (libkiln.so, libunwind) do not", e->cfi_eh,
			     e->cfi_funcs, e->debugfile ? " (in the debug file)" : "",
			     e->cfi_debug);
	else
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path,
			     fp ? KILN_DOC_WARN : KILN_DOC_PROBLEM, CFI_FIX,
			     "missing: .eh_frame covers %u of %u functions sampled, "
			     ".debug_frame %u: DWARF unwinding cannot pass them%s",
			     e->cfi_eh, e->cfi_funcs, e->cfi_debug, fp ?
			     "; frame pointers still do" : ", nor can frame pointers: "
			     "stacks stop here");
	return 0;
}

/* How the symbolizer's search found a debug file, from its path. */
static const char *found_how(const char *path)
{
	char *cache = kiln_sym_debug_cache_env();
	const char *how;

	if (cache && *cache && !strncmp(path, cache, strlen(cache)))
		how = "in kiln's debug file cache";
	else if (strstr(path, "/.build-id/"))
		how = "by build ID";
	else
		how = "by .gnu_debuglink";
	free(cache);
	return how;
}

int kiln_doc_debuginfo(struct kiln_doctor *d, const struct kiln_doc_target *t,
		       const struct kiln_doc_elf *e, bool program)
{
	const char *c = "debug-info";
	char fix[700];

	if (e->dwarf && e->debugfile) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_OK, NULL,
			     "separate debug file %s, found %s: functions, lines "
			     "and inlined frames", e->debugfile, found_how(e->debugfile));
		return 0;
	}
	if (e->dwarf) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_OK, NULL,
			     "DWARF in the file: functions, lines and inlined frames");
		return 0;
	}
	if (e->build_id)
		snprintf(fix, sizeof(fix),
			 "install its debug file (Debian: the -dbgsym or -dbg "
			 "package, or DEBUGINFOD_URLS for debuginfod), or put one at "
			 "/usr/lib/debug/.build-id/%.2s/%s.debug%s%s%s; or build with "
			 "-g and do not strip", e->build_id, e->build_id + 2,
			 e->debuglink ? ", or as '" : "",
			 e->debuglink ? e->debuglink : "",
			 e->debuglink ? "' beside the file or in its .debug/ folder" : "");
	else
		snprintf(fix, sizeof(fix),
			 "build with -g and do not strip, or keep a debug file "
			 "(objcopy --only-keep-debug) and name it with objcopy "
			 "--add-gnu-debuglink%s%s%s", e->debuglink ? "; its debuglink '" : "",
			 e->debuglink ? e->debuglink : "",
			 e->debuglink ? "' is looked for beside the file and in its .debug/ folder" : "");
	if (e->symtab || e->sep_symtab) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, e->path, KILN_DOC_WARN, fix,
			     "symbol table only: function names, but no file:line "
			     "and no inlined frames");
		return 0;
	}
	kiln_doc_add(d, c, KILN_DOC_BINARY, e->path,
		     program ? KILN_DOC_PROBLEM : KILN_DOC_WARN, fix,
		     "stripped: no symbol table, no DWARF, and no separate debug "
		     "file found (%s%s%s%s): %s", e->build_id ? "build ID " : "no build ID",
		     e->build_id ? e->build_id : "", e->debuglink ? ", debuglink " : "",
		     e->debuglink ? e->debuglink : "",
		     program ? "its own functions show as [module] or by the "
		     "nearest exported name" : "only its exported functions "
		     "have names");
	return 0;
}

int kiln_doc_buildid(struct kiln_doctor *d, const struct kiln_doc_target *t,
		     const struct kiln_doc_elf *e, bool program)
{
	if (e->build_id)
		kiln_doc_add(d, "build-id", KILN_DOC_BINARY, e->path, KILN_DOC_OK,
			     NULL, "%s: profiles name this exact file, and its "
			     "debug file is found by it", e->build_id);
	else
		kiln_doc_add(d, "build-id", KILN_DOC_BINARY, e->path, KILN_DOC_WARN,
			     "link with -Wl,--build-id (gcc's default on Debian; "
			     "Go: -ldflags=-B=gobuildid)",
			     "none: a profile cannot tell this file from a rebuilt "
			     "one, and no debug file or debuginfod server can be "
			     "asked by build ID");
	return 0;
}

int kiln_doc_allocator(struct kiln_doctor *d, const struct kiln_doc_target *t)
{
	const struct kiln_doc_elf *prog = &t->objs[0];
	const char *c = "allocator";
	size_t i;

	if (prog->err)
		return 0;
	if (!prog->dynamic) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, prog->path, KILN_DOC_WARN,
			     "link dynamically for heap profiling (kiln heap); "
			     "CPU profiling is not affected",
			     "statically linked: %s malloc is inside the program "
			     "and LD_PRELOAD does not apply: kiln heap cannot see "
			     "its allocations", prog->allocator ? prog->allocator :
			     "the C library's");
		return 0;
	}
	if (prog->defines_malloc) {
		kiln_doc_add(d, c, KILN_DOC_BINARY, prog->path, KILN_DOC_WARN,
			     "link the allocator as a shared library (-ljemalloc, "
			     "-ltcmalloc) or use the C library's for heap profiling",
			     "%s linked into the program (it defines malloc): its "
			     "allocations never reach an interposer, so kiln heap "
			     "sees none of them", prog->allocator ? prog->allocator :
			     "an allocator");
		return 0;
	}
	for (i = 1; i < t->nobjs; i++) {
		const char *base = strrchr(t->objs[i].path, '/');
		static const char *const libs[] = { "libjemalloc", "libtcmalloc",
						    "libmimalloc" };
		size_t k;

		base = base ? base + 1 : t->objs[i].path;
		for (k = 0; k < 3; k++)
			if (!strncmp(base, libs[k], strlen(libs[k]))) {
				kiln_doc_add(d, c, KILN_DOC_BINARY, prog->path,
					     KILN_DOC_OK, NULL, "%s (%s, shared): "
					     "kiln heap's interposer is preloaded in "
					     "front of it%s", libs[k] + 3,
					     t->objs[i].path, k == 1 ? "; tcmalloc "
					     "changes the baseline: compare heap "
					     "profiles against glibc runs" : "");
				return 0;
			}
	}
	kiln_doc_add(d, c, KILN_DOC_BINARY, prog->path, KILN_DOC_OK, NULL,
		     "the C library's malloc: kiln heap interposes it");
	return 0;
}
