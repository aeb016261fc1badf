/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source files a program's debug info names (symbolize stage): the
 * line tables' file names of every unit of an ELF file (or of its
 * separate debug file) and the units' compile directories.  kiln serve
 * reads only such files (or files under the roots its user gave): the
 * ones the program was built from, not whatever path a profile claims.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "symbolize/symint.h"
#include "util/buf.h"

static char *debuginfo_path;	/* elfutils' default search */

static const Dwfl_Callbacks offline = {
	.find_elf = dwfl_build_id_find_elf,
	/* the debug file cache, /usr/lib/debug, .gnu_debuglink */
	.find_debuginfo = kiln_sym_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

int kiln_sym_debug_sources(const char *path, struct kiln_buf *files,
			   struct kiln_buf *dirs)
{
	Dwfl *dwfl = dwfl_begin(&offline);
	Dwfl_Module *mod;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Addr bias;
	Dwarf *dw;
	int err = 0;

	if (!dwfl)
		return -ENOMEM;
	mod = dwfl_report_offline(dwfl, "", path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	while (dw && !err &&
	       !dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL)) {
		Dwarf_Attribute a;
		const char *dir = dwarf_formstring(dwarf_attr_integrate(
			&cudie, DW_AT_comp_dir, &a));
		char path[PATH_MAX];
		Dwarf_Files *fs;
		size_t i, n;

		/* Absolute ones only: a relative one names no place. */
		if (dir && dir[0] == '/')
			err = kiln_buf_add(dirs, dir, strlen(dir) + 1);
		if (dwarf_getsrcfiles(&cudie, &fs, &n))
			continue;
		for (i = 0; i < n && !err; i++) {
			/* As the symbolizer names them (cuaddr.c). */
			const char *f = ksym_cu_path(&cudie, dwarf_filesrc(
				fs, i, NULL, NULL), path, sizeof(path));

			if (f && f[0] == '/')
				err = kiln_buf_add(files, f, strlen(f) + 1);
		}
	}
	dwfl_end(dwfl);
	return err;
}
