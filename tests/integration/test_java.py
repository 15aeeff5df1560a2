# SPDX-License-Identifier: GPL-2.0-or-later
"""Java frames in the profiles of a HotSpot JVM run with no flag (issue
26): tests/targets/Known.java, compiled here by javac, run by Debian's
OpenJDK 17. proffs names its compiled methods by asking the JVM itself,
through the attach protocol, for its perf map (Compiler.perfmap, what
jcmd sends), gives compiled frames their lines and the methods inlined
into them from the nmethod's debug information, and merges the JVM's
thread dump (Thread.print) into goroutine.txt.

Held to the CPU time the target itself counted in heavy() and light()
(ThreadMXBean) over the same window; heavy() does three times light()'s
work."""

import math
import os
import re
import subprocess
import time

import pytest

import browser
import util
from util import save

JAVA = '/usr/bin/java'
SRC = os.path.join(util.TARGET_SRC, 'Known.java')
HZ = 499
WINDOW = 5


def marked_line(tag):
    return util.marked_line(SRC, f'// line: {tag}')


@pytest.fixture(scope='module')
def classes(tmp_path_factory):
    if not os.path.exists(JAVA) or not os.path.exists('/usr/bin/javac'):
        pytest.fail('no java or javac (Debian package '
                    'openjdk-17-jdk-headless)')
    out = tmp_path_factory.mktemp('java')
    r = subprocess.run(['javac', '-d', str(out), SRC], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.fixture
def target(tmp_path, classes):
    ref = tmp_path / 'spent.txt'
    # its working directory is the attach trigger's first place
    t = util.Target('java', '-cp', classes, 'Known', ref, path=JAVA)
    t.ref = str(ref)
    yield t
    t.kill()
    for leftover in (f'/tmp/perf-{t.pid}.map', f'/tmp/.java_pid{t.pid}'):
        try:
            os.unlink(leftover)
        except OSError:
            pass


def spent(t):
    """CPU seconds the target counted in heavy() and light() so far (it
    writes them every 100 ms)."""
    return util.reported_numbers(t.ref, 'its CPU times')


def warm(t, seconds=1.0):
    """Until heavy() and light() ran that long (compiled by then)."""
    end = time.monotonic() + 20
    while time.monotonic() < end and sum(spent(t)) < seconds:
        time.sleep(0.05)


def test_cpu_shares_by_java_method(proffs, target):
    """heavy() and light() burn 3:1: their shares in cpu_*.pb.gz within 3
    points of what the target counted itself, named by the JVM's own
    names of its compiled methods, asked for through the attach socket
    with no flag on the JVM; >= 90% of the main thread's samples unwound
    through compiled and interpreted frames to main() and the thread's
    start."""
    warm(target)
    before = spent(target)
    data = proffs.read(target.pid, f'cpu_{WINDOW}s?hz={HZ}.pb.gz')
    after = spent(target)
    p = util.raw(save(data, 'java-cpu.pb.gz'))
    count = {'heavy': 0, 'light': 0}
    for s in p.samples:
        for fn in count:
            if any(re.fullmatch(rf'long Known\.{fn}\(\)', f)
                   for f in s.frames):
                count[fn] += s.values[0]
    n = count['heavy'] + count['light']
    assert n >= 0.5 * HZ * (sum(after) - sum(before)), (count, before,
                                                         after)
    theirs = (after[0] - before[0]) / (sum(after) - sum(before))
    ours = count['heavy'] / n
    assert abs(theirs - 0.75) < 0.05, theirs
    assert abs(ours - theirs) <= max(0.03, 3 * math.sqrt(
        theirs * (1 - theirs) / n)), (ours, theirs, count, p.comments)
    # the main thread's stacks go through its Java frames (compiled,
    # interpreted, the call stub) to the thread's start
    main_tid = {s.labels['thread'] for s in p.samples
                if 'long Known.heavy()' in s.frames}
    assert len(main_tid) == 1, main_tid
    main = [s for s in p.samples if s.labels['thread'] in main_tid]
    total = sum(s.values[0] for s in main)
    whole = sum(s.values[0] for s in main
                if s.frames[-3:] == ['ThreadJavaMain', 'start_thread',
                                     'clone3'] and 'Known.main' in s.frames)
    assert whole >= 0.9 * total, (whole, total, [
        s.frames for s in main if 'Known.main' not in s.frames][:5])
    # main() is interpreted: named by the Method its frame runs
    through = [s for s in main if s.frames[0] == 'long Known.heavy()']
    assert through and all(
        s.frames[1:4] == ['Known.main', 'StubRoutines (1)',
                          'JavaCalls::call_helper']
        for s in through if 'Known.main' in s.frames), through[0].frames
    # ... at the line of its call, from the bytecode its frame is at and
    # the Method's line number table, in its class's source file
    for fn in ('heavy', 'light'):
        calls = {s.locations[1].lines[0] for s in main
                 if s.frames[:2] == [f'long Known.{fn}()', 'Known.main']}
        assert calls == {('Known.main', 'Known.java',
                          marked_line(f'call-{fn}'))}, (fn, calls)
    # what attaching leaves: the listener's socket and the map
    assert os.path.exists(f'/proc/{target.pid}/root/tmp/perf-'
                          f'{target.pid}.map')
    assert not os.path.exists(f'/proc/{target.pid}/cwd/.attach_pid'
                              f'{target.pid}')


OUTER = 'long Known.outer()'
INNER = 'long Known.inner(Known$Op, long, long)'
APPLY = {'apply-mul': 'long Known$Mul.apply(long, long)',
         'apply-xor': 'long Known$Xor.apply(long, long)',
         'apply-add': 'long Known$Add.apply(long, long)'}


def test_interpreted_frames_without_perf_map(proffs, target):
    """Interpreted frames are found by where the JVM's tables
    (gHotSpotVMStructs: AbstractInterpreter::_code's StubQueue,
    StubRoutines::_call_stub_return_address) put the interpreter and
    the call stub, not by the perf map: a JVM that has not written its
    map yet (the first session's first samples, before the attach has it
    written) or cannot (here: its path is a directory) still has >= 95%
    of its main thread's samples unwound through its compiled frames to
    the interpreted main() and the thread's start. Without that, the walk
    passed main()'s frame by, to the call stub's return address."""
    warm(target, 0.5)
    blocker = f'/tmp/perf-{target.pid}.map'
    os.mkdir(blocker)
    try:
        data = proffs.read(target.pid, f'cpu_1s?hz={HZ}.pb.gz')
    finally:
        os.rmdir(blocker)
    p = util.raw(save(data, 'java-no-map.pb.gz'))
    main = [s for s in p.samples
            if s.frames[-3:] == ['ThreadJavaMain', 'start_thread', 'clone3']
            and 'JavaMain' in s.frames]
    total = sum(s.values[0] for s in main)
    whole = sum(s.values[0] for s in main if 'Known.main' in s.frames)
    assert total >= 0.25 * HZ, total
    assert whole >= 0.95 * total, (whole, total, [
        s.frames for s in main if 'Known.main' not in s.frames][:5])


def trace_blocks(path):
    """go tool pprof -traces -lines: each trace's value and frames, leaf
    first, as (function, file[:line], inlined), from pprof's own
    reading."""
    out = util.pprof('-traces', '-lines', path)
    blocks = []
    for block in out.split('-----------+-')[1:]:
        value, frames = None, []
        for line in block.splitlines()[1:]:
            if value is None:
                m = re.fullmatch(r'\s*([\d.]+)(ms|s|us)\s+(.*)', line)
                if not m:
                    continue    # a label's line
                value = float(m[1]) * {'s': 1e3, 'ms': 1, 'us': 1e-3}[m[2]]
                line = m[3]
            m = re.fullmatch(r'(.*) (\S+\.java(:\d+)?)( \(inline\))?',
                             line.strip())
            if m:
                frames.append((m[1], m[2], bool(m[4])))
            elif line.strip():
                frames.append((line.strip(), '', False))
        if value is not None:
            blocks.append((value, frames))
    return blocks


def test_compiled_lines_and_inlined_frames(proffs, target):
    """Compiled Java methods get their source file and lines in
    cpu_*.pb.gz, and a method the JIT inlined its own frame, from the
    nmethod's debug information (its PcDescs and scopes data), as pprof
    -traces -lines prints them: apply() (compiled, called through an
    interface call site too polymorphic to inline), called from inner()
    at its line, marked inlined into outer(), at the line of its call to
    inner(). A leaf is described by the next PcDesc
    (javascope.h): apply() at the line it is written on, heavy() at its
    loop's, where a safepoint poll is; or by no line when none follows."""
    warm(target)
    lines = {v: f'Known.java:{marked_line(k)}' for k, v in APPLY.items()}
    inner = (INNER, f'Known.java:{marked_line("inner")}', True)
    outer = (OUTER, f'Known.java:{marked_line("call-inner")}', False)
    for attempt in range(3):
        # the first session attaches and has the JVM write its perf map:
        # a method compiled later is named by the next one
        data = proffs.read(target.pid, f'cpu_2s?hz={HZ}.pb.gz')
        blocks = trace_blocks(save(data, f'java-inline-{attempt}.pb.gz'))
        through = [(v, b) for v, b in blocks
                   if b and b[0][0] in APPLY.values() and OUTER in
                   [f[0] for f in b]]
        if {b[0][0] for _, b in through} == set(APPLY.values()):
            break
    assert {b[0][0] for _, b in through} == set(APPLY.values()), \
        [b for _, b in blocks][:10]
    at_line = 0
    for v, b in through:
        fn, where, inl = b[0]
        assert where in (lines[fn], 'Known.java') and not inl, b
        at_line += v if where == lines[fn] else 0
        assert b[1:3] == [inner, outer], b
    assert at_line >= 0.5 * sum(v for v, _ in through), through
    # below outer(), its interpreted caller main() and the thread's start
    below = sum(v for v, b in through
                if 'Known.main' in [f[0] for f in b[3:]] and
                b[-1][0].startswith('clone3'))
    assert below >= 0.95 * sum(v for v, _ in through), [
        b for _, b in through if 'Known.main' not in [f[0] for f in b]][:3]
    # heavy() at its loop (the poll) or the line in it
    heavy = {}
    for v, b in blocks:
        if b and b[0][0] == 'long Known.heavy()':
            heavy[b[0][1]] = heavy.get(b[0][1], 0) + v
    loop = {f'Known.java:{marked_line(k)}' for k in ('heavy-loop', 'heavy')}
    assert heavy and set(heavy) <= loop | {'Known.java'}, heavy
    assert sum(heavy.get(k, 0) for k in loop) >= 0.5 * sum(
        heavy.values()), heavy


def test_sleeping_thread_named(proffs, target):
    """goroutine.txt names the thread parked in Thread.sleep() by its Java
    name, with its Java frames (file and line) below its native ones."""
    warm(target, 0.2)
    want = f'Known.parkedHere (Known.java:{marked_line("sleep")})'
    dump = proffs.read(target.pid, 'goroutine.txt?debug=2').decode()
    blocks = dump.split('\n\n')
    sleeper = [b for b in blocks if 'known-sleeper' in b]
    assert len(sleeper) == 1, dump
    assert want in sleeper[0], sleeper[0]
    assert 'java.lang.Thread.sleep' in sleeper[0], sleeper[0]
    # the native frames it sleeps in stay above the Java ones
    assert sleeper[0].index('JVM_Sleep') < \
        sleeper[0].index('java.lang.Thread.sleep'), sleeper[0]
    # the main thread too: its Java name and main() at the bottom
    main = [b for b in blocks
            if re.match(r'thread \d+ \[[^]]*\]: main\n', b)]
    assert len(main) == 1 and 'Known.main (Known.java:' in main[0], dump
    data = proffs.read(target.pid, 'goroutine.pb.gz')
    p = util.raw(save(data, 'java-goroutine.pb.gz'))
    names = {s.labels.get('thread_name') for s in p.samples}
    assert 'known-sleeper' in names and 'main' in names, names


def rgb_hue(fill):
    """(hue, saturation, value) of a fill as the browser paints it."""
    r, g, b = map(int, re.fullmatch(r'rgb\((\d+), (\d+), (\d+)\)',
                                    fill).groups())
    return util.hue(f'#{r:02x}{g:02x}{b:02x}')


def test_flame_colours_java_frames_apart(proffs, target, driver):
    """In flame_2s.svg, opened from the mount in headless Chromium, the
    Java methods (compiled heavy() and light(), interpreted main()) are
    painted in the runtime's purples, which the sampler decided from
    where it read them (the JVM's perf map, its Method), and the JVM's
    and libc's native frames around them in the warm palette."""
    warm(target)
    url = 'file://' + proffs.path(target.pid, 'flame_2s.svg')
    driver.get(url)
    fills = {}
    for name, _, _, _, fill in browser.frames(driver):
        fills.setdefault(name, set()).add(fill)
    java = ['long Known.heavy()', 'long Known.light()', 'Known.main']
    native = ['JavaCalls::call_helper', 'ThreadJavaMain', 'start_thread',
              'clone3']
    missing = [n for n in java + native if n not in fills]
    assert not missing, (missing, sorted(fills))
    for name in java:
        for fill in fills[name]:
            h, s, v = rgb_hue(fill)
            assert 250 <= h <= 300 and s >= 0.4 and v >= 0.6, \
                (name, fill, h)
    for name in native + [n for n in ('StubRoutines (1)', 'Interpreter')
                          if n in fills]:
        for fill in fills[name]:
            h, s, v = rgb_hue(fill)
            h = h - 360 if h > 180 else h
            assert -20 <= h <= 70 and s >= 0.5, (name, fill, h)
