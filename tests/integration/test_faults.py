# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults survived: readers killed, targets that exec or churn threads,
unmount under a waiting reader, the daemon killed, long runs of reads."""

import concurrent.futures
import os
import random
import signal
import subprocess
import time

import pytest

import util
from util import pprof, save, share, traces, validate_pprof


def proc_stat(pid):
    """(state, utime ticks) of a process."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return fields[0], int(fields[11])


def assert_running(pid):
    """Not stopped, and still burning CPU."""
    state, t0 = proc_stat(pid)
    assert state not in ('t', 'T'), state
    time.sleep(0.3)
    state, t1 = proc_stat(pid)
    assert state not in ('t', 'T') and t1 > t0


def sanitized(pid):
    with open(f'/proc/{pid}/maps') as f:
        return 'libasan' in f.read()


def daemon_usage(pid):
    with open(f'/proc/{pid}/status') as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith('VmRSS'))
    return rss, len(os.listdir(f'/proc/{pid}/fd'))


def test_reader_killed_mid_window(proffs, target):
    t = target('burn')
    cat = subprocess.Popen(['cat', proffs.path(t.pid, 'cpu_30s.pb.gz')],
                           stdout=subprocess.DEVNULL)
    assert proffs.wait_log(r'session \d+ start')
    time.sleep(0.5)
    cat.kill()
    cat.wait(timeout=5)
    assert proffs.wait_log(r'session \d+ stopped: .*no readers', 3)
    assert_running(t.pid)
    # the daemon carries on
    path = save(proffs.read(t.pid, 'cpu_1s.pb.gz'), 'after-kill.pb.gz')
    assert share(traces(path), 'hot') > 0.5


def test_target_execs_mid_window(proffs, target):
    burn = os.path.join(util.TARGETS, 'burn')
    t = target('execer', '1', burn)
    path = save(proffs.read(t.pid, 'cpu_3s.pb.gz'), 'exec.pb.gz')
    validate_pprof(path)
    samples = traces(path)
    assert share(samples, 'before_exec') > 0.1, 'the old image is missing'
    assert share(samples, 'hot') > 0.2, 'the new image is missing'


def churn_ended(t):
    """(threads the churn target has created and ended, when), asked by
    SIGUSR1 (tests/targets/churn.c answers "ended N" on stdout)."""
    t.proc.send_signal(signal.SIGUSR1)
    line = t.proc.stdout.readline().split()
    assert len(line) == 2 and line[0] == b'ended', line
    return int(line[1]), time.monotonic()


def test_thread_churn(proffs, target):
    t = target('churn')
    n0, t0 = churn_ended(t)
    path = save(proffs.read(t.pid, 'cpu_3s.pb.gz'), 'churn.pb.gz')
    n1, t1 = churn_ended(t)
    # the fault asked for: 1,000 threads created and ended per second,
    # while (and although) the session follows every one of them
    rate = (n1 - n0) / (t1 - t0)
    print(f'churn: {rate:.0f} threads/s while profiled')
    assert 900 <= rate <= 1100, f'{rate:.0f} threads created and ended/s'
    validate_pprof(path)
    samples = traces(path)
    # Threads that live 20 us never reach a 10 ms sampling period (each
    # inherited event counts its own thread's time, as perf's do): what
    # matters is that following them costs nothing and breaks nothing.
    assert share(samples, 'main_loop') > 0.3
    assert_running(t.pid)
    rss, fds = daemon_usage(proffs.proc.pid)
    assert fds < 64, f'{fds} fds left open after the session'


def fuse_connection(mnt):
    """The /sys/fs/fuse/connections entry of the FUSE mount at mnt: named
    by the minor device number of its st_dev."""
    return os.path.join('/sys/fs/fuse/connections',
                        str(os.minor(os.stat(mnt).st_dev)))


def test_unmount_while_reader_waits(tmp_path, target):
    d = util.Daemon(str(tmp_path))
    t = target('burn')
    # Found before the unmount: the mount point stops naming it after.
    # Only this mount's connection may be aborted: other FUSE mounts on
    # the machine (other tests', benchmarks') are none of this test's.
    conn = fuse_connection(d.mnt)
    cat = subprocess.Popen(['cat', d.path(t.pid, 'cpu_30s.pb.gz')],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    assert d.wait_log(r'session \d+ start')
    start = time.monotonic()
    r = subprocess.run(['umount', '-f', d.mnt], capture_output=True)
    if r.returncode:
        # A forced unmount aborts the connection (fuse_umount_begin) and
        # may still be refused while busy: detach it, and abort it again
        # where the FUSE control file system is mounted.
        subprocess.run(['umount', '-l', d.mnt])
        if os.path.exists(conn):
            with open(os.path.join(conn, 'abort'), 'w') as f:
                f.write('1')
    assert cat.wait(timeout=10) != 0, 'the reader got no error'
    assert time.monotonic() - start < 5
    assert d.proc.wait(timeout=10) == 0
    d.check_log()
    assert_running(t.pid)


def perf_fds(pid):
    """How many perf events pid holds open."""
    n = 0
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            n += os.readlink(f'/proc/{pid}/fd/{fd}') == \
                'anon_inode:[perf_event]'
        except FileNotFoundError:
            pass
    return n


def tracers(pid):
    """{tid: TracerPid} of every thread of pid."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/status') as f:
                out[int(tid)] = int(next(l.split()[1] for l in f
                                         if l.startswith('TracerPid:')))
        except FileNotFoundError:
            pass
    return out


def test_daemon_sigkill_mid_session(tmp_path, target):
    d = util.Daemon(str(tmp_path))
    t = target('burn')
    cat = subprocess.Popen(['cat', d.path(t.pid, 'cpu_30s.pb.gz')],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    assert d.wait_log(r'session \d+ start')
    # the session's probes: perf events the daemon holds on the target
    end = time.monotonic() + 5
    while not perf_fds(d.proc.pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert perf_fds(d.proc.pid) > 0, 'no perf event open mid-session'
    time.sleep(0.5)
    d.proc.kill()
    assert d.proc.wait(timeout=5) == -signal.SIGKILL
    assert cat.wait(timeout=10) != 0
    # The events lived only as the daemon's fds: with the daemon reaped,
    # its fd table, and every probe in it, is gone.
    assert not os.path.exists(f'/proc/{d.proc.pid}'), 'daemon still there'
    # the target is neither traced nor stopped, and burns on
    assert set(tracers(t.pid).values()) == {0}, tracers(t.pid)
    assert_running(t.pid)
    d.cleanup()
    # a new mount works
    (tmp_path / 'again').mkdir()
    d2 = util.Daemon(str(tmp_path / 'again'))
    try:
        path = save(d2.read(t.pid, 'cpu_1s.pb.gz'), 'remount.pb.gz')
        assert share(traces(path), 'hot') > 0.5
    finally:
        d2.unmount()


def folded_total(data):
    return sum(int(l.rsplit(' ', 1)[1]) for l in data.decode().splitlines())


@pytest.mark.parametrize('proffs_options', [('cache_ms=0',)], indirect=True)
def test_thousand_sequential_reads_stay_flat(proffs, target):
    """1,000 sessions, each doing real work: 20 ms CPU windows of a busy
    target at 1000 Hz (samples taken, unwound, aggregated, symbolized,
    rendered) alternating with thread dumps of 9 threads; daemon memory
    and fds must not grow."""
    burn = target('burn')
    parked = target('manythreads', 8)
    cpu = 'cpu_20ms?hz=1000.folded'
    stack = 'main;level1;level2;'

    # Warm the shared ELF cache first: it grows with the files profiled,
    # once; after that, sessions must leave nothing behind.
    assert stack in proffs.read(burn.pid, cpu).decode()
    assert proffs.read(parked.pid, 'goroutine.txt')
    usage, empty, ns = [], 0, 0
    start = time.monotonic()
    for i in range(1000):
        if i % 2:
            text = proffs.read(parked.pid, 'goroutine.txt').decode()
            assert text.startswith('threads profile: total 9\n'), text
            assert '\tpark_many\t' in text, text
        else:
            data = proffs.read(burn.pid, cpu)
            total = folded_total(data)
            empty += total == 0
            ns += total
            assert not data or stack in data.decode(), data
        if i in (99, 999):
            usage.append(daemon_usage(proffs.proc.pid))
    took = time.monotonic() - start
    print(f'1000 reads in {took:.1f} s; {ns / 1e6:.0f} ms of CPU sampled, '
          f'{empty} empty windows')
    # 500 windows of 20 ms of a thread that never sleeps: nearly all of
    # them hold samples, and the samples add up to most of the time
    assert empty <= 25, f'{empty} of 500 CPU windows took no sample'
    assert ns >= 500 * 20e6 * 0.3, f'only {ns / 1e6:.0f} ms sampled'
    (rss0, fds0), (rss1, fds1) = usage
    assert fds1 == fds0, usage
    # AddressSanitizer keeps freed memory in quarantine on purpose: memory
    # is measured on the plain build, which test.sh runs first.
    if not sanitized(proffs.proc.pid):
        assert rss1 <= rss0 * 1.10 + 1024, usage
    assert len(proffs.log_lines(r'session \d+ done')) == 1002


def test_64_concurrent_mixed_readers(proffs, target):
    ts = [target('burn'), target('qsorter')]
    names = ['cpu_1s.pb.gz', 'profile?seconds=1.pb.gz', 'cpu_1s.pb',
             'cpu_2s.pb.gz', 'cmdline', 'index.html']
    rnd = random.Random(7)
    jobs = [(rnd.choice(ts).pid, rnd.choice(names)) for _ in range(64)]

    def read(job):
        return job, proffs.read(*job)
    with concurrent.futures.ThreadPoolExecutor(64) as ex:
        results = list(ex.map(read, jobs))
    by_name = {}
    for (pid, name), data in results:
        assert data, (pid, name)
        if name.endswith('.pb.gz'):
            assert data[:2] == b'\x1f\x8b'
        # one session per (pid, window): same window, same bytes
        key = (pid, name.replace('profile?seconds=1', 'cpu_1s'))
        assert by_name.setdefault(key, data) == data, key
    for (pid, name), data in by_name.items():
        if name.endswith('.pb.gz') or name.endswith('.pb'):
            validate_pprof(save(data, f'mixed-{pid}-{name}'))
    assert len(proffs.log_lines(r'session \d+ start')) <= 4


@pytest.mark.parametrize('proffs_options', [('max_stacks=5',)],
                         indirect=True)
def test_max_stacks_bounds_a_session(proffs, target):
    """Memory per session is bounded: past max_stacks distinct stacks,
    samples still count, under one marked frame, and a comment says so."""
    t = target('qsorter')       # merge sort recursion: many stacks
    path = save(proffs.read(t.pid, 'cpu_3s.pb.gz'), 'max-stacks.pb.gz')
    validate_pprof(path)
    assert 'more than 5 distinct stacks' in pprof('-comments', path)
    samples = traces(path)      # one entry per pprof sample
    assert len(samples) == 6, [f[:3] for _, _, f in samples]
    assert share(samples, '[max_stacks reached]') > 0.3
    assert sum(v for v, _, _ in samples) >= 100
