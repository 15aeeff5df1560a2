# SPDX-License-Identifier: GPL-2.0-or-later
"""The agent-loading stress suite (issue 16), a subset: loads into fresh
processes at random moments must never abort, crash, corrupt, hang or
leave a target stopped; at most 1% may be refused cleanly (EAGAIN).
contrib/stress.sh runs the full 1,000 loads."""
import os
import subprocess
import sys
import time

import util

sys.path.insert(0, os.path.join(util.REPO, 'tests', 'stress'))
import stress  # noqa: E402


def run_loads(proffs, loads, patterns, seed):
    patterns = stress.available(util.BUILD, patterns)
    assert patterns, 'stress targets not built'
    # A refused load logs a warning by design; it is counted below.
    proffs.expect_log(r'never all at a safe point')
    table, bad = stress.run(util.BUILD, proffs.mnt, loads, 2, seed,
                            patterns, proffs.log_lines_of_pid)
    ok, total = stress.report(table, bad, loads)
    assert sum(total[c] for c in stress.BAD) == 0, bad
    assert total['refused'] <= max(1, loads // 100), bad
    assert ok
    return total


def test_calloc_reproduction(proffs):
    """Issue 16's reproduction: calloc with M_TOP_PAD 0 grows the heap top
    at every call; a thread stopped inside sysmalloc was taken as safe
    and the injected dlopen aborted the target (20 of 20 loads failed on
    the old daemon, EFAULT and a swallowed SIGABRT or a SIGSEGV)."""
    run_loads(proffs, 20, ['calloc'], seed=16)


def test_grow_reproduction(proffs):
    """One thread growing its heap through malloc, calloc and realloc."""
    run_loads(proffs, 20, ['grow'], seed=17)


def test_subset_every_pattern(proffs):
    """100 loads over every pattern: threads, realloc, fork, a signal
    handler that allocates, dlopen, thread churn, C++ on libstdc++,
    tcmalloc and jemalloc."""
    total = run_loads(proffs, 100, stress.C_PATTERNS + stress.CXX_PATTERNS,
                      seed=1001)
    assert total['ok'] >= 99


def test_calloc_allocs_profile_is_right(proffs, tmp_path):
    """The profile a load under stress gives is the program's: the calloc
    site holds nearly all allocated bytes (go tool pprof reads it)."""
    t = subprocess.Popen(stress.command(util.BUILD, 'calloc')[:2] + ['5'],
                         stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        data = proffs.read(t.pid, 'allocs_1s?rate=1.pb.gz')
        assert t.wait(timeout=30) == 0
    finally:
        t.kill()
    path = util.save(data, 'stress-calloc-allocs.pb.gz')
    p = util.validate_pprof(path)
    i = p.index('alloc_space/bytes')
    total = p.total('alloc_space/bytes')
    site = sum(s.values[i] for s in p.samples if 'pat_calloc' in s.frames)
    assert total > 1 << 20, total
    assert site > 0.95 * total, (site, total)
