/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sweep.h - the caches' expiry on a thread of its own.
 *
 * What the daemon keeps between sessions (the DSO cache's objects, the
 * kernel's symbol table, Python's loaded eBPF readers) goes once idle
 * for cache_idle seconds, but the caches only look when asked: at a
 * look-up, a session's start, a status read. A daemon nobody reads from kept its last session's tables for
 * ever, and the sweep that did run ran on a reading thread. The sweeper
 * looks every half expiry (at least every 30 s, at most every 0.5 s), so
 * an idle daemon lets go at most half an expiry late.
 *
 * sweeper_start() borrows the caches (any may be NULL), which must
 * outlive the sweeper: sweeper_stop() (NULL is fine) joins the thread
 * before they are freed.
 * Errors are negative errno values.
 */
#ifndef PROFFS_SWEEP_H
#define PROFFS_SWEEP_H

struct dso_cache;
struct kallsyms;
struct pybpf_keep;
struct sweeper;

int sweeper_start(struct dso_cache *dsos, struct kallsyms *ksyms,
		  struct pybpf_keep *pykeep, unsigned idle_s,
		  struct sweeper **out);
void sweeper_stop(struct sweeper *s);

#endif
