// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * shapes - shapes.rs in C++: Square::area burns three times what
 * leaf_work does (reached through Circ::area), both called through
 * Holder<T>::run from main. Names in a namespace, const methods and a
 * template, as perf prints them (no parameter lists). Prints "ready".
 */
#include <cstdio>

namespace geometry {

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf_work(unsigned long seed,
						  unsigned long n)
{
	unsigned long x = seed;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005ul + i;
		sink = x;
	}
	return x;
}

struct Square {
	unsigned long s;
	__attribute__((noinline)) unsigned long area(unsigned long n) const
	{
		unsigned long x = s;

		for (unsigned long i = 0; i < 3 * n; i++) {
			x = x * 2862933555777941757ul + i;
			sink = x;
		}
		return x;
	}
};

struct Circ {
	unsigned long r;
	__attribute__((noinline)) unsigned long area(unsigned long n) const
	{
		return leaf_work(r, n);
	}
};

template <typename T> struct Holder {
	T t;
	__attribute__((noinline)) unsigned long run(unsigned long n) const
	{
		return t.area(n);
	}
};

} // namespace geometry

int main()
{
	geometry::Holder<geometry::Square> sq{ { 3 } };
	geometry::Holder<geometry::Circ> ci{ { 5 } };

	std::printf("ready\n");
	std::fflush(stdout);
	for (;;) {
		geometry::sink += sq.run(300000);
		geometry::sink += ci.run(300000);
	}
}
