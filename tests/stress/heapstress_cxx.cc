// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heapstress_cxx - C++ allocation through operator new and delete (objects,
 * arrays, sized and aligned variants, containers), for the stress suite;
 * built with libstdc++'s operator new, and with tcmalloc's and jemalloc's.
 *
 * Usage: heapstress_cxx SECONDS. Checks every object it kept, prints
 * "checksum N", exits 0; a corrupted object exits 3.
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(64) Aligned {
	unsigned char b[192];
};

static double now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void expect(bool ok)
{
	if (!ok) {
		std::fprintf(stderr, "heapstress_cxx: corrupted\n");
		std::_Exit(3);
	}
}

static volatile std::sig_atomic_t stop;

static void on_stop(int)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? std::atof(argv[1]) : 3);
	unsigned long checksum = 0;
	std::map<int, std::string> m;
	std::list<std::vector<int>> l;

	std::signal(SIGUSR2, on_stop);	/* the harness's read is done */
	while (!stop && now() < end) {
		for (int i = 0; i < 2000; i++) {
			m[i % 997] = std::string(16 + i % 300, 'a' + i % 26);
			if (l.size() > 64)
				l.pop_front();
			l.emplace_back(i % 500 + 1, i);
			char *a = new char[1 + i % 5000];
			a[0] = 'x';
			expect(a[0] == 'x');
			delete[] a;
			Aligned *al = new Aligned;
			expect(((uintptr_t)al & 63) == 0);
			al->b[191] = 7;
			delete al;
			auto u = std::make_unique<long[]>(i % 64 + 1);
			u[0] = i;
			int *nt = new (std::nothrow) int(i);
			expect(nt && *nt == i);
			delete nt;
		}
		for (auto &kv : m)
			expect(kv.second.size() == 16 + (size_t)kv.first % 300 ||
			       kv.second.size() >= 16);
		for (auto &v : l)
			expect(!v.empty() && v.back() == v.front());
	}
	for (auto &kv : m)
		checksum += kv.second.size();
	std::printf("checksum %lu\n", checksum);
	return 0;
}
