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

#include "fs/core/access.h"
#include "fs/core/dispatch.h"
#include "fs/core/errors.h"
#include "sampler/heap/heap.h"
#include "fs/core/index.h"
#include "fs/core/kinds.h"
#include "sampler/log.h"
#include "fs/core/name.h"
#include "fs/fuse/nodes.h"
#include "fs/core/output.h"
#include "fs/core/past.h"
#include "sampler/proc.h"
#include "fs/core/daemon.h"
#include "fs/fuse/ops.h"
#include "fs/fuse/refuse.h"
#include "fs/fuse/wait.h"
#include "fs/core/registry.h"
#include "fs/core/status.h"
#include "fs/core/target.h"

#define CMDLINE_MAX (128 * 1024)

/* Names a pid directory lists (SPEC §1); others are looked up only. */
static const char *const listed_names[] = {
	"errors.txt", "cmdline", "cpu.pb.gz", "heap.pb.gz", "allocs.pb.gz",
	"goroutine.txt", "index.html",
};

static struct proffs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A refusal for errors.txt: the caller's, about pid (0: none). */
static void note(fuse_req_t req, pid_t pid, const char *name, int err,
		 const char *why)
{
	errlog_add(fs_of(req)->errors, pid, fuse_req_ctx(req)->uid, name,
		   err, why);
}

static bool is_page(enum node_type t)
{
	return t == NODE_INDEX || t == NODE_STATUS || t == NODE_ERRORS;
}

/* The owner of /proc/PID: the target's uid, root if not dumpable. */
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

bool ops_pid_known(struct proffs *fs, pid_t pid, uid_t *owner)
{
	return pid_exists(pid, owner) || past_known(fs->rec, pid, owner);
}

static void fill_attr(const struct node_info *n, uid_t owner, size_t size,
		      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = owner;
	/* A profile is made when read: it is always new. */
	st->st_mtime = st->st_atime = st->st_ctime = time(NULL);
	if (n->type == NODE_ROOT || n->type == NODE_PID_DIR ||
	    n->type == NODE_GROUP_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = size;
	}
}

/* "1234/name", "unit/nginx.service/name", "all/name": for log lines. */
static void node_path(const struct node_info *n, char *buf, size_t size)
{
	if (n->tgt.kind == TARGET_PID)
		snprintf(buf, size, "%d/%s", (int)n->pid, n->name);
	else if (n->tgt.kind == TARGET_ALL)
		snprintf(buf, size, "all/%s", n->name);
	else
		snprintf(buf, size, "%s/%s/%s", target_word(n->tgt.kind),
			 n->tgt.id, n->name);
}

/*
 * The process n is about now, for the caller of req: a pid directory's
 * own, or what a stable name resolves to (target.h); -ENOENT when none.
 * Nothing for /prof/all and the group directories (-EINVAL).
 */
static int node_pid(fuse_req_t req, const struct node_info *n, pid_t *pid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (n->type == NODE_GROUP_DIR || n->type == NODE_ROOT)
		return -EINVAL;
	if (n->tgt.kind == TARGET_PID) {
		*pid = n->pid;
		return 0;
	}
	return target_resolve(&n->tgt, ctx->pid, ctx->uid, pid);
}

/* The registry's target of a profile node, resolved for the caller. */
static int reg_target_of(fuse_req_t req, const struct node_info *n,
			 struct reg_target *t)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	memset(t, 0, sizeof(*t));
	t->kernel = access_kernel(ctx->pid, ctx->uid,
				  name_kind_sleeping(n->req.kind));
	if (n->tgt.kind == TARGET_ALL) {
		t->uid = access_privileged(ctx->pid, ctx->uid) ? REG_ANY_UID
							       : ctx->uid;
		return 0;
	}
	return node_pid(req, n, &t->pid);
}

/* Classify a name inside a target directory; -ENOENT when not ours,
 * with why (whylen bytes, may be 0) for the user. In /prof/all only the
 * kinds a whole host can give (their rows' host). */
static int classify(const char *name, struct node_info *n, char *why,
		    size_t whylen)
{
	int ret;

	if (!strcmp(name, "errors.txt")) {
		n->type = NODE_ERRORS;
		return 0;
	}
	if (n->tgt.kind == TARGET_ALL) {
		ret = name_parse_why(name, &n->req, why, whylen);
		if (ret != -ENOENT && !kinds_row(n->req.kind)->host) {
			snprintf(why, whylen, "not in all/: only whole-host "
				 "profiles are (cpu, trace), e.g. "
				 "cpu_5s.svg");
			return -ENOENT;
		}
		if (ret == -ENOENT || !dispatch_supported(n->req.kind,
							n->req.format))
			return -ENOENT;
		n->type = NODE_PROFILE;
		n->parse_ret = ret;
		return 0;
	}
	if (!strcmp(name, "cmdline")) {
		n->type = NODE_CMDLINE;
		return 0;
	}
	if (!strcmp(name, "index.html")) {
		n->type = NODE_INDEX;
		return 0;
	}
	ret = name_parse_why(name, &n->req, why, whylen);
	if (ret == -ENOENT)
		return ret;
	if (!dispatch_supported(n->req.kind, n->req.format)) {
		snprintf(why, whylen, "not a file proffs serves: %s profiles "
			 "do not come as .%s%s", name_kind_str(n->req.kind),
			 name_format_str(n->req.format),
			 n->req.kind == PROFFS_KIND_MEMSTATS ?
			 ": memstats.txt" : "");
		return -ENOENT;
	}
	n->type = NODE_PROFILE;
	n->parse_ret = ret;
	return 0;
}

/* Whether the caller may see what a target directory holds: as the
 * root's listing shows it (SPEC §5), -EACCES or -ENOENT if not. */
static int may_see(fuse_req_t req, const struct node_info *n, pid_t *pid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int ret = node_pid(req, n, pid);

	return ret ? ret : access_check(ctx->pid, ctx->uid, *pid);
}

/*
 * errors.txt: in a target directory what concerns its process, for
 * whoever may profile it; in the root and /prof/all, the caller's own.
 */
static int render_errors(fuse_req_t req, struct proffs *fs,
			 const struct node_info *n, char **buf, size_t *len)
{
	pid_t pid = 0;
	int ret;

	if (n->type == NODE_ERRORS && n->tgt.kind != TARGET_ALL &&
	    (n->pid || n->tgt.kind != TARGET_PID) &&
	    (ret = may_see(req, n, &pid)))
		return ret;
	return errlog_text(fs->errors, pid, fuse_req_ctx(req)->uid, buf,
			   len);
}

/* Small generated files: index.html of a pid, /status of the daemon,
 * errors.txt. */
static int render_page(fuse_req_t req, struct proffs *fs,
		       const struct node_info *n, char **buf, size_t *len)
{
	struct status_src src;
	pid_t pid;
	int ret;

	if (n->type == NODE_INDEX) {
		ret = may_see(req, n, &pid);
		return ret ? ret : index_html(pid, buf, len);
	}
	if (n->type == NODE_ERRORS)
		return render_errors(req, fs, n, buf, len);
	proffs_status_src(fs, &src);
	return status_text(&src, buf, len);
}

static int attr_of(fuse_req_t req, struct proffs *fs,
		   const struct node_info *n, struct stat *st)
{
	struct reg_target t;
	uid_t owner = 0;
	size_t size = 0;

	if (n->type != NODE_ROOT && n->type != NODE_STATUS &&
	    n->type != NODE_GROUP_DIR && n->tgt.kind != TARGET_ALL &&
	    !(n->type == NODE_ERRORS && !n->pid &&
	      n->tgt.kind == TARGET_PID) &&
	    (node_pid(req, n, &t.pid) || !ops_pid_known(fs, t.pid, &owner)))
		return -ENOENT;
	if (n->type == NODE_PROFILE && !n->parse_ret &&
	    !reg_target_of(req, n, &t))
		registry_result_size(fs->registry, &t, &n->req, &size);
	if (is_page(n->type)) {
		char *buf;
		int ret = render_page(req, fs, n, &buf, &size);

		/* Not the caller's to see: a size of 0, the open says no. */
		if (ret && ret != -EACCES)
			return ret;
		if (!ret)
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
	struct reg_target t;
	const char *why;
	size_t size;

	if (n->type != NODE_PROFILE || listed(n->name) ||
	    proffs_check_limits(fs, &n->req, n->parse_ret, &why) ||
	    reg_target_of(req, n, &t))
		return false;
	if (!registry_result_size(fs->registry, &t, &n->req, &size))
		return false;
	return !t.pid || !access_check(ctx->pid, ctx->uid, t.pid) ||
	       (n->req.last &&
		!past_access(fs->rec, ctx->pid, ctx->uid, t.pid));
}

/* Reply now, or park the stat until the SVG is ready. */
static void reply_stat(fuse_req_t req, struct proffs *fs,
		       const struct node_info *n, const struct stat *st,
		       bool entry)
{
	struct fuse_entry_param e;
	struct reg_target t;

	/* Never park a lookup: the kernel holds the directory's lock across
	 * it, so an `ls -l` would wait too. With attribute timeouts of 0
	 * every stat(2) sends a GETATTR after the lookup, and that waits. */
	if (!entry && stat_must_wait(fs, req, n) &&
	    !reg_target_of(req, n, &t)) {
		fuse_wait_stat(req, fs->registry, &t, &n->req, st);
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
		ret = attr_of(req, fs, n, &st);
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

/* A name in the root: status, a group (unit, name), all, or a pid. */
static int lookup_root(fuse_req_t req, const char *name,
		       struct node_info *n)
{
	struct proffs *fs = fs_of(req);
	enum target_kind k;
	uid_t owner;

	if (!strcmp(name, "status") || !strcmp(name, "errors.txt")) {
		n->type = name[0] == 's' ? NODE_STATUS : NODE_ERRORS;
		strcpy(n->name, name);
		return 0;
	}
	if (!target_kind_of(name, strlen(name), &k)) {
		n->tgt.kind = k;
		n->type = k == TARGET_ALL ? NODE_PID_DIR : NODE_GROUP_DIR;
		return 0;
	}
	/* An exited process stays while the recorder keeps it (past.h). */
	if (!proc_parse_pid(name, &n->pid) ||
	    !ops_pid_known(fs, n->pid, &owner)) {
		pr_info("fs: lookup %s: ENOENT: %s", name,
			proc_parse_pid(name, &n->pid) ?
			"no such process" : "not a process id");
		if (name[0] != '.')
			note(req, 0, name, -ENOENT, proc_parse_pid(name,
			     &n->pid) ? "no such process: it exited, or "
			     "never was (ls /prof lists those you may "
			     "profile)" : "not a process id: /prof holds "
			     "<pid>/, name/<command>/, unit/<unit>/, all/, "
			     "status and errors.txt");
		return -ENOENT;
	}
	n->tgt = (struct target){ .kind = TARGET_PID, .pid = n->pid };
	n->type = NODE_PID_DIR;
	return 0;
}

/* /prof/unit/<unit>, /prof/name/<comm>: there while it names a process. */
static int lookup_group(fuse_req_t req, const struct node_info *dir,
			const char *name, struct node_info *n)
{
	pid_t pid;
	int ret;

	n->type = NODE_PID_DIR;
	ret = target_set(&n->tgt, dir->tgt.kind, name, strlen(name));
	if (!ret)
		ret = node_pid(req, n, &pid);
	if (ret) {
		pr_info("fs: lookup %s/%s: ENOENT: %s", target_word(dir->tgt.kind),
			name, ret == -EINVAL ? "not a name" :
			"names no process the caller may profile now");
		if (name[0] != '.') {
			char path[300];

			snprintf(path, sizeof(path), "%s/%s",
				 target_word(dir->tgt.kind), name);
			note(req, 0, path, -ENOENT, ret == -EINVAL ?
			     "not a unit or command name" : "names no "
			     "process you may profile now (ls /prof/name)");
		}
		return -ENOENT;
	}
	return 0;
}

static int lookup_file(fuse_req_t req, struct proffs *fs,
		       const struct node_info *dir, const char *name,
		       struct node_info *n)
{
	char path[400], why[300] = "";
	pid_t pid = 0;

	n->pid = dir->pid;
	n->tgt = dir->tgt;
	if (strlen(name) > fs->opts.max_name) {
		pr_info("fs: lookup %d/%.40s...: ENAMETOOLONG: longer than "
			"max_name (%u)", (int)dir->pid, name,
			fs->opts.max_name);
		snprintf(why, sizeof(why), "the name is longer than max_name "
			 "(%u bytes)", fs->opts.max_name);
		if (dir->tgt.kind != TARGET_ALL)
			node_pid(req, dir, &pid);
		note(req, pid, name, -ENAMETOOLONG, why);
		return -ENAMETOOLONG;
	}
	if (strlen(name) >= sizeof(n->name) ||
	    classify(name, n, why, sizeof(why))) {
		snprintf(n->name, sizeof(n->name), "%s", name);
		node_path(n, path, sizeof(path));
		if (!why[0])
			snprintf(why, sizeof(why), "not a file proffs serves");
		pr_info("fs: lookup %s: ENOENT: %s", path, why);
		/* Dot files are what shells and file managers look for. */
		if (name[0] != '.') {
			if (dir->tgt.kind != TARGET_ALL)
				node_pid(req, dir, &pid);
			note(req, pid, name, -ENOENT, why);
		}
		return -ENOENT;
	}
	strcpy(n->name, name);
	return 0;
}

static void proffs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct proffs *fs = fs_of(req);
	struct node_info dir, n;
	int ret;

	memset(&n, 0, sizeof(n));
	if (nodes_get(fs->nodes, parent, &dir)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (dir.type == NODE_ROOT)
		ret = lookup_root(req, name, &n);
	else if (dir.type == NODE_GROUP_DIR)
		ret = lookup_group(req, &dir, name, &n);
	else if (dir.type == NODE_PID_DIR)
		ret = lookup_file(req, fs, &dir, name, &n);
	else
		ret = -ENOTDIR;
	if (ret) {
		fuse_reply_err(req, -ret);
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
		ret = attr_of(req, fs, &n, &st);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	/* fstat of an open profile: the size of the handle's own result,
	 * whatever its name (Python's open() and cat ask at once). */
	if (fi && fi->fh && n.type == NODE_PROFILE) {
		fuse_wait_fstat(req, (struct reg_handle *)(uintptr_t)fi->fh,
				&st);
		return;
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
	if (!ret)
		ret = dirbuf_add(req, b, "errors.txt", S_IFREG);
	for (int k = TARGET_UNIT; !ret && k <= TARGET_ALL; k++)
		ret = dirbuf_add(req, b, target_word(k), S_IFDIR);
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

/* /prof/name: the command names of the processes the caller may
 * profile, each once; /prof/unit lists nothing (units are looked up). */
static int list_group(fuse_req_t req, const struct node_info *dir,
		      struct dirbuf *b)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char (*names)[16] = NULL;
	pid_t *pids = NULL;
	size_t n = 0, nn = 0;
	int ret;

	if (dir->tgt.kind != TARGET_NAME)
		return 0;
	ret = proc_pids(&pids, &n);
	if (!ret && n && !(names = calloc(n, sizeof(*names))))
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++)
		if (!access_check(ctx->pid, ctx->uid, pids[i]) &&
		    !proc_comm(pids[i], pids[i], names[nn], sizeof(names[nn])) &&
		    !strchr(names[nn], '/') && names[nn][0] != '.')
			nn++;
	if (!ret)
		qsort(names, nn, sizeof(*names),
		      (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; !ret && i < nn; i++)
		if (!i || strcmp(names[i], names[i - 1]))
			ret = dirbuf_add(req, b, names[i], S_IFDIR);
	free(pids);
	free(names);
	return ret;
}

static int list_pid(fuse_req_t req, const struct node_info *dir,
		    struct dirbuf *b)
{
	struct node_info n;
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(listed_names) / sizeof(listed_names[0]); i++) {
		memset(&n, 0, sizeof(n));
		n.tgt.kind = dir->tgt.kind;
		if (classify(listed_names[i], &n, NULL, 0))
			continue;	/* kind or format not served yet */
		ret = dirbuf_add(req, b, listed_names[i], S_IFREG);
	}
	return ret;
}

/* Counted open while the kernel holds it: a process's directory with
 * something open under it is not deleted when the process ends (gone.h). */
static void reply_open(fuse_req_t req, struct proffs *fs, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	nodes_opened(fs->nodes, ino, 1);
	/* An open interrupted meanwhile is never released. */
	if (fuse_reply_open(req, fi))
		nodes_opened(fs->nodes, ino, -1);
}

static void proffs_opendir(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct dirbuf *b;
	struct node_info n;
	int ret;

	ret = nodes_get(fs->nodes, ino, &n);
	/* A process's directory lists only for who may profile it, as
	 * the root lists it only to them. */
	if (!ret && n.type == NODE_PID_DIR && n.tgt.kind != TARGET_ALL) {
		pid_t pid;

		ret = may_see(req, &n, &pid);
	}
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
		ret = n.type == NODE_ROOT ? list_root(req, b) :
		      n.type == NODE_GROUP_DIR ? list_group(req, &n, b) :
		      list_pid(req, &n, b);
	if (ret) {
		free(b->p);
		free(b);
		fuse_reply_err(req, -ret);
		return;
	}
	b->refs = 1;
	fi->fh = (uintptr_t)b;
	reply_open(req, fs, ino, fi);
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
	nodes_opened(fs_of(req)->nodes, ino, -1);
	dirbuf_put((struct dirbuf *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* A page is rendered at open and read from the handle (a dirbuf). */
static int open_page(fuse_req_t req, struct proffs *fs,
		     const struct node_info *n, struct fuse_file_info *fi)
{
	struct dirbuf *pg = calloc(1, sizeof(*pg));
	int ret;

	if (!pg)
		return -ENOMEM;
	ret = render_page(req, fs, n, &pg->p, &pg->size);
	if (ret) {
		free(pg);
		return ret;
	}
	pg->refs = 1;
	fi->fh = (uintptr_t)pg;
	return 0;
}

/* Check an open of a profile file and resolve its target; a log line
 * for every refusal. */
static int check_open(fuse_req_t req, struct proffs *fs,
		      const struct node_info *n, struct reg_target *t)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	const char *why = NULL;
	char path[400], sentence[300] = "";
	int ret;

	if ((ret = reg_target_of(req, n, t)) ||
	    (t->pid && (ret = access_check(ctx->pid, ctx->uid, t->pid)) &&
	     (ret != -ENOENT || !n->req.last ||
	      (ret = past_access(fs->rec, ctx->pid, ctx->uid, t->pid)))))
		why = ret == -ENOENT ? "no such process"
				     : "caller may not ptrace the target";
	else
		ret = proffs_check_request(fs, &n->req, n->parse_ret, &why);
	node_path(n, path, sizeof(path));
	if (ret) {
		pr_notice("fs: open %s by uid %u: %s: %s", path,
			  (unsigned)ctx->uid, strerrorname_np(-ret), why);
		proffs_explain(fs, n->name, &n->req, ret, why, sentence,
			       sizeof(sentence));
		note(req, t->pid, n->name, ret, sentence);
	} else if (n->tgt.kind == TARGET_UNIT || n->tgt.kind == TARGET_NAME)
		pr_info("fs: open %s by uid %u: pid %d", path,
			(unsigned)ctx->uid, (int)t->pid);
	return ret;
}

static void proffs_open(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct reg_handle *h;
	struct reg_target t;
	struct node_info n;
	char why[96], path[400];
	int ret;

	ret = nodes_get(fs->nodes, ino, &n);
	if (!ret)
		node_path(&n, path, sizeof(path));
	if (!ret && (fi->flags & O_ACCMODE) != O_RDONLY) {
		/* Writes reach the daemon (refuse.c): refuse them here too. */
		pr_notice("fs: open %s for writing by uid %u: EROFS: "
			  "profiles are read-only", path,
			  (unsigned)fuse_req_ctx(req)->uid);
		ret = -EROFS;
		note(req, n.pid, n.name, ret, NULL);
	}
	if (!ret && (n.type == NODE_ROOT || n.type == NODE_PID_DIR ||
		     n.type == NODE_GROUP_DIR))
		ret = -EISDIR;
	if (!ret && is_page(n.type))
		ret = open_page(req, fs, &n, fi);
	if (!ret && n.type == NODE_CMDLINE) {
		pid_t pid;

		ret = may_see(req, &n, &pid);
	}
	if (!ret && n.type == NODE_PROFILE)
		ret = check_open(req, fs, &n, &t);
	if (!ret && n.type == NODE_PROFILE) {
		ret = registry_open(fs->registry, &t, &n.req, &h, why,
				    sizeof(why));
		if (ret) {
			pr_notice("fs: open %s: %s: cannot start a session: "
				  "%s", path, strerrorname_np(-ret), why);
			note(req, t.pid, n.name, ret, ret == -EBUSY ?
			     "too many sessions at once (max_sessions): "
			     "try again when one ends" : NULL);
		} else {
			fi->fh = (uintptr_t)h;
		}
	}
	if (ret) {
		status_refused(&fs->refused, ret);
		fuse_reply_err(req, -ret);
		return;
	}
	/* Sizes are unknown until the window ends: read until EOF. */
	fi->direct_io = 1;
	reply_open(req, fs, ino, fi);
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
		fuse_wait_read(req, (struct reg_handle *)(uintptr_t)fi->fh,
			       size, off);
	} else if (is_page(n.type)) {
		struct dirbuf *pg = dirbuf_get((struct dirbuf *)(uintptr_t)
					       fi->fh);

		reply_slice(req, pg->p, pg->size, size, off);
		dirbuf_put(pg);
	} else {
		pid_t pid;
		int ret = node_pid(req, &n, &pid);

		if (ret)
			fuse_reply_err(req, -ret == ENOENT ? ESRCH : -ret);
		else
			read_cmdline(req, pid, size, off);
	}
}

static void proffs_release(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct proffs *fs = fs_of(req);
	struct node_info n;

	if (fi->fh && !nodes_get(fs->nodes, ino, &n) &&
	    is_page(n.type)) {
		dirbuf_put((struct dirbuf *)(uintptr_t)fi->fh);
	} else if (fi->fh) {
		registry_release((struct reg_handle *)(uintptr_t)fi->fh);
	}
	nodes_opened(fs->nodes, ino, -1);
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
