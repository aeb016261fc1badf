/*
 * The legacy text profiles of gperftools, Go and Java (format stage),
 * private to the format readers: the memory map of those files, the names
 * of Java profiles (also those of the binary Java CPU profile that
 * format/gperf.c reads), and the frames pprof hides in them.  The reader
 * itself is kiln_legacy_read() in format/format.h; docs/formats.md says
 * what each format becomes.
 */
#ifndef KILN_FORMAT_LEGACY_H
#define KILN_FORMAT_LEGACY_H

#include <stddef.h>
#include <stdint.h>

struct kiln_prof;

/* One mapping of a legacy memory map; strings are ids of the profile's. */
struct kiln_legacy_map {
	uint64_t start, limit, offset;
	uint32_t file, build_id;
};

struct kiln_legacy_maps {
	struct kiln_legacy_map *v;
	size_t n, alloc;
};

/*
 * Parses the text after "MAPPED_LIBRARIES:" / "--- Memory map: ---" into
 * m (emptied first) by pprof's rules, file names interned in p: 0 or
 * -ENOMEM.  Lines that are not mappings are skipped, as pprof does.
 */
int kiln_legacy_maps_parse(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_maps *m);
/*
 * The index in m of the mapping holding addr, or -1 (also for address 0).
 * An address just below a mapping with an offset moves that mapping's
 * start down to it (pprof's remapMappingIDs): place every address before
 * the mappings are used.
 */
long kiln_legacy_maps_find(struct kiln_legacy_maps *m, uint64_t addr);
void kiln_legacy_maps_release(struct kiln_legacy_maps *m);

/* The Java names: id -> location, sorted by id. */
struct kiln_legacy_jname;
struct kiln_legacy_names {
	struct kiln_legacy_jname *v;
	size_t n;
};

/*
 * Reads the lines "0xID NAME [(FILE:LINE)]" that follow a Java profile's
 * samples, making one location (address 0, one line) per name in p.
 * Other lines are skipped.  0 or -ENOMEM; release names afterwards.
 */
int kiln_legacy_java_names(struct kiln_prof *p, const char *text, size_t len,
			   struct kiln_legacy_names *names);
/* The location of id: its name's, or one with id as address. 0 and p->err
 * set when out of memory. */
uint32_t kiln_legacy_names_loc(struct kiln_prof *p,
			       const struct kiln_legacy_names *names,
			       uint64_t id);
void kiln_legacy_names_release(struct kiln_legacy_names *names);

/*
 * Sets p's drop_frames and keep_frames as pprof does for legacy profiles
 * (addLegacyFrameInfo): allocator frames for heap sample types, lock
 * internals for contentions/delay, the CPU profiler's signal frames
 * otherwise.  Check kiln_prof_error() after.
 */
void kiln_legacy_frame_info(struct kiln_prof *p);

#endif
