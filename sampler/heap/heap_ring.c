// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_ring.c - find, map and drain a heap agent's ring. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/heap/heap_ring.h"
#include "sampler/log.h"
#include "sampler/proc.h"

#define RING_LINK "/memfd:" PH_RING_NAME " (deleted)"
#define MAX_REC ph_rec_len(sizeof(struct ph_alloc) + PH_STACK_BYTES)

struct heap_ring {
	pid_t pid;
	pid_t ns_pid;		/* what the agent's getpid() says */
	int fd_in_target;
	dev_t dev;
	ino_t ino;
	struct ph_shared *sh;
	size_t map_size;
	uint64_t ring_size;	/* checked copies of the constants */
	uint32_t stack_bytes;
	uint64_t tail;		/* ours; published to sh->tail */
	bool broken;
	uint64_t *copy;		/* MAX_REC bytes, 8-aligned */
};

static int mapped_ok(struct heap_ring *r, int fd)
{
	const struct ph_shared *sh = r->sh;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPROTO;	/* it could be shrunk under our mapping */
	uint64_t ring = sh->ring_size;

	if (__atomic_load_n(&sh->magic, __ATOMIC_ACQUIRE) != PH_MAGIC ||
	    sh->version != PH_VERSION || sh->header_size != PH_HEADER_SIZE ||
	    ring < PH_RING_MIN || ring > PH_RING_MAX || (ring & (ring - 1)) ||
	    ring + PH_HEADER_SIZE > r->map_size ||
	    sh->stack_bytes > PH_STACK_BYTES)
		return -EPROTO;
	if (sh->pid != r->ns_pid)
		return -ENOENT;	/* its parent's, inherited by fork */
	r->ring_size = ring;
	r->stack_bytes = sh->stack_bytes;
	return 0;
}

/* Map the memfd open as fd n in the target, if it is a ring of its own. */
static int try_fd(struct heap_ring *r, int n)
{
	char path[64];
	struct stat st;
	void *m;
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)r->pid, n);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The file's size, sealed: the ring size inside it must agree. */
	if (fstat(fd, &st) || st.st_size < PH_HEADER_SIZE + PH_RING_MIN ||
	    st.st_size > PH_HEADER_SIZE + (off_t)PH_RING_MAX) {
		close(fd);
		return -EPROTO;
	}
	r->map_size = st.st_size;
	m = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		ret = -errno;
		close(fd);
		return ret;
	}
	r->sh = m;
	ret = mapped_ok(r, fd);
	close(fd);
	if (ret) {
		munmap(m, r->map_size);
		r->sh = NULL;
		return ret;
	}
	r->fd_in_target = n;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	r->tail = atomic_load(&r->sh->tail);
	if (r->tail % PH_ALIGN) {	/* records would straddle the end */
		munmap(m, r->map_size);
		r->sh = NULL;
		return -EPROTO;
	}
	return 0;
}

/* Walk /proc/PID/fd for the agent's memfd. A forked child holds its
 * parent's ring too: the pid written in it tells them apart. */
static int find_ring(struct heap_ring *r)
{
	char path[64], link[PATH_MAX];
	struct dirent *de;
	int ret = -ENOENT;
	ssize_t len;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)r->pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (ret && (de = readdir(d))) {
		char fdpath[64 + sizeof(de->d_name)];

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strcmp(link, RING_LINK))
			continue;
		ret = try_fd(r, atoi(de->d_name));
		if (ret == -EPROTO)
			pr_notice("heap: pid %d: fd %s is not a ring proffs "
				  "can read", (int)r->pid, de->d_name);
		if (ret && ret != -EACCES && ret != -EPERM)
			ret = -ENOENT;	/* keep looking */
	}
	closedir(d);
	return ret;
}

int heap_ring_open(pid_t pid, struct heap_ring **out)
{
	struct heap_ring *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	r->pid = pid;
	/* In a pid namespace the agent knows itself by another number. */
	if (proc_ns_tid(pid, pid, &r->ns_pid))
		r->ns_pid = pid;
	r->copy = malloc(MAX_REC);
	ret = r->copy ? find_ring(r) : -ENOMEM;
	if (ret) {
		free(r->copy);
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void heap_ring_close(struct heap_ring *r)
{
	if (!r)
		return;
	if (r->sh)
		munmap(r->sh, r->map_size);
	free(r->copy);
	free(r);
}

struct ph_shared *heap_ring_shared(struct heap_ring *r)
{
	return r->sh;
}

bool heap_ring_attached(struct heap_ring *r)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)r->pid,
		 r->fd_in_target);
	return !stat(path, &st) && st.st_dev == r->dev && st.st_ino == r->ino;
}

bool heap_ring_broken(const struct heap_ring *r)
{
	return r->broken;
}

static bool rec_ok(const struct ph_rec *h, uint32_t len)
{
	const struct ph_alloc *a = (const void *)h;

	switch (h->type) {
	case PH_REC_ALLOC:
		return len >= sizeof(*a) &&
		       a->stack_len <= len - sizeof(*a);
	case PH_REC_FREE:
		return len >= sizeof(struct ph_free);
	default:
		return false;
	}
}

static void breaks(struct heap_ring *r, const char *why)
{
	pr_warn("heap: pid %d: ring broken (%s): no more samples read",
		(int)r->pid, why);
	r->broken = true;
}

size_t heap_ring_drain(struct heap_ring *r, heap_ring_cb cb, void *arg)
{
	uint8_t *data = (uint8_t *)r->sh + PH_HEADER_SIZE;
	uint64_t head, size = r->ring_size;
	size_t n = 0;

	if (r->broken)
		return 0;
	head = atomic_load_explicit(&r->sh->head, memory_order_acquire);
	if (head - r->tail > size) {
		breaks(r, "head out of range");
		return 0;
	}
	while (r->tail != head) {
		uint64_t off = r->tail & (size - 1);
		struct ph_rec *rec = (struct ph_rec *)(data + off);
		uint64_t commit = atomic_load_explicit(&rec->commit,
						       memory_order_acquire);
		uint32_t len = ph_commit_len(commit);

		if (commit != ph_commit(r->tail, len) || !len)
			break;	/* reserved, not yet written */
		/* Aligned lengths keep every header inside the buffer. */
		if (len % PH_ALIGN || off + len > size ||
		    len > head - r->tail) {
			breaks(r, "bad record length");
			break;
		}
		if (rec->type != PH_REC_PAD) {
			if (len > MAX_REC) {
				breaks(r, "record too long");
				break;
			}
			memcpy(r->copy, rec, len);
			if (!rec_ok((struct ph_rec *)r->copy, len)) {
				breaks(r, "bad record");
				break;
			}
			cb((struct ph_rec *)r->copy, arg);
			n++;
		}
		r->tail += len;
	}
	atomic_store_explicit(&r->sh->tail, r->tail, memory_order_release);
	return n;
}
