// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * latejit - JIT code named late, as a runtime names code it made and ran
 * at once (node's hot loop, optimized mid-run): it copies a spin loop
 * into memory of no file, runs it from main() without pause, and only
 * after DELAY_MS (the first argument, default 500) appends its line to
 * /tmp/perf-PID.map: "ADDR SIZE jit_spin". Every pc of the loop is
 * sampled long before the line is there; a profiler that remembers that
 * a pc had no name never names it. Prints "ready" once spinning; removes
 * its map at SIGTERM.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov $100000, %ecx; 1: dec %ecx; jnz 1b; ret */
static const unsigned char spin_code[] = {
	0xb9, 0xa0, 0x86, 0x01, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3,
};

static char map_path[64];

static void on_term(int sig)
{
	(void)sig;
	unlink(map_path);
	_exit(0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long delay_ms = argc > 1 ? atol(argv[1]) : 500;
	void (*spin)(void);
	unsigned char *code;
	double start;
	FILE *f;

	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
	signal(SIGTERM, on_term);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, spin_code, sizeof(spin_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	spin = (void (*)(void))code;
	printf("ready\n");
	fflush(stdout);
	start = now_ms();
	while (now_ms() - start < delay_ms)
		spin();
	f = fopen(map_path, "a");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_spin\n", (unsigned long)code,
		sizeof(spin_code));
	fclose(f);
	for (;;)
		spin();
}
