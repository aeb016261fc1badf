/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The name a program was run by (util stage).  Debian installs programs
 * as symbolic links to others (redis-server -> redis-check-rdb, python3
 * -> python3.11, sh -> dash); the kernel maps the link's target, and
 * /proc/PID/maps and perf's MMAP records name it.  The user ran
 * `redis-server`, its comm says so, and a frame named [redis-check-rdb]
 * reads as another program's.  kiln names the executable's mapping by
 * the name it was run by, where that name leads to the very file mapped
 * (the same device and inode): the path still opens the same file for
 * symbols and build IDs, only the name the user sees changes.
 */
#ifndef KILN_UTIL_EXENAME_H
#define KILN_UTIL_EXENAME_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether invoked names the file at mapped (an absolute path) under
 * another name.  invoked is a path (absolute, or relative to the
 * working directory: execve's, AT_EXECFN) or a bare name looked up in
 * mapped's folder (a comm; one cut to 15 characters matches the one
 * name there that starts with it and leads to mapped).  True: the
 * absolute path of that name is in out (n bytes).  Reads the file
 * system (stat); never in a handler.
 */
bool kiln_exe_alias(const char *mapped, const char *invoked, char *out,
		    size_t n);

/*
 * This process's executable as it was run (getauxval(AT_EXECFN) against
 * /proc/self/exe): the path the kernel names (*target) and the one to
 * show instead (*alias), or false where they are one name.  Found once
 * per process image; the strings stay valid.  Not in a handler.
 */
bool kiln_self_exe_alias(const char **target, const char **alias);

struct kiln_buf;

/*
 * In the maps text of b from byte from on, the lines whose path is
 * target name alias instead (kiln_read_self_maps() does it with this
 * process's names).  0 or -ENOMEM (b then unchanged).
 */
int kiln_exe_alias_maps(struct kiln_buf *b, size_t from, const char *target,
			const char *alias);

/* kiln_exe_alias_maps() with this process's names (kiln_self_exe_alias()),
 * for a text of its own maps from byte from on.  0 or -ENOMEM. */
int kiln_self_maps_alias(struct kiln_buf *b, size_t from);

#endif
