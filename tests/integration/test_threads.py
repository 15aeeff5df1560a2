# SPDX-License-Identifier: GPL-2.0-or-later
"""Thread dumps through the mount: goroutine.txt (debug=1 and 2),
threads.txt, goroutine.pb.gz, goroutine.svg."""

import errno
import gzip
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

import util
from util import save

PARKERS = {             # thread name -> (parking function, state, syscall)
    'condwaiter': ('park_cond', 'sleeping', 'futex'),
    'sleeper': ('park_sleep', 'sleeping', 'clock_nanosleep'),
    'reader': ('park_read', 'sleeping', 'read'),
    'spinner': ('spin_forever', 'running', None),
}

# Every thread of the parked target: the parkers, the vfork()ing one
# (in an uninterruptible sleep a ptrace interrupt cannot stop) and main.
ALL_PARKED = dict(PARKERS, vforker=('park_vfork', 'disk sleep', 'vfork'),
                  parked=('main', 'sleeping', 'pause'))


def task_states(pid):
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        with open(f'/proc/{pid}/task/{tid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        out[tid] = (fields[0], int(fields[11]))
    return out


def assert_nothing_stopped(pid, spinning=True):
    before = task_states(pid)
    time.sleep(0.3)
    after = task_states(pid)
    assert all(s not in ('t', 'T') for s, _ in after.values()), after
    if spinning:    # the spinner kept running: its utime advanced
        assert any(after[t][1] > before[t][1] for t in after
                   if t in before)


def test_goroutine_txt_debug1_groups_with_names_states(proffs, target):
    t = target('parked')
    text = proffs.read(t.pid, 'goroutine.txt').decode()
    assert text.startswith('threads profile: total ')
    for name, (func, state, sc) in PARKERS.items():
        block = next(b for b in text.split('\n\n')
                     if f'"thread_name":"{name}"' in b)
        assert f'"state":"{state}"' in block, block
        assert f'\t{func}\t' in block, block
        if sc:
            assert f'"syscall":"{sc}"' in block, block
    assert_nothing_stopped(t.pid)


def test_threads_txt_debug2_every_thread(proffs, target):
    t = target('parked')
    text = proffs.read(t.pid, 'threads.txt?debug=2').decode()
    tids = set(os.listdir(f'/proc/{t.pid}/task'))
    heads = re.findall(r'^thread (\d+) \[([^,\]]+)(?:, ([^\]]*))?\]: (\S+)',
                       text, re.M)
    assert {h[0] for h in heads} == tids
    for tid, state, sc, name in heads:
        if name in PARKERS:
            func, want_state, want_sc = PARKERS[name]
            assert state == want_state, (name, state)
            if want_sc:
                assert sc == want_sc, (name, sc)
            section = text.split(f'thread {tid} ', 1)[1].split('\nthread ')[0]
            assert f'\n{func}(...)\n' in section, section
            assert 'parked.c:' in section
    assert_nothing_stopped(t.pid)


def test_goroutine_pprof_one_sample_per_stack(proffs, target):
    t = target('parked')
    util.wait_main_parked(t.pid)
    path = save(proffs.read(t.pid, 'goroutine.pb.gz'), 'goroutine.pb.gz')
    prof = util.validate_pprof(path)
    raw = util.pprof('-raw', path)
    assert 'goroutine/count' in raw
    for name, (func, state, _) in PARKERS.items():
        assert re.search(r'state:\[%s\] thread_name:\[%s\]'
                         % (re.escape(state), name), raw), name
    tops = util.pprof('-top', '-tagfocus=thread_name=condwaiter', path)
    assert 'park_cond' in tops and 'spin_forever' not in tops
    assert sum(s.values[0] for s in prof.samples) == \
        len(os.listdir(f'/proc/{t.pid}/task'))
    # Every kind of parked thread: its own sample, named, in its state,
    # in its parking function.
    for name, (func, state, _) in ALL_PARKED.items():
        mine = [s for s in prof.samples
                if s.labels.get('thread_name') == name]
        assert len(mine) == 1, (name, [(s.labels, s.frames)
                                       for s in prof.samples])
        s = mine[0]
        assert s.values[0] == 1, (name, s.values)
        assert s.labels.get('state') == state, (name, s.labels)
        assert func in s.frames, (name, s.frames)


def test_goroutine_pprof_merges_identical_stacks(proffs, target):
    """1,000 threads asleep in the same place are one sample of value
    1,000 in goroutine.pb.gz, as Go merges goroutines with one stack."""
    t = target('manythreads', 1000)
    # The kernel's frame where the threads sleep, before the dump (after
    # it, a thread released is on its way back into its sleep).
    tid = max(int(x) for x in os.listdir(f'/proc/{t.pid}/task'))
    util.wait_main_parked(t.pid, tid=tid)
    with open(f'/proc/{t.pid}/task/{tid}/stack') as f:
        kleaf = re.match(r'\[<\w+>\] ([^+\s]+)', f.readline()).group(1)
    path = save(proffs.read(t.pid, 'goroutine.pb.gz'),
                'goroutine-1000.pb.gz')
    prof = util.validate_pprof(path)
    assert prof.total('goroutine/count') == 1001
    many = [s for s in prof.samples if 'park_many' in s.frames]
    assert [s.values[0] for s in many] == [1000], \
        [(s.values, s.frames) for s in many]
    assert len(prof.samples) == 2, [(s.values, s.frames)
                                    for s in prof.samples]
    # pprof's -traces, one block a sample: park_many's says 1000, at its
    # leaf: the kernel's frame where the threads sleep (the daemon runs
    # as root: test_kernel.py), above clock_nanosleep.
    traces = util.pprof('-traces', path).split('-----------+')[1:]
    many = [b for b in traces if re.search(r'^\s+park_many$', b, re.M)]
    assert len(many) == 1, traces
    assert re.search(r'^\s+1000\s+\[k\] %s$' % re.escape(kleaf), many[0],
                     re.M), many
    assert re.search(r'^\s+\[k\] entry_SYSCALL_64\S*\n\s+clock_nanosleep$',
                     many[0], re.M), many


def test_goroutine_svg_and_folded(proffs, target):
    t = target('parked')
    svg = proffs.read(t.pid, 'goroutine.svg').decode()
    assert 'park_cond' in svg and 'park_read' in svg
    # well-formed and self-contained, as the CPU flame graph
    util.check_svg(svg.encode(), 'goroutine.svg')
    folded = proffs.read(t.pid, 'goroutine.folded').decode().splitlines()
    assert sum(int(l.rsplit(' ', 1)[1]) for l in folded) == \
        len(os.listdir(f'/proc/{t.pid}/task'))


def test_traced_target_is_ebusy_at_once(proffs, target):
    if not shutil.which('strace'):
        pytest.skip('strace not installed')
    t = target('parked')
    with util.strace_attached(t.pid) as st:
        start = time.monotonic()
        util.expect_errno(lambda: proffs.read(t.pid, 'goroutine.txt'),
                          errno.EBUSY)
        took = time.monotonic() - start
        # at once: no longer than a whole dump of an untraced twin (which
        # seizes, unwinds and releases), or a second on a quiet machine
        twin = target('parked')
        start = time.monotonic()
        proffs.read(twin.pid, 'goroutine.txt')
        twin_took = time.monotonic() - start
        assert took < max(1.0, 2 * twin_took), (took, twin_took)
        # the log says why, and the line before it by whom
        assert proffs.log_lines(r'session \d+ failed: .*result=EBUSY: the '
                                r'target .*is traced by another process')
        assert proffs.log_lines(r'threads: %d is traced by %d'
                                % (t.pid, st.pid))
    assert_nothing_stopped(t.pid)


def test_thousand_threads_in_under_a_second(proffs, target):
    """A dump of 1,000 threads costs the daemon under a second of CPU.
    CPU, not the clock: beside two CPU hogs the same dump took 5.7 s of
    wall time, waiting for a CPU (the wall figures are the bench's)."""
    t = target('manythreads', 1000)
    cpu0 = util.cpu_seconds(proffs.proc.pid)
    start = time.monotonic()
    text = proffs.read(t.pid, 'goroutine.txt').decode()
    elapsed = time.monotonic() - start
    cpu = util.cpu_seconds(proffs.proc.pid) - cpu0
    assert text.startswith('threads profile: total 1001'), text[:60]
    assert cpu < 1.0, f'{cpu:.2f} s of CPU ({elapsed:.2f} s of wall)'
    assert elapsed < 30, elapsed
    line = proffs.wait_log(r'session \d+ done: .*threads=1001')
    assert line, proffs.log_text()
    assert_nothing_stopped(t.pid, spinning=False)


def task_tracers(pid):
    """{tid: (state letter, utime, TracerPid)} of every thread of pid."""
    out = {}
    for tid, state, tracer in util.threads(pid):
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue    # the thread ended meanwhile
        out[tid] = (state, int(fields[11]), tracer)
    return out


def caught_mid_dump(pid, daemon_pid, reader):
    """Scan pid's threads until one is traced by a thread of the daemon
    (the dump is under way), or the reader ends. Returns the (tid, state)
    seen, or None."""
    daemon_tasks = f'/proc/{daemon_pid}/task'
    while reader.poll() is None:
        for tid, state, tracer in util.threads(pid):
            if tracer and os.path.exists(f'{daemon_tasks}/{tracer}'):
                return tid, state
    return None


def test_daemon_sigkill_mid_dump_leaves_target_running(tmp_path, target):
    """SIGKILL of the mounted daemon while it dumps 1,000 threads: the
    kernel must release every thread it held, and the busy one runs on."""
    t = target('manythreads', 1000, 'spin')
    caught = None
    for attempt in range(5):
        logdir = tmp_path / f'try{attempt}'
        logdir.mkdir()
        d = util.Daemon(str(logdir), ('cache_ms=0',))
        reader = subprocess.Popen(['cat', d.path(t.pid, 'goroutine.txt')],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        caught = caught_mid_dump(t.pid, d.proc.pid, reader)
        if caught:
            d.proc.kill()
            break
        # the dump ended before a traced thread was seen: try again
        out = reader.communicate(timeout=10)[0]
        assert out.startswith(b'threads profile: total 1001\n'), out[:80]
        d.unmount()
    try:
        assert caught, 'never saw a thread traced by the daemon mid-dump'
        assert d.proc.wait(timeout=10) == -signal.SIGKILL
        out = reader.communicate(timeout=10)[0]
        assert reader.returncode != 0 and not out, 'the dump finished'
        assert not d.log_lines(r'session \d+ done'), d.log_text()
        print(f'killed while thread {caught[0]} was traced '
              f'(state {caught[1]}), attempt {attempt + 1}')
        # every thread released at once, and none stopped a moment later
        for pause in (0, 0.3):
            time.sleep(pause)
            for tid, (state, _, tracer) in task_tracers(t.pid).items():
                assert tracer == 0, f'thread {tid} still traced by {tracer}'
                assert state not in 'tT', f'thread {tid} left in {state}'
        # the busy thread (the main one) keeps burning CPU
        before = task_tracers(t.pid)[t.pid][1]
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            assert task_tracers(t.pid)[t.pid][0] not in 'tT'
            time.sleep(0.05)
        assert task_tracers(t.pid)[t.pid][1] > before, 'the spinner stopped'
        assert len(os.listdir(f'/proc/{t.pid}/task')) == 1001
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
        d.cleanup()     # fusermount3 -u -z of the dead mount, rmdir
    assert not os.path.exists(d.mnt), 'the dead mount stayed'


def test_dump_after_an_abandoned_one_is_not_ebusy(proffs, target):
    """A reader that gives up on goroutine.txt (Ctrl-C, a browser tab
    closed) and asks again at once must get its dump: the daemon's own
    unfinished dump of the same process is no debugger."""
    t = target('manythreads', 1000)
    path = proffs.path(t.pid, 'goroutine.txt')
    failures = []
    for i in range(5):
        os.close(os.open(path, os.O_RDONLY))     # started, then abandoned
        try:
            text = proffs.read(t.pid, 'goroutine.txt')
            assert text.startswith(b'threads profile: total 1001\n'), \
                text[:60]
        except OSError as e:
            failures.append(f'read {i + 1}: {e}')
        # let the abandoned dump end before the next round
        time.sleep(1)
    assert not failures, '\n'.join(failures) + '\n' + proffs.log_text()
    assert not proffs.log_lines('EBUSY')
    assert_nothing_stopped(t.pid, spinning=False)


@pytest.mark.parametrize('proffs_options', [('cache_ms=0',)], indirect=True)
def test_threads_ending_mid_dump_are_skipped(proffs, target):
    """churn creates a thread every millisecond that lives some tens of
    microseconds: a dump lists threads that are gone by the time it comes
    to them. Every dump succeeds and leaves no thread stopped or traced;
    such threads are counted as skipped (in the profile's comment and
    the session's log line). A short thread lives some tens of
    microseconds of each millisecond, so a few percent of dumps list
    one, even on an idle machine: 300 dumps at most (on this busy
    machine, half the dumps skipped one)."""
    t = target('churn')
    skipped = dumps = 0
    while dumps < 20 or (not skipped and dumps < 300):
        data = proffs.read(t.pid, 'goroutine.pb.gz')
        dumps += 1
        assert data[:2] == b'\x1f\x8b', (dumps, data[:40])
        for tid, (state, _, tracer) in task_tracers(t.pid).items():
            assert tracer == 0, f'dump {dumps}: {tid} traced by {tracer}'
            assert state not in 'tT', f'dump {dumps}: {tid} left in {state}'
        m = re.search(rb'proffs: (\d+) threads stopped one at a time, .*; '
                      rb'(\d+) skipped', gzip.decompress(data))
        assert m and int(m.group(1)) >= 2, (dumps, m)
        if int(m.group(2)) and not skipped:
            path = save(data, 'goroutine-churn.pb.gz')
            comments = util.validate_pprof(path).comments
            assert any(f'{int(m.group(2))} skipped' in c
                       for c in comments), comments
        skipped += int(m.group(2))
    print(f'{skipped} threads skipped over {dumps} dumps')
    assert skipped, f'no thread skipped in {dumps} dumps'
    logged = proffs.log_lines(r'session \d+ done: .*threads=\d+ '
                              r'skipped=[1-9]')
    assert logged, proffs.log_text()
    assert t.proc.poll() is None


def in_epoll_wait(pid):
    """Whether pid's main thread is blocked in epoll_wait or
    epoll_pwait(2) (x86-64's numbers, as /proc/PID/syscall gives them)."""
    with open(f'/proc/{pid}/syscall') as f:
        return f.read().split(' ', 1)[0] in ('232', '281', '441')


def test_threads_ended_by_the_dump_are_skipped(proffs, target):
    """Deterministic: manythreads 1000 exit ends its 1,000 threads the
    moment the dump has stopped and released its main thread, the first
    one /proc lists; the threads after it are gone when the dump comes to
    them (ptrace says ESRCH, or /proc no longer has them). The dump
    succeeds with those it read, counts the others as skipped, leaves
    nothing stopped or traced, and swallows no signal: every thread
    ends, even one stopped when its signal came."""
    t = target('manythreads', 1000, 'exit')
    # "ready" comes just before the main thread's epoll_wait: on a busy
    # machine a dump could stop it before it got there, and then nothing
    # would end the threads
    end = time.monotonic() + 10
    while not in_epoll_wait(t.pid) and time.monotonic() < end:
        time.sleep(0.01)
    assert in_epoll_wait(t.pid), open(f'/proc/{t.pid}/syscall').read()
    text = proffs.read(t.pid, 'goroutine.txt').decode()
    save(text.encode(), 'goroutine-ended.txt')
    m = re.match(r'threads profile: total (\d+)\n', text)
    assert m, text[:80]
    line = proffs.wait_log(r'session \d+ done: .*threads=(\d+) skipped=(\d+)')
    assert line, proffs.log_text()
    read, skipped = (int(x) for x in re.search(
        r'threads=(\d+) skipped=(\d+)', line[0]).groups())
    assert read == int(m.group(1)) and read + skipped == 1001, line
    assert skipped >= 100, line
    end = time.monotonic() + 10
    while len(os.listdir(f'/proc/{t.pid}/task')) > 1 and \
            time.monotonic() < end:
        time.sleep(0.05)
    for tid, (state, _, tracer) in task_tracers(t.pid).items():
        assert tracer == 0 and state not in 'tT', (tid, state, tracer)
    assert os.listdir(f'/proc/{t.pid}/task') == [str(t.pid)]


def test_dump_beside_a_heap_agent_being_loaded(proffs, target):
    """A thread dump that meets the daemon's own heap agent loader (a
    heap read opened a moment before: its loader seizes every thread)
    waits for it and begins again, instead of EBUSY "traced by another
    process"; over 8 fresh targets, each read at once both ways."""
    refused = []
    for i in range(8):
        t = target('burn')

        def heap():
            os.close(os.open(proffs.path(t.pid, 'heap_1s.pb.gz'),
                             os.O_RDONLY))
        th = threading.Thread(target=heap)
        th.start()
        try:
            text = proffs.read(t.pid, 'goroutine.txt').decode()
            assert text.startswith('threads profile: total 1\n'), text
        except OSError as e:
            refused.append((i, e))
        th.join()
        t.kill()
    assert not refused, (refused, proffs.log_lines(r'traced by'))



def test_heap_agent_loaded_beside_a_running_dump(proffs, target):
    """The other turn of the test above: a heap read whose agent loader
    meets a thread dump already running (a thousand threads, each held
    a moment in turn) waits for it and loads, instead of EBUSY "traced
    by"; fresh targets until the loader has met a dump (it says so:
    it waited for the target's turn, turns.h)."""
    refused, met = [], []
    for i in range(6):
        t = target('manythreads', 1000)
        tid = max(int(x) for x in os.listdir(f'/proc/{t.pid}/task'))
        util.wait_main_parked(t.pid, tid=tid)
        dumps = []

        def dump():
            try:
                dumps.append(proffs.read(t.pid, 'goroutine.txt').decode())
            except OSError as e:
                refused.append(('dump', i, e))
        th = threading.Thread(target=dump)
        th.start()
        proffs.wait_log(rf'start: pid={t.pid} kind=goroutine')
        time.sleep(0.01 * i)
        try:
            data = proffs.read(t.pid, 'heap_1s.pb.gz')
            util.validate_pprof(save(data, f'heap-beside-dump-{i}.pb.gz'))
        except OSError as e:
            refused.append(('heap', i, e))
        th.join()
        assert dumps and dumps[0].startswith(
            'threads profile: total 1001\n'), dumps
        t.kill()
        met = proffs.log_lines(rf'turns: pid {t.pid}: waited|'
                               r'a thread dump of ours holds')
        if met or refused:
            break
    assert not refused, (refused, proffs.log_lines(r'traced by|holds'))
    # else this proves nothing about the turn
    assert met, proffs.log_lines(r'session|inject')
