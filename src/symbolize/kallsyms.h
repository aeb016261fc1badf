/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel symbols from /proc/kallsyms (symbolize stage), for the kernel
 * frames of `kiln record --kernel`.
 */
#ifndef KILN_SYMBOLIZE_KALLSYMS_H
#define KILN_SYMBOLIZE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kiln_kallsyms;

/*
 * Loads the text symbols of /proc/kallsyms.  NULL (errno set) when the
 * file cannot be read or shows no addresses (kptr_restrict hides them from
 * unprivileged users).
 */
struct kiln_kallsyms *kiln_kallsyms_load(void);
/*
 * Parses a kallsyms text ("ADDR TYPE NAME [module]" lines, under 4 GiB).
 * The result points into text, which must outlive it.  NULL (errno set)
 * when out of memory or no symbol has an address.
 */
struct kiln_kallsyms *kiln_kallsyms_parse(const char *text, size_t len);
void kiln_kallsyms_free(struct kiln_kallsyms *k);
/*
 * The name of the text symbol covering addr ("name" or "name [module]"),
 * or NULL (none, or out of memory).  Valid until kiln_kallsyms_free().
 */
const char *kiln_kallsyms_lookup(struct kiln_kallsyms *k, uint64_t addr);

#endif
