/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the doctor's files share (doctor stage): the target being
 * examined, one ELF file's facts as the binary checks read them, and
 * the row builder.
 */
#ifndef KILN_DOCTOR_DOCINT_H
#define KILN_DOCTOR_DOCINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "doctor/doctor.h"
#include "util/buf.h"

/* One ELF file's facts (elfscan.c); strings malloc'ed. */
struct kiln_doc_elf {
	char *path;
	int err;		/* 0, or why it could not be read (-errno) */
	bool x86_64;
	bool dynamic;		/* has PT_INTERP or PT_DYNAMIC */
	bool eh_frame;		/* .eh_frame with content */
	bool eh_frame_hdr;
	bool debug_frame;	/* .debug_frame here or in the debug file */
	bool symtab;		/* .symtab in the file itself */
	bool dwarf_in_file;	/* .debug_info in the file itself */
	bool dwarf;		/* DWARF found, here or separate */
	bool sep_symtab;	/* a .symtab came from the separate file */
	char *debugfile;	/* the separate debug file found, or NULL */
	char *build_id;		/* hex, or NULL */
	char *debuglink;	/* .gnu_debuglink's name, or NULL */
	/* Frame pointers, from the prologues of sampled functions. */
	unsigned fp_funcs;	/* functions sampled */
	unsigned fp_nonleaf;	/* of them, with a call */
	unsigned fp_set;	/* of those, setting up %rbp before it */
	int fp_err;		/* -ENOTSUP: not x86-64; -ENODATA: no symbols */
	bool fp_from_cfi;	/* functions found from .eh_frame_hdr */
	/* Unwind tables: of the same sample, those .eh_frame has a row for,
	 * and those .debug_frame has (here or in the debug file). */
	unsigned cfi_funcs, cfi_eh, cfi_debug;
	/* The allocator this file brings, if any ("jemalloc", ...). */
	const char *allocator;
	bool defines_malloc;
	/* DT_NEEDED names and the search path the file names. */
	char **needed;
	size_t nneeded;
	char *runpath;		/* DT_RUNPATH or DT_RPATH, $ORIGIN expanded */
};

/*
 * One function's x86-64 code [code, code+len) at addr: *nonleaf when it
 * calls anything, *sets when it pushes %rbp and then moves %rsp into it
 * before its first call.  0, -ENOTSUP (no x86-64 decoder) or -ENOMEM.
 */
int kiln_doc_prologue(const uint8_t *code, size_t len, uint64_t addr,
		      bool *nonleaf, bool *sets);

/* Reads path's facts into e (zeroed first).  0 or -ENOMEM; a file that
 * cannot be read is e->err, not an error. */
int kiln_doc_elf_scan(struct kiln_doc_elf *e, const char *path);
void kiln_doc_elf_release(struct kiln_doc_elf *e);

/* What the checks look at. */
struct kiln_doc_target {
	pid_t pid;			/* the process (0: none) */
	bool ran;			/* pid was our command's */
	struct kiln_doc_elf *objs;	/* the program first, then libraries */
	size_t nobjs;
	struct kiln_buf maps;		/* the process's last maps text */
	bool have_maps;
};

/*
 * Fills t->objs for the program at exe: it, then the libraries its
 * DT_NEEDED name (found as the dynamic loader would: RUNPATH,
 * LD_LIBRARY_PATH, /etc/ld.so.conf, the default folders), then those of
 * t->maps's mapped files not among them (dlopen'ed).  0 or -ENOMEM.
 */
int kiln_doc_target_objects(struct kiln_doc_target *t, const char *exe);
void kiln_doc_target_release(struct kiln_doc_target *t);

/*
 * Adds a row; fix may be NULL; the finding is printf-formatted.  Errors
 * are sticky in d->err.
 */
void kiln_doc_add(struct kiln_doctor *d, const char *check,
		  enum kiln_doc_scope scope, const char *subject,
		  enum kiln_doc_status status, const char *fix,
		  const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* The checks (machine.c, binary.c, process.c). */
int kiln_doc_paranoid(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_perf_open(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_kptr(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_tracefs(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_hwcounters(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_ptrace(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_framepointers(struct kiln_doctor *d, const struct kiln_doc_target *t,
			   const struct kiln_doc_elf *e, bool program);
int kiln_doc_unwindtables(struct kiln_doctor *d, const struct kiln_doc_target *t,
			  const struct kiln_doc_elf *e, bool program);
int kiln_doc_debuginfo(struct kiln_doctor *d, const struct kiln_doc_target *t,
		       const struct kiln_doc_elf *e, bool program);
int kiln_doc_buildid(struct kiln_doctor *d, const struct kiln_doc_target *t,
		     const struct kiln_doc_elf *e, bool program);
int kiln_doc_allocator(struct kiln_doctor *d, const struct kiln_doc_target *t);
int kiln_doc_jitmaps(struct kiln_doctor *d, const struct kiln_doc_target *t);

/* Whether most sampled non-leaf functions set up frame pointers. */
bool kiln_doc_has_fp(const struct kiln_doc_elf *e);

/* This process's effective capability bit cap (linux/capability.h). */
bool kiln_doc_has_cap(int cap);

#endif
