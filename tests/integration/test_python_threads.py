# SPDX-License-Identifier: GPL-2.0-or-later
"""Python threads by the names threading gave them (issue 26): Debian's
/usr/bin/python3 (3.11, which names no OS thread: the kernel knows each
as "python3") runs tests/targets/pythreads.py, whose threads
threading.Thread(name=...) named "worker-a", "worker-b" (both burning
CPU), "idle-c" and "odd\\nname" (asleep). proffs reads threading._active
from outside and labels the threads by those names in goroutine.txt's
headers and as thread_name in cpu and wall profiles."""

import json
import os
import re

import pytest

import util
from util import save

PYTHON = '/usr/bin/python3'
SCRIPT = os.path.join(util.TARGET_SRC, 'pythreads.py')


def start(python, name='python3'):
    """tests/targets/pythreads.py under the interpreter at python, with
    .tids, the kernel id of each thread by the name threading gave it."""
    t = util.Target(name, SCRIPT, path=python)
    t.tids = {name: str(tid) for name, tid in
              json.loads(t.proc.stdout.readline()).items()}
    return t


@pytest.fixture
def target():
    if not os.path.exists(PYTHON):
        pytest.fail(f'{PYTHON} is missing (Debian package python3)')
    t = start(PYTHON)
    yield t
    t.kill()


def check_thread_names(proffs, target, tag):
    """The threads of target (start()) by the names threading gave them,
    which the kernel does not know (each is the interpreter's name there):
    in goroutine.txt's headers, as thread_name in cpu (the busy ones) and
    wall (all but the one named with a newline, whose name is checked in
    goroutine.txt). tag names the profiles saved."""
    tids = target.tids
    assert set(tids) == {'MainThread', 'worker-a', 'worker-b', 'idle-c',
                         'odd\nname'}, tids
    assert tids['MainThread'] == str(target.pid)
    comm = os.path.basename(target.argv[0])[:15]
    for tid in tids.values():   # what names there were without proffs
        with open(f'/proc/{target.pid}/task/{tid}/comm') as f:
            assert f.read().strip() == comm
    dump = proffs.read(target.pid, 'goroutine.txt?debug=2').decode()
    for name, tid in tids.items():
        # a name is one line: its control characters are '?'
        shown = re.escape(name.replace('\n', '?'))
        assert re.search(rf'^thread {tid} \[[^]\n]*\]: {shown}$', dump,
                         re.M), (name, tid, dump)
    out = util.read_together(proffs, target.pid,
                             ['cpu_2s?hz=99.pb.gz', 'wall_1s.pb.gz'])
    for file, kind, want in (('cpu_2s?hz=99.pb.gz', 'cpu',
                              ('worker-a', 'worker-b')),
                             ('wall_1s.pb.gz', 'wall',
                              ('worker-a', 'worker-b', 'idle-c',
                               'MainThread'))):
        p = util.raw(save(out[file], f'{tag}-threads-{kind}.pb.gz'))
        named = {}
        for s in p.samples:
            named.setdefault(s.labels['thread'], set()).add(
                s.labels.get('thread_name'))
        for name in want:
            assert named.get(tids[name]) == {name}, (kind, name, named)


def test_thread_names_from_threading(proffs, target):
    check_thread_names(proffs, target, 'python')
