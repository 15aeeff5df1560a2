# SPDX-License-Identifier: GPL-2.0-or-later
"""Off-CPU kinds through the mount (issue 18): wall, block and mutex of
tests/targets/waits, whose threads measure their own waits into a file
the test reads before and after the window: the truth of exactly the
window profiled. Both methods, offcpu=procfs (/proc) and offcpu=sched
(scheduler events, as root), are held to it; sched's waits also to the
target's log of each wait, over the profile's own window. Every profile
goes through go tool pprof (util.validate_pprof); no thread of the
target may be stopped or traced meanwhile (its /proc status, polled
through the window)."""

import errno
import os
import re
import shutil
import signal
import struct
import subprocess
import threading
import time

import pytest

import browser
import util
from test_kernel import is_kernel, proc_kstack, tid_named
from util import expect_errno, pprof, save, validate_pprof

# struct truth of tests/targets/waits.c: nine uint64_t
TRUTH_FIELDS = ('spin_ns', 'sleep_ns', 'hold_ns', 'rest_ns',
                'lock_wait_ns', 'lock_waits', 'cond_wait_ns', 'cond_waits',
                'waiter_rest_ns')
WAITS_THREADS = ('waits', 'sleeper', 'holder', 'waiter', 'condwaiter')
METHODS = [pytest.param(('offcpu=procfs',), id='procfs'),
           pytest.param(('offcpu=sched',), id='sched')]
SCHED = [pytest.param(('offcpu=sched',), id='sched')]
# The first comment of a profile, by the method that took it.
METHOD_COMMENTS = {
    'procfs': 'proffs: off-CPU time from /proc, no thread stopped',
    'sched': 'proffs: off-CPU time from scheduler events, no thread '
             'stopped',
}
LOG_WAITS = 4096    # struct truth's logs of each wait (waits.c)


def method_of(proffs):
    """The method a test's daemon was told to use."""
    return 'sched' if 'offcpu=sched' in proffs.cmd else 'procfs'


def assert_method(p, method):
    assert p.comments and p.comments[0].startswith(METHOD_COMMENTS[method]), \
        p.comments


def read_truth(path):
    with open(path, 'rb') as f:
        values = struct.unpack('9Q', f.read(72))
    return dict(zip(TRUTH_FIELDS, values)), time.monotonic_ns()


class StateWatch:
    """Poll every thread's /proc status through a window: the states seen
    and any tracer (util.threads)."""

    def __init__(self, pid):
        self.pid, self.states, self.tracers = pid, set(), set()
        self.polls = 0
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run)
        self._th.start()

    def _run(self):
        while not self._stop.is_set():
            for _, state, tracer in util.threads(self.pid):
                self.states.add(state)
                if tracer:
                    self.tracers.add(tracer)
            self.polls += 1
            time.sleep(0.005)

    def stop(self):
        self._stop.set()
        self._th.join()
        assert self.polls > 50, f'only {self.polls} looks at /proc'
        assert not self.tracers, f'the target was traced by {self.tracers}'
        assert self.states <= {'R', 'S'}, \
            f'a thread of the target was seen in states {self.states}'


def profile_waits(proffs, pid, names, truth_path):
    """Read names together (one session per kind, the same window),
    watching the target's threads meanwhile; returns ({name: bytes},
    truth over the window, its length in ns)."""
    watch = StateWatch(pid)
    before, t0 = read_truth(truth_path)
    out = util.read_together(proffs, pid, names)
    after, t1 = read_truth(truth_path)
    watch.stop()
    truth = {k: after[k] - before[k] for k in TRUTH_FIELDS}
    return out, truth, t1 - t0


def by_thread(p, name, sample_type):
    """Samples of thread name: (total of sample_type, samples)."""
    i = p.index(sample_type)
    mine = [s for s in p.samples if s.labels.get('thread_name') == name]
    return sum(s.values[i] for s in mine), mine


def cum_share(samples, total, func, i):
    return sum(s.values[i] for s in samples if func in s.frames) / total


def top_rows(text):
    """{name: cum%} of a go tool pprof -top table."""
    rows, started = {}, False
    for line in text.splitlines():
        if line.split() == ['flat', 'flat%', 'sum%', 'cum', 'cum%']:
            started = True
            continue
        if started and line.strip():
            f = line.split(None, 5)
            rows[f[5]] = float(f[4].rstrip('%')) / 100
    return rows


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_wall_shares_and_sum_match_the_truth(proffs, target, tmp_path):
    """Every thread for the whole window: the values add up to threads x
    window (2%); inside each thread, its stacks' shares are those the
    target measured (5 points): the sleeper spins 30% and sleeps 70%,
    the holder holds 40 ms of 45, the waiter waits for the mutex."""
    truth_path = str(tmp_path / 'truth')
    t = target('waits', truth_path)
    got, truth, span = profile_waits(proffs, t.pid, ['wall_5s.pb.gz'],
                                     truth_path)
    p = validate_pprof(save(got['wall_5s.pb.gz'],
                            f'wall-{method_of(proffs)}.pb.gz'))
    assert p.sample_types == ['samples/count', 'wall/nanoseconds']
    assert p.period_type == 'wall nanoseconds'
    assert p.period == 10**9 // 99
    assert_method(p, method_of(proffs))
    assert {s.labels.get('thread_name') for s in p.samples} == \
        set(WAITS_THREADS)
    assert {s.labels['state'] for s in p.samples} <= \
        {'running', 'runnable', 'sleeping', 'disk'}

    total = p.total('wall/nanoseconds')
    want = len(WAITS_THREADS) * p.duration_ns
    assert abs(total - want) <= 0.02 * want, \
        f'wall adds up to {total / 1e9:.3f} s, not 5 x {p.duration_ns / 1e9}'
    ns = 'wall/nanoseconds'
    i = p.index(ns)
    for name in WAITS_THREADS:
        tot, _ = by_thread(p, name, ns)
        assert abs(tot - p.duration_ns) <= 0.02 * p.duration_ns, \
            f'{name}: {tot / 1e9:.3f} s of a {p.duration_ns / 1e9} s window'

    tot, mine = by_thread(p, 'sleeper', ns)
    # 30% on a quiet machine; on a busy one a thread woken from its
    # sleep may wait for a CPU inside it, and its spin is shorter
    spin = truth['spin_ns'] / (truth['spin_ns'] + truth['sleep_ns'])
    assert spin >= 0.1, f'the target spun {spin:.3f}'
    got_spin = cum_share(mine, tot, 'sleeper_spin', i)
    got_sleep = cum_share(mine, tot, 'sleeper_sleep', i)
    assert abs(got_spin - spin) <= 0.05, (got_spin, spin)
    assert abs(got_sleep - (1 - spin)) <= 0.05, (got_sleep, 1 - spin)
    # the spin is on the CPU (or waiting for one), the sleep off it, in
    # clock_nanosleep
    for s in mine:
        if 'sleeper_sleep' in s.frames and s.labels['state'] != 'running':
            assert '[syscall] clock_nanosleep' in s.frames, s.frames
        if s.frames and s.frames[0] == 'sleeper_spin':
            assert s.labels['state'] in ('running', 'runnable'), s.labels

    tot, mine = by_thread(p, 'holder', ns)
    hold = truth['hold_ns'] / (truth['hold_ns'] + truth['rest_ns'])
    assert abs(cum_share(mine, tot, 'holder_hold', i) - hold) <= 0.05

    tot, mine = by_thread(p, 'waiter', ns)
    wait = truth['lock_wait_ns'] / (truth['lock_wait_ns'] +
                                    truth['waiter_rest_ns'])
    got_wait = cum_share(mine, tot, 'waiter_lock', i)
    assert wait > 0.5 and abs(got_wait - wait) <= 0.05, (got_wait, wait)
    for s in mine:
        if 'waiter_lock' in s.frames and s.labels['state'] != 'running':
            assert '[syscall] futex' in s.frames, s.frames
            assert s.frames.index('[syscall] futex') < \
                s.frames.index('waiter_lock')


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_block_and_mutex_shares_match_the_truth(proffs, target, tmp_path):
    """block: the waiter's mutex waits and the condition waiter's waits,
    in the shares the target measured (5 points, go tool pprof -top
    -sample_index=delay), with their delays and counts; sleeps are not
    blocking. mutex: the waiter's part alone."""
    truth_path = str(tmp_path / 'truth')
    t = target('waits', truth_path)
    got, truth, span = profile_waits(
        proffs, t.pid, ['block_5s.pb.gz', 'mutex_5s.pb.gz'], truth_path)
    lock, cond = truth['lock_wait_ns'], truth['cond_wait_ns']
    assert lock > 0.5 * span and cond > 0.8 * span, truth

    paths = {}
    for kind in ('block', 'mutex'):
        paths[kind] = save(got[f'{kind}_5s.pb.gz'],
                           f'{kind}-{method_of(proffs)}.pb.gz')
        p = validate_pprof(paths[kind])
        assert p.sample_types == ['contentions/count', 'delay/nanoseconds']
        assert_method(p, method_of(proffs))
        for s in p.samples:
            for f in ('sleeper_sleep', 'sleeper_spin', 'holder_rest',
                      'waiter_rest', 'main_idle'):
                assert f not in s.frames, (kind, f, s.frames)
        top = pprof('-top', '-sample_index=delay', paths[kind])
        assert 'Type: delay' in top, top[:300]
        rows = top_rows(top)
        if kind == 'block':
            want = lock / (lock + cond)
            assert abs(rows['waiter_lock'] - want) <= 0.05, (rows, want)
            assert abs(rows['cond_park'] - (1 - want)) <= 0.05, rows
            total = p.total('delay/nanoseconds')
            assert abs(total - (lock + cond)) <= 0.1 * (lock + cond), \
                (total, lock + cond)
            counts = pprof('-top', '-sample_index=contentions',
                           paths[kind])
            assert 'Type: contentions' in counts
        else:
            assert rows['waiter_lock'] >= 0.95, rows
            assert rows.get('cond_park', 0) <= 0.05, rows
            total = p.total('delay/nanoseconds')
            assert abs(total - lock) <= 0.1 * lock, (total, lock)
        # a wait is counted once, however many looks saw it
        i = p.index('contentions/count')
        waits = sum(s.values[i] for s in p.samples
                    if 'waiter_lock' in s.frames)
        assert abs(waits - truth['lock_waits']) <= \
            0.15 * truth['lock_waits'] + 2, (kind, waits, truth)
        if kind == 'block':
            waits = sum(s.values[i] for s in p.samples
                        if 'cond_park' in s.frames)
            assert abs(waits - truth['cond_waits']) <= \
                0.15 * truth['cond_waits'] + 2, (waits, truth)


def read_logs(path):
    """The waits the target logged, (start, end) CLOCK_MONOTONIC ns:
    (the waiter's mutex waits, the condition waiter's waits)."""
    with open(path, 'rb') as f:
        data = f.read()
    counts = struct.unpack_from('9Q', data)
    logs = struct.unpack_from(f'{4 * LOG_WAITS}Q', data, 72)
    out = []
    for k, n in ((0, counts[5]), (1, counts[7])):
        first = max(0, n - LOG_WAITS)
        out.append([(logs[2 * (k * LOG_WAITS + i % LOG_WAITS)],
                     logs[2 * (k * LOG_WAITS + i % LOG_WAITS) + 1])
                    for i in range(first, n)])
    return out


# A wait ends for the kernel as the waiter is put back on a CPU, for the
# target when it has read the clock after the call: the latter may come
# this much later on a busy machine.
EDGE_NS = 2 * 10**6


def waits_in(spans, start, end):
    """Of the waits (start, end) logged: (those that certainly ended in
    the window [start, end], those whose switch back in may be on either
    side of an edge, their time in the window)."""
    sure = edge = 0
    inside = 0
    for a, b in spans:
        inside += max(0, min(b, end) - max(a, start))
        if start + EDGE_NS < b <= end:
            sure += 1
        elif start < b <= start + EDGE_NS or end < b <= end + EDGE_NS:
            edge += 1
    return sure, edge, inside


def mono_window(path):
    """A profile's window in CLOCK_MONOTONIC ns: its time is the
    daemon's CLOCK_REALTIME as the window began."""
    t0, duration = util.profile_window(path)
    offset = min(time.clock_gettime_ns(time.CLOCK_REALTIME) -
                 time.monotonic_ns() for _ in range(5))
    return t0 - offset, t0 - offset + duration


@pytest.mark.parametrize('proffs_options', SCHED, indirect=True)
def test_sched_counts_every_wait_once_and_its_exact_delay(proffs, target,
                                                          tmp_path):
    """offcpu=sched, as root: the contentions of the waiter's mutex
    waits and of the condition waiter's waits are the waits the target
    logged as ending in the profile's window, one each (a wait that ended
    within 2 ms of an edge may be either side of it); their delays are
    the logged waits' time in the window within 2%."""
    truth_path = str(tmp_path / 'truth')
    t = target('waits', truth_path)
    got, _, _ = profile_waits(proffs, t.pid,
                              ['block_5s.pb.gz', 'mutex_5s.pb.gz'],
                              truth_path)
    lock_log, cond_log = read_logs(truth_path)
    for kind in ('block', 'mutex'):
        path = save(got[f'{kind}_5s.pb.gz'], f'{kind}-sched-exact.pb.gz')
        p = validate_pprof(path)
        assert_method(p, 'sched')
        start, end = mono_window(path)
        assert abs((end - start) - 5 * 10**9) <= 0.01 * 5 * 10**9
        checks = [('waiter_lock', lock_log)]
        if kind == 'block':
            checks.append(('cond_park', cond_log))
        for func, log in checks:
            sure, edge, inside = waits_in(log, start, end)
            assert sure > 50, (func, sure, len(log))
            _, mine = by_thread(p, {'waiter_lock': 'waiter',
                                    'cond_park': 'condwaiter'}[func],
                                'contentions/count')
            n = sum(s.values[0] for s in mine if func in s.frames)
            delay = sum(s.values[1] for s in mine if func in s.frames)
            print(f'{kind} {func}: {n} waits (log: {sure} + {edge} at '
                  f'an edge), {delay / 1e9:.4f} s (log {inside / 1e9:.4f})')
            assert sure <= n <= sure + edge, (kind, func, n, sure, edge)
            assert abs(delay - inside) <= 0.02 * inside, \
                (kind, func, delay, inside)


def test_auto_traces_the_scheduler_as_root(proffs, target):
    """offcpu=auto (the default), as root: block and mutex from
    scheduler events, no word of /proc in the log; wall sampled from /proc
    (every switch traced costs the target more than sampling does)."""
    t = target('waits')
    for kind in ('block', 'mutex'):
        p = validate_pprof(save(proffs.read(t.pid, f'{kind}_1s.pb.gz'),
                                f'{kind}-auto-root.pb.gz'))
        assert_method(p, 'sched')
        assert proffs.log_lines(r'session \d+ done: pid=%d kind=%s .*'
                                r'method=sched ' % (t.pid, kind))
    p = validate_pprof(save(proffs.read(t.pid, 'wall_1s.pb.gz'),
                            'wall-auto-root.pb.gz'))
    assert_method(p, 'procfs')
    assert proffs.log_lines(r'session \d+ done: pid=%d kind=wall .*'
                            r'method=procfs ' % t.pid)
    assert not proffs.log_lines(r'offcpu: .*refuse'), proffs.log_text()


def test_auto_reads_proc_where_tracing_every_switch_would_cost(proffs,
                                                               target):
    """offcpu=auto, as root, for block: a target whose threads switch more
    than 5,000 times per second of their CPU time (20 threads doing
    ~10 µs of work between 10 ms waits: ~60,000) is read from /proc,
    with one log line that says why, as tracing each switch would slow
    it by more (tests/bench/offcpu.py: 5-6%); one that switches rarely
    (4 threads doing ~2 ms of work between 20 ms waits: ~700) is traced.
    Either way the profile is right: the waits, in nap_cond, all of the
    delay, about as long as the threads' window, and no work in it."""
    quick = target('sleepwork', '20', '10000', '10000', 'cond')
    busy = target('sleepwork', '4', '20000', '2000000', 'cond')
    # some CPU time to tell their rates by: auto judges none under 5 ms
    end = time.monotonic() + 30
    while min(run_ms(quick.pid), run_ms(busy.pid)) < 20:
        assert time.monotonic() < end, 'the targets got no CPU time'
        time.sleep(0.1)
    for t, threads, method in ((quick, 20, 'procfs'), (busy, 4, 'sched')):
        path = save(proffs.read(t.pid, 'block_2s.pb.gz'),
                    f'block-auto-{method}.pb.gz')
        p = validate_pprof(path)
        assert_method(p, method)
        assert proffs.log_lines(r'session \d+ done: pid=%d kind=block .*'
                                r'method=%s ' % (t.pid, method)), \
            proffs.log_text()
        why = proffs.log_lines(r'offcpu: pid %d: \d+ switches per second '
                               r'of its CPU time .* from /proc' % t.pid)
        assert len(why) == (method == 'procfs'), proffs.log_text()
        total = p.total('delay/nanoseconds')
        i = p.index('delay/nanoseconds')
        assert cum_share(p.samples, total, 'nap_cond', i) >= 0.95
        assert not [s for s in p.samples if 'work' in s.frames]
        # each thread waits most of the 2 s: a busy machine can keep
        # the rare one's threads from their CPU, not from their waits
        assert 0.5 * threads * 2e9 <= total <= 1.1 * threads * 2e9, \
            (method, total)


def run_ms(pid):
    """CPU time of a process's threads so far (schedstat), in ms."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e6


def read_as_nobody(d, pid, name):
    r = subprocess.run(['setpriv', f'--reuid={util.NOBODY}',
                        f'--regid={util.NOBODY}', '--clear-groups', '--',
                        'cat', d.path(pid, name)],
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout, r.stderr.decode()


def test_unprivileged_daemon_falls_back_to_procfs(tmp_path, target):
    """A daemon that is not root (nor CAP_PERFMON, perf_event_paranoid
    above 1) may not trace the scheduler: offcpu=auto reads /proc (for
    block, where root would trace, with one log line that says so), and
    the profile's comment says /proc; offcpu=sched refuses the read
    (EACCES), with one log line."""
    with open('/proc/sys/kernel/perf_event_paranoid') as f:
        assert int(f.read()) >= 2, 'perf_event_paranoid lets anyone trace'
    t = target('waits', user=util.NOBODY)
    for options in ((), ('offcpu=sched',)):
        sub = tmp_path / (options[0].replace('=', '-') if options
                          else 'auto')
        sub.mkdir()
        d = util.UserDaemon(str(sub), util.NOBODY, options)
        try:
            code, data, err = read_as_nobody(d, t.pid, 'wall_2s.pb.gz')
            if not options:
                assert code == 0, err
                p = validate_pprof(save(data, 'wall-nobody.pb.gz'))
                assert_method(p, 'procfs')
                total = p.total('wall/nanoseconds')
                want = len(WAITS_THREADS) * p.duration_ns
                assert abs(total - want) <= 0.02 * want
                code, data, err = read_as_nobody(d, t.pid, 'block_2s.pb.gz')
                assert code == 0, err
                assert_method(validate_pprof(save(data, 'block-nobody.pb.gz')),
                              'procfs')
                lines = d.log_lines(r'offcpu: pid %d: scheduler events '
                                    r'refused \(Permission denied\): '
                                    r'off-CPU time from /proc' % t.pid)
            else:
                assert code != 0 and \
                    os.strerror(errno.EACCES) in err, err
                lines = d.log_lines(r'offcpu: pid %d: offcpu=sched: the '
                                    r'kernel refuses scheduler events '
                                    r'\(Permission denied\)' % t.pid)
                # A failure is never served from the cache: cat's fstat
                # may start a session of its own once the open's failed.
                # Each refused session says so once.
                failed = d.log_lines(r'session \d+ failed: pid=%d kind=wall '
                                     r'.*result=EACCES' % t.pid)
                assert 1 <= len(failed) <= 2, d.log_text()
            want_lines = len(failed) if options else 1
            assert len(lines) == want_lines, d.log_text()
        except BaseException:
            d.cleanup()
            print(d.log_text())
            raise
        d.unmount()


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_offcpu_formats_share_one_session(proffs, target):
    """Every format of a kind, read together: one session, the same
    samples; the top table is go tool pprof's, the collapsed stacks add
    up to its total, the flame graph is blue."""
    t = target('waits')
    names = ['mutex_2s.pb.gz', 'mutex_2s.pb', 'mutex_2s.txt',
             'mutex_2s.folded', 'mutex_2s.svg']
    out = util.read_together(proffs, t.pid, names)
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=mutex'
                                % t.pid)) == 1
    method = method_of(proffs)
    gz = save(out['mutex_2s.pb.gz'], f'mutex-formats-{method}.pb.gz')
    raw = save(out['mutex_2s.pb'], f'mutex-formats-{method}.pb')
    p = validate_pprof(gz)
    assert validate_pprof(raw).total('delay/nanoseconds') == \
        p.total('delay/nanoseconds')
    ours = out['mutex_2s.txt'].decode()
    assert top_rows(ours) == top_rows(pprof('-top', gz))
    folded = out['mutex_2s.folded'].decode().splitlines()
    assert sum(int(l.rsplit(' ', 1)[1]) for l in folded) == \
        p.total('delay/nanoseconds')
    assert any(';waiter_lock;' in l for l in folded), folded[:5]
    _, text = util.check_svg(out['mutex_2s.svg'], 'mutex.svg')
    frames = util.svg_frames(text)
    assert 'waiter_lock' in {f[0] for f in frames}
    util.check_fills(frames[1:], 'blue')
    titles = util.svg_titles(text)
    assert titles['title'].startswith(f'mutex profile of pid {t.pid}')
    assert titles['sub'].startswith('delay (nanoseconds)'), titles


def kernel_truth(pid, name, word, timeout=10):
    """The kernel stack /proc/PID/task/TID/stack shows for thread name
    asleep in a call whose frames hold word: innermost first."""
    tid = tid_named(pid, name)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        names = proc_kstack(pid, tid)
        if any(word in n for n in names):
            return names
        time.sleep(0.002)
    pytest.fail(f'{name} never seen asleep in {word}')


def kernel_part(frames):
    """The [k] frames a stack starts with, then the frame under them."""
    n = 0
    while n < len(frames) and is_kernel(frames[n]):
        n += 1
    return frames[:n], frames[n] if n < len(frames) else None


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_kernel_frames_under_the_call(proffs, target):
    """As root, a wait's stack has, above its [syscall] frame, the kernel
    frames the thread sleeps in, as /proc/PID/task/TID/stack shows them:
    procfs reads that file, sched names the kernel's callchain at the
    switch out (the scheduler's functions left out as the file leaves
    them). block: the waiter's mutex waits carry the futex path; wall:
    the sleeper's sleeps the nanosleep path. kernel=0: none."""
    t = target('waits')
    truth = {'waiter': kernel_truth(t.pid, 'waiter', 'futex'),
             'sleeper': kernel_truth(t.pid, 'sleeper', 'nanosleep')}
    method = method_of(proffs)
    got = util.read_together(proffs, t.pid, [
        'block_2s.pb.gz', 'wall_2s.pb.gz', 'block_2s?kernel=0.pb.gz'])
    for name, fn, call, want_kind in (
            ('block_2s.pb.gz', 'waiter_lock', '[syscall] futex', 'waiter'),
            ('wall_2s.pb.gz', 'sleeper_sleep', '[syscall] clock_nanosleep',
             'sleeper')):
        p = validate_pprof(save(got[name], f'kernel-{method}-{name}'))
        assert_method(p, method)
        i = p.index('wall/nanoseconds' if name.startswith('wall')
                    else 'delay/nanoseconds')
        want = ['[k] ' + n for n in truth[want_kind]]
        mine = [s for s in p.samples if fn in s.frames and call in s.frames]
        total = sum(s.values[i] for s in mine)
        assert total > 0, [s.frames for s in p.samples]
        exact = sum(s.values[i] for s in mine
                    if kernel_part(s.frames) == (want, call))
        assert exact >= 0.95 * total, \
            (want, [(kernel_part(s.frames), s.values[i]) for s in mine])
    p = validate_pprof(save(got['block_2s?kernel=0.pb.gz'],
                            f'kernel0-{method}-block.pb.gz'))
    assert any('waiter_lock' in s.frames for s in p.samples)
    assert not [s.frames for s in p.samples
                if any(is_kernel(f) for f in s.frames)]


@pytest.mark.parametrize('proffs_options', [('allow_other',)],
                         indirect=True)
def test_kernel_frames_only_for_whom_the_kernel_would(proffs, target):
    """Kernel stacks of sleeping threads are root's (the kernel shows
    /proc/PID/task/TID/stack to root alone): nobody's reads of its own
    process have no [k] frame in wall, block or mutex, where root's
    reads of the same process have them."""
    t = target('waits', user=util.NOBODY)
    kinds = ('wall', 'block', 'mutex')
    for who in ('nobody', 'root'):
        for kind in kinds:
            name = f'{kind}_1s.pb.gz'
            if who == 'nobody':
                rc, out, err = read_as_nobody(proffs, t.pid, name)
                assert rc == 0, err
            else:
                out = proffs.read(t.pid, name)
            p = validate_pprof(save(out, f'kernel-{who}-{name}'))
            assert p.samples, (who, kind)
            with_kernel = [s.frames for s in p.samples
                           if any(is_kernel(f) for f in s.frames)]
            assert bool(with_kernel) == (who == 'root'), \
                (who, kind, with_kernel, [s.frames for s in p.samples])


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_wall_flame_graph_opens_and_clicks_in_chromium(proffs, target,
                                                       driver):
    t = target('waits')
    url = 'file://' + proffs.path(t.pid, 'wall_3s.svg')
    os.makedirs(util.OUT_DIR, exist_ok=True)
    shot = os.path.join(util.OUT_DIR, 'wall-flame.png')
    m = browser.check_flame_svg(driver, url,
                                ['waiter_lock', 'sleeper_spin',
                                 'holder_hold', '[syscall] futex'], shot)
    # the waiter waits for the mutex most of its fifth of the time
    assert 10 <= m['matched_pct'] <= 20, m
    # as the browser paints them, every frame but the root is blue
    for f in browser.frames(driver)[1:]:
        rgb = [int(v) for v in re.findall(r'\d+', f[4])[:3]]
        h, _, _ = util.hue('#%02x%02x%02x' % tuple(rgb))
        assert 175 <= h <= 245, f'{f[0]}: {f[4]} is not blue'


def test_offcpu_errors(proffs, target):
    """A bad value is EINVAL; a pid that is gone, ENOENT."""
    t = target('waits')
    expect_errno(lambda: open(proffs.path(t.pid, 'wall_0s.pb.gz'), 'rb'),
                 errno.EINVAL)
    expect_errno(lambda: open(proffs.path(t.pid, 'block?hz=0.pb.gz'),
                              'rb'), errno.EINVAL)
    t.kill()
    expect_errno(lambda: open(proffs.path(t.pid, 'mutex_1s.pb.gz'), 'rb'),
                 errno.ENOENT)


# Off-CPU time per thread from the scheduler itself: from each switch
# out of a thread that went to sleep (prev_state not running) to its next
# switch in - its sleep and its wait for a CPU after the wake-up, what
# wall shows in the states sleeping, disk and runnable. Preemptions are
# left out: wall counts a preempted thread's wait with its running stack.
# It ends itself EXIT_MS after its start, about when the profile's window
# does (a SIGINT that came while it still attached was lost once, and its
# span was then 30 s longer than the profile's), and its span ends there,
# not after its probes are taken down.
BPF_OFFCPU = r'''
BEGIN { @t0 = nsecs; printf("started\n"); }
interval:ms:EXIT_MS { @t1 = nsecs; exit(); }
tracepoint:sched:sched_switch
/pid == $1 && args->prev_state != 0/
{ @start[args->prev_pid] = nsecs; }
tracepoint:sched:sched_switch
/@start[args->next_pid]/
{
	@off[args->next_pid] = sum(nsecs - @start[args->next_pid]);
	delete(@start[args->next_pid]);
}
END { printf("elapsed_us %d\n", (@t1 - @t0) / 1000); clear(@start);
      clear(@t0); clear(@t1); }
'''


def tracefs_mounted():
    with open('/proc/self/mounts') as f:
        return any(l.split()[2] == 'tracefs' for l in f)


@pytest.fixture
def tracefs():
    """bpftrace finds tracepoints in tracefs: mount it (as root) where it
    is not, and unmount what this fixture mounted."""
    if os.geteuid() != 0:
        pytest.skip('bpftrace needs root')
    mounted = False
    if not tracefs_mounted():
        r = subprocess.run(['mount', '-t', 'tracefs', 'nodev',
                            '/sys/kernel/tracing'], capture_output=True,
                           text=True)
        assert r.returncode == 0, f'cannot mount tracefs: {r.stderr}'
        mounted = True
    yield
    if mounted:
        subprocess.run(['umount', '/sys/kernel/tracing'])


def stop_bpftrace(bt):
    """Wait for bpftrace to end by its script's exit() (printing its
    maps); else SIGINT, twice, then SIGKILL: it never outlives the test.
    (stdout, stderr)."""
    try:
        return bt.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        pass
    for sig in (signal.SIGINT, signal.SIGINT, signal.SIGKILL):
        bt.send_signal(sig)
        try:
            return bt.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            continue
    return bt.communicate()


@pytest.mark.parametrize('proffs_options', METHODS, indirect=True)
def test_wall_off_cpu_time_agrees_with_bpftrace(proffs, target, tracefs,
                                                tmp_path):
    """As root, a sched_switch-based bpftrace script on the same target
    at the same time: each thread's time off the CPU agrees within 5
    points of its window."""
    assert shutil.which('bpftrace'), 'bpftrace is not installed'
    t = target('waits')
    script = tmp_path / 'offcpu.bt'
    # the window (5 s) and the time a read takes to start it
    script.write_text(BPF_OFFCPU.replace('EXIT_MS', '5150'))
    bt = subprocess.Popen(['bpftrace', str(script), str(t.pid)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    try:
        line = ''
        while line.strip() != 'started':    # its probes are attached
            line = bt.stdout.readline()
            assert line, f'bpftrace did not start: {bt.stderr.read()}'
        data = proffs.read(t.pid, 'wall_5s.pb.gz')
    finally:
        out, err = stop_bpftrace(bt)
    elapsed = int(re.search(r'elapsed_us (\d+)', out).group(1)) * 1000
    assert 4.5e9 <= elapsed <= 7e9, f'bpftrace ran {elapsed / 1e9:.1f} s'
    theirs = {int(m.group(1)): int(m.group(2))
              for m in re.finditer(r'@off\[(\d+)\]: (\d+)', out)}
    p = validate_pprof(save(data, f'wall-bpftrace-{method_of(proffs)}.pb.gz'))
    i = p.index('wall/nanoseconds')
    names = {}
    for tid in os.listdir(f'/proc/{t.pid}/task'):
        with open(f'/proc/{t.pid}/task/{tid}/comm') as f:
            names[f.read().strip()] = int(tid)
    checked = 0
    for name in ('sleeper', 'holder', 'waiter', 'condwaiter'):
        tot, mine = by_thread(p, name, 'wall/nanoseconds')
        off = sum(s.values[i] for s in mine
                  if s.labels['state'] != 'running') / tot
        bpf = theirs.get(names[name], 0) / elapsed
        print(f'{name}: off the CPU {off:.3f} (proffs), {bpf:.3f} '
              f'(bpftrace)')
        assert abs(off - bpf) <= 0.05, \
            f'{name}: off the CPU {off:.3f} of the window, bpftrace ' \
            f'{bpf:.3f}\n{out}'
        checked += 1
    assert checked == 4
