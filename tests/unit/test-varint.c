/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/varint.h: unsigned and signed LEB128 round trips at
 * the boundaries of each byte count (0, 127, 128, 2^32-1, 2^64-1 and the
 * signed ones around them), the exact bytes of known encodings (DWARF's
 * and protobuf's examples), input that ends inside a varint at every
 * length, and over-long or too-wide ten-byte input (refused, or read as
 * protobuf reads it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/varint.h"

/* The bytes an unsigned value of this many significant bits takes. */
static size_t ulen(uint64_t v)
{
	size_t n = 1;

	while (v >>= 7)
		n++;
	return n;
}

static void round_trip(uint64_t v)
{
	unsigned char b[KILN_VARINT_MAX + 1];
	uint64_t got = ~v;
	size_t n, cut;

	memset(b, 0xee, sizeof(b));
	n = kiln_varint_put(b, v);
	assert_int_equal(n, ulen(v));
	assert_int_equal(b[n], 0xee);	/* nothing written past it */
	assert_int_equal(kiln_varint_get(b, n, &got), (int)n);
	assert_true(got == v);
	/* Trailing bytes are not read. */
	assert_int_equal(kiln_varint_get(b, sizeof(b), &got), (int)n);
	/* Every shorter input ends inside it. */
	for (cut = 0; cut < n; cut++)
		assert_int_equal(kiln_varint_get(b, cut, &got), KILN_VARINT_SHORT);
}

static void test_unsigned(void **state)
{
	static const uint64_t v[] = {
		0, 1, 127, 128, 129, 255, 16383, 16384, 0xffffffffull,
		0x100000000ull, (1ull << 56) - 1, 1ull << 56, (1ull << 63) - 1,
		1ull << 63, UINT64_MAX,
	};
	size_t i;
	int s;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		round_trip(v[i]);
	for (s = 0; s < 64; s++) {
		round_trip(1ull << s);
		round_trip((1ull << s) - 1);
		round_trip((1ull << s) + 1);
	}
}

static void test_known_bytes(void **state)
{
	unsigned char b[KILN_VARINT_MAX];
	uint64_t v;

	(void)state;
	/* protobuf's encoding doc: 150 is 96 01. */
	assert_int_equal(kiln_varint_put(b, 150), 2);
	assert_memory_equal(b, "\x96\x01", 2);
	/* DWARF 5, 7.6: 624485 is e5 8e 26. */
	assert_int_equal(kiln_varint_put(b, 624485), 3);
	assert_memory_equal(b, "\xe5\x8e\x26", 3);
	assert_int_equal(kiln_varint_put(b, UINT64_MAX), 10);
	assert_memory_equal(b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
	/* Non-minimal encodings (zero padding) are read as their value. */
	assert_int_equal(kiln_varint_get((const unsigned char *)"\x80\x00", 2, &v), 2);
	assert_true(v == 0);
	assert_int_equal(kiln_varint_get((const unsigned char *)"\xff\x80\x80\x00", 4, &v), 4);
	assert_true(v == 127);
}

static void test_over_long(void **state)
{
	unsigned char b[12];
	uint64_t v;

	(void)state;
	/* Ten bytes, the tenth says another follows: refused at the tenth,
	 * whether or not the input goes on. */
	memset(b, 0x80, sizeof(b));
	b[11] = 0;
	assert_int_equal(kiln_varint_get(b, 12, &v), KILN_VARINT_LONG);
	assert_int_equal(kiln_varint_get_proto(b, 12, &v), KILN_VARINT_LONG);
	assert_int_equal(kiln_varint_get(b, 10, &v), KILN_VARINT_LONG);
	assert_int_equal(kiln_varint_get(b, 9, &v), KILN_VARINT_SHORT);
	/* A tenth byte with bits above the 64th: too wide, the low 64 bits
	 * kept (what protobuf reads). */
	memset(b, 0xff, 9);
	b[9] = 0x03;
	assert_int_equal(kiln_varint_get(b, 10, &v), KILN_VARINT_WIDE);
	assert_true(v == UINT64_MAX);
	v = 0;
	assert_int_equal(kiln_varint_get_proto(b, 10, &v), 10);
	assert_true(v == UINT64_MAX);
	assert_int_equal(kiln_varint_get_proto(b, 9, &v), KILN_VARINT_SHORT);
	b[9] = 0x7e;
	memset(b, 0x80, 9);
	assert_int_equal(kiln_varint_get(b, 10, &v), KILN_VARINT_WIDE);
	assert_true(v == 0);
	/* ... and 0x01 is bit 63 alone. */
	b[9] = 0x01;
	assert_int_equal(kiln_varint_get(b, 10, &v), 10);
	assert_true(v == 1ull << 63);
	/* Nothing to read. */
	assert_int_equal(kiln_varint_get(b, 0, &v), KILN_VARINT_SHORT);
}

static void signed_trip(int64_t v)
{
	unsigned char b[KILN_VARINT_MAX + 1];
	int64_t got = ~v;
	uint64_t u;
	size_t n, cut;

	memset(b, 0xee, sizeof(b));
	n = kiln_varint_put_signed(b, v);
	assert_true(n >= 1 && n <= KILN_VARINT_MAX);
	assert_int_equal(b[n], 0xee);
	assert_int_equal(kiln_varint_get_signed(b, n, &got), (int)n);
	assert_true(got == v);
	/* The shortest: 7 bits a byte, one of them the sign. */
	u = v < 0 ? ~(uint64_t)v : (uint64_t)v;
	assert_int_equal(n, ulen(u << 1));
	for (cut = 0; cut < n; cut++)
		assert_int_equal(kiln_varint_get_signed(b, cut, &got),
				 KILN_VARINT_SHORT);
}

static void test_signed(void **state)
{
	static const int64_t v[] = {
		0, 1, -1, 63, 64, -64, -65, 127, 128, -127, -128, 8191, 8192,
		-8192, -8193, INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX,
		INT64_MAX, INT64_MIN, INT64_MIN + 1,
	};
	unsigned char b[KILN_VARINT_MAX];
	int64_t got;
	size_t i;
	int s;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		signed_trip(v[i]);
	for (s = 0; s < 63; s++) {
		signed_trip((int64_t)1 << s);
		signed_trip(-((int64_t)1 << s));
		signed_trip(((int64_t)1 << s) - 1);
		signed_trip(-((int64_t)1 << s) - 1);
	}
	/* DWARF 5, 7.6: -2 is 7e, -127 is 81 7f, 128 is 80 01. */
	assert_int_equal(kiln_varint_put_signed(b, -2), 1);
	assert_int_equal(b[0], 0x7e);
	assert_int_equal(kiln_varint_put_signed(b, -127), 2);
	assert_memory_equal(b, "\x81\x7f", 2);
	assert_int_equal(kiln_varint_put_signed(b, 128), 2);
	assert_memory_equal(b, "\x80\x01", 2);
	/* Ten bytes: the last is 0x00 or 0x7f, anything else is too wide. */
	memset(b, 0x80, 9);
	b[9] = 0x7f;
	assert_int_equal(kiln_varint_get_signed(b, 10, &got), 10);
	assert_true(got == INT64_MIN);
	b[9] = 0x01;
	assert_int_equal(kiln_varint_get_signed(b, 10, &got), KILN_VARINT_WIDE);
	b[9] = 0x80;
	assert_int_equal(kiln_varint_get_signed(b, 10, &got), KILN_VARINT_LONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unsigned),
		cmocka_unit_test(test_known_bytes),
		cmocka_unit_test(test_over_long),
		cmocka_unit_test(test_signed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
