// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * allocs_cxx - C++ allocation sites known by construction: operator new
 * of an object, new[] of an array that is deleted again, and strings
 * whose buffers libstdc++ allocates.
 *
 * Prints "ready"; on each SIGUSR1 runs the sites once and prints one JSON
 * line like allocs does: {"site": [alloc_objects, alloc_bytes,
 * inuse_objects, inuse_bytes, size], ...}.
 */
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

struct Node {
	Node *next;
	long payload[5];
};

static std::vector<void *> *kept;

__attribute__((noinline, noclone)) static void site_new_node(long n)
{
	for (long i = 0; i < n; i++)
		kept->push_back(new Node());
}

__attribute__((noinline, noclone)) static void release_array(char *p)
{
	delete[] p;
}

__attribute__((noinline, noclone)) static void site_new_array(long n, long size)
{
	for (long i = 0; i < n; i++) {
		char *p = new char[size];

		p[0] = 1;
		release_array(p);
	}
}

__attribute__((noinline, noclone)) static void site_string(long n, long len)
{
	for (long i = 0; i < n; i++)
		kept->push_back(new std::string(len, 'y'));
}

int main()
{
	const long n_node = 1000, n_array = 50, array_size = 4000;
	const long n_string = 200, string_len = 100;
	sigset_t set;
	int sig;

	kept = new std::vector<void *>();
	kept->reserve(1 << 20);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, nullptr);
	std::printf("ready\n");
	std::fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig))
			return 1;
		site_new_node(n_node);
		site_new_array(n_array, array_size);
		site_string(n_string, string_len);
		/* std::string's own object comes from new (its size), its
		 * buffer from libstdc++ (len + 1 bytes). */
		std::printf("{\"site_new_node\": [%ld, %ld, %ld, %ld, %zu], "
			    "\"site_new_array\": [%ld, %ld, 0, 0, %ld], "
			    "\"site_string\": [%ld, %ld, %ld, %ld, 0]}\n",
			    n_node, n_node * (long)sizeof(Node), n_node,
			    n_node * (long)sizeof(Node), sizeof(Node),
			    n_array, n_array * array_size, array_size,
			    2 * n_string,
			    n_string * (long)(sizeof(std::string) +
					      string_len + 1),
			    2 * n_string,
			    n_string * (long)(sizeof(std::string) +
					      string_len + 1));
		std::fflush(stdout);
	}
}
