// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-inject-frame.c - the signal frame an injected call returns
 * through (sampler/heap/inject_call.c) holds an XSAVE image the kernel
 * takes whole: no larger than the frames the kernel itself makes for a
 * thread. ptrace's image is larger on a CPU with AMX (11,008 bytes
 * against 2,816 here), and the kernel restores from a too large one the
 * legacy area only: a target's vector registers lost their upper halves
 * when the daemon died in a call.
 */
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"
#include "sampler/heap/inject_i.h"

static uint32_t frame_xstate_size;

/* The kernel's own frame: its software bytes' xstate_size. */
static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint32_t sw[5];

	(void)sig;
	(void)si;
	memcpy(sw, (char *)uc->uc_mcontext.fpregs + 464, sizeof(sw));
	frame_xstate_size = sw[0] == 0x46505853u ? sw[4] : 0;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1,
				.sa_flags = SA_SIGINFO };
	static uint8_t x[16384];
	struct iovec iov = { x, sizeof(x) - 64 };
	size_t len;
	pid_t child;

	MUST(sigaction(SIGUSR1, &sa, NULL));
	raise(SIGUSR1);
	if (!frame_xstate_size) {
		printf("# no XSAVE frames here: not tested\n");
		return 0;
	}
	child = fork();
	if (!child) {
		for (;;)
			pause();
	}
	MUST(ptrace(PTRACE_SEIZE, child, NULL, NULL));
	MUST(ptrace(PTRACE_INTERRUPT, child, NULL, NULL));
	CHECK(waitpid(child, NULL, 0) == child, "waitpid");
	MUST(ptrace(PTRACE_GETREGSET, child, (void *)NT_X86_XSTATE, &iov));
	len = inject_frame_xstate_len(x, iov.iov_len);
	printf("# ptrace's image %zu bytes, the kernel's frames %u, ours %zu\n",
	       iov.iov_len, frame_xstate_size, len);
	CHECK(len == frame_xstate_size, "frame image %zu bytes, the kernel's "
	      "%u (ptrace gave %zu)", len, frame_xstate_size, iov.iov_len);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return failures ? 1 : 0;
}
