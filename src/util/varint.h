/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LEB128 varints (util stage): the one encoder and decoder of the 7-bit
 * groups that protobuf (pprof), kiln's heap trace and DWARF use, low group
 * first, the high bit of a byte set when another byte follows.
 *
 * Everything here is inline, allocates nothing and leaves errno alone:
 * async-signal-safe and usable in malloc hooks.  Decoders never read past
 * the n bytes they are given.
 */
#ifndef KILN_UTIL_VARINT_H
#define KILN_UTIL_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* The longest varint of a 64-bit value, in bytes. */
#define KILN_VARINT_MAX 10

/* What the decoders return besides a length (1..KILN_VARINT_MAX). */
enum {
	/* The input ends before the varint does. */
	KILN_VARINT_SHORT = 0,
	/* The tenth byte says another follows: longer than any 64-bit value. */
	KILN_VARINT_LONG = -1,
	/*
	 * Ten bytes whose last holds bits above the 64th.  *v holds the low
	 * 64 bits (what protobuf reads), for callers that take it so.
	 */
	KILN_VARINT_WIDE = -2,
};

/*
 * Writes v at p, which has room for KILN_VARINT_MAX bytes.  Returns the
 * number of bytes written (1..10).  Async-signal-safe.
 */
static inline size_t kiln_varint_put(unsigned char *p, uint64_t v)
{
	unsigned char *q = p;

	/* Pointer steps, not an index: the heap hooks' hot path encodes
	 * with this (an index costs an instruction more per byte). */
	while (v >= 0x80) {
		*q++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*q++ = (unsigned char)v;
	return (size_t)(q - p);
}

/*
 * Reads an unsigned varint of p[0..n) into *v.  Returns the bytes it took
 * (1..10), KILN_VARINT_SHORT (0) when p ends inside it, KILN_VARINT_LONG
 * when the tenth byte is not the last, KILN_VARINT_WIDE when the tenth byte
 * holds bits a uint64_t has no room for.  *v is always set: the value, or
 * the bits read before the failure (the low 64 bits when too wide).
 * Async-signal-safe.
 */
static inline int kiln_varint_get(const unsigned char *p, size_t n,
				  uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	/* Most varints of a trace or a profile are one byte. */
	if (n && p[0] < 0x80) {
		*v = p[0];
		return 1;
	}
	for (i = 0; i < KILN_VARINT_MAX; i++) {
		unsigned char b;

		if (i == n)
			break;
		b = p[i];
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (b & 0x80)
			continue;
		*v = x;
		/* Byte ten holds bit 63 only. */
		return i == KILN_VARINT_MAX - 1 && b > 1 ? KILN_VARINT_WIDE
							 : (int)i + 1;
	}
	*v = x;
	return i < KILN_VARINT_MAX ? KILN_VARINT_SHORT : KILN_VARINT_LONG;
}

/*
 * Reads an unsigned varint that this process wrote itself with
 * kiln_varint_put() into memory it owns (the heap tracer's rings): no
 * bounds, no checks, the fastest loop.  Returns the byte after it.  Never
 * for input from a file or another process.  Async-signal-safe.
 */
static inline const unsigned char *kiln_varint_get_own(const unsigned char *p,
							uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;

	while (*p & 0x80) {
		x |= (uint64_t)(*p++ & 0x7f) << shift;
		shift += 7;
	}
	*v = x | (uint64_t)*p++ << shift;
	return p;
}

/*
 * Writes v as a signed LEB128 (DWARF's sleb128: two's complement, the sign
 * in bit 6 of the last byte) at p, which has room for KILN_VARINT_MAX
 * bytes.  Returns the bytes written.  Async-signal-safe.
 */
static inline size_t kiln_varint_put_signed(unsigned char *p, int64_t v)
{
	size_t n = 0;

	for (;;) {
		unsigned char b = (unsigned char)(v & 0x7f);

		/* An arithmetic shift: GNU C and C23 define it for negatives. */
		v >>= 7;
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			p[n++] = b;
			return n;
		}
		p[n++] = (unsigned char)(b | 0x80);
	}
}

/*
 * The same, as protobuf reads a varint: a tenth byte's bits above the 64th
 * are dropped, so only KILN_VARINT_SHORT and KILN_VARINT_LONG fail.
 * Async-signal-safe.
 */
static inline int kiln_varint_get_proto(const unsigned char *p, size_t n,
					uint64_t *v)
{
	int got = kiln_varint_get(p, n, v);

	return got == KILN_VARINT_WIDE ? KILN_VARINT_MAX : got;
}

/*
 * Reads a signed LEB128 of p[0..n) into *v.  Returns the bytes it took
 * (1..10), KILN_VARINT_SHORT when p ends inside it, KILN_VARINT_LONG when
 * the tenth byte is not the last, KILN_VARINT_WIDE when the tenth byte is
 * not a sign extension of bit 63 (0x00 or 0x7f).  *v is always set, as by
 * kiln_varint_get().  Async-signal-safe.
 */
static inline int kiln_varint_get_signed(const unsigned char *p, size_t n,
					 int64_t *v)
{
	uint64_t x;
	int got = kiln_varint_get(p, n, &x);

	if (got == KILN_VARINT_WIDE || got == KILN_VARINT_MAX) {
		unsigned char last = p[KILN_VARINT_MAX - 1];

		got = last == 0 || last == 0x7f ? KILN_VARINT_MAX
						: KILN_VARINT_WIDE;
	} else if (got > 0 && (p[got - 1] & 0x40)) {
		/* Bit 6 of the last byte is the sign: extend it. */
		x |= ~(uint64_t)0 << (7 * got);
	}
	*v = (int64_t)x;
	return got;
}

#endif
