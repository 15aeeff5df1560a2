# SPDX-License-Identifier: GPL-2.0-or-later
"""CPU profiles through the mount (issue: foundation). Every profile read
here is validated by go tool pprof's -top, -traces and -raw."""

import errno
import os
import signal
import subprocess
import threading
import time

import pytest

import util
from util import expect_errno, pprof, save, share, traces, validate_pprof


def read_profile(proffs, pid, name, keep):
    data = proffs.read(pid, name)
    assert data[:2] == b'\x1f\x8b' or not name.endswith('.gz')
    path = save(data, keep)
    validate_pprof(path)
    return path


def test_burn_matches_perf(proffs, target, tmp_path):
    """hot burns 3x sibling through level1 -> level2, no frame pointers:
    the share through the mount is within 5 points of perf's."""
    t = target('burn')
    result = {}

    def ours():
        result['path'] = read_profile(proffs, t.pid, 'cpu_5s.pb.gz',
                                      'burn.pb.gz')
    th = threading.Thread(target=ours)
    th.start()
    theirs = util.perf_record(t.pid, 5, str(tmp_path))
    th.join()
    samples = traces(result['path'])
    total = sum(v for v, _, _ in samples)
    assert total >= 400, f'only {total} samples in 5 s at 99 Hz'
    hot, sib = share(samples, 'hot'), share(samples, 'sibling')
    perf_hot = share(theirs, 'hot')
    assert len(theirs) >= 400
    assert abs(hot - perf_hot) <= 0.05, (hot, perf_hot)
    assert 2.2 <= hot / sib <= 4.0, (hot, sib)
    assert share(samples, 'main') >= 0.95
    # the hot path unwound through the frame-pointer-less callers
    for v, labels, frames in samples:
        if 'hot' in frames:
            i = frames.index('hot')
            assert frames[i + 1:i + 4] == ['level2', 'level1', 'main'], \
                frames
            assert labels['thread'] == str(t.pid)
            assert labels['thread_name'] == 'burn'


def test_qsort_comparator_unwinds_through_libc(proffs, target):
    t = target('qsorter')
    path = read_profile(proffs, t.pid, 'cpu_2s.pb.gz', 'qsorter.pb.gz')
    samples = traces(path)
    in_cmp = [(v, f) for v, _, f in samples if f[0] == 'cmp_ints']
    assert sum(v for v, _ in in_cmp) >= 0.5 * sum(v for v, _, _ in samples)
    through = sum(v for v, f in in_cmp
                  if 'main' in f and f.index('main') > 1)
    assert through >= 0.95 * sum(v for v, _ in in_cmp), in_cmp[:3]
    # at least one libc frame between the comparator and main
    assert any(any('qsort' in x for x in f[1:f.index('main')])
               for _, f in in_cmp if 'main' in f)


def test_thread_started_during_window(proffs, target):
    t = target('spawner', '1')
    path = read_profile(proffs, t.pid, 'cpu_3s.pb.gz', 'spawner.pb.gz')
    samples = traces(path)
    late = [(v, l) for v, l, f in samples if 'late_work' in f]
    assert late, 'the thread started in the window is missing'
    assert all(l['thread_name'] == 'latecomer' for _, l in late)
    assert all(l['thread'] != str(t.pid) for _, l in late)
    top = pprof('-top', '-tagfocus=thread_name=latecomer', path)
    assert 'late_work' in top and 'main_work' not in top


def test_pprof_reads_mount_path_directly(proffs, target):
    """go tool pprof opens the path twice: the cached result serves it."""
    t = target('burn')
    out = pprof('-top', proffs.path(t.pid, 'cpu_2s.pb.gz'))
    assert 'hot' in out and 'sibling' in out
    assert len(proffs.log_lines(r'session \d+ start')) == 1


def test_profile_alias_and_raw_pb(proffs, target):
    t = target('burn')
    path = read_profile(proffs, t.pid, 'profile?seconds=1.pb',
                        'burn-raw.pb')
    with open(path, 'rb') as f:
        assert f.read(2) != b'\x1f\x8b'
    assert share(traces(path), 'hot') > 0.5
    raw = pprof('-raw', path)
    assert 'PeriodType: cpu nanoseconds' in raw
    assert 'Period: 10101010' in raw
    assert 'samples/count cpu/nanoseconds' in raw


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if 'Build ID:' in line:
            return line.split()[-1]
    pytest.fail(f'{path} has no build id')


def test_stripped_binary_debug_file_by_build_id(proffs, target):
    exe = os.path.join(util.TARGETS, 'stripped')
    bid = build_id(exe)
    ddir = f'/usr/lib/debug/.build-id/{bid[:2]}'
    dfile = f'{ddir}/{bid[2:]}.debug'
    os.makedirs(ddir, exist_ok=True)
    with open(os.path.join(util.TARGETS, 'stripped.debug'), 'rb') as src, \
            open(dfile, 'wb') as dst:
        dst.write(src.read())
    try:
        t = target('stripped')
        path = read_profile(proffs, t.pid, 'cpu_2s.pb.gz', 'stripped.pb.gz')
        samples = traces(path)
        assert share(samples, 'stripped_hot') > 0.5
        lines = pprof('-top', '-lines', path)
        assert 'stripped.c:' in lines
        raw = pprof('-raw', path)
        assert bid in raw
    finally:
        os.unlink(dfile)


def test_concurrent_readers_share_one_session(proffs, target):
    t = target('burn')
    p = proffs.path(t.pid, 'cpu_3s.pb.gz')
    cats = [subprocess.Popen(['cat', p], stdout=subprocess.PIPE)
            for _ in range(2)]
    outs = [c.communicate(timeout=30)[0] for c in cats]
    assert all(c.returncode == 0 for c in cats)
    assert outs[0] and outs[0] == outs[1]
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                r'window_ms=3000' % t.pid)) == 1
    validate_pprof(save(outs[0], 'shared.pb.gz'))


def test_interrupted_reader_stops_session(proffs, target):
    t = target('burn')
    cat = subprocess.Popen(['cat', proffs.path(t.pid, 'cpu_30s.pb.gz')],
                           stdout=subprocess.DEVNULL)
    assert proffs.wait_log(r'session \d+ start')
    time.sleep(1)
    sent = time.monotonic()
    cat.send_signal(signal.SIGINT)
    cat.wait(timeout=5)
    assert time.monotonic() - sent < 1.0
    assert proffs.wait_log(r'session \d+ stopped: .*no readers', 2.0)


def test_target_killed_mid_window_gives_partial(proffs, target):
    t = target('burn')
    threading.Timer(1.0, t.kill).start()
    start = time.monotonic()
    data = proffs.read(t.pid, 'cpu_10s.pb.gz')
    assert time.monotonic() - start < 5
    path = save(data, 'killed.pb.gz')
    validate_pprof(path)
    comments = pprof('-comments', path)
    assert 'exited' in comments and 'partial' in comments
    assert sum(v for v, _, _ in traces(path)) > 20


@pytest.mark.parametrize('name,code', [
    ('cpu_0s.pb.gz', errno.EINVAL),
    ('profile?seconds=0.pb.gz', errno.EINVAL),
    ('cpu?hz=100000', errno.EINVAL),
    ('cpu_2s?seconds=3', errno.EINVAL),
    ('cpu_400s.pb.gz', errno.EINVAL),     # beyond max_window
    ('nosuchkind.pb.gz', errno.ENOENT),
    ('cpu.zip', errno.ENOENT),
    ('cpu_2x.pb.gz', errno.ENOENT),
])
def test_errors(proffs, target, name, code):
    t = target('burn')
    expect_errno(lambda: open(proffs.path(t.pid, name), 'rb'), code)
    assert proffs.log_lines(errno.errorcode[code]), \
        'no log line says why'


def test_no_such_pid_and_read_only(proffs, target):
    t = target('burn')
    expect_errno(lambda: os.stat(proffs.path(999999999)), errno.ENOENT)
    expect_errno(lambda: open(proffs.path(t.pid, 'cpu.pb.gz'), 'wb'),
                 errno.EROFS)
    expect_errno(lambda: open(proffs.path(t.pid, 'new'), 'w'), errno.EROFS)
    expect_errno(lambda: os.unlink(proffs.path(t.pid, 'cmdline')),
                 errno.EROFS)
    expect_errno(lambda: os.mkdir(proffs.path(t.pid, 'd')), errno.EROFS)


def test_listing_and_cmdline(proffs, target):
    t = target('spawner', '100')
    assert str(t.pid) in os.listdir(proffs.mnt)
    names = sorted(os.listdir(proffs.path(t.pid)))
    assert 'cpu.pb.gz' in names and 'cmdline' in names
    start = time.monotonic()
    for n in names:
        os.stat(proffs.path(t.pid, n))
    assert time.monotonic() - start < 1.0
    with open(f'/proc/{t.pid}/cmdline', 'rb') as f:
        want = f.read()
    assert proffs.read(t.pid, 'cmdline') == want
    assert want.split(b'\0')[1] == b'100'


def test_sigterm_unmounts_cleanly(proffs, target):
    t = target('burn')
    path = read_profile(proffs, t.pid, 'cpu_1s.pb.gz', 'before-term.pb.gz')
    assert share(traces(path), 'hot') > 0.5
    proffs.stopped = True
    proffs.proc.send_signal(signal.SIGTERM)
    assert proffs.proc.wait(timeout=10) == 0
    assert not os.path.ismount(proffs.mnt)
    proffs.check_log()
