# SPDX-License-Identifier: GPL-2.0-or-later
"""goroutine.txt of a Go program names its goroutines (issue 26), as
Go's /debug/pprof/goroutine?debug=1|2 does, read from the runtime's
list of goroutines (runtime.allgs) with nothing stopped.

goroutines.go parks three goroutines in a channel receive in waitHere,
one in time.Sleep in sleepHere, one on a locked sync.Mutex in lockHere,
one locked to its thread in pinnedHere, and burns CPU in main; on
SIGUSR1 it writes its own dump (pprof.Lookup("goroutine").WriteTo(f, 2)),
which ours must agree with.
It is built twice: with its symbol table, and with -ldflags='-s -w' as
Go programs ship (runtime.allgs is then found in .bss)."""

import os
import re
import signal
import subprocess
import time

import pytest

import util
from util import save

SRC = os.path.join(util.TARGET_SRC, 'go', 'goroutines.go')
HEADER = re.compile(r'^goroutine (\d+) \[([^\]]*)\]:$')


def line_of(text):
    """The line number of the first source line that is text."""
    with open(SRC) as f:
        for i, ln in enumerate(f, 1):
            if ln.strip() == text:
                return i
    raise AssertionError(text)


WANT = {    # function -> (Go's status for it, line it waits at)
    'main.waitHere': ('chan receive', line_of('<-c')),
    'main.sleepHere': ('sleep', line_of('time.Sleep(time.Hour)')),
    'main.lockHere': ('semacquire', line_of('mu.Lock()')),
    'main.pinnedHere': ('select (no cases), locked to thread',
                        line_of('select {}')),
}


@pytest.fixture(scope='module')
def builds(tmp_path_factory):
    d = tmp_path_factory.mktemp('goroutines')
    out = {}
    for name, flags in (('goroutines', []),
                        ('goroutines-s', ['-ldflags=-s -w'])):
        out[name] = str(d / name)
        r = subprocess.run(['go', 'build'] + flags + ['-o', out[name], SRC],
                           capture_output=True, text=True,
                           env=util.go_env(), cwd=str(d), timeout=300)
        assert r.returncode == 0, r.stderr
    return out


def parse_debug2(text, created=None):
    """{goid: (status, [(function, file, line)])} of a debug=2 dump, ours
    or Go's; created: {goid: (function, file, line)} of its "created by"
    lines."""
    out = {}
    for block in text.split('\n\n'):
        lines = block.strip('\n').split('\n')
        m = HEADER.match(lines[0]) if lines else None
        if not m:
            continue
        frames, fn = [], None
        for ln in lines[1:]:
            if ln.startswith('\t'):
                f = re.match(r'\t(.*?):(\d+)(?: \+0x[0-9a-f]+)?$', ln)
                if fn is not None:
                    frames.append((fn, f[1] if f else None,
                                   int(f[2]) if f else 0))
                fn = None
            elif ln.startswith('created by ') and created is not None:
                fn = None
                where = lines[lines.index(ln) + 1]
                f = re.match(r'\t(.*?):(\d+)(?: \+0x[0-9a-f]+)?$', where)
                created[int(m[1])] = (ln.split()[2], f[1], int(f[2]))
            elif ln.startswith('created by ') or ln.startswith('#'):
                fn = None
            else:
                fn = re.sub(r'\(.*\)$', '', ln)
        out[int(m[1])] = (m[2], frames)
    return out


def go_frames(frames):
    """The Go functions of a stack: its kernel frames ("[k] ...", a
    thread in a system call, where proffs may read them) left out."""
    return [fn for fn, _, _ in frames if not fn.startswith('[')]


def mains(frames):
    return [fn for fn, _, _ in frames if fn.startswith('main.')]


def wait_main_burning(proffs, pid, timeout=10):
    """Until main is in burn and off the write of "ready" (goroutines.go
    prints it from burn: a read at once can find main in that syscall),
    read through our own dump."""
    deadline = time.monotonic() + timeout
    while True:
        st, fr = parse_debug2(
            proffs.read(pid, 'goroutine.txt?debug=2').decode()).get(
                1, (None, []))
        if st in ('running', 'runnable', 'preempted') and \
                'main.burn' in mains(fr) and 'syscall.Write' not in \
                [f for f, _, _ in fr]:
            return
        assert time.monotonic() < deadline, (st, fr)
        time.sleep(0.02)


@pytest.mark.parametrize('name', ['goroutines', 'goroutines-s'])
def test_goroutines_named_like_go(proffs, builds, tmp_path, name):
    dump_path = str(tmp_path / 'go.dump')
    created, their_created = {}, {}
    t = util.Target(name, dump_path, path=builds[name])
    try:
        wait_main_burning(proffs, t.pid)
        text = proffs.read(t.pid, 'goroutine.txt?debug=2').decode()
        print(text)
        grouped = proffs.read(t.pid, 'goroutine.txt').decode()
        pb = proffs.read(t.pid, 'goroutine.pb.gz')
        folded = proffs.read(t.pid, 'goroutine.folded').decode()
        theirs = parse_debug2(util.go_own_dump(t.pid, dump_path),
                              their_created)
    finally:
        t.kill()
    path = save(pb, f'{name}.pb.gz')
    assert re.search(r'^\S*main\.waitHere;\S* 3$', folded, re.M), folded
    ours = parse_debug2(text, created)
    # stripped: allgs found in .bss, runtime.g's layout from proffs'
    # table for 1.19; else from the symbol table and the DWARF
    how = 'runtime.allgs (found in .bss: stripped) without' \
        if name.endswith('-s') else 'runtime.allgs (layout from DWARF) without'
    assert re.search(r'^# goroutines: \d+ of go1\.\d+.*' + re.escape(how),
                     text, re.M), text

    # each known goroutine: Go's status, its function at file:line
    for func, (status, line) in WANT.items():
        gs = [(st, fr) for st, fr in ours.values()
              if func in [f for f, _, _ in fr]]
        assert len(gs) == (3 if func == 'main.waitHere' else 1), (func, text)
        for st, fr in gs:
            assert st == status, (func, st, text)
            fn, file, ln = next(f for f in fr if f[0] == func)
            assert file and file.endswith('/goroutines.go') and \
                ln == line, (func, file, ln, text)
            # as Go's dump: the runtime's own frames (gopark) left out
            assert not any(re.match(r'runtime\.[a-z]', f)
                           for f in go_frames(fr)), (func, fr)
    # main burns CPU: on a thread, with the thread's stack
    st, fr = ours[1]
    assert st in ('running', 'runnable', 'preempted'), text
    if st == 'running':
        assert 'main.burn' in mains(fr), text

    # the same goroutines as Go's own dump, started by the same
    # functions; the parked ones parked in the same function
    assert set(ours) == set(theirs), (text, theirs)
    for goid, (st, fr) in ours.items():
        tst, tfr = theirs[goid]
        assert mains(fr)[-1:] == mains(tfr)[-1:], (goid, fr, tfr)
        if st == tst == 'syscall':
            # ours: the thread's whole stack, Go's: from where the call
            # was entered
            assert go_frames(tfr)[0] in go_frames(fr), (goid, fr, tfr)
        elif st == tst and st not in ('running', 'runnable'):
            assert go_frames(fr)[0] == go_frames(tfr)[0], (goid, fr, tfr)

    # "created by": the go statement, as Go's dump names it
    assert created == their_created and len(created) >= 6, \
        (created, their_created)

    # the pprof carries them as labels
    tags = util.pprof('-tags', path)
    assert f'goroutine: Total {len(ours)}.0' in tags and \
        'chan receive' in tags and 'created_by' in tags, tags

    # debug=1 groups the three waiters
    assert grouped.startswith('goroutine profile: total '), grouped
    block = next(b for b in grouped.split('\n\n')
                 if '\tmain.waitHere\t' in b)
    assert re.search(r'^3 @ 0x', block, re.M), block
    assert '"state":"chan receive"' in block, block


# where a goroutine's stack ends, unwound whole (main.deep: cut at 128
# frames, as Go's traceback cuts at 100)
STARTS = {'main.main', 'main.waitHere', 'main.sleepHere', 'main.lockHere',
          'main.main.func1', 'main.churn', 'main.churn.func1',
          'main.pinnedHere',
          'main.churn.func2', 'main.deep',
          'os/signal.loop'}


def test_goroutines_read_while_they_come_and_go(builds, tmp_path):
    """Goroutines that start, grow their stacks (the runtime moves them)
    and end all the time: each of 10 dumps, read meanwhile (by
    tests/tools/proffs-threads: a mount's dump is cached for 10 s) shows
    consistent goroutines only, the parked ones still named, counts what
    it dropped, and the target runs on."""
    tool = os.path.join(util.BUILD, 'tests', 'proffs-threads')
    t = util.Target('goroutines', str(tmp_path / 'dump'), 'churn',
                    path=builds['goroutines'])
    dropped = 0
    try:
        for _ in range(10):
            r = subprocess.run([tool, str(t.pid), '2'], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            text = r.stdout
            m = re.search(r'^# goroutines: (\d+) of .*; (\d+) dropped',
                          text, re.M)
            assert m, text
            dropped += int(m[2])
            ours = parse_debug2(text)
            assert int(m[1]) == len(ours), text
            assert len([g for g in ours.values()
                        if 'main.waitHere' in mains(g[1])]) == 3, text
            for st, fr in ours.values():    # never a torn stack
                assert st and fr and (st == 'running' or
                                      fr[-1][0] in STARTS), text
        assert t.proc.poll() is None
    finally:
        t.kill()
    print(f'{dropped} goroutines dropped over 10 dumps')


def test_stripped_allgs_searched_once(proffs, builds, tmp_path):
    """A stripped program's .bss is searched for runtime.allgs once: the
    place is kept with the program's object, so the dump of a second
    process of the same binary (same dso) reads allgs there, with no
    search, and still gives the goroutines Go's own dump lists."""
    name = 'goroutines-s'
    ts = [util.Target(name, str(tmp_path / f'go{i}.dump'),
                      path=builds[name]) for i in range(2)]
    try:
        texts = [proffs.read(t.pid, 'goroutine.txt?debug=2').decode()
                 for t in ts]
        theirs = parse_debug2(util.go_own_dump(ts[1].pid,
                                               str(tmp_path / 'go1.dump')))
    finally:
        for t in ts:
            t.kill()
    comment = [re.search(r'^# goroutines: \d+ of .*$', t, re.M)
               for t in texts]
    assert all(comment), texts
    assert comment[0][0].endswith('; .bss searched for runtime.allgs'), \
        texts[0]
    assert comment[1][0].endswith(
        '; runtime.allgs where an earlier read found it'), texts[1]
    ours = parse_debug2(texts[1])
    assert set(ours) == set(theirs), (texts[1], theirs)
    assert len([g for g in ours.values()
                if 'main.waitHere' in mains(g[1])]) == 3, texts[1]
