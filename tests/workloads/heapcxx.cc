// C++ heap workload (tests of the heap tracer): operator new/delete of a
// known class in make_widgets(), new[]/delete[] in make_arrays(), a
// std::vector grown in fill_vector(), and 2 leaked Widgets in leak_widgets().
//
//   make_widgets   500 x new Widget (sizeof 40), all deleted
//   make_arrays    50 x new int[250] (1000 bytes), all deleted
//   leak_widgets   2 x new Widget, never deleted (80 bytes)
#include <cstdio>
#include <vector>

struct Widget {
	long a, b, c, d, e;
};

static volatile long sink;

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

int main()
{
	make_widgets();
	make_arrays();
	fill_vector();
	leak_widgets();
	std::printf("heapcxx: %zu-byte widgets, done\n", sizeof(Widget));
	return 0;
}
