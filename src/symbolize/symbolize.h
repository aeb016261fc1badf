/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The symbolizer (symbolize stage): runtime address -> function names,
 * source files, lines and inlined frames, through elfutils' libdwfl.
 *
 * A session (struct kiln_sym) describes one address space, offline: the
 * caller adds the file mappings of a process (from a /proc/PID/maps text,
 * a profile's mappings or perf's MMAP records), and each ELF file is
 * reported to libdwfl at its load bias the first time an address in it is
 * looked up.  Debug information is found as elfutils tools find it: in the
 * file itself, separate files under /usr/lib/debug/.build-id/xx/yyyy.debug,
 * `.gnu_debuglink` files next to the binary or under /usr/lib/debug, and
 * through debuginfod when DEBUGINFOD_URLS is set (elfutils' own switch).
 * JIT code is named from /tmp/perf-PID.map files.  See docs/symbols.md.
 *
 * Not thread-safe, not async-signal-safe: it allocates and uses libdw.  The
 * in-process agent calls it from its writer thread with its hooks' guard
 * set, never from a signal handler or malloc hook.
 */
#ifndef KILN_SYMBOLIZE_SYMBOLIZE_H
#define KILN_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kiln_prof;
struct kiln_buf;
struct kiln_diag;
struct kiln_sym;

/* How to reach the files of the address space. */
struct kiln_sym_opts {
	/*
	 * The process the mappings belong to, 0 for none.  When set, a file
	 * that is gone or replaced (maps says "(deleted)") is opened through
	 * /proc/PID/map_files/START-END while the process lives.
	 */
	int pid;
	/*
	 * Prefix for the paths of mapped files, e.g. "/proc/123/root" for a
	 * process in another mount namespace (a container); NULL for none.
	 */
	const char *root;
	/*
	 * For symbolizing inside someone else's process (the agent): look for
	 * separate debug files only under the build-id folders, never through
	 * debuginfod (no network, no waiting at a program's exit), and take
	 * lines and inlined frames only from files that carry their own DWARF:
	 * system libraries whose DWARF sits in a separate, compressed debug
	 * file get names from their symbol tables, which costs a fraction.
	 */
	bool light;
	/*
	 * With light, for a session kept while a program runs (the agent's
	 * CPU profile): lines and inlined frames that only the debug file
	 * cache's decompressed copies hold are not read when an address is
	 * looked up (its name then comes from the symbol table) but by
	 * kiln_sym_fill_lines(), in a libdwfl session that ends there: the
	 * session keeps the answers, not libdw's tables for the copy (about
	 * 2.3 MB for libc) or the copy's mapped pages, which the kernel
	 * would otherwise free at the program's exit.
	 */
	bool defer_cached_lines;
};

/* One frame of a symbolized address; strings are owned by the session. */
struct kiln_sym_frame {
	const char *name;	 /* demangled function name, never NULL */
	const char *system_name; /* as in the symbol table (mangled) */
	const char *file;	 /* source file of `line`, NULL if unknown */
	const char *func_file;	 /* file declaring the function, or NULL */
	int line;		 /* 0 if unknown */
	int start_line;		 /* declaration line of the function, or 0 */
};

/*
 * What an address resolves to.  Pointers stay valid until the session is
 * freed.  nframes is 0 when no symbol covers the address (the caller then
 * names it "[module]", docs/symbols.md).
 */
struct kiln_sym_info {
	const struct kiln_sym_frame *frames;	/* innermost (inlined) first */
	unsigned nframes;
	const char *module;	/* path of the mapped file; NULL: no mapping */
	const char *build_id;	/* lower-case hex, NULL if the file has none */
	uint64_t file_offset;	/* the address as an offset in the file */
	bool has_dwarf;		/* lines and inline frames were looked for */
};

/*
 * Process-wide: never open a local file to symbolize (the binaries and
 * libraries a profile or trace names, /proc/PID/map_files, JIT maps);
 * addresses then stay unnamed ("[module]").  For reading profiles from
 * elsewhere without touching this machine's files (kiln's
 * --no-local-symbols, KILN_NO_LOCAL_SYMBOLS=1; docs/symbols.md).
 */
void kiln_sym_set_no_local(bool on);
/* Whether kiln_sym_set_no_local(true) was called. */
bool kiln_sym_no_local(void);

/*
 * Process-wide: the folder of the cache of decompressed separate debug
 * files (DIR/xx/yyyy.debug by build ID; docs/symbols.md), NULL or "" for
 * none (the default), and whether this process may add files to it (the
 * CLI does; the agent, inside someone else's process, only reads).  A
 * cache that cannot be read or written is skipped, never an error.  The
 * string is copied.  0 or -ENOMEM.
 */
int kiln_sym_set_debug_cache(const char *dir, bool writable);

struct Dwfl_Module;
/*
 * libdwfl's find_debuginfo callback as kiln's symbol sessions use it:
 * the debug file cache first, then elfutils' standard search (a file it
 * finds with compressed sections is added to the cache for the next run).
 * For other libdwfl sessions over the same files (the DWARF unwinder's:
 * .debug_frame comes from the same decompressed copy, not inflated again).
 * The module's userdata must be NULL when it is reported.
 */
int kiln_sym_find_debuginfo(struct Dwfl_Module *mod, void **userdata,
			    const char *modname, uint64_t base,
			    const char *file_name, const char *debuglink_file,
			    uint32_t debuglink_crc, char **debuginfo_file_name);
/*
 * The cache folder the environment names: $KILN_CACHE_DIR (set and empty:
 * none), else $XDG_CACHE_HOME/kiln/debug, else $HOME/.cache/kiln/debug.
 * Malloc'ed; NULL for none (or out of memory).
 */
char *kiln_sym_debug_cache_env(void);
/*
 * Process-wide, from any thread: from now on no session opens a copy from
 * the debug file cache (what sessions read from it before stays theirs).
 * Light sessions then read no separate debug file's DWARF for modules
 * they report later: those are named from their symbol tables.  The agent
 * calls it at the program's exit, so that the profile written then reads
 * only the DWARF its collector read while the program ran.
 */
void kiln_sym_close_debug_cache(void);

/*
 * Appends to files the absolute source file names of the line tables of
 * ELF file path's debug info (its own or its separate debug file's), and
 * to dirs the units' absolute compile directories (DW_AT_comp_dir), each
 * NUL-terminated, repeats and all.  A file without debug info adds
 * nothing.  0 or -ENOMEM.  srcfiles.c.
 */
int kiln_sym_debug_sources(const char *path, struct kiln_buf *files,
			   struct kiln_buf *dirs);

/*
 * How many files the symbol sessions of this process have opened and
 * reported to libdwfl so far (one per module: a file mapped several times
 * in one session counts once).  For tests that check that work is shared.
 */
unsigned long kiln_sym_files_reported(void);

/* A new session (opts may be NULL).  NULL with errno set on failure. */
struct kiln_sym *kiln_sym_new(const struct kiln_sym_opts *opts);
/* Frees the session, libdwfl's state and every result it handed out. */
void kiln_sym_free(struct kiln_sym *s);

/*
 * Adds the mapping of file `path` at [start, end), `offset` being the file
 * offset mapped at start (the columns of /proc/PID/maps).  Mappings of
 * non-files ("[heap]", "", "//anon") are accepted and never resolve.
 * 0, -EINVAL (end <= start) or -ENOMEM.
 */
int kiln_sym_add_mapping(struct kiln_sym *s, const char *path, uint64_t start,
			 uint64_t end, uint64_t offset);

/* Adds every executable mapping of a /proc/PID/maps text.  0 or -ENOMEM. */
int kiln_sym_add_maps(struct kiln_sym *s, const char *text, size_t len);

/*
 * Parses a perf JIT map ("/tmp/perf-PID.map": lines "START SIZE name",
 * hexadecimal with or without 0x) and names the addresses it covers that
 * no mapped ELF file resolves.  0, -ENOMEM, or -EINVAL with d filled
 * ("line N: ...").
 */
int kiln_sym_add_perfmap(struct kiln_sym *s, const char *text, size_t len,
			 struct kiln_diag *d);
/* Reads /tmp/perf-PID.map if it exists: 0 (also when absent) or as above. */
int kiln_sym_load_perfmap(struct kiln_sym *s, int pid, struct kiln_diag *d);
/*
 * Reads /tmp/perf-PID.map from byte *offset on, whole lines only, and
 * advances *offset past them: a map that grows is read in steps.
 */
int kiln_sym_load_perfmap_from(struct kiln_sym *s, int pid, uint64_t *offset,
			       struct kiln_diag *d);
/*
 * kiln_sym_load_perfmap_from() for a map read after the fact (a perf.data
 * of a process that may be long gone, as perf report reads it): the file
 * is read only when it is owned by root or by `owner` (the user reading
 * the profile, perf report's rule); another's is skipped, returning 0.
 */
int kiln_sym_load_perfmap_owned(struct kiln_sym *s, int pid, uid_t owner,
				uint64_t *offset, struct kiln_diag *d);

/*
 * Parses a jitdump file (perf's format, as node --perf-prof and JVM
 * agents write jit-PID.dump; whole or from byte *offset on, complete
 * records only, *offset advanced past them) and names the code its
 * code-load records place.  The file's header must name process pid (>
 * 0; 0: any).  0, -ENOMEM, or -EINVAL with d filled.
 */
int kiln_sym_add_jitdump(struct kiln_sym *s, const char *data, size_t len,
			 int pid, uint64_t *offset, struct kiln_diag *d);
/* Whether path[0, len) (a mapping's path) ends in /jit-PID.dump for
 * process pid: the file a runtime maps for perf to record. */
bool kiln_sym_is_jitdump(const char *path, size_t len, int pid);
/* Reads jitdump file `path` as above when it is a regular file owned by
 * root or `owner` (-1: anyone); 0 (also when absent) or as above. */
int kiln_sym_load_jitdump(struct kiln_sym *s, const char *path, int pid,
			  uid_t owner, uint64_t *offset, struct kiln_diag *d);

/*
 * For a session of this process's own addresses (the agent's dumps):
 * the lines its /tmp/perf-PID.map gained since the last call (the whole
 * map at the first; a forked child's own map, not the parent's), read
 * only if the file is owned by this process's effective user or root,
 * as perf report's rule.  0 (also with no map) or -ENOMEM.
 */
int kiln_sym_load_own_perfmap(struct kiln_sym *s);
/* The same for this process's jitdump file (its mapping whose path ends
 * in /jit-PID.dump, as node --perf-prof maps it): the records it gained
 * since the last call.  0 (also with none) or -ENOMEM. */
int kiln_sym_load_own_jitdump(struct kiln_sym *s);
/*
 * kiln_sym_load_trace_jitdump(): the same for its jitdump file, the
 * mapping of maps text [maps, maps + len) (the trace's last) whose path
 * ends in /jit-PID.dump.
 *
 * For a heap trace of process pid read after the fact, as perf report
 * reads a perf.data: its /tmp/perf-PID.map, if owned by root or the
 * reading user and written since the process started (CLOCK_REALTIME
 * ns; 0: not known).  0 (also with no map) or -ENOMEM.
 */
int kiln_sym_load_trace_jitdump(struct kiln_sym *s, const char *maps,
				size_t len, int pid, uint64_t start_realtime_ns);
int kiln_sym_load_trace_perfmap(struct kiln_sym *s, int pid,
				uint64_t start_realtime_ns);

/*
 * Symbolizes the runtime address addr (looked up as it is: pass a return
 * address minus 1 for a caller frame).  Results are cached per address.
 * Fills *out; 0 (also when nothing was found: out->nframes == 0) or
 * -ENOMEM.
 */
int kiln_sym_lookup(struct kiln_sym *s, uint64_t addr,
		    struct kiln_sym_info *out);

/*
 * For a session with defer_cached_lines: reads the lines and inlined
 * frames of every address it has looked up since the last call (and never
 * tried) in a library whose DWARF the debug file cache holds, through a
 * light session of its own, ended before this returns, and puts them in
 * the session's per-address cache as a session without the option would
 * have answered them (names do not change).  Each address is tried once;
 * one looked up later has no lines until the next call.  The number of
 * addresses given lines, 0 when nothing was to be read (no session is
 * then opened), or -ENOMEM.
 */
int kiln_sym_fill_lines(struct kiln_sym *s);

/* Whether kiln_sym_fill_lines() has anything to read. */
bool kiln_sym_lines_pending(const struct kiln_sym *s);

/*
 * kiln_sym_fill_lines() in two steps, so that the reading can be done on a
 * thread of its own while s is not used: then libdw's memory for the copy
 * (2-4 MB for libc, freed in small pieces that glibc keeps in the freeing
 * thread's cache) is all in that thread's malloc arena, and all free at
 * once when the thread ends, instead of holes between s's own memory that
 * stay resident until the exit.  kiln_sym_lines_read() looks the pending
 * addresses up and carries the answers in *l (mapped outside the heap: it
 * allocates nothing else), 0 or -ENOMEM; kiln_sym_lines_take(), on the
 * thread that uses s, puts them in s and releases *l, returning as
 * kiln_sym_fill_lines() does.  *l starts zeroed.
 */
struct kiln_sym_lines {
	char *p;
	size_t len, cap;
	int err;
};
int kiln_sym_lines_read(struct kiln_sym *s, struct kiln_sym_lines *l);
int kiln_sym_lines_take(struct kiln_sym *s, struct kiln_sym_lines *l);

/* kiln_sym_prof() flags. */
enum {
	/*
	 * Location addresses in caller positions are return addresses (as
	 * raw stack walks give them): a location that is only ever a caller
	 * is looked up at address - 1, inside the call instruction.  Without
	 * it, addresses are looked up as stored (pprof's convention, which
	 * readers of gperftools profiles follow by storing address - 1).
	 */
	KILN_SYM_RETURN_ADDRS = 1 << 0,
};

/*
 * Symbolizes profile p in place: every location without lines whose
 * mapping names a file gets its function and line chain (inlined frames
 * innermost first), and each such mapping gets has_functions,
 * has_filenames, has_line_numbers, has_inline_frames and (when empty) its
 * build ID set from what was found.  The profile's file mappings are added
 * to the session first.  Locations nothing resolves keep no lines.
 * 0 or -ENOMEM.
 */
int kiln_sym_prof(struct kiln_sym *s, struct kiln_prof *p, unsigned flags);

/*
 * pprof's `pprof BINARY PROFILE`: symbolizes p's main mapping with the
 * ELF file at path (absolute), whatever file the mapping names (a profile
 * taken elsewhere, a binary since moved).  The main mapping is the one
 * whose build ID is the binary's, else the first mapping; one with
 * another build ID is refused.  Only that mapping's locations without
 * lines are looked up; its file becomes path.  *named (may be NULL) gets
 * how many locations were named.  0; -EINVAL with d filled (not an ELF
 * file, no mapping, another build ID); -ENOENT and others from open().
 */
int kiln_sym_prof_binary(struct kiln_prof *p, const char *path,
			 size_t *named, struct kiln_diag *d);

/*
 * Demangles a C++ (Itanium) or Rust (legacy or v0) symbol name: a malloc'ed
 * string (free() it), or NULL when name is not mangled.  "foo::bar()",
 * "core::fmt::write" (Rust's hash suffix dropped).
 */
char *kiln_sym_demangle(const char *name);

#endif
