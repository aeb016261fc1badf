/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-file input and safe output (util stage).
 */
#ifndef KILN_UTIL_FILE_H
#define KILN_UTIL_FILE_H

#include <stdbool.h>
#include <stddef.h>

struct kiln_buf;

/* A read-only view of a whole file: mmap'ed when it is a regular file,
 * read into memory otherwise (pipes, /dev/stdin). */
struct kiln_map {
	const char *data;
	size_t len;
	bool mapped;
};

/* "-" means standard input.  0 or -errno. */
int kiln_map_open(struct kiln_map *m, const char *path);
void kiln_map_release(struct kiln_map *m);
/*
 * kiln_map_release(), a large mapping unmapped by a detached thread of
 * its own while the caller goes on (a gigabyte input read, its flame
 * graph still to draw).  Nothing may point into it any more.  Not for
 * the agent: the thread is a plain pthread, not one of kiln's own in
 * the host (runtime/threads.h).
 */
void kiln_map_release_later(struct kiln_map *m);

/*
 * Reads a file of /proc (whose size stat() gives as 0: maps, cmdline,
 * status) whole by read(2), appended to out (NUL-terminated); path is
 * relative to dirfd (AT_FDCWD: as open(2)).  No stdio: the agent uses it
 * in the host's process.  0 or -errno.
 */
int kiln_read_proc(int dirfd, const char *path, struct kiln_buf *out);

/*
 * This process's memory map (/proc/self/maps), appended to out as
 * kiln_read_proc() does.  Read through the calling thread's folder
 * (/proc/thread-self): once the main thread has ended (pthread_exit()),
 * /proc/self is its zombie's and its maps read empty.  The executable's
 * lines name it as it was run where that was a link to it
 * (util/exename.h: redis-server, not redis-check-rdb).  0 or -errno.
 */
int kiln_read_self_maps(struct kiln_buf *out);

/* The path of this process's maps kiln_read_self_maps() reads (for
 * kiln_maps_open()): "/proc/thread-self/maps" where the kernel has it. */
const char *kiln_self_maps_path(void);

/*
 * An output file being written.  Where it goes depends on what the path
 * names when it is opened:
 *   - "-": standard output, written in place;
 *   - an existing character device or FIFO (/dev/null, /dev/stdout, a
 *     pipe someone reads): written in place, never replaced; a FIFO with
 *     no reader is refused (-ENXIO) rather than waited for;
 *   - a block device, a socket or a directory: refused (-EINVAL, -EISDIR);
 *   - anything else (absent, a regular file, a symlink to one): an
 *     unnamed file (O_TMPFILE) in the final name's folder, or where the
 *     file system has none a temporary name beside the final one
 *     ("NAME.tmp.XXXXXX"); kiln_out_commit() names it and renames it
 *     into place, so a reader never sees half a file and a process killed
 *     before (SIGKILL) leaves no temporary, and keeps a regular
 *     file that was there as FILE.old, as perf does with perf.data (an
 *     older FILE.old is removed just before: the renames then replace
 *     nothing, which ext4 would flush first).  Neither the old file nor
 *     an older FILE.old is touched before the new file is whole.
 * The folder is held open from kiln_out_open() on, so a process that
 * changes directory or root later still commits to the place it named.
 * Not for signal handlers or malloc hooks.
 */
struct kiln_out {
	int fd;		/* where the data goes; -1 once committed or aborted */
	int dirfd;	/* the final name's folder; -1 when written in place */
	char *name;	/* final name in dirfd (owned) */
	char *tmp;	/* temporary name in dirfd (owned); NULL while anon */
	bool anon;	/* fd is an unnamed file (O_TMPFILE) until the commit */
	/*
	 * kiln_out_keep_in_place() was called: the data goes to the file
	 * at the final name, through place_fd (the file that was there,
	 * its contents kept as NAME.old), or through fd itself (placed:
	 * fd was given the final name), when the folder can no longer be
	 * written at the commit.
	 */
	int place_fd;	/* -1: none */
	bool placed;
	/*
	 * Set by the caller after kiln_out_open(): kiln_out_commit() renames
	 * without fsync() first.  For the agent's profiles at a program's
	 * exit, where the flush costs milliseconds (2-10 ms on ext4 here)
	 * and a profile lost to a power cut costs little; the rename still
	 * shows readers a whole file or the old one.
	 */
	bool no_sync;
};

#define KILN_OUT_INIT { -1, -1, NULL, NULL, false, -1, false, false }

/* Opens path for output as above.  0 or -errno; nothing is created on error. */
int kiln_out_open(struct kiln_out *o, const char *path);
/* Appends len bytes.  0 or -errno (-ENOSPC from /dev/full). */
int kiln_out_write(struct kiln_out *o, const void *data, size_t len);
/*
 * Flushes the file to disk (unless o->no_sync), closes it and renames it into place (keeping
 * an existing regular file as FILE.old).  Every error of write, fsync,
 * close and rename is returned; on error the temporary is removed and
 * the old file stays where it was.  Releases o.  0 or -errno.
 */
int kiln_out_commit(struct kiln_out *o);
/*
 * For a process about to give up privileges (setuid() and its kin): after
 * that the final name's folder (root's, say) may no longer be writable,
 * and the commit could neither name the data file nor rename it.  So,
 * while the process still may: a regular file at the final name is
 * copied to NAME.old (the file itself stays, whole) and opened for
 * writing; where none is, the data file is given the final name now (it
 * is empty there until the commit).  A commit that then finds the folder
 * closed to it (EACCES, EPERM) writes the data into that file instead,
 * in place.  Nothing is done for an output written in place or already
 * prepared.  0 or -errno (then the commit works as before).
 */
int kiln_out_keep_in_place(struct kiln_out *o);
/* Gives the output up: the temporary is removed, nothing is renamed.
 * Releases o; fine on an output never opened or already released. */
void kiln_out_abort(struct kiln_out *o);

/*
 * When this process started (CLOCK_REALTIME, ns; from /proc/self/stat, to
 * the clock tick), or 0 when unknown.  An exec keeps it.
 */
unsigned long long kiln_process_start_ns(void);

/*
 * An output written in place as it goes (a streamed trace), about to be
 * created at path: a regular file there (an earlier run's) is kept as
 * path.old, replacing an older path.old, as perf keeps perf.data.old.
 * 0 (also when nothing is there) or -errno (then nothing was moved).
 */
int kiln_keep_as_old(const char *path);

/*
 * Keeps the file an earlier image of this process (before an exec: same
 * pid) left at path, so that a chain of execs loses none: renames it to
 * path.old, or path.old.2, path.old.3, ... when earlier images hold those
 * (names in the order the images ran; a file there that is not this
 * process's is replaced).  mine(name, started, arg) says whether a file
 * is this process's (started: kiln_process_start_ns()).  Sets *kept to
 * the name used (malloc'd; NULL when nothing of ours was at path).  Not
 * for signal handlers or malloc hooks.  0 or -errno (nothing renamed).
 */
int kiln_keep_earlier_image(const char *path,
			    bool (*mine)(const char *name, unsigned long long started,
					 void *arg),
			    void *arg, char **kept);

/*
 * A mine() for kiln_keep_earlier_image(): a regular file last modified
 * after this process started (20 ms of margin for the tick rounding).
 */
bool kiln_written_since(const char *name, unsigned long long started, void *arg);

/*
 * The files other processes of a tree wrote beside path, as kiln's agent
 * names them (path.PID, and path.PID.old... after execs): their names,
 * sorted, added to *names ('\0'-separated), *n of them, those modified at
 * or after since (CLOCK_REALTIME ns; 0: any).  0 or -errno.
 */
int kiln_pid_siblings(const char *path, unsigned long long since,
		      struct kiln_buf *names, int *n);

/* kiln_out_open + kiln_out_write + kiln_out_commit.  0 or -errno. */
int kiln_write_atomic(const char *path, const void *data, size_t len);

/*
 * Opens path read-only if it is a regular file, without ever blocking
 * (a FIFO or a device named by an input is refused, not waited on).
 * A descriptor, or -errno (-EINVAL: not a regular file).
 */
int kiln_open_regular(const char *path);

/*
 * The first of the high fd numbers kiln keeps its own descriptors at,
 * inside someone else's process (runtime/kfd.h): 64 under the soft
 * RLIMIT_NOFILE (counted as at most 1024).
 */
int kiln_fd_high_base(void);
/*
 * fd moved to a number >= kiln_fd_high_base() / 2 (close-on-exec; the low
 * number closed), for descriptors that a library holds and closes by
 * number later (libdwfl's, until dwfl_end()), in someone else's process:
 * a host that closes every fd and opens its own files takes the low
 * numbers, so a close by number then meets nothing of the host's unless
 * it opened hundreds.  Below kiln's own range, which they would fill (a
 * server maps a hundred libraries).  fd itself when no such number is
 * free (or fd < 0).
 */
int kiln_fd_raise(int fd);

/* True when a and b name the same existing file (same device and inode). */
bool kiln_same_file(const char *a, const char *b);

#endif
