// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dlopen.c - objects loaded after the agent armed get its hooks too.
 *
 * dlopen and dlmopen are reached through trampolines in the GOT like the
 * allocation functions. The trampoline must get control back when dlopen
 * returns, to redirect the new objects' GOT entries - yet dlopen must see
 * its real caller: glibc takes the return address as the caller, and
 * searches that object's RUNPATH and $ORIGIN for a name without a slash.
 * So the trampoline calls dlopen with a return address inside the
 * caller's own object, pointing at a `ret` byte of its code, with the
 * trampoline's continuation just above it on the stack: dlopen sees its
 * caller, returns to that `ret`, which returns to the trampoline.
 *
 * That trick is not possible where a shadow stack checks returns (CET);
 * then, or if no `ret` byte is found, the trampoline calls dlopen
 * plainly and the library search path is the agent's.
 */
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define GADGETS 32

PH_HIDDEN void *ph_real_dlopen, *ph_real_dlmopen;
PH_HIDDEN _Atomic uint32_t ph_dlopen_calls;
PH_HIDDEN uintptr_t ph_gadget_for(uintptr_t ret_addr);
PH_HIDDEN void ph_after_dlopen(void);

static bool no_gadgets;		/* a shadow stack would catch them */
static struct {
	uintptr_t start, end, gadget;
} cache[GADGETS];
static unsigned ncache;
static atomic_flag cache_busy = ATOMIC_FLAG_INIT;

/*
 * TRAMP(name, real): entered as `name(a, b, c)` with rsp = E (E % 16 ==
 * 8, [E] = the caller's return address). Frame of 40 bytes: saved
 * arguments at 0, 8, 16; the gadget and the continuation at 24 and 32,
 * so that after `add $24`, rsp = E - 16 (an entry alignment) holds the
 * gadget and E - 8 the continuation.
 */
#define TRAMP(name, real)                                                    \
	".globl " name "\n.hidden " name "\n"                                \
	".type " name ",@function\n"                                         \
	name ":\n"                                                           \
	".cfi_startproc\n"                                                   \
	"	lock incl ph_dlopen_calls(%rip)\n"                           \
	"	subq $40, %rsp\n"                                            \
	".cfi_def_cfa_offset 48\n"                                           \
	"	movq %rdi, 0(%rsp)\n"                                        \
	"	movq %rsi, 8(%rsp)\n"                                        \
	"	movq %rdx, 16(%rsp)\n"                                       \
	"	movq 40(%rsp), %rdi\n"                                       \
	"	call ph_gadget_for\n"                                        \
	"	movq 0(%rsp), %rdi\n"                                        \
	"	movq 8(%rsp), %rsi\n"                                        \
	"	movq 16(%rsp), %rdx\n"                                       \
	"	testq %rax, %rax\n"                                          \
	"	jz 1f\n"                                                     \
	"	leaq 2f(%rip), %r11\n"                                       \
	"	movq %rax, 24(%rsp)\n"                                       \
	"	movq %r11, 32(%rsp)\n"                                       \
	"	addq $24, %rsp\n"                                            \
	".cfi_def_cfa_offset 24\n"                                           \
	"	jmp *" real "(%rip)\n"                                       \
	"2:\n"                                                               \
	".cfi_def_cfa_offset 8\n"                                            \
	"	pushq %rax\n"                                                \
	".cfi_def_cfa_offset 16\n"                                           \
	"	call ph_after_dlopen\n"                                      \
	"	popq %rax\n"                                                 \
	".cfi_def_cfa_offset 8\n"                                            \
	"	ret\n"                                                       \
	"1:\n"                                                               \
	".cfi_def_cfa_offset 48\n"                                           \
	"	call *" real "(%rip)\n"                                      \
	"	movq %rax, 0(%rsp)\n"                                        \
	"	call ph_after_dlopen\n"                                      \
	"	movq 0(%rsp), %rax\n"                                        \
	"	addq $40, %rsp\n"                                            \
	".cfi_def_cfa_offset 8\n"                                            \
	"	ret\n"                                                       \
	".cfi_endproc\n"                                                     \
	".size " name ", .-" name "\n"

__asm__(".text\n"
	TRAMP("ph_dlopen_tramp", "ph_real_dlopen")
	TRAMP("ph_dlmopen_tramp", "ph_real_dlmopen"));

struct find {
	uintptr_t addr;
	uintptr_t start, end, gadget;
};

/* The executable segment holding addr, and the first `ret` byte in it
 * (any 0xc3 byte executes as one, whatever instruction it belongs to). */
static int find_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		const uint8_t *p;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    !(ph->p_flags & PF_R) || f->addr < start ||
		    f->addr >= start + ph->p_memsz)
			continue;
		f->start = start;
		f->end = start + ph->p_memsz;
		p = memchr((const void *)start, 0xc3, ph->p_filesz);
		f->gadget = p ? (uintptr_t)p : 0;
		return 1;
	}
	return 0;
}

uintptr_t ph_gadget_for(uintptr_t ret_addr)
{
	struct find f = { .addr = ret_addr };
	bool locked;

	if (no_gadgets)
		return 0;
	locked = !atomic_flag_test_and_set_explicit(&cache_busy,
						    memory_order_acquire);
	for (unsigned i = 0; locked && i < ncache; i++)
		if (ret_addr >= cache[i].start && ret_addr < cache[i].end) {
			f.gadget = cache[i].gadget;
			atomic_flag_clear_explicit(&cache_busy,
						   memory_order_release);
			return f.gadget;
		}
	dl_iterate_phdr(find_segment, &f);
	if (locked && f.gadget && ncache < GADGETS) {
		cache[ncache].start = f.start;
		cache[ncache].end = f.end;
		cache[ncache].gadget = f.gadget;
		ncache++;
	}
	if (locked)
		atomic_flag_clear_explicit(&cache_busy, memory_order_release);
	return f.gadget;
}

void ph_after_dlopen(void)
{
	agent_rescan();
}

/* Is a shadow stack on? The kernel says so in /proc/self/status
 * ("x86_Thread_features: shstk"), read without allocating. */
void dlopen_init(void)
{
	static char buf[4096];
	const char *p;
	ssize_t n;
	int fd;

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = strstr(buf, "x86_Thread_features:");
	if (p && strstr(p, "shstk") && strchr(p, '\n') > strstr(p, "shstk"))
		no_gadgets = true;
}
