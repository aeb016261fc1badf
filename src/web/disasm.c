/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disassembly view's decoder (web stage): symbolize/disasm.c, which
 * links capstone, registered at run time (kiln_web_enable_disasm) as the
 * call graph's graphviz drawing is (cgsvg.c), so that a program linking the
 * web stage without calling it, the agent inside other programs, never
 * loads capstone.
 */
#include "symbolize/disasm.h"
#include "web/web.h"

void kiln_web_enable_disasm(void)
{
	kiln_web_set_disasm(kiln_disasm_at, kiln_disasm_release);
}
