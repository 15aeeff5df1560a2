# SPDX-License-Identifier: GPL-2.0-or-later
"""MemStats (issue 18): Go's runtime.MemStats block, at the end of
heap?debug=1 and alone as memstats.txt, for a native process. The
memstats target knows exactly what it called (mallocs, frees, bytes
asked for, what it keeps); Mallocs and Frees must match it exactly at
any sampling rate, through threads that end and a thread that only
frees; HeapAlloc and HeapObjects within the error Go's sampling
predicts; the figures from /proc agree with /proc."""
import json
import math
import os
import re
import signal
import subprocess
import time

import pytest

import util
from test_heap import Reader, poisson_sd, wait_agent



@pytest.fixture
def proffs_options(request):
    """Every read a fresh look: the registry's 10 s cache would serve the
    figures of the read before."""
    return getattr(request, 'param', ('cache_ms=0',))


BLOCK = re.compile(r'^# ([A-Za-z]+) = (\d+(?: / \d+)?)$')


def parse(text):
    """The figures of a MemStats block, {name: int or (int, int)}, and
    its notes."""
    figures, notes = {}, []
    for line in text.splitlines():
        m = BLOCK.match(line)
        if m:
            v = m.group(2)
            figures[m.group(1)] = (tuple(int(x) for x in v.split(' / '))
                                   if '/' in v else int(v))
        elif line.startswith('# proffs: '):
            notes.append(line[len('# proffs: '):])
    return figures, notes


def memstats(proffs, pid):
    text = proffs.read(pid, 'memstats.txt').decode()
    assert text.startswith('# runtime.MemStats\n'), text[:200]
    return parse(text)


def run_round(t):
    """One round of the memstats target: what it did, by construction."""
    os.kill(t.pid, signal.SIGUSR1)
    return json.loads(t.proc.stdout.readline())


def sampling_sd(classes, rate, kept_only):
    """Standard deviation (bytes, objects) of Go's estimate of the bytes
    and objects of classes [count, size, kept] sampled at rate: each
    block is sampled with probability p = 1 - exp(-size / rate) and
    counted 1 / p."""
    var_b = var_o = 0.0
    for count, size, kept in classes:
        n = kept if kept_only else count
        if not n:
            continue
        p = -math.expm1(-size / rate)
        var_o += n * (1 - p) / p
        var_b += n * size * size * (1 - p) / p
    return math.sqrt(var_b), math.sqrt(var_o)


def check_proc(fig, pid, live_bytes):
    """The /proc figures: as /proc says (MaxRSS is VmHWM exactly: the
    target is idle), and the heap holds at least what the target keeps."""
    with open(f'/proc/{pid}/status') as f:
        status = dict(l.split(':', 1) for l in f if ':' in l)
    kb = {k: int(v.split()[0]) * 1024 for k, v in status.items()
          if v.strip().endswith('kB')}
    assert fig['MaxRSS'] == kb['VmHWM'], (fig['MaxRSS'], kb['VmHWM'])
    assert fig['Sys'] == kb['VmData'] + kb['VmStk'], fig
    assert fig['HeapInuse'] >= live_bytes, (fig, live_bytes)
    assert fig['HeapSys'] == fig['HeapInuse'] + fig['HeapIdle'], fig
    assert fig['HeapReleased'] == fig['HeapIdle'], fig
    assert fig['Sys'] >= fig['HeapSys'], fig
    inuse, sys = fig['Stack']
    # the main stack and the parked thread's (8 MiB, glibc's default)
    assert 0 < inuse <= sys and sys >= 8 << 20, fig['Stack']


def check_estimates(fig, kept, rate, sds=4):
    """HeapAlloc and HeapObjects within sds standard deviations of what
    the rounds keep (Alloc is HeapAlloc, as in Go)."""
    sd_b, sd_o = sampling_sd(kept['classes'], rate, True)
    assert fig['Alloc'] == fig['HeapAlloc'], fig
    assert abs(fig['HeapAlloc'] - kept['live_bytes']) <= sds * sd_b + 1, \
        (fig['HeapAlloc'], kept['live_bytes'], sd_b)
    assert abs(fig['HeapObjects'] - kept['live_objects']) <= \
        sds * sd_o + 1, (fig['HeapObjects'], kept['live_objects'], sd_o)


def add(a, b):
    """Two rounds' truths together."""
    out = {k: a[k] + b[k] for k in a if k != 'classes'}
    out['classes'] = [[x[0] + y[0], x[1], x[2] + y[2]]
                      for x, y in zip(a['classes'], b['classes'])]
    return out


def test_default_rate(proffs, target):
    """At the default rate: the first read loads the agent and counts
    nothing yet; after each round Mallocs and Frees are exactly the
    target's calls since then - those of a thread that ended and of one
    that only frees included - and HeapAlloc, HeapObjects are within
    four standard deviations of what it keeps."""
    t = target('memstats', 4)
    fig, notes = memstats(proffs, t.pid)
    assert fig['Mallocs'] == 0 and fig['Frees'] == 0, fig
    assert any('since the agent was armed' in n for n in notes), notes
    assert proffs.log_lines(r'heap: pid \d+: agent loaded')
    one = run_round(t)
    fig, _ = memstats(proffs, t.pid)
    assert (fig['Mallocs'], fig['Frees']) == (one['mallocs'],
                                              one['frees']), (fig, one)
    check_estimates(fig, one, 524288)
    check_proc(fig, t.pid, one['live_bytes'])
    two = run_round(t)
    both = add(one, two)
    fig, _ = memstats(proffs, t.pid)
    assert (fig['Mallocs'], fig['Frees']) == (both['mallocs'],
                                              both['frees']), (fig, both)
    check_estimates(fig, both, 524288)
    sd_b, _ = sampling_sd(both['classes'], 524288, False)
    assert abs(fig['TotalAlloc'] - both['alloc_bytes']) <= 4 * sd_b, \
        (fig['TotalAlloc'], both['alloc_bytes'], sd_b)


def test_rate1_exact(proffs, target):
    """While a session samples every allocation (rate=1), Mallocs and
    Frees stay exact, and the estimates are exact too: HeapAlloc,
    HeapObjects and TotalAlloc are what the target did."""
    t = target('memstats', 1)
    fig, _ = memstats(proffs, t.pid)
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=4.pb.gz'))
    time.sleep(1)   # the session is in, and its rate
    one = run_round(t)
    fig, notes = memstats(proffs, t.pid)
    assert (fig['Mallocs'], fig['Frees']) == (one['mallocs'],
                                              one['frees']), (fig, one)
    assert fig['HeapAlloc'] == one['live_bytes'], (fig, one)
    assert fig['HeapObjects'] == one['live_objects'], (fig, one)
    assert fig['TotalAlloc'] == one['alloc_bytes'], (fig, one)
    assert any('one per 1 bytes' in n for n in notes), notes
    p = util.validate_pprof(util.save(r.result(), 'memstats-rate1.pb.gz'))
    assert p.total('inuse_space/bytes') == one['live_bytes']


def test_heap_debug1_ends_with_memstats(proffs, target):
    """heap?debug=1 ends with the block, as Go's does, after the memory
    map; go tool pprof still reads the text; its figures are those of
    memstats.txt read just after."""
    t = target('memstats', 1)
    session = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=4.pb.gz'))
    wait_agent(t.pid)
    time.sleep(1)
    one = run_round(t)
    # everything since loading, at rate 1 while the session runs
    legacy = proffs.read(t.pid, 'heap?rate=1&debug=1.txt').decode()
    session.result()
    head, sep, block = legacy.partition('\n\n# runtime.MemStats\n')
    assert sep and head.startswith('heap profile: ') and \
        'MAPPED_LIBRARIES:\n' in head, legacy[-2000:]
    assert all(l.startswith('# ') for l in block.splitlines()), block
    fig, notes = parse(block)
    assert list(fig) == ['Alloc', 'TotalAlloc', 'Sys', 'Mallocs', 'Frees',
                         'HeapAlloc', 'HeapSys', 'HeapIdle', 'HeapInuse',
                         'HeapReleased', 'HeapObjects', 'Stack',
                         'MaxRSS'], fig
    assert (fig['Mallocs'], fig['Frees']) == (one['mallocs'],
                                              one['frees']), (fig, one)
    assert len(notes) == 3, notes
    lp = util.validate_pprof(util.save(legacy.encode(),
                                       'memstats-legacy.txt'))
    assert lp.total('inuse_space/bytes') == fig['HeapAlloc']
    again, _ = memstats(proffs, t.pid)
    assert again['Mallocs'] == fig['Mallocs'], (again, fig)


@pytest.mark.parametrize('proffs_options', [('cache_ms=0', 'heap_idle=1')],
                         indirect=True)
def test_counts_start_again_when_armed_again(proffs, target):
    """Once the daemon stops beating for an idle agent, the agent disarms
    itself at its first sample 3 s later: the rest of what the target
    calls is not seen. The next read arms it again, and the counts start
    from there, exact."""
    t = target('memstats', 1)
    memstats(proffs, t.pid)
    assert proffs.wait_log('letting the agent disarm', timeout=10)
    run_round(t)    # the agent sees the last beat
    time.sleep(4)   # its lease
    run_round(t)    # it disarms at its first sample
    fig, _ = memstats(proffs, t.pid)
    assert proffs.log_lines(r'heap: pid \d+: agent armed in')
    assert fig['Mallocs'] == 0 and fig['Frees'] == 0, fig
    three = run_round(t)
    fig, _ = memstats(proffs, t.pid)
    assert (fig['Mallocs'], fig['Frees']) == (three['mallocs'],
                                              three['frees']), (fig, three)


def test_preloaded_counts_from_the_start(proffs):
    """A preloaded agent counts from the process's start: the block says
    so, and a round adds exactly its calls."""
    agent = os.path.join(util.BUILD, 'sampler', 'heap', 'agent',
                         'libproffs-heap.so')
    proc = subprocess.Popen([os.path.join(util.TARGETS, 'memstats')],
                            stdout=subprocess.PIPE,
                            env=dict(os.environ, LD_PRELOAD=agent))
    try:
        assert proc.stdout.readline().strip() == b'ready'
        before, notes = memstats(proffs, proc.pid)
        assert any('since the process started' in n for n in notes), notes
        os.kill(proc.pid, signal.SIGUSR1)
        one = json.loads(proc.stdout.readline())
        after, _ = memstats(proffs, proc.pid)
        assert after['Mallocs'] - before['Mallocs'] == one['mallocs']
        assert after['Frees'] - before['Frees'] == one['frees']
    finally:
        proc.kill()
        proc.wait()


def test_without_agent_proc_only(proffs, target):
    """Where the agent cannot go (a static binary: no dlopen), the block
    has /proc's figures and says why the agent's are missing."""
    t = target('allocs_static')
    fig, notes = memstats(proffs, t.pid)
    assert list(fig) == ['Sys', 'HeapSys', 'HeapIdle', 'HeapInuse',
                         'HeapReleased', 'Stack', 'MaxRSS'], fig
    assert any(n.startswith('no heap agent (it cannot be loaded') and
               'Mallocs, Frees' in n for n in notes), notes
    with open(f'/proc/{t.pid}/status') as f:
        hwm = [int(l.split()[1]) * 1024 for l in f if l.startswith('VmHWM')]
    assert fig['MaxRSS'] == hwm[0]
