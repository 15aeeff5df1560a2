# SPDX-License-Identifier: GPL-2.0-or-later
"""The DSO cache's byte bound (-o dso_mem=, issue 27).

A daemon mounted with a tiny dso_mem reads the CPU profiles of three
programs that share few objects (a C program, one that sorts with libc's
qsort, Debian's python3 with its libraries), one after the other. While a
read runs, its objects are in use and stay, over the bound (said once in
the log, once an hour at most); once it is over and the grace time (DSO_CACHE_GRACE_MS, 2 s) has
passed, /prof/status shows the cache back within its bound, objects let
go, and every profile named its functions as it would without a bound.
"""
import os
import re
import threading
import time

import pytest

import util
from util import save, share, traces

PYTHON = '/usr/bin/python3'
SCRIPT = os.path.join(util.TARGET_SRC, 'pyburn.py')
BOUND = 256 << 10
GRACE_S = 2.3           # DSO_CACHE_GRACE_MS, and a little


def dso_status(proffs):
    text = proffs.read('', 'status').decode()
    return {k: int(v) for k, v in re.findall(
        r'^(dso_cache_\w+|memory_bound_bytes): (\d+)$', text, re.M)}


def named(samples, func):
    """The share of samples whose stack holds a frame named func (a
    Python frame is "func (file.py:line)")."""
    pat = re.compile(rf'^{re.escape(func)}( \(|$)')
    total = sum(v for v, _, _ in samples)
    hit = sum(v for v, _, f in samples if any(pat.match(x) for x in f))
    return hit / total if total else 0.0


@pytest.mark.parametrize('proffs_options', [('dso_mem=256K',)],
                         indirect=True)
def test_dso_mem_bounds_the_cache(proffs, target):
    if not os.path.exists(PYTHON):
        pytest.fail(f'{PYTHON} is missing (Debian package python3)')
    progs = [('burn', target('burn'), 'hot'),
             ('qsorter', target('qsorter'), 'cmp_ints'),
             ('python3', target('python3', SCRIPT, os.devnull,
                                path=PYTHON), 'heavy')]
    st = dso_status(proffs)
    assert st['dso_cache_max_bytes'] == BOUND, st
    assert st['dso_cache_max_objects'] == 256, st
    assert st['dso_cache_idle_seconds'] == 60, st
    assert st['memory_bound_bytes'] == BOUND, st    # no recorder
    expired = st['dso_cache_expired']
    reads = 0
    for name, t, func in progs:
        out = {}
        reader = threading.Thread(target=lambda: out.update(
            data=proffs.read(t.pid, 'cpu_2s.pb.gz')))
        reader.start()
        time.sleep(1.2)
        during = dso_status(proffs)
        reader.join()
        reads += 1
        path = save(out['data'], f'dso-mem-{name}.pb.gz')
        samples = traces(path)
        # named as without a bound: the hot function (75% to 90% of a
        # few dozen samples on a busy machine), under main
        assert named(samples, func) > 0.3, (name, samples[:5])
        assert named(samples, 'main') > 0.9, (name, samples[:5])
        if name == 'qsorter':   # libc's frames: its dso loaded anew
            assert share(samples, 'qsort_r') > 0.3, samples[:5]
        # in use while the read ran: over the bound, and kept
        assert during['dso_cache_in_use_bytes'] > BOUND, (name, during)
        assert during['dso_cache_bytes'] >= \
            during['dso_cache_in_use_bytes'], during
        time.sleep(GRACE_S)
        after = dso_status(proffs)
        assert after['dso_cache_in_use_bytes'] == 0, (name, after)
        assert after['dso_cache_bytes'] <= BOUND, (name, after)
        assert after['dso_cache_expired'] > expired, (name, after)
        expired = after['dso_cache_expired']
    # said once, though the objects in use went over with each read
    said = proffs.log_lines(r'over the cache.s bound')
    assert len(said) == 1 and reads == 3, said
