/* SPDX-License-Identifier: Apache-2.0 */
// C++ heap workload (tests of the heap tracer): operator new/delete of a
// known class in make_widgets(), new[]/delete[] in make_arrays(), a
// std::vector grown in fill_vector(), and 2 leaked Widgets in leak_widgets().
//
//   make_widgets   500 x new Widget (sizeof 40), all deleted
//   make_arrays    50 x new int[250] (1000 bytes), all deleted
//   leak_widgets   2 x new Widget, never deleted (80 bytes)
//   make_aligned   20 x new Line (alignas(64), 128 bytes), all deleted
//   make_nothrow   10 x new (std::nothrow) Widget, all deleted
//   fail_new       new of 2^62 bytes: std::bad_alloc caught, and the
//                  same with std::nothrow: NULL (both print a line)
// Built twice: against libstdc++'s operators (heapcxx) and, when jemalloc
// is installed, against jemalloc's own (heapcxx-je, linked -ljemalloc).
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>

struct Widget {
	long a, b, c, d, e;
};

struct alignas(64) Line {
	char b[128];
};

static volatile long sink;
static int misaligned;

__attribute__((noinline)) void make_widgets()
{
	static Widget *keep[500];

	for (int i = 0; i < 500; i++)
		keep[i] = new Widget{ i, 0, 0, 0, 0 };
	for (int i = 0; i < 500; i++) {
		sink += keep[i]->a;
		delete keep[i];
	}
}

__attribute__((noinline)) void make_arrays()
{
	for (int i = 0; i < 50; i++) {
		int *a = new int[250];

		a[249] = i;
		sink += a[249];
		delete[] a;
	}
}

__attribute__((noinline)) void fill_vector()
{
	std::vector<long> v;

	for (long i = 0; i < 1000; i++)
		v.push_back(i);
	sink += v[999];
}

__attribute__((noinline)) void leak_widgets()
{
	for (int i = 0; i < 2; i++)
		sink += (long)new Widget{ 1, 2, 3, 4, 5 } & 1;
}

__attribute__((noinline)) void make_aligned()
{
	for (int i = 0; i < 20; i++) {
		Line *l = new Line;

		misaligned += ((uintptr_t)l & 63) != 0;
		l->b[127] = 1;
		delete l;
	}
}

__attribute__((noinline)) void make_nothrow()
{
	for (int i = 0; i < 10; i++) {
		Widget *w = new (std::nothrow) Widget{ i, 0, 0, 0, 0 };

		sink += w->a;
		delete w;
	}
}

__attribute__((noinline)) void fail_new()
{
	size_t huge = (size_t)1 << 62;

	try {
		char *p = new char[huge];

		sink += (long)p;
		std::printf("heapcxx: new of 2^62 bytes returned\n");
	} catch (const std::bad_alloc &) {
		std::printf("heapcxx: new of 2^62 bytes threw bad_alloc\n");
	}
	char *q = new (std::nothrow) char[huge];
	std::printf("heapcxx: nothrow new of 2^62 bytes gave %s\n", q ? "a block" : "NULL");
}

int main()
{
	make_widgets();
	make_arrays();
	fill_vector();
	leak_widgets();
	make_aligned();
	make_nothrow();
	fail_new();
	std::printf("heapcxx: %d misaligned lines\n", misaligned);
	std::printf("heapcxx: %zu-byte widgets, done\n", sizeof(Widget));
	return 0;
}
