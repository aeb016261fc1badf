/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symbol name demangling (symbolize stage) through libiberty, the
 * demangler of binutils and gdb: C++ (Itanium ABI), Rust legacy ("_ZN...17h
 * <hash>E", hash dropped) and Rust v0 ("_R...") names.
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbolize/symbolize.h"

char *kiln_sym_demangle(const char *name)
{
	if (!name || name[0] != '_')
		return NULL;
	/* Only names with a mangling prefix: libiberty's automatic style
	 * would otherwise try old GNU v2 rules on any identifier. */
	if (name[1] != 'Z' && name[1] != 'R' &&
	    strncmp(name, "__Z", 3) != 0)
		return NULL;
	/* DMGL_PARAMS keeps parameter lists (overloads stay distinct),
	 * DMGL_ANSI keeps const/volatile; no DMGL_VERBOSE, so Rust hashes
	 * go.  Automatic style recognizes Rust before C++. */
	return cplus_demangle(name[1] == '_' ? name + 1 : name,
			      DMGL_PARAMS | DMGL_ANSI);
}
