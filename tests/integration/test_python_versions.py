# SPDX-License-Identifier: GPL-2.0-or-later
"""Python frames of CPython versions other than Debian's 3.11 (issue 26):
tests/targets/pyburn.py under each pyenv build found on this machine
(/root/.pyenv/versions/3.X.Y). Only the interpreters present are tested:
CI's fresh root has none and collects no test from here (a skip would
count as a failure there). Held to the same references as
test_python.py and test_python_threads.py, by their own checks: the
profiled process's own CPU shares, the sleeper's function and line in
goroutine.txt and wall, faulthandler's traceback of the same process,
the names threading gave tests/targets/pythreads.py's threads."""

import glob
import os
import re

import pytest

import util
from util import save
from test_python import BASE, HZ, SCRIPT, WAY, WINDOW, check_shares, \
    marked_line, py_name, spent, wait_parked, warm
import test_python
import test_python_threads

# the versions proffs reads the frames of (3.11 is test_python.py's)
SUPPORTED = {8, 9, 10, 12, 13}
# 3.8-3.10 call the evaluation loop once per Python frame: the folded
# stacks hold the C functions of each call between two Python frames
CALLS = {m: r'(?:[^;()]+;)+' for m in (8, 9, 10)}
# where time.sleep() waits: select() before 3.11
SLEEP_CALL = {m: 'select' for m in (8, 9, 10)}


def interpreters():
    """{minor: path} of the pyenv interpreters present."""
    found = {}
    for path in sorted(glob.glob('/root/.pyenv/versions/3.*/bin/python3.*')):
        m = re.search(r'/python3\.(\d+)$', path)
        if m and os.access(path, os.X_OK):
            found[int(m.group(1))] = path
    return found


PRESENT = interpreters() if os.access('/root/.pyenv', os.R_OK) else {}
WORKING = sorted(m for m in PRESENT if m in SUPPORTED)
# 3.7 has a _PyRuntime but no layout known to proffs: it says why
# (older ones have none, nothing to say why about)
UNKNOWN = sorted(m for m in PRESENT
                 if 7 <= m <= 13 and m not in SUPPORTED and m != 11)


def start(minor, *args):
    return util.Target(f'python3.{minor}', SCRIPT, *args,
                       path=PRESENT[minor])


@pytest.fixture
def reader(request, monkeypatch):
    # as test_python.py's reader fixture: eBPF (root) or eager
    util.daemon_bpf(monkeypatch, request.param == 'bpf', 'the eBPF reader')
    return request.param


def cpu_case(proffs, minor, reader, tmp_path, calls=''):
    """calls: what the folded stacks may hold between two Python frames
    (3.8-3.10: the C functions of each call)."""
    target = start(minor, tmp_path / 'tb.txt')
    twin = start(minor, os.devnull, tmp_path / 'spent.txt')
    twin.ref = str(tmp_path / 'spent.txt')
    try:
        name = f'cpu_{WINDOW}s?hz={HZ}'
        warm(target)
        warm(twin)
        before = spent(twin)
        t0 = util.cpu_seconds(target.pid)
        out = util.read_together(proffs, target.pid,
                                 [name + '.pb.gz', name + '.folded'])
        cpu_s = util.cpu_seconds(target.pid) - t0
        after = spent(twin)
    finally:
        target.kill()
        twin.kill()
    path = save(out[name + '.pb.gz'], f'python3{minor}-cpu-{reader}.pb.gz')
    p = util.raw(path)
    assert any(f'Python 3.{minor}: ' + WAY[reader] in c
               for c in p.comments), p.comments
    ours, theirs, merged, main_thread = check_shares(p, target.pid, cpu_s,
                                                     before, after)
    print(f'3.{minor} {reader}: ours {ours:.3f} theirs {theirs:.3f} '
          f'merged {merged}/{main_thread}')
    folded = out[name + '.folded'].decode()
    assert re.search(r';main \(pyburn\.py:\d+\);' + calls +
                     r'burn \(pyburn\.py:\d+\);' + calls +
                     r'heavy \(pyburn\.py:\d+\)', folded), folded[:2000]


CASES = [(m, r) for m in WORKING for r in ('bpf', 'eager')
         if r == 'eager' or os.geteuid() == 0]

if CASES:
    @pytest.mark.parametrize('minor,reader', CASES, indirect=['reader'],
                             ids=[f'3.{m}-{r}' for m, r in CASES])
    def test_cpu_shares(minor, reader, proffs, tmp_path):
        """heavy() and light() burn 3:1: within 2 points of the twin's
        own count, named by function and line, native frames kept (on
        3.8-3.10, the C functions of each call between the Python
        frames), the GIL labelled."""
        cpu_case(proffs, minor, reader, tmp_path, CALLS.get(minor, ''))

if WORKING:
    @pytest.mark.parametrize('minor', WORKING,
                             ids=[f'3.{m}' for m in WORKING])
    def test_sleeper_named(minor, proffs, tmp_path):
        """The thread parked in time.sleep() inside parked_here() shows
        that function and line in goroutine.txt?debug=2."""
        want = f'parked_here ({BASE}:{marked_line("sleep")})'
        t = start(minor, tmp_path / 'tb.txt')
        try:
            wait_parked(t)
            dump = proffs.read(t.pid, 'goroutine.txt?debug=2').decode()
        finally:
            t.kill()
        sleeper = [b for b in dump.split('\n\n') if want in b]
        assert len(sleeper) == 1, dump
        assert f'{SCRIPT}:{marked_line("sleep")}' in sleeper[0]
        assert SLEEP_CALL.get(minor, 'clock_nanosleep') in sleeper[0], \
            sleeper[0]
        assert re.search(r'burn \(pyburn\.py:\d+\)', dump), dump

if UNKNOWN:
    @pytest.mark.parametrize('minor', UNKNOWN,
                             ids=[f'3.{m}' for m in UNKNOWN])
    def test_unknown_version_says_why(minor, proffs, tmp_path):
        """A version without a known layout keeps its native frames, and
        the profile says why."""
        t = start(minor, tmp_path / 'tb.txt')
        try:
            warm(t, 0.3)
            data = proffs.read(t.pid, 'cpu_1s.pb.gz')
        finally:
            t.kill()
        p = util.raw(save(data, f'python3{minor}-unknown.pb.gz'))
        assert any(f'Python 3.{minor}: no known layout' in c
                   for c in p.comments), p.comments
        assert not any(py_name(f) for s in p.samples for f in s.frames)


# minor -> whether proffs names its threads as threading named them
THREAD_NAMES = {8, 9, 10, 12, 13}
NAMED = sorted(m for m in PRESENT if m in THREAD_NAMES)

if NAMED:
    @pytest.mark.parametrize('minor', NAMED, ids=[f'3.{m}' for m in NAMED])
    def test_thread_names(minor, proffs):
        """tests/targets/pythreads.py's threads by the names threading
        gave them, in goroutine.txt's headers and as thread_name in cpu
        and wall, as test_python_threads.py holds 3.11's: sys.modules,
        the Thread objects' attributes and their ints are where this
        version keeps them."""
        t = test_python_threads.start(PRESENT[minor], f'python3.{minor}')
        try:
            test_python_threads.check_thread_names(proffs, t,
                                                   f'python3{minor}')
        finally:
            t.kill()

if WORKING:
    @pytest.mark.parametrize('minor', WORKING,
                             ids=[f'3.{m}' for m in WORKING])
    def test_sleeper_in_wall(minor, proffs, tmp_path):
        """The sleeper's Python function and line hold half of a wall
        profile's time, as test_python.py holds 3.11's."""
        t = start(minor, tmp_path / 'tb.txt')
        try:
            wait_parked(t)
            test_python.check_sleeper_wall(proffs, t, f'python3{minor}')
        finally:
            t.kill()

    @pytest.mark.parametrize('minor', WORKING,
                             ids=[f'3.{m}' for m in WORKING])
    def test_dump_agrees_with_faulthandler(minor, proffs, tmp_path):
        """Each thread's Python frames in goroutine.txt?debug=2 are those
        faulthandler.dump_traceback() writes of the same process, as
        test_python.py holds 3.11's."""
        t = start(minor, tmp_path / 'tb.txt')
        t.dump = str(tmp_path / 'tb.txt')
        try:
            test_python.check_dump_agrees(proffs, t)
        finally:
            t.kill()
