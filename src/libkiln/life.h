/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process-wide life of libkiln.so (libkiln stage): life.c, the one
 * owner of the library's constructor, destructor and fork handlers, and
 * of what _exit and exec ask of the parts, calls each part's hooks
 * (declared in the part's own header: cpu/cpu.h, heap/htrace.h,
 * http/http.h, runtime/forkgate.h, runtime/relay.h) in the order it
 * documents; the parts never register their own.  Each hook does nothing
 * when its part is not in use.
 */
#ifndef KILN_LIBKILN_LIFE_H
#define KILN_LIBKILN_LIFE_H

/* The interposers' next definitions found (interpose.c); first at load. */
void kiln_interpose_load(void);

/* What _exit()/_Exit() and exec ask of the parts, in life.c's order
 * (interpose.c calls them before passing on). */
void kiln_life_before_exit(void);
void kiln_life_before_exec(void);
/* The exec returned (it failed): what before_exec stopped goes on.
 * errno is kept. */
void kiln_life_after_exec(void);
/* The program is about to change its user or group ids (setuid() and
 * kin): the parts' output files are prepared while the folders may still
 * be written.  errno is kept. */
void kiln_life_before_setid(void);
/* A library is about to be unloaded (dlclose()): what names its frames
 * later is noted while it is still mapped.  errno is kept. */
void kiln_life_before_dlclose(void);
/* fork() returned in the child (interpose.c's fork(), after the gate
 * opened): what a child starts of its own.  errno is kept. */
void kiln_life_fork_started(void);

/* draw.c: hands http/ the flame graph and page drawings (render/, web/)
 * before any server starts (kiln_http_set_draw()). */
void kiln_draw_install(void);

#endif
