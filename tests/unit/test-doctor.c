/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of src/doctor/: the prologue judge on hand-assembled x86-64
 * functions (frame set up, after endbr64, shrink-wrapped past an early
 * return, only after the first call, none, a leaf), the ELF facts of this
 * test program itself (built with frame pointers, unwind tables, DWARF and
 * a build ID, as CMake builds everything, and libiberty's demangler
 * linked in without them), a file that is not ELF, and the
 * table of checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/docint.h"
#include "doctor/doctor.h"

#define ENDBR64 0xf3, 0x0f, 0x1e, 0xfa
#define PUSH_RBP 0x55
#define MOV_RBP_RSP 0x48, 0x89, 0xe5
#define MOV_RBP_RSP_ALT 0x48, 0x8b, 0xec
#define SUB_RSP_8 0x48, 0x83, 0xec, 0x08
#define CALL_0 0xe8, 0x00, 0x00, 0x00, 0x00
#define CALL_RAX 0xff, 0xd0
#define TEST_EDI 0x85, 0xff
#define JE_4 0x74, 0x04
#define RET 0xc3
#define LEAVE 0xc9
#define MOV_EAX_EDI 0x89, 0xf8

static void judge(const uint8_t *code, size_t len, bool nonleaf, bool sets)
{
	bool nl = !nonleaf, st = !sets;

	assert_int_equal(kiln_doc_prologue(code, len, 0x401000, &nl, &st), 0);
	assert_int_equal(nl, nonleaf);
	assert_int_equal(st, sets);
}

static void test_prologues(void **state)
{
	static const uint8_t framed[] = { PUSH_RBP, MOV_RBP_RSP, CALL_0, LEAVE, RET };
	static const uint8_t cet[] = { ENDBR64, PUSH_RBP, MOV_RBP_RSP, CALL_RAX, LEAVE, RET };
	static const uint8_t alt[] = { PUSH_RBP, MOV_RBP_RSP_ALT, CALL_0, LEAVE, RET };
	/* gcc's shrink-wrapping: the early return comes before the frame. */
	static const uint8_t wrapped[] = { TEST_EDI, JE_4, PUSH_RBP, MOV_RBP_RSP,
					   CALL_0, LEAVE, RET, MOV_EAX_EDI, RET };
	static const uint8_t omitted[] = { SUB_RSP_8, CALL_0, 0x48, 0x83, 0xc4, 0x08, RET };
	/* %rbp pushed as a callee-saved register, never the frame. */
	static const uint8_t saved[] = { PUSH_RBP, SUB_RSP_8, CALL_0, RET };
	/* The frame only after the first call does not frame that call. */
	static const uint8_t late[] = { CALL_0, PUSH_RBP, MOV_RBP_RSP, CALL_0, LEAVE, RET };
	static const uint8_t leaf[] = { MOV_EAX_EDI, RET };

	(void)state;
	judge(framed, sizeof(framed), true, true);
	judge(cet, sizeof(cet), true, true);
	judge(alt, sizeof(alt), true, true);
	judge(wrapped, sizeof(wrapped), true, true);
	judge(omitted, sizeof(omitted), true, false);
	judge(saved, sizeof(saved), true, false);
	judge(late, sizeof(late), true, false);
	judge(leaf, sizeof(leaf), false, false);
}

/* This program: CMake builds it with -fno-omit-frame-pointer and -g. */
static void test_self(void **state)
{
	struct kiln_doc_elf e;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	assert_int_equal(kiln_doc_elf_scan(&e, self), 0);
	assert_int_equal(e.err, 0);
	assert_true(e.x86_64);
	assert_true(e.dynamic);
	assert_true(e.eh_frame);
	assert_true(e.symtab);
	assert_true(e.dwarf_in_file);
	assert_true(e.dwarf);
	assert_null(e.debugfile);
	assert_non_null(e.build_id);
	assert_int_equal(strlen(e.build_id), 40);
	assert_int_equal(e.fp_err, 0);
	assert_true(e.fp_nonleaf > 10);
	/* kiln's code sets up frames; libiberty's demangler, linked in from
	 * Debian's static library, does not (about a third of the non-leaf
	 * functions here): "partly", and the counts are read right. */
	assert_true(e.fp_set * 100 / e.fp_nonleaf >= 50);
	assert_true(e.fp_set < e.fp_nonleaf);
	assert_true(e.cfi_funcs > 10);
	assert_int_equal(e.cfi_eh, e.cfi_funcs);
	/* It needs the C library; it brings no allocator. */
	assert_true(e.nneeded > 0);
	assert_false(e.defines_malloc);
	assert_null(e.allocator);
	kiln_doc_elf_release(&e);
}

static void test_not_elf(void **state)
{
	struct kiln_doc_elf e;
	char path[] = "/tmp/kiln-doctor-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	assert_int_equal(kiln_doc_elf_scan(&e, path), 0);
	assert_int_equal(e.err, -ENOEXEC);
	kiln_doc_elf_release(&e);
	unlink(path);
	assert_int_equal(kiln_doc_elf_scan(&e, path), 0);
	assert_int_equal(e.err, -ENOENT);
	kiln_doc_elf_release(&e);
}

static void test_table(void **state)
{
	size_t n, i, j;
	const struct kiln_doc_check *c = kiln_doctor_checks(&n);

	(void)state;
	assert_true(n >= 12);
	for (i = 0; i < n; i++) {
		assert_non_null(c[i].name);
		assert_true(strlen(c[i].about) > 10);
		for (j = 0; j < i; j++)
			assert_string_not_equal(c[i].name, c[j].name);
	}
	assert_string_equal(kiln_doctor_status_name(KILN_DOC_PROBLEM), "problem");
	assert_string_equal(kiln_doctor_scope_name(KILN_DOC_PROCESS), "process");
}

/* The machine's checks alone: one row each, machine scope, findings said. */
static void test_machine(void **state)
{
	struct kiln_doctor d = KILN_DOCTOR_INIT;
	struct kiln_doctor_opts o = { 0 };
	size_t i;

	(void)state;
	assert_int_equal(kiln_doctor_run(&d, &o), 0);
	assert_int_equal(d.nrows, 6);
	for (i = 0; i < d.nrows; i++) {
		assert_int_equal(d.rows[i].scope, KILN_DOC_MACHINE);
		assert_true(strlen(d.rows[i].finding) > 0);
		if (d.rows[i].status == KILN_DOC_WARN ||
		    d.rows[i].status == KILN_DOC_PROBLEM)
			assert_non_null(d.rows[i].fix);
	}
	assert_string_equal(d.rows[0].check, "perf_event_paranoid");
	kiln_doctor_release(&d);
	assert_int_equal(d.nrows, 0);
	o.pid = 0x3ffffff0;
	assert_int_equal(kiln_doctor_run(&d, &o), -ESRCH);
	kiln_doctor_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prologues),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_machine),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
