# SPDX-License-Identifier: GPL-2.0-or-later
"""The uprobe fallback of heap and allocs profiles (SPEC §3, issue 5):
where the agent cannot be loaded (a static binary) or with -o
heap=uprobe, every allocator call of a window is counted through uprobes
and uretprobes; a breaker ends the window early when the probes would
slow the target by more than a few percent; without root, EPERM."""
import errno
import os
import re
import subprocess
import time

import pytest

import util
from util import NOBODY, as_user
from test_heap import (Reader, assert_exact, check_header, settled_speed,
                       pin_together, site_values, workload)

UPROBE_EVENTS = '/sys/kernel/tracing/uprobe_events'


def read_uprobe_window(proffs, t, name):
    """Start a windowed read, run the target's workload once the probes
    are in place, and return (truth, profile path)."""
    r = Reader(proffs.path(t.pid, name))
    assert proffs.wait_log(r'heap: pid %d: uprobes placed' % t.pid,
                           timeout=20), proffs.log_text()
    truth = workload(t)
    path = util.save(r.result(), f'uprobe-{name.replace("?", "_")}'
                                 f'-{t.pid}.pb.gz')
    return truth, path


def our_uprobe_events():
    """The tracefs uprobe events proffs daemons defined, still there."""
    try:
        with open(UPROBE_EVENTS) as f:
            return [l for l in f if ':proffs_' in l]
    except FileNotFoundError:
        return []


def check_uprobe_profile(proffs, t, p, truth, why):
    """Exact counts, nothing lost, the comment naming the fallback, the
    session log line saying uprobe, and no probe left."""
    assert_exact(p, truth, tolerance=0)
    assert site_values(p, 'site_large')[2:] == [0, 0]
    assert site_values(p, 'release_large') == [0, 0, 0, 0]
    assert p.period == 1
    assert any('uprobe fallback (%s)' % why in c for c in p.comments), \
        p.comments
    assert not [c for c in p.comments if 'lost' in c or 'breaker' in c], \
        p.comments
    # strdup allocates inside libc: the stack goes through it, and no
    # frame is the uretprobe trampoline or unknown.
    assert any(s.frames[0] in ('strdup', '__strdup') and
               s.frames[1] == 'site_strdup'
               for s in p.samples if 'site_strdup' in s.frames)
    assert not [s for s in p.samples if not s.frames or
                any('unknown' in f for f in s.frames)], \
        [s.frames for s in p.samples]
    done = proffs.log_lines(r'session \d+ done: pid=%d kind=heap .* uprobe'
                            % t.pid)
    assert done and ' breaker' not in done[0], done
    assert proffs.log_lines(r'heap: pid %d: uprobes removed in \d+ ms; '
                            r'\d+ records, 0 lost' % t.pid)
    assert not our_uprobe_events()
    with open(f'/proc/{t.pid}/maps') as f:
        assert 'proffs-heap' not in f.read(), 'the agent was loaded'


def test_static_binary_falls_back_to_uprobes(proffs, target):
    """The default daemon (heap=auto) cannot load the agent into a static
    binary: the window is measured with uprobes, every site exact."""
    t = target('allocs_static')
    truth, path = read_uprobe_window(proffs, t, 'heap_3s.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'heap')
    check_uprobe_profile(proffs, t, p, truth, 'the agent cannot be loaded')
    assert proffs.log_lines(r'heap: pid %d: the agent cannot be loaded: '
                            r'uprobes for 3000 ms instead' % t.pid)


def test_exit_during_the_window(proffs, target):
    """The target exits during the window: the reader gets the partial
    profile, saying so, with what was counted before."""
    t = target('allocs_static')
    r = Reader(proffs.path(t.pid, 'heap_20s.pb.gz'))
    assert proffs.wait_log(r'heap: pid %d: uprobes placed' % t.pid,
                           timeout=20)
    truth = workload(t)
    t.kill()
    path = util.save(r.result(timeout=10), 'uprobe-exit.pb.gz')
    p = util.validate_pprof(path)
    assert any(re.match(r'process %d exited after [\d.]+ s of the 20.00 s '
                        r'window; this profile is partial' % t.pid, c)
               for c in p.comments), p.comments
    for site, want in truth.items():
        assert site_values(p, site)[:2] == want[:2], site


@pytest.mark.parametrize('proffs_options', [('heap=uprobe',)],
                         indirect=True)
def test_interrupted_read_removes_the_probes(proffs, target):
    """A reader that goes away mid-window stops the session: the probes
    leave the process at once, and their tracefs events are removed."""
    t = target('allocs')
    cat = subprocess.Popen(['cat', proffs.path(t.pid, 'heap_30s.pb.gz')],
                           stdout=subprocess.DEVNULL)
    try:
        assert proffs.wait_log(r'heap: pid %d: uprobes placed' % t.pid,
                               timeout=20)
        assert our_uprobe_events()
    finally:
        cat.kill()
        cat.wait()
    assert proffs.wait_log(r'session \d+ stopped: pid=%d' % t.pid,
                           timeout=5)
    assert proffs.wait_log(r'heap: pid %d: uprobes removed' % t.pid,
                           timeout=5)
    assert not our_uprobe_events()


@pytest.mark.parametrize('proffs_options', [('heap=uprobe',)],
                         indirect=True)
def test_heap_uprobe_option_on_a_dynamic_target(proffs, target):
    """-o heap=uprobe: uprobes on libc's allocator, never the agent,
    every site exact, and every format rendered from the same window."""
    t = target('allocs')
    truth, path = read_uprobe_window(proffs, t, 'heap_3s.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'heap')
    check_uprobe_profile(proffs, t, p, truth, 'heap=uprobe')
    # The other renderings of the finished window, as test_heap does.
    folded = proffs.read(t.pid, 'heap_3s.folded').decode()
    assert sum(int(l.rsplit(' ', 1)[1]) for l in folded.splitlines()) == \
        p.total('inuse_space/bytes')
    txt = proffs.read(t.pid, 'heap_3s.txt').decode()
    assert 'site_calloc' in txt and 'flat%' in txt
    legacy = proffs.read(t.pid, 'heap_3s?debug=1.txt')
    assert legacy.startswith(b'heap profile: ') and \
        b' @ heap/2\n' in legacy.split(b'\n')[0] + b'\n', legacy[:100]
    lp = util.validate_pprof(util.save(legacy, 'uprobe-heap-legacy.txt'))
    assert site_values(lp, 'site_small') == site_values(p, 'site_small')
    svg = proffs.read(t.pid, 'heap_3s.svg')
    util.check_svg(svg, 'uprobe-heap.svg')
    assert b'site_realloc' in svg


@pytest.mark.parametrize('proffs_options', [('heap=uprobe',)],
                         indirect=True)
def test_allocs_on_a_thread_made_in_the_window(proffs, target):
    """allocs defaults to alloc_space; a thread created after the probes
    were placed is followed from its first allocation: the workload runs
    on one, and every site is exact."""
    t = target('allocs', 1, 'thread')
    truth, path = read_uprobe_window(proffs, t, 'allocs_3s.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'allocs')
    assert_exact(p, truth, tolerance=0)
    small = [s for s in p.samples if 'site_small' in s.frames]
    assert small and all('start_thread' in s.frames for s in small), \
        [s.frames for s in small]
    assert proffs.log_lines(r'heap: pid %d: uprobes placed on \d+ '
                            r'functions, \d+ perf events on 1 threads'
                            % t.pid)


@pytest.mark.parametrize('proffs_options', [('heap=uprobe',)],
                         indirect=True)
def test_breaker_ends_the_window_and_removes_the_probes(proffs, target,
                                                         capsys):
    """mallocs allocates and frees as fast as it can: the probes would
    slow it thousands of times, so the breaker ends a 20 s window within
    a second, with a partial profile that says so; afterwards the target
    runs at its unprofiled speed (every probe is gone)."""
    t = target('mallocs', 1)
    c = target('mallocs', 1)    # never profiled: the speed to compare
    pin_together(t, c)
    base = settled_speed(t, c)
    start = time.monotonic()
    data = proffs.read(t.pid, 'heap_20s.pb.gz')
    took = time.monotonic() - start
    path = util.save(data, 'uprobe-breaker.pb.gz')
    p = util.validate_pprof(path)
    assert took < 5, f'the breaker took {took:.1f} s'
    assert any('breaker' in c and 'partial' in c for c in p.comments), \
        p.comments
    assert any('batch' in s.frames for s in p.samples)
    trip = proffs.log_lines(r'heap: pid %d: uprobe breaker tripped after '
                            r'[\d.]+ s: (\d+) probe hits in ([\d.]+) s'
                            % t.pid)
    assert trip, proffs.log_text()
    assert proffs.log_lines(r'session \d+ done: pid=%d .* uprobe breaker'
                            % t.pid)
    assert not our_uprobe_events()
    # against a pair's own noise: this VM's speed drifts between seconds
    after = settled_speed(t, c)
    assert after > 0.8 * base, (after, base)
    # What a hit cost the target: its CPU time over the hits, the real
    # work (a few ns an operation) included.
    m = re.search(r'(\d+) probe hits in ([\d.]+) s', trip[0])
    hits, cpu = int(m.group(1)), float(m.group(2))
    with capsys.disabled():
        print(f'\nuprobe fallback: {hits} hits in {cpu:.3f} s of CPU: '
              f'{cpu / hits * 1e6:.1f} us a hit; read returned after '
              f'{took:.2f} s; speed against an unprofiled twin {base:.3f} '
              f'before, {after:.3f} after')
    assert 1e-6 < cpu / hits < 50e-6


def user_daemon(tmp_path, name, options):
    d = tmp_path / name
    d.mkdir()
    return util.UserDaemon(str(d), NOBODY, options)


def test_uprobes_without_root_are_eperm(tmp_path, target):
    """A daemon that is not root cannot place uprobes: with heap=uprobe
    a heap read is refused at open with EPERM, and with heap=auto the
    fallback for a static binary fails with EPERM; each with a log line
    that names the pid and says why."""
    d = user_daemon(tmp_path, 'uprobe', ('heap=uprobe',))
    try:
        t = target('allocs', user=NOBODY)
        r = as_user(NOBODY, 'cat', d.path(t.pid, 'heap_1s.pb.gz'))
        assert r.returncode != 0 and \
            os.strerror(errno.EPERM) in r.stderr, r.stderr
        assert d.log_lines(r'open %d/heap_1s.pb.gz by uid %d: EPERM: '
                           r'heap=uprobe needs root' % (t.pid, NOBODY)), \
            d.log_text()
        # cpu profiles still work for this daemon.
        r = as_user(NOBODY, 'cat', d.path(t.pid, 'cpu_1s.txt'))
        assert r.returncode == 0, r.stderr
    except BaseException:
        d.cleanup()
        print(d.log_text())
        raise
    d.unmount()
    d = user_daemon(tmp_path, 'auto', ())
    try:
        t = target('allocs_static', user=NOBODY)
        r = as_user(NOBODY, 'cat', d.path(t.pid, 'heap_1s.pb.gz'))
        assert r.returncode != 0 and \
            os.strerror(errno.EPERM) in r.stderr, r.stderr
        assert d.log_lines(r'heap: pid %d: the uprobe fallback needs root'
                           % t.pid), d.log_text()
        assert d.log_lines(r'session \d+ failed: pid=%d kind=heap .*'
                           r'result=EPERM' % t.pid)
    except BaseException:
        d.cleanup()
        print(d.log_text())
        raise
    d.unmount()
