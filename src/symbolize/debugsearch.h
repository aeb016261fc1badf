/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfutils' standard search for a module's separate debug file
 * (symbolize stage), without loading its debuginfod client where that
 * client could not answer.  See debugsearch.c.
 */
#ifndef KILN_SYMBOLIZE_DEBUGSEARCH_H
#define KILN_SYMBOLIZE_DEBUGSEARCH_H

#include <elfutils/libdwfl.h>

/*
 * What dwfl_standard_find_debuginfo() returns for these arguments (the
 * find_debuginfo callback's), descriptor, *debuginfo_file_name and errno
 * alike, for callbacks whose debuginfo_path is elfutils' default.
 */
int kiln_debugsearch_standard(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name,
			      const char *debuglink_file,
			      GElf_Word debuglink_crc,
			      char **debuginfo_file_name);

#endif
