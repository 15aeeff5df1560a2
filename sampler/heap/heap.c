// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap.c - the daemon's heap agents: one per process that has been asked
 * for a heap or allocs profile, each with a consumer thread that drains
 * its ring into its heap model and keeps its lease.
 *
 * Locks: heap_agents.lock guards the list and each agent's state and
 * refs; agent.lock guards the rest of an agent (ring, model, users). The
 * first is never taken while holding the second.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/heap/heap.h"
#include "sampler/heap/heap_budget.h"
#include "sampler/heap/heap_comments.h"
#include "sampler/heap/heap_counts.h"
#include "sampler/heap/heap_load.h"
#include "sampler/heap/heap_fallback.h"
#include "sampler/heap/heap_memstats.h"
#include "sampler/heap/heap_watch.h"
#include "sampler/heap/heap_model.h"
#include "sampler/heap/heap_ring.h"
#include "sampler/heap/heap_throttle.h"
#include "sampler/heap/uprobe/heap_uprobe.h"
#include "sampler/heap/inject.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/unwind/unwind.h"
#include "sampler/window.h"

#define POLL_MS 10		/* ring drains, when the last found none */
#define BUSY_POLL_MS 1		/* when it found some: keep up */
#define BEAT_NS 100000000ull	/* heartbeats, while wanted */
#define WAIT_MS 50		/* window checks */
#define MAX_USERS 64
#define AGENT_SEEN "/memfd:" PH_AGENT_NAME " (deleted)"

enum agent_state { AG_ATTACHING, AG_LIVE, AG_DEAD };

struct agent {
	struct heap_agents *a;
	pid_t pid;
	unsigned long long start_time;	/* tells a reused pid apart */
	/* protected by heap_agents.lock: */
	enum agent_state state;
	int refs;
	struct agent *next;
	/* protected by lock: */
	pthread_mutex_t lock;
	struct proc_maps *maps;
	struct heap_ring *ring;
	struct ph_shared *sh;
	struct heap_model *model;
	uint64_t rates[MAX_USERS];	/* one per session using it; 0: the
					 * default (heap_throttle.h) */
	unsigned users;
	uint64_t asked;			/* the finest rate the sessions ask */
	uint64_t rate;			/* what the agent samples at now */
	bool by_default;		/* no session named a rate */
	struct heap_throttle thr;	/* asked * thr.factor, by_default */
	bool budgets_stale;		/* rate dropped: settle_budgets_locked */
	uint64_t last_used_ns, last_beat_ns;
	uint64_t lost_at_start;		/* sh->lost when our count began */
	bool preloaded;			/* armed since the process started */
	uint64_t armed_ns;		/* when our count began */
	struct heap_counts counts_base;	/* the agent's counts then */
	int counts_base_err;
	bool wanted;			/* heartbeat still going */
	uint64_t alloc_errors;
	struct heap_watch *watch;	/* after a load: harmed? */
	char harm[240];			/* how, once it was */
	uint32_t disarms;		/* the agent's own, logged */
	char refused[200];		/* the last load's -EAGAIN: why */
	pthread_t consumer;
	_Atomic bool quit;
};

struct heap_agents {
	struct heap_agents_opts o;
	char *agent_path;
	void *agent;		/* the agent file's bytes, or NULL */
	size_t agent_len;
	pthread_mutex_t lock;
	pthread_cond_t changed;	/* an attach finished, or a consumer ended */
	struct agent *list;
	unsigned consumers;
	pthread_mutex_t counts_lock;	/* a leaf: taken under ag->lock */
	struct heap_agent_counts counts;	/* protected by counts_lock */
};

/* When the process started; 0 when unknown. */
static unsigned long long start_time(pid_t pid)
{
	unsigned long long t = 0;

	proc_stat_fields(pid, NULL, &t);
	return t;
}

/* ---- life cycle ---- */

static int read_agent(struct heap_agents *a)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(a->agent_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size <= 0) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	a->agent = malloc(st.st_size);
	n = a->agent ? read(fd, a->agent, st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(a->agent);
		a->agent = NULL;
		return -EIO;
	}
	a->agent_len = st.st_size;
	return 0;
}

int heap_agents_new(const struct heap_agents_opts *o,
		    struct heap_agents **out)
{
	struct heap_agents *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->o = *o;
	a->agent_path = strdup(o->agent_path ? o->agent_path : "");
	if (!a->agent_path) {
		free(a);
		return -ENOMEM;
	}
	if (o->method != HEAP_UPROBE && read_agent(a))
		pr_warn("heap: agent %s cannot be read: heap profiles need "
			"the uprobe fallback", a->agent_path);
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->counts_lock, NULL);
	pthread_cond_init(&a->changed, NULL);
	*out = a;
	return 0;
}

static void agent_free(struct agent *ag)
{
	heap_watch_free(ag->watch);
	heap_model_free(ag->model);
	heap_ring_close(ag->ring);
	maps_free(ag->maps);
	pthread_mutex_destroy(&ag->lock);
	free(ag);
}

/* Drop a reference; called with heap_agents.lock held. */
static void put_locked(struct agent *ag)
{
	if (--ag->refs == 0)
		agent_free(ag);
}

static void agent_put(struct agent *ag)
{
	struct heap_agents *a = ag->a;

	pthread_mutex_lock(&a->lock);
	put_locked(ag);
	pthread_mutex_unlock(&a->lock);
}

static void unlist_locked(struct heap_agents *a, struct agent *ag)
{
	for (struct agent **pp = &a->list; *pp; pp = &(*pp)->next)
		if (*pp == ag) {
			*pp = ag->next;
			ag->state = AG_DEAD;
			put_locked(ag);
			return;
		}
}

void heap_agents_free(struct heap_agents *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	for (struct agent *ag = a->list; ag; ag = ag->next)
		atomic_store(&ag->quit, true);
	while (a->consumers)
		pthread_cond_wait(&a->changed, &a->lock);
	while (a->list)
		unlist_locked(a, a->list);
	pthread_mutex_unlock(&a->lock);
	pthread_cond_destroy(&a->changed);
	pthread_mutex_destroy(&a->counts_lock);
	pthread_mutex_destroy(&a->lock);
	free(a->agent);
	free(a->agent_path);
	free(a);
}

/* ---- the ring, the rate and the lease ---- */

static void on_record(const struct ph_rec *rec, void *arg)
{
	struct agent *ag = arg;
	const struct ph_alloc *al = (const void *)rec;
	struct heap_alloc_sample s;

	if (rec->type == PH_REC_FREE) {
		heap_model_free_addr(ag->model,
				     ((const struct ph_free *)rec)->addr);
		return;
	}
	s = (struct heap_alloc_sample){
		.regs = (const struct unwind_regs *)al->regs,
		.stack = al->stack, .stack_len = al->stack_len,
		.addr = al->addr, .size = al->size, .rate = al->rate,
		.tracked = !(rec->flags & PH_ALLOC_UNTRACKED),
	};
	if (heap_model_alloc(ag->model, &s) && !ag->alloc_errors++)
		pr_warn("heap: pid %d: out of memory counting samples",
			(int)ag->pid);
}

/* Called with agent.lock held; the records read. The agent is told
 * how much stack the unwinding needs, so it copies no more. */
static size_t drain_locked(struct agent *ag)
{
	size_t n = 0;

	if (ag->ring && ag->model) {
		n = heap_ring_drain(ag->ring, on_record, ag);
		atomic_store_explicit(&ag->sh->stack_want,
				      (uint32_t)heap_model_stack_want(ag->model),
				      memory_order_relaxed);
	}
	return n;
}

static void beat_locked(struct agent *ag, uint64_t now)
{
	atomic_fetch_add(&ag->sh->heartbeat, 1);
	ag->last_beat_ns = now;
}

/* The smallest rate any session asks, or the default when none runs;
 * the default made coarser while the process samples too often
 * (heap_throttle.h), unless a session named a rate: it gets what it
 * named, or finer, never coarser. */
static void set_rate_locked(struct agent *ag)
{
	uint32_t f = ag->thr.factor ? ag->thr.factor : 1;	/* unset */
	bool named;
	uint64_t asked = heap_throttle_asked(ag->rates, ag->users, &named),
		 rate;

	ag->by_default = !named;
	rate = named ? asked : asked * f;
	/* 0: taking the agent over; its threads' budgets may be anything.
	 * A throttle easing off needs no reset: a budget drawn at the
	 * coarser rate is spent at it, and weighted by it. */
	if (asked < ag->asked || !ag->rate || (named && rate < ag->rate))
		ag->budgets_stale = true;
	ag->asked = asked;
	if (rate == ag->rate)
		return;
	ag->rate = rate;
	atomic_store(&ag->sh->rate, rate);
	atomic_fetch_add(&ag->sh->rate_gen, 1);
}

/* Follow the agent's sample count; only the default rate is throttled:
 * a session that names a rate, the default's value too, gets it. */
static void throttle_locked(struct agent *ag, uint64_t now)
{
	uint64_t n = atomic_load(&ag->sh->samples);
	uint32_t was = ag->thr.factor;

	if (!ag->by_default) {
		heap_throttle_start(&ag->thr, now, n);
		return;
	}
	if (!heap_throttle_update(&ag->thr, now, n))
		return;
	set_rate_locked(ag);
	pr_debug("heap: pid %d: sampling %u times coarser than the default",
		 (int)ag->pid, ag->thr.factor);
	if (ag->thr.factor < was)
		return;
	pthread_mutex_lock(&ag->a->counts_lock);
	ag->a->counts.throttled++;
	pthread_mutex_unlock(&ag->a->counts_lock);
	if (ag->thr.raises == 1)	/* once a process: it may see-saw */
		pr_info("heap: pid %d: more than %llu samples a second: "
			"sampling %u times coarser than the default, one "
			"allocation per %llu bytes", (int)ag->pid,
			HEAP_THROTTLE_PER_S, ag->thr.factor,
			(unsigned long long)ag->rate);
}

/* After the rate dropped, and never while the target's threads are held
 * (a held thread may be halfway through spending its budget). */
static void settle_budgets_locked(struct agent *ag)
{
	struct heap_budget_stats st;
	uint64_t t0 = now_ns();
	int ret;

	if (!ag->budgets_stale)
		return;
	ag->budgets_stale = false;
	ret = heap_budgets_reset(ag->pid, ag->sh->threads,
				 atomic_load(&ag->sh->rate_gen), &st);
	if (ret && ret != -ESRCH)
		pr_notice("heap: pid %d: sampling budgets not reset: %s; "
			  "threads take up to one more sample at the old "
			  "rate", (int)ag->pid, strerror(-ret));
	else if (!ret && st.listed)
		pr_debug("heap: pid %d: rate %llu: %u threads listed, %u "
			 "budgets zeroed, %u gone, in %llu us", (int)ag->pid,
			 (unsigned long long)ag->rate, st.listed, st.zeroed,
			 st.gone,
			 (unsigned long long)(now_ns() - t0) / 1000);
}

/* Take the ring over: ours from now on, at this rate. Called with the
 * target's threads held (or with no agent armed yet). */
static int configure(void *arg)
{
	struct agent *ag = arg;
	int ret;

	if (!ag->ring) {
		ret = heap_ring_open(ag->pid, &ag->ring);
		if (ret)
			return ret;
		ag->sh = heap_ring_shared(ag->ring);
	}
	ag->rate = 0;
	heap_throttle_start(&ag->thr, now_ns(), atomic_load(&ag->sh->samples));
	ag->disarms = atomic_load(&ag->sh->disarms);
	/* A preloaded agent's losses since the start count: we report on
	 * everything since then. */
	ag->lost_at_start = atomic_load(&ag->sh->daemon_pid) ?
			    atomic_load(&ag->sh->lost) : 0;
	/* So do its calls; otherwise those from now on (the threads are
	 * held, or the agent was armed by another daemon). */
	ag->armed_ns = now_ns();
	memset(&ag->counts_base, 0, sizeof(ag->counts_base));
	ag->counts_base_err = ag->preloaded ? 0 :
		heap_counts_read(ag->pid, ag->sh, &ag->counts_base);
	set_rate_locked(ag);
	atomic_store(&ag->sh->daemon_pid, getpid());
	beat_locked(ag, now_ns());
	ag->wanted = true;
	return 0;
}

static uint32_t agent_why_not(void *arg)
{
	struct agent *ag = arg;
	uint32_t why = atomic_load(&ag->sh->why);

	if (atomic_load(&ag->sh->state) == PH_ARMED)
		return 0;
	return why ? why : UINT32_MAX;
}

static void discard(const struct ph_rec *rec, void *arg)
{
	(void)rec;
	(void)arg;
}

/* ---- attaching ---- */

static void count_load(struct heap_agents *a, bool arm_only, int ret)
{
	pthread_mutex_lock(&a->counts_lock);
	if (!ret && arm_only)
		a->counts.armed++;
	else if (!ret)
		a->counts.loaded++;
	else
		a->counts.failed[-ret < HEAP_ERRNO_MAX ? -ret : 0]++;
	pthread_mutex_unlock(&a->counts_lock);
}

/* The agent records written so far (the watch's sign of work). */
static uint64_t records(const struct agent *ag)
{
	return atomic_load(&ag->sh->samples) + atomic_load(&ag->sh->frees);
}

/* After a load: was the process harmed (heap_watch.h)? An error, loudly:
 * logged, counted, and in the comments of the profiles made since.
 * Called with agent.lock held. */
static void watch_locked(struct agent *ag)
{
	if (!ag->watch || !heap_watch_check(&ag->watch, records(ag), ag->harm,
					    sizeof(ag->harm)))
		return;
	pthread_mutex_lock(&ag->a->counts_lock);
	ag->a->counts.harmed++;
	pthread_mutex_unlock(&ag->a->counts_lock);
}

void heap_agents_counts(struct heap_agents *a, struct heap_agent_counts *c)
{
	pthread_mutex_lock(&a->counts_lock);
	*c = a->counts;
	pthread_mutex_unlock(&a->counts_lock);
}

static int load_or_arm(struct agent *ag, bool arm_only, bool *armed_now)
{
	struct heap_agents *a = ag->a;
	struct heap_load_opts lo = {
		.pid = ag->pid, .maps = ag->maps, .turns = a->o.turns,
		.agent = a->agent,
		.agent_len = a->agent_len, .arm_only = arm_only,
		.setup = configure, .why_not = agent_why_not, .arg = ag,
	};
	struct inject_stats st = { .why = "" };
	uint64_t t0 = now_ns();
	int ret;

	if (!arm_only && !a->agent)
		return -ENOTSUP;
	ag->preloaded = false;	/* counts start now, not at the start */
	ret = heap_load(&lo, &st);
	count_load(a, arm_only, ret);
	if (ret == -EAGAIN)
		snprintf(ag->refused, sizeof(ag->refused), "%s",
			 st.why[0] ? st.why : "its threads were never all "
			 "at a safe point");
	if (ret) {
		pr_notice("heap: pid %d: agent not %s: %s", (int)ag->pid,
			  arm_only ? "armed" : "loaded", strerror(-ret));
		return ret;
	}
	*armed_now = true;
	heap_watch_free(ag->watch);
	ag->watch = NULL;
	ret = heap_watch_start(ag->pid, records(ag), &ag->watch);
	if (ret && ret != -ESRCH)
		pr_notice("heap: pid %d: not watched after the load: %s",
			  (int)ag->pid, strerror(-ret));
	pr_info("heap: pid %d: agent %s in %llu ms: %u threads held %llu us, "
		"%u rounds; %u GOT entries, %u of 2 hooks leave by a direct "
		"jump", (int)ag->pid, arm_only ? "armed" : "loaded",
		(unsigned long long)((now_ns() - t0) / 1000000), st.threads,
		(unsigned long long)(st.hold_ns / 1000), st.rounds,
		atomic_load(&ag->sh->slots), atomic_load(&ag->sh->direct));
	return 0;
}

/*
 * The agent there already: preloaded (no daemon yet: everything since
 * the start is in the ring, keep it), disarmed (arm it: a new epoch), or
 * armed for another daemon that went away (take it over).
 */
static int adopt(struct agent *ag, bool *armed_now)
{
	struct ph_shared *sh = ag->sh;

	if (atomic_load(&sh->state) == PH_DISARMED) {
		heap_ring_drain(ag->ring, discard, NULL);
		return load_or_arm(ag, true, armed_now);
	}
	*armed_now = atomic_load(&sh->daemon_pid) != 0;
	ag->preloaded = !*armed_now;
	pr_info("heap: pid %d: agent found armed (%s)", (int)ag->pid,
		*armed_now ? "taken over" : "preloaded");
	return configure(ag);
}

static int load_maps(struct agent *ag)
{
	int ret;

	maps_free(ag->maps);
	ag->maps = NULL;
	ret = maps_load(ag->pid, ag->a->o.cache, &ag->maps);
	if (!ret)
		ret = maps_set_alias(ag->maps, AGENT_SEEN, ag->a->agent_path);
	return ret == -ENOENT ? -ESRCH : ret;
}

static int attach(struct agent *ag, bool *armed_now)
{
	struct heap_agents *a = ag->a;
	int ret;

	ret = load_maps(ag);
	if (ret)
		return ret;
	ret = heap_ring_open(ag->pid, &ag->ring);
	if (!ret) {
		ag->sh = heap_ring_shared(ag->ring);
		ret = adopt(ag, armed_now);
	} else if (ret == -ENOENT) {
		ret = load_or_arm(ag, false, armed_now);
		/* The maps the samples unwind with must hold the agent. */
		if (!ret)
			ret = load_maps(ag);
	}
	if (!ret)
		ret = heap_model_new(ag->pid, ag->maps, a->o.max_stacks,
				     &ag->model);
	if (!ret)
		settle_budgets_locked(ag);
	return ret;
}

static void *consumer_main(void *arg);

static struct agent *find_locked(struct heap_agents *a, pid_t pid,
				 unsigned long long st)
{
	for (struct agent *ag = a->list; ag; ag = ag->next)
		if (ag->pid == pid && ag->start_time == st)
			return ag;
	return NULL;
}

/* Attach a new agent; with a->lock held, dropped meanwhile. */
static int attach_locked(struct heap_agents *a, struct agent *ag,
			 bool *armed_now)
{
	int ret;

	pthread_mutex_unlock(&a->lock);
	pthread_mutex_lock(&ag->lock);
	ret = attach(ag, armed_now);
	pthread_mutex_unlock(&ag->lock);
	pthread_mutex_lock(&a->lock);
	if (!ret) {
		ret = -pthread_create(&ag->consumer, NULL, consumer_main, ag);
		if (!ret) {
			ag->refs++;
			a->consumers++;
			pthread_detach(ag->consumer);
		}
	}
	if (ret)
		unlist_locked(a, ag);
	else
		ag->state = AG_LIVE;
	pthread_cond_broadcast(&a->changed);
	return ret;
}

static int enter(struct agent *ag, uint64_t rate, bool *armed_now);

/*
 * The live agent of pid, attaching one if needed, with the session
 * counted in (so the agent samples at its rate from the first moment); a
 * reference.
 */
static int get_agent(struct heap_agents *a, pid_t pid, uint64_t rate,
		     struct agent **out, bool *armed_now, char *why,
		     size_t why_len)
{
	unsigned long long st = start_time(pid);
	struct agent *ag;
	int ret = 0;

	if (!st)
		return -ESRCH;
	pthread_mutex_lock(&a->lock);
	while ((ag = find_locked(a, pid, st)) && ag->state == AG_ATTACHING)
		pthread_cond_wait(&a->changed, &a->lock);
	if (!ag) {
		ag = calloc(1, sizeof(*ag));
		if (!ag) {
			pthread_mutex_unlock(&a->lock);
			return -ENOMEM;
		}
		*ag = (struct agent){ .a = a, .pid = pid, .start_time = st,
				      .refs = 2,	/* list's and ours */
				      .users = 1, .rates[0] = rate };
		pthread_mutex_init(&ag->lock, NULL);
		ag->next = a->list;
		a->list = ag;
		ret = attach_locked(a, ag, armed_now);
		if (ret)
			snprintf(why, why_len, "%s", ag->refused);
		if (ret)
			put_locked(ag);
		pthread_mutex_unlock(&a->lock);
	} else {
		ag->refs++;
		pthread_mutex_unlock(&a->lock);
		ret = enter(ag, rate, armed_now);
		if (ret)
			agent_put(ag);
	}
	if (!ret)
		*out = ag;
	return ret;
}

/* ---- the consumer ---- */

/* Keep beating while a session runs and idle_s after; then stop, and the
 * agent disarms when its lease runs out. True when there is nothing more
 * to do for this process. */
static bool tend_locked(struct agent *ag, uint64_t now)
{
	uint64_t idle = (uint64_t)ag->a->o.idle_s * 1000000000ull;

	watch_locked(ag);
	if (atomic_load(&ag->sh->disarms) != ag->disarms) {
		ag->disarms = atomic_load(&ag->sh->disarms);
		pr_notice("heap: pid %d: the agent disarmed itself: %s",
			  (int)ag->pid, heap_load_why(atomic_load(&ag->sh->why)));
	}
	if (!proc_alive(ag->pid) || !heap_ring_attached(ag->ring) ||
	    heap_ring_broken(ag->ring))
		return true;
	throttle_locked(ag, now);
	if (ag->users || now - ag->last_used_ns < idle) {
		if (now - ag->last_beat_ns >= BEAT_NS)
			beat_locked(ag, now);
		return false;
	}
	if (ag->wanted) {
		ag->wanted = false;
		pr_info("heap: pid %d: idle for %u s: letting the agent "
			"disarm", (int)ag->pid, ag->a->o.idle_s);
	}
	return atomic_load(&ag->sh->state) == PH_DISARMED ||
	       now - ag->last_beat_ns > 2 * PH_LEASE_MS * 1000000ull;
}

static void *consumer_main(void *arg)
{
	struct agent *ag = arg;
	struct heap_agents *a = ag->a;
	struct timespec nap = { 0, POLL_MS * 1000000l };
	struct timespec busy = { 0, BUSY_POLL_MS * 1000000l };
	bool done;
	size_t n;

	for (;;) {
		pthread_mutex_lock(&ag->lock);
		n = drain_locked(ag);
		done = tend_locked(ag, now_ns());
		pthread_mutex_unlock(&ag->lock);
		if (atomic_load(&ag->quit)) {
			pthread_mutex_lock(&a->lock);
			break;
		}
		if (!done) {
			nanosleep(n ? &busy : &nap, NULL);
			continue;
		}
		/* A session may have found the agent meanwhile, and be about
		 * to enter it: its reference says so (the list's and ours
		 * are the other two). It keeps the agent, and arms it again
		 * if it disarmed (enter()). */
		pthread_mutex_lock(&a->lock);
		if (ag->state == AG_DEAD || ag->refs <= 2)
			break;
		pthread_mutex_unlock(&a->lock);
		nanosleep(&nap, NULL);
	}
	if (ag->state != AG_DEAD)
		unlist_locked(a, ag);
	a->consumers--;
	pthread_cond_broadcast(&a->changed);
	put_locked(ag);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- sessions ---- */

/*
 * The agent disarmed itself (its lease ran out while the daemon kept it,
 * idle), and a session comes in before the consumer let it go: arm it
 * again, a new count from now on, as a new attach would. Called with
 * agent.lock held.
 */
static int rearm_locked(struct agent *ag, bool *armed_now)
{
	int ret;

	heap_ring_drain(ag->ring, discard, NULL);
	heap_model_reset(ag->model);
	ret = load_or_arm(ag, true, armed_now);
	if (!ret)
		settle_budgets_locked(ag);
	return ret;
}

static int enter(struct agent *ag, uint64_t rate, bool *armed_now)
{
	int ret = 0;

	pthread_mutex_lock(&ag->lock);
	if (ag->users == MAX_USERS) {
		pthread_mutex_unlock(&ag->lock);
		pr_notice("heap: the agent of %d serves %d sessions already",
			  (int)ag->pid, MAX_USERS);
		return -EBUSY;
	}
	ag->rates[ag->users++] = rate;
	set_rate_locked(ag);
	settle_budgets_locked(ag);
	beat_locked(ag, now_ns());
	ag->wanted = true;
	if (atomic_load(&ag->sh->state) == PH_DISARMED)
		ret = rearm_locked(ag, armed_now);
	if (ret) {
		ag->users--;
		set_rate_locked(ag);
	}
	pthread_mutex_unlock(&ag->lock);
	return ret;
}

static void leave(struct agent *ag, uint64_t rate)
{
	pthread_mutex_lock(&ag->lock);
	for (unsigned i = 0; i < ag->users; i++)
		if (ag->rates[i] == rate) {
			ag->rates[i] = ag->rates[--ag->users];
			break;
		}
	set_rate_locked(ag);
	ag->last_used_ns = now_ns();
	pthread_mutex_unlock(&ag->lock);
}

/* Wait out the window, from now; w->exited when the process exited
 * first. */
static int wait_window(struct agent *ag, const struct heap_opts *o,
		       struct window *w)
{
	struct timespec nap = { 0, WAIT_MS * 1000000l };
	bool on;
	int ret;

	window_begin(w, now_ns(), ag->pid, o->window_ms, o->stop, 0);
	while (!(ret = window_on(w, now_ns(), &on)) && on)
		nanosleep(&nap, NULL);
	return ret;
}

/* ---- MemStats ---- */

/* The agent's part of MemStats; called with agent.lock held, drained. */
static void agent_memstats_locked(struct agent *ag, struct heap_memstats *ms)
{
	struct heap_counts c;
	struct heap_totals t;

	heap_model_totals(ag->model, &t);
	ms->alloc_bytes = t.alloc_bytes;
	ms->inuse_bytes = t.inuse_bytes;
	ms->inuse_objects = t.inuse_objects;
	ms->rate = ag->rate;
	ms->armed_s = ag->preloaded ? -1 : (now_ns() - ag->armed_ns) / 1e9;
	ms->counts_err = ag->counts_base_err;
	if (!ms->counts_err)
		ms->counts_err = heap_counts_read(ag->pid, ag->sh, &c);
	if (ms->counts_err)
		return;
	/* Counts only grow; but for threads that ended unseen (lossy). */
	ms->mallocs = c.mallocs > ag->counts_base.mallocs ?
		      c.mallocs - ag->counts_base.mallocs : 0;
	ms->frees = c.frees > ag->counts_base.frees ?
		    c.frees - ag->counts_base.frees : 0;
	ms->lossy = c.lossy;
}

/* /proc's part, and the figures onto p; no_agent says why there is no
 * agent's part (ms holds it otherwise). */
static int add_memstats(struct profile *p, pid_t pid,
			struct heap_memstats *ms)
{
	ms->mem_err = heap_mem_read(pid, &ms->mem);
	return heap_memstats_add(p, ms);
}

/* Measure: snapshots at the start (for a window) and at the end. */
static int measure(struct agent *ag, const struct heap_opts *o,
		   bool armed_now, struct profile **out, struct heap_stats *st)
{
	struct heap_profile_info info = { .allocs = o->allocs };
	struct heap_snap *from = NULL, *to = NULL;
	struct heap_memstats ms = { 0 };
	uint64_t t0 = now_ns(), lost0, samples0, frees0, raises0;
	struct window w = { 0 };
	int ret = 0;

	*out = NULL;
	pthread_mutex_lock(&ag->lock);
	drain_locked(ag);
	/* Armed by this request: its window began when the threads went
	 * on, and some may have allocated already. */
	if (o->has_window && !armed_now)
		ret = heap_model_snapshot(ag->model, &from);
	lost0 = o->has_window ? atomic_load(&ag->sh->lost) : ag->lost_at_start;
	samples0 = from ? heap_model_samples(ag->model) : 0;
	frees0 = from ? heap_model_frees(ag->model) : 0;
	raises0 = ag->thr.raises;
	pthread_mutex_unlock(&ag->lock);
	info.time_nanos = wall_ns();
	if (!ret && (o->has_window || armed_now))
		ret = wait_window(ag, o, &w);
	if (ret)
		goto out;
	pthread_mutex_lock(&ag->lock);
	drain_locked(ag);
	if (!o->has_window && !armed_now)
		info.time_nanos = wall_ns();
	info.duration_nanos = o->has_window || armed_now ? now_ns() - t0 : 0;
	info.period = ag->rate;
	ret = heap_model_snapshot(ag->model, &to);
	if (!ret)
		ret = heap_model_profile(ag->model, from, to, &info, out);
	st->samples = heap_model_samples(ag->model) - samples0;
	st->frees = heap_model_frees(ag->model) - frees0;
	st->lost = atomic_load(&ag->sh->lost) - lost0;
	watch_locked(ag);
	if (ag->harm[0]) {
		st->harmed = true;
		snprintf(st->harm, sizeof(st->harm), "%s", ag->harm);
	}
	if (!ret) {
		struct heap_comment_info ci = {
			.pid = o->pid, .rate = ag->rate, .lost = st->lost,
			.asked = ag->asked,
			.throttled = ag->by_default &&
				     (ag->thr.factor > 1 ||
				      ag->thr.raises != raises0),
			.samples = st->samples, .window = &w,
			.elapsed_ns = now_ns() - t0,
			.slots = atomic_load(&ag->sh->slots),
			.objects = atomic_load(&ag->sh->objects),
			.py = atomic_load(&ag->sh->py),
			.harm = ag->harm[0] ? ag->harm : NULL,
		};
		ret = heap_add_comments(*out, &ci);
	}
	if (!ret)
		agent_memstats_locked(ag, &ms);
	pthread_mutex_unlock(&ag->lock);
	if (!ret)
		ret = add_memstats(*out, o->pid, &ms);
	if (ret && *out) {
		profile_free(*out);
		*out = NULL;
	}
out:
	heap_snap_free(from);
	heap_snap_free(to);
	return ret;
}

/* ---- the uprobe fallback ---- */

int heap_agents_check(const struct heap_agents *a)
{
	return a->o.method == HEAP_UPROBE ? heap_uprobe_allowed() : 0;
}

/* An empty profile of pid to hang MemStats on. */
static int memstats_profile(pid_t pid, struct profile **out)
{
	struct profile *p;
	int ret;

	ret = profile_new(&p);
	if (ret)
		return ret;
	profile_header(p)->time_nanos = wall_ns();
	if (proc_name_profile(p, pid, "memstats")) {
		profile_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

int heap_memstats(struct heap_agents *a, const struct heap_opts *o,
		  struct profile **out, struct heap_stats *st)
{
	struct heap_memstats ms = { 0 };
	struct agent *ag = NULL;
	char why[200] = "", no_agent[240];
	int ret;

	memset(st, 0, sizeof(*st));
	if (o->pid <= 0)
		return -EINVAL;
	if (a->o.method == HEAP_UPROBE) {
		ms.no_agent = "heap=uprobe: uprobes count only over a window";
	} else {
		ret = get_agent(a, o->pid, 0, &ag,
				&st->armed_now, why, sizeof(why));
		if ((ret == -ENOTSUP || ret == -ENOEXEC) &&
		    a->o.method == HEAP_AUTO) {
			ms.no_agent = "it cannot be loaded into this process";
		} else if (ret == -EAGAIN && a->o.method == HEAP_AUTO) {
			snprintf(no_agent, sizeof(no_agent), "the agent was "
				 "refused: %s", why[0] ? why : "not safe now");
			ms.no_agent = no_agent;
		} else if (ret) {
			return ret;
		}
	}
	ret = memstats_profile(o->pid, out);
	if (ag) {
		pthread_mutex_lock(&ag->lock);
		drain_locked(ag);
		agent_memstats_locked(ag, &ms);
		st->samples = heap_model_samples(ag->model);
		pthread_mutex_unlock(&ag->lock);
		leave(ag, 0);
		agent_put(ag);
	}
	if (!ret)
		ret = add_memstats(*out, o->pid, &ms);
	if (ret && *out) {
		profile_free(*out);
		*out = NULL;
	}
	return ret;
}

int heap_profile(struct heap_agents *a, const struct heap_opts *o,
		 struct profile **out, struct heap_stats *st)
{
	uint64_t t0 = now_ns(),
		 rate = heap_throttle_session_rate(o->rate, o->rate_named);
	char why[200] = "";
	struct agent *ag;
	int ret;

	memset(st, 0, sizeof(*st));
	if (o->pid <= 0 || !o->window_ms)
		return -EINVAL;
	if (a->o.method == HEAP_UPROBE) {
		ret = heap_fallback_profile(a->o.cache, a->o.max_stacks, o,
					    "heap=uprobe", out, st);
		goto out;
	}
	ret = get_agent(a, o->pid, rate, &ag, &st->armed_now, why,
			sizeof(why));
	/* ENOEXEC: the loader in the process refused the agent (a chroot
	 * without /proc cannot open /proc/self/fd/N). */
	if ((ret == -ENOTSUP || ret == -ENOEXEC) &&
	    a->o.method == HEAP_AUTO) {
		pr_info("heap: pid %d: the agent cannot be loaded: uprobes "
			"for %llu ms instead", (int)o->pid,
			(unsigned long long)o->window_ms);
		ret = heap_fallback_profile(a->o.cache, a->o.max_stacks, o,
					    "the agent cannot be loaded", out,
					    st);
		goto out;
	}
	if (ret == -EAGAIN && a->o.method == HEAP_AUTO) {
		ret = heap_fallback_refused(a->o.cache, a->o.max_stacks, o,
					    why, out, st);
		goto out;
	}
	if (ret)
		return ret;
	ret = measure(ag, o, st->armed_now, out, st);
	leave(ag, rate);
	agent_put(ag);
out:
	st->elapsed_ns = now_ns() - t0;
	return ret;
}
