// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ops.c - the FUSE low-level handlers of /prof.
 *
 * Each handler resolves the inode, calls the registry or /proc, and ends
 * in exactly one fuse_reply_* (a parked read ends in it later, from the
 * session's thread). Nothing here waits for a profiling window.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "heap.h"
#include "index.h"
#include "log.h"
#include "name.h"
#include "nodes.h"
#include "output.h"
#include "proc.h"
#include "proffs_i.h"
#include "refuse.h"
#include "registry.h"
#include "status.h"

#define CMDLINE_MAX (128 * 1024)

/* Names a pid directory lists (SPEC §1); others are looked up only. */
static const char *const listed_names[] = {
	"cmdline", "cpu.pb.gz", "heap.pb.gz", "allocs.pb.gz",
	"goroutine.txt", "index.html",
};

static struct proffs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static bool pid_exists(pid_t pid, uid_t *uid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return false;
	*uid = st.st_uid;
	return true;
}

static void fill_attr(const struct node_info *n, uid_t owner, size_t size,
		      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = owner;
	/* A profile is made when read: it is always new. */
	st->st_mtime = st->st_atime = st->st_ctime = time(NULL);
	if (n->type == NODE_ROOT || n->type == NODE_PID_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = size;
	}
}

/* Classify a name inside a pid directory; -ENOENT when not ours. */
static int classify(const char *name, struct node_info *n)
{
	int ret;

	if (!strcmp(name, "cmdline")) {
		n->type = NODE_CMDLINE;
		return 0;
	}
	if (!strcmp(name, "index.html")) {
		n->type = NODE_INDEX;
		return 0;
	}
	ret = name_parse(name, &n->req);
	if (ret == -ENOENT)
		return ret;
	if (!output_supported(n->req.kind, n->req.format))
		return -ENOENT;
	n->type = NODE_PROFILE;
	n->parse_ret = ret;
	return 0;
}

/* Small generated files: index.html of a pid, /status of the daemon. */
static int render_page(struct proffs *fs, const struct node_info *n,
		       char **buf, size_t *len)
{
	struct timespec ts;

	if (n->type == NODE_INDEX)
		return index_html(n->pid, buf, len);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return status_text(fs->registry, &fs->refused, ts.tv_sec - fs->start_s,
			   buf, len);
}

static int attr_of(struct proffs *fs, const struct node_info *n,
		   struct stat *st)
{
	uid_t owner = 0;
	size_t size = 0;

	if (n->type != NODE_ROOT && n->type != NODE_STATUS &&
	    !pid_exists(n->pid, &owner))
		return -ENOENT;
	if (n->type == NODE_PROFILE && !n->parse_ret)
		registry_result_size(fs->registry, n->pid, &n->req, &size);
	if (n->type == NODE_INDEX || n->type == NODE_STATUS) {
		char *buf;
		int ret = render_page(fs, n, &buf, &size);

		if (ret)
			return ret;
		free(buf);
	}
	fill_attr(n, owner, size, st);
	return 0;
}

static bool listed(const char *name)
{
	for (size_t i = 0; i < sizeof(listed_names) / sizeof(listed_names[0]);
	     i++)
		if (!strcmp(name, listed_names[i]))
			return true;
	return false;
}

/*
 * Browsers read exactly st_size bytes of a file:// URL, and cp, curl and
 * others trust st_size too, so a stat of a profile name waits for the
 * result and gives its exact size (SPEC §2 asks it of SVGs; every format
 * a link of index.html opens needs it). Not the names readdir lists:
 * `ls -l` stats those and must never wait. Only when the caller may open
 * the file and the name is valid: else the open will fail, and the stat
 * need not wait.
 */
static bool stat_must_wait(struct proffs *fs, fuse_req_t req,
			   const struct node_info *n)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	size_t size;

	if (n->type != NODE_PROFILE || listed(n->name) ||
	    n->parse_ret || n->req.hz > fs->opts.max_hz ||
	    n->req.window_ms > fs->opts.max_window_s * 1000ull)
		return false;
	if (!registry_result_size(fs->registry, n->pid, &n->req, &size))
		return false;
	return !access_check(ctx->pid, ctx->uid, n->pid);
}

struct stat_wait {
	struct stat st;
};

static void stat_done(fuse_req_t req, int err, size_t size, void *arg)
{
	struct stat_wait *sw = arg;

	if (err) {
		fuse_reply_err(req, -err);
	} else {
		sw->st.st_size = size;
		fuse_reply_attr(req, &sw->st, 0);
	}
	free(sw);
}

/* Reply now, or park the stat until the SVG is ready. */
static void reply_stat(fuse_req_t req, struct proffs *fs,
		       const struct node_info *n, const struct stat *st,
		       bool entry)
{
	struct fuse_entry_param e;
	struct stat_wait *sw;

	/* Never park a lookup: the kernel holds the directory's lock across
	 * it, so an `ls -l` would wait too. With attribute timeouts of 0
	 * every stat(2) sends a GETATTR after the lookup, and that waits. */
	if (!entry && stat_must_wait(fs, req, n) &&
	    (sw = calloc(1, sizeof(*sw)))) {
		sw->st = *st;
		registry_wait_size(fs->registry, n->pid, &n->req, req,
				   stat_done, sw);
		return;
	}
	if (!entry) {
		fuse_reply_attr(req, st, 0);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.attr = *st;
	fuse_reply_entry(req, &e);
}

static void reply_entry(fuse_req_t req, struct proffs *fs,
			struct node_info *n)
{
	struct stat st;
	int ret;

	ret = nodes_lookup(fs->nodes, n);
	if (!ret) {
		ret = attr_of(fs, n, &st);
		if (ret)
			nodes_forget(fs->nodes, n->ino, 1);
	}
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* No entry or attribute caching (timeouts 0): what a lookup shows
	 * depends on who asks and when. */
	reply_stat(req, fs, n, &st, true);
}

static void proffs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct proffs *fs = fs_of(req);
	struct node_info dir, n;
	uid_t owner;

	memset(&n, 0, sizeof(n));
	if (nodes_get(fs->nodes, parent, &dir)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (dir.type == NODE_ROOT && !strcmp(name, "status")) {
		n.type = NODE_STATUS;
		strcpy(n.name, name);
	} else if (dir.type == NODE_ROOT) {
		if (!proc_parse_pid(name, &n.pid) || !pid_exists(n.pid, &owner)) {
			pr_info("fs: lookup %s: ENOENT: %s", name,
				proc_parse_pid(name, &n.pid) ?
				"no such process" : "not a process id");
			fuse_reply_err(req, ENOENT);
			return;
		}
		n.type = NODE_PID_DIR;
	} else if (dir.type == NODE_PID_DIR) {
		n.pid = dir.pid;
		if (strlen(name) > fs->opts.max_name) {
			pr_info("fs: lookup %d/%.40s...: ENAMETOOLONG: longer "
				"than max_name (%u)", (int)dir.pid, name,
				fs->opts.max_name);
			fuse_reply_err(req, ENAMETOOLONG);
			return;
		}
		if (strlen(name) >= sizeof(n.name) || classify(name, &n)) {
			pr_info("fs: lookup %d/%s: ENOENT: not a file proffs "
				"serves", (int)dir.pid, name);
			fuse_reply_err(req, ENOENT);
			return;
		}
		strcpy(n.name, name);
	} else {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	reply_entry(req, fs, &n);
}

static void proffs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	nodes_forget(fs_of(req)->nodes, ino, nlookup);
	fuse_reply_none(req);
}

static void proffs_forget_multi(fuse_req_t req, size_t count,
				struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		nodes_forget(fs_of(req)->nodes, forgets[i].ino,
			     forgets[i].nlookup);
	fuse_reply_none(req);
}

static void proffs_getattr(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct node_info n;
	struct stat st;
	int ret;

	ret = nodes_get(fs->nodes, ino, &n);
	if (!ret)
		ret = attr_of(fs, &n, &st);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* fstat of an open profile: the size of the handle's own result,
	 * whatever its name (Python's open() and cat ask at once). */
	if (fi && fi->fh && n.type == NODE_PROFILE) {
		struct stat_wait *sw = calloc(1, sizeof(*sw));

		if (sw) {
			sw->st = st;
			registry_handle_size((struct reg_handle *)(uintptr_t)
					     fi->fh, req, stat_done, sw);
			return;
		}
	}
	reply_stat(req, fs, &n, &st, false);
}

/*
 * A directory listing, built at opendir and sliced by readdir; a page
 * (index.html, status) likewise. Each lives until its release AND every
 * reply pointing into it has returned: once the kernel has the reply, it
 * may send the release to another thread while fuse_reply_buf() has not
 * returned yet (AddressSanitizer checks a writev's buffer after the call).
 */
struct dirbuf {
	char *p;
	size_t size;
	atomic_int refs;
};

static struct dirbuf *dirbuf_get(struct dirbuf *b)
{
	atomic_fetch_add(&b->refs, 1);
	return b;
}

static void dirbuf_put(struct dirbuf *b)
{
	if (atomic_fetch_sub(&b->refs, 1) == 1) {
		free(b->p);
		free(b);
	}
}

static int dirbuf_add(fuse_req_t req, struct dirbuf *b, const char *name,
		      mode_t mode)
{
	struct stat st = { .st_ino = 0xffffffff, .st_mode = mode };
	size_t len = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	char *np = realloc(b->p, b->size + len);

	if (!np)
		return -ENOMEM;
	b->p = np;
	fuse_add_direntry(req, b->p + b->size, len, name, &st, b->size + len);
	b->size += len;
	return 0;
}

static int list_root(fuse_req_t req, struct dirbuf *b)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct dirent *de;
	DIR *dir = opendir("/proc");
	pid_t pid;
	int ret = 0;

	if (!dir)
		return -errno;
	ret = dirbuf_add(req, b, "status", S_IFREG);
	while (!ret && (de = readdir(dir))) {
		/* Hidden unless the caller may profile it (SPEC §5). */
		if (!proc_parse_pid(de->d_name, &pid) ||
		    access_check(ctx->pid, ctx->uid, pid))
			continue;
		ret = dirbuf_add(req, b, de->d_name, S_IFDIR);
	}
	closedir(dir);
	return ret;
}

static int list_pid(fuse_req_t req, struct dirbuf *b)
{
	struct node_info n;
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(listed_names) / sizeof(listed_names[0]); i++) {
		memset(&n, 0, sizeof(n));
		if (classify(listed_names[i], &n))
			continue;	/* kind or format not served yet */
		ret = dirbuf_add(req, b, listed_names[i], S_IFREG);
	}
	return ret;
}

static void proffs_opendir(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct dirbuf *b;
	struct node_info n;
	int ret;

	ret = nodes_get(fs->nodes, ino, &n);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = dirbuf_add(req, b, ".", S_IFDIR);
	if (!ret)
		ret = dirbuf_add(req, b, "..", S_IFDIR);
	if (!ret)
		ret = n.type == NODE_ROOT ? list_root(req, b) : list_pid(req, b);
	if (ret) {
		free(b->p);
		free(b);
		fuse_reply_err(req, -ret);
		return;
	}
	b->refs = 1;
	fi->fh = (uintptr_t)b;
	fuse_reply_open(req, fi);
}

static void reply_slice(fuse_req_t req, const char *buf, size_t len,
			size_t size, off_t off)
{
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, buf + off,
			       len - off < size ? len - off : size);
}

static void proffs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	struct dirbuf *b = dirbuf_get((struct dirbuf *)(uintptr_t)fi->fh);

	(void)ino;
	reply_slice(req, b->p, b->size, size, off);
	dirbuf_put(b);
}

static void proffs_releasedir(fuse_req_t req, fuse_ino_t ino,
			      struct fuse_file_info *fi)
{
	(void)ino;
	dirbuf_put((struct dirbuf *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* A page is rendered at open and read from the handle (a dirbuf). */
static int open_page(struct proffs *fs, const struct node_info *n,
		     struct fuse_file_info *fi)
{
	struct dirbuf *pg = calloc(1, sizeof(*pg));
	int ret;

	if (!pg)
		return -ENOMEM;
	ret = render_page(fs, n, &pg->p, &pg->size);
	if (ret) {
		free(pg);
		return ret;
	}
	pg->refs = 1;
	fi->fh = (uintptr_t)pg;
	return 0;
}

/* Check an open of a profile file; a log line for every refusal. */
static int check_open(fuse_req_t req, struct proffs *fs,
		      const struct node_info *n)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	const char *why = NULL;
	int ret;

	if ((ret = access_check(ctx->pid, ctx->uid, n->pid))) {
		why = ret == -ENOENT ? "no such process"
				     : "caller may not ptrace the target";
	} else if (n->parse_ret) {
		ret = n->parse_ret;
		why = "bad value in the file name";
	} else if (n->req.window_ms > fs->opts.max_window_s * 1000ull) {
		ret = -EINVAL;
		why = "window longer than max_window";
	} else if (n->req.hz > fs->opts.max_hz) {
		ret = -EINVAL;
		why = "hz above max_hz";
	} else if ((n->req.kind == PROFFS_KIND_HEAP ||
		    n->req.kind == PROFFS_KIND_ALLOCS) &&
		   (ret = heap_agents_check(fs->heap))) {
		why = "heap=uprobe needs root (CAP_SYS_ADMIN) to place "
		      "uprobes";
	}
	if (ret)
		pr_notice("fs: open %d/%s by uid %u: %s: %s", (int)n->pid,
			  n->name, (unsigned)ctx->uid, strerrorname_np(-ret),
			  why);
	return ret;
}

static void proffs_open(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct reg_handle *h;
	struct node_info n;
	char why[96];
	int ret;

	ret = nodes_get(fs->nodes, ino, &n);
	if (!ret && (fi->flags & O_ACCMODE) != O_RDONLY) {
		/* Writes reach the daemon (refuse.c): refuse them here too. */
		pr_notice("fs: open %d/%s for writing by uid %u: EROFS: "
			  "profiles are read-only", (int)n.pid, n.name,
			  (unsigned)fuse_req_ctx(req)->uid);
		ret = -EROFS;
	}
	if (!ret && (n.type == NODE_ROOT || n.type == NODE_PID_DIR))
		ret = -EISDIR;
	if (!ret && (n.type == NODE_INDEX || n.type == NODE_STATUS))
		ret = open_page(fs, &n, fi);
	if (!ret && n.type == NODE_PROFILE)
		ret = check_open(req, fs, &n);
	if (!ret && n.type == NODE_PROFILE) {
		ret = registry_open(fs->registry, n.pid, &n.req, &h, why,
				    sizeof(why));
		if (ret)
			pr_notice("fs: open %d/%s: %s: cannot start a session: "
				  "%s", (int)n.pid, n.name,
				  strerrorname_np(-ret), why);
		else
			fi->fh = (uintptr_t)h;
	}
	if (ret) {
		status_refused(&fs->refused, ret);
		fuse_reply_err(req, -ret);
		return;
	}
	/* Sizes are unknown until the window ends: read until EOF. */
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void read_cmdline(fuse_req_t req, pid_t pid, size_t size, off_t off)
{
	char *buf = malloc(CMDLINE_MAX);
	size_t len;
	int ret;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = proc_read(pid, "cmdline", buf, CMDLINE_MAX, &len);
	if (ret)
		fuse_reply_err(req, -ret == ENOENT ? ESRCH : -ret);
	else
		reply_slice(req, buf, len, size, off);
	free(buf);
}

static void proffs_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			off_t off, struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct node_info n;

	if (nodes_get(fs->nodes, ino, &n)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n.type == NODE_PROFILE) {
		registry_read((struct reg_handle *)(uintptr_t)fi->fh, req,
			      size, off);
	} else if (n.type == NODE_INDEX || n.type == NODE_STATUS) {
		struct dirbuf *pg = dirbuf_get((struct dirbuf *)(uintptr_t)
					       fi->fh);

		reply_slice(req, pg->p, pg->size, size, off);
		dirbuf_put(pg);
	} else {
		read_cmdline(req, n.pid, size, off);
	}
}

static void proffs_release(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct node_info n;

	if (fi->fh && !nodes_get(fs->nodes, ino, &n) &&
	    (n.type == NODE_INDEX || n.type == NODE_STATUS)) {
		dirbuf_put((struct dirbuf *)(uintptr_t)fi->fh);
	} else if (fi->fh) {
		registry_release((struct reg_handle *)(uintptr_t)fi->fh);
	}
	fuse_reply_err(req, 0);
}

static void proffs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* A lookup of an SVG name waits for its profile; without parallel
	 * directory operations the kernel would hold every other lookup and
	 * readdir of that directory (ls -l) behind it. */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
}

const struct fuse_lowlevel_ops proffs_ops = {
	.init = proffs_init,
	.lookup = proffs_lookup,
	.forget = proffs_forget,
	.forget_multi = proffs_forget_multi,
	.getattr = proffs_getattr,
	.opendir = proffs_opendir,
	.readdir = proffs_readdir,
	.releasedir = proffs_releasedir,
	.open = proffs_open,
	.read = proffs_read,
	.release = proffs_release,
	/* The rest would change the tree: refuse.c says no, and logs. */
	.setattr = refuse_setattr,
	.mknod = refuse_mknod,
	.mkdir = refuse_mkdir,
	.unlink = refuse_unlink,
	.rmdir = refuse_rmdir,
	.symlink = refuse_symlink,
	.rename = refuse_rename,
	.link = refuse_link,
	.create = refuse_create,
	.setxattr = refuse_setxattr,
	.removexattr = refuse_removexattr,
};
