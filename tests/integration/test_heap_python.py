# SPDX-License-Identifier: GPL-2.0-or-later
"""Python's own objects in heap and allocs (issue 25, item 5).

Most objects of a CPython program come from pymalloc's arenas, never from
malloc: the malloc hooks saw its heap as nearly empty. The agent now wraps
the interpreter's PYMEM_DOMAIN_MEM and OBJ allocator (installed by the
interpreter itself, in a pending call, with the GIL held) and samples the
blocks it hands out by the same Poisson rule.

The target is Debian's /usr/bin/python3.11 (non-PIE, libpython linked in,
no symbols but its exported API). Stacks carry native frames only, so the
two twins are told apart natively: the same function, building strings
with '%' (same lengths; their stacks hold PyUnicode_Format), runs in the main thread for
K strings and in a second thread for 3 K, the two in turn; each keeps its
last strings alive. Both allocs.pb.gz and heap.pb.gz must show the
formatting site with 3x the bytes in the thread as in the main thread,
within sampling error. Before the change the site had (almost) no sample.

The program checks its own strings as it goes (a wrong one ends it with
exit 3), and must keep progressing after the reads and once the daemon is
killed (the wrapper stays installed, a pass-through).
"""
import math
import os
import random
import threading
import time

import pytest

import util
from conftest import distro

PY = '/usr/bin/python3.11'
RATE = 32768        # bytes between samples, for a tight ratio
K = 1000            # strings per turn in the main thread (3 K in the other)
KEEP = 100          # turns each side keeps alive

SCRIPT = r'''
import collections, sys, threading, time
K, KEEP = %d, %d

def build(k, tag):
    return ['%%06d:%%s' %% (i, tag) for i in range(k)]

def check(lst, k, tag):
    if len(lst) != k or lst[0] != '000000:' + tag or \
       lst[-1] != '%%06d:%%s' %% (k - 1, tag):
        print('BAD', flush=True)
        sys.exit(3)

def run(k, tag, kept):
    lst = build(k, tag)
    if len(kept) == KEEP:
        check(kept[0], k, tag)
    kept.append(lst)

go, done = threading.Semaphore(0), threading.Semaphore(0)
def other():
    kept = collections.deque(maxlen=KEEP)
    while True:
        go.acquire()
        run(3 * K, 'tri', kept)
        done.release()
threading.Thread(target=other, daemon=True).start()
kept = collections.deque(maxlen=KEEP)
print('ready', flush=True)
n = 0
while True:
    run(K, 'one', kept)
    go.release()
    done.acquire()
    n += 1
    if n %% 10 == 0:
        print(n, time.process_time(), flush=True)   # as distro.Loop reads it
''' % (K, KEEP)

def site_bytes(p, sample_type):
    """Bytes of sample_type at the formatting site, in the main thread
    and in the other one (its stack starts in start_thread)."""
    i = p.index(sample_type)
    main = other = 0
    for s in p.samples:
        f = s.frames
        if 'PyUnicode_Format' not in f:
            continue
        if 'start_thread' in f:
            other += s.values[i]
        else:
            main += s.values[i]
    return main, other


def check_ratio(p, what, size):
    """3x the bytes in the other thread, within four standard deviations
    of the estimate of each side (Poisson sampling of size-byte blocks at
    RATE; test_heap.poisson_sd)."""
    main, other = site_bytes(p, what)
    total = p.total(what)
    assert main > 0 and other > 0, \
        f'{what}: no pymalloc sample at the formatting site ' \
        f'(main {main}, other {other}, of {total} bytes)'
    prob = -math.expm1(-size / RATE)

    def sd(b):
        n = b / size
        return math.sqrt((1 - prob) / (n * prob))
    ratio = other / main
    err = 4 * math.hypot(sd(main), sd(other))
    assert abs(ratio / 3 - 1) <= err, \
        f'{what}: ratio {ratio:.2f}, want 3 within {err:.0%} ' \
        f'(main {main}, other {other})'
    # The two twins are most of what the program holds or allocates.
    assert (main + other) >= 0.5 * total, (what, main, other, total)
    return ratio, err


def test_python_objects_in_heap_and_allocs(tmp_path):
    if not os.access(PY, os.X_OK):
        pytest.fail(f'{PY} is not installed (contrib/deps.sh)')
    services = []
    # the stress suite's driver: progress per CPU second, kept at
    # Loop.KEEP of the speed before the read, and no BAD line
    loop = distro.Loop(random.Random(25), services, [PY], 'twins.py',
                      SCRIPT)
    d = util.Daemon(str(tmp_path))
    try:
        time.sleep(0.3)
        loop.load()
        data = d.read(loop.pid, f'allocs?rate={RATE}&seconds=2.pb.gz')
        allocs = util.validate_pprof(util.save(data, 'py-allocs.pb.gz'))
        # The live set turns over in a fraction of a second: it must have
        # been sampled at RATE, not at the default one the agent goes back
        # to between sessions. So a second session holds RATE while the
        # in-use snapshot is read.
        held = {}

        def hold():
            held['data'] = d.read(loop.pid,
                                  f'allocs?rate={RATE}&seconds=2.pb.gz')
        holder = threading.Thread(target=hold)
        holder.start()
        time.sleep(1.2)
        data = d.read(loop.pid, 'heap.pb.gz')
        heap = util.validate_pprof(util.save(data, 'py-heap.pb.gz'))
        holder.join()
        util.save(held['data'], 'py-allocs-held.pb.gz')
        for p in (allocs, heap):
            assert not [c for c in p.comments if 'ERROR' in c], p.comments
            assert [c for c in p.comments if 'pymalloc) is sampled' in c], \
                p.comments
        # '%06d:one' % i: a 59-byte str, both sides alike.
        r1 = check_ratio(allocs, 'alloc_space/bytes', 59)
        r2 = check_ratio(heap, 'inuse_space/bytes', 59)
        print(f'ratio allocs {r1[0]:.2f} (within {r1[1]:.0%}), '
              f'heap {r2[0]:.2f} (within {r2[1]:.0%})')
        loop.check('after the read')
        status = d.read('', 'status').decode()
        assert 'agent_harmed: 0' in status, status
        # The daemon is killed: its lease runs out (3 s), the agent
        # disarms, the wrapper is a pass-through from then on.
        d.proc.kill()
        d.proc.wait()
        d.cleanup()
        time.sleep(3.5)
        loop.check('once the daemon was killed')
    except BaseException:
        print(d.log_text())
        d.cleanup()
        raise
    finally:
        for svc in services:
            svc.cleanup()
