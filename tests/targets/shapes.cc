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
	/* Each turn's work varies (0.5 to 1.5 times 300000, the same for
	 * both calls, so the 3:1 holds): a fixed turn near the sampler's
	 * period would be sampled at the same phase every time. */
	for (unsigned long r = 1;;) {
		r = r * 6364136223846793005ul + 1442695040888963407ul;
		unsigned long n = 150000 + (r >> 33) % 300000;

		geometry::sink += sq.run(n);
		geometry::sink += ci.run(n);
	}
}
