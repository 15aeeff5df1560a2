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


@pytest.fixture
def target():
    if not os.path.exists(PYTHON):
        pytest.fail(f'{PYTHON} is missing (Debian package python3)')
    t = util.Target('python3', SCRIPT, path=PYTHON)
    t.tids = {name: str(tid) for name, tid in
              json.loads(t.proc.stdout.readline()).items()}
    yield t
    t.kill()


def test_thread_names_from_threading(proffs, target):
    tids = target.tids
    assert set(tids) == {'MainThread', 'worker-a', 'worker-b', 'idle-c',
                         'odd\nname'}, tids
    assert tids['MainThread'] == str(target.pid)
    for tid in tids.values():   # what names there were without proffs
        with open(f'/proc/{target.pid}/task/{tid}/comm') as f:
            assert f.read().strip() == 'python3'
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
        p = util.raw(save(out[file], f'python-threads-{kind}.pb.gz'))
        named = {}
        for s in p.samples:
            named.setdefault(s.labels['thread'], set()).add(
                s.labels.get('thread_name'))
        for name in want:
            assert named.get(tids[name]) == {name}, (kind, name, named)
