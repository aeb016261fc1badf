/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The executable mappings of a /proc/PID/maps text as profile
 * mappings, with a lookup by address (profile stage): how the agent's
 * CPU and heap profiles and the heap-trace analysis give raw addresses
 * their mappings before kiln_sym_prof() symbolizes them.
 */
#ifndef KILN_PROFILE_MAPTAB_H
#define KILN_PROFILE_MAPTAB_H

#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

struct kiln_maptab {
	struct kiln_maptab_range {
		uint64_t start, end;
		uint32_t id;		/* mapping id in the profile */
	} *r;				/* sorted by start */
	size_t n, alloc;
};

#define KILN_MAPTAB_INIT { NULL, 0, 0 }

/*
 * Adds every executable mapping of a maps text to p (interned) and to m:
 * those of files by path, code in anonymous memory (a JIT's) as
 * "//anon", perf's name.  The text's lines come sorted, as the kernel
 * writes them.  0 or -ENOMEM.
 */
int kiln_maptab_add_text(struct kiln_maptab *m, struct kiln_prof *p,
			 const char *text, size_t len);
/*
 * Adds the executable mappings of an older maps text of the same process
 * that overlap no range of m: those unmapped since (node unmaps its
 * second copy of V8's builtins before the exit's profile is written).
 * 0 or -ENOMEM.
 */
int kiln_maptab_add_gone_text(struct kiln_maptab *m, struct kiln_prof *p,
			      const char *text, size_t len);
/*
 * Adds the mapping of file path at [start, end) (offset: the file offset
 * mapped at start) to p and to m, where it overlaps no range of m (the
 * agent's libraries unloaded before the profile is written).  0, -EEXIST
 * (it overlaps) or -ENOMEM.
 */
int kiln_maptab_add(struct kiln_maptab *m, struct kiln_prof *p,
		    const char *path, uint64_t start, uint64_t end,
		    uint64_t offset);
/* The mapping id holding addr, 0 for none. */
uint32_t kiln_maptab_find(const struct kiln_maptab *m, uint64_t addr);
void kiln_maptab_release(struct kiln_maptab *m);

#endif
