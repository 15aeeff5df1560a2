// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ksym_bpf.c - the user half of the kernel's symbol namer: loads
 * ksym_bpf.bpf.c, maps its .bss (the exchange area: libbpf of Debian 12
 * maps a global data map to the program only for skeletons), and runs a
 * program per question with BPF_PROG_TEST_RUN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/ksym_bpf.h"

#ifdef PROFFS_BPF
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler/bpfobj.h"
#include "sampler/unwind/ksym_bpf_abi.h"
#include "ksym_bpf_obj.h"	/* ksym_bpf_obj[]: the compiled programs */

struct ksym_bpf {
	struct bpf_object *obj;
	int name_fd, addr_fd;
	struct ksym_io *io;	/* the .bss map, mapped */
	size_t io_len;
};

void ksym_bpf_close(struct ksym_bpf *b)
{
	if (!b)
		return;
	if (b->io)
		munmap(b->io, b->io_len);
	bpf_object__close(b->obj);
	free(b);
}

/* Run one program; its return value into *rv. */
static int run(int fd, int *rv)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	if (bpf_prog_test_run_opts(fd, &opts))
		return -errno;
	*rv = (int)opts.retval;
	return 0;
}

static int find(struct ksym_bpf *b)
{
	struct bpf_program *pn, *pa;
	struct bpf_map *m;
	long page = sysconf(_SC_PAGESIZE);
	void *io;

	pn = bpf_object__find_program_by_name(b->obj, "ksym_name");
	pa = bpf_object__find_program_by_name(b->obj, "ksym_addr");
	m = bpf_object__find_map_by_name(b->obj, ".bss");
	if (!pn || !pa || !m || bpf_map__value_size(m) < sizeof(*b->io))
		return -EINVAL;
	b->name_fd = bpf_program__fd(pn);
	b->addr_fd = bpf_program__fd(pa);
	b->io_len = (sizeof(*b->io) + page - 1) / page * page;
	io = mmap(NULL, b->io_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		  bpf_map__fd(m), 0);
	if (io == MAP_FAILED)
		return -errno;
	b->io = io;
	return 0;
}

int ksym_bpf_open(struct ksym_bpf **out)
{
	struct ksym_bpf *b = calloc(1, sizeof(*b));
	uint64_t addr;
	int ret;

	if (!b)
		return -ENOMEM;
	ret = bpfobj_load(ksym_bpf_obj, sizeof(ksym_bpf_obj), "ksym_bpf",
			  &b->obj);
	if (!ret)
		ret = find(b);
	/* A kernel that loads the programs but names nothing (no
	 * kallsyms): as good as none. */
	if (!ret && ksym_bpf_addr(b, "schedule", 8, &addr))
		ret = -EINVAL;
	if (ret) {
		ksym_bpf_close(b);
		return ret == -ENOMEM ? ret : (ret == -EPERM ? ret : -EINVAL);
	}
	*out = b;
	return 0;
}

/* "name+0x1f/0x40 [module]" (or a bare "0xffff..." for no symbol). */
static int parse(const char *text, uint64_t addr, char *buf, size_t len,
		 uint64_t *start)
{
	const char *plus = strchr(text, '+');
	char *end;
	uint64_t off;

	if (!plus || plus == text || strncmp(plus, "+0x", 3))
		return -ENOENT;
	off = strtoull(plus + 3, &end, 16);
	if (*end != '/' || off > addr)
		return -ENOENT;
	if (len) {
		size_t n = (size_t)(plus - text) < len - 1 ?
			   (size_t)(plus - text) : len - 1;

		memcpy(buf, text, n);
		buf[n] = '\0';
	}
	*start = addr - off;
	return 0;
}

int ksym_bpf_name(struct ksym_bpf *b, uint64_t addr, char *buf, size_t len,
		  uint64_t *start)
{
	int rv = 0, ret;

	b->io->addr = addr;
	ret = run(b->name_fd, &rv);
	if (ret)
		return ret;
	if (rv <= 0 || rv > KSYM_BPF_TEXT)
		return rv < 0 ? rv : -ENOENT;
	b->io->text[KSYM_BPF_TEXT - 1] = '\0';
	return parse(b->io->text, addr, buf, len, start);
}

int ksym_bpf_addr(struct ksym_bpf *b, const char *name, size_t len,
		  uint64_t *addr)
{
	int rv = 0, ret;

	if (!len || len >= KSYM_BPF_TEXT)
		return -ENOENT;
	memcpy(b->io->text, name, len);
	b->io->text[len] = '\0';
	b->io->len = len + 1;
	b->io->res = 0;
	ret = run(b->addr_fd, &rv);
	if (ret)
		return ret;
	if (rv || !b->io->res)
		return -ENOENT;
	*addr = b->io->res;
	return 0;
}

size_t ksym_bpf_bytes(const struct ksym_bpf *b)
{
	return b ? b->io_len : 0;
}

#else	/* !PROFFS_BPF */

int ksym_bpf_open(struct ksym_bpf **out)
{
	(void)out;
	return -ENOTSUP;
}

void ksym_bpf_close(struct ksym_bpf *b)
{
	(void)b;
}

int ksym_bpf_name(struct ksym_bpf *b, uint64_t addr, char *buf, size_t len,
		  uint64_t *start)
{
	(void)b;
	(void)addr;
	(void)buf;
	(void)len;
	(void)start;
	return -ENOTSUP;
}

int ksym_bpf_addr(struct ksym_bpf *b, const char *name, size_t len,
		  uint64_t *addr)
{
	(void)b;
	(void)name;
	(void)len;
	(void)addr;
	return -ENOTSUP;
}

size_t ksym_bpf_bytes(const struct ksym_bpf *b)
{
	(void)b;
	return 0;
}
#endif
