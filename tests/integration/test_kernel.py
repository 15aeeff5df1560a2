# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel frames (issue 17, item 7): where the daemon may see them (root
here), samples taken in the kernel carry the kernel's part of the
callchain above the user frames, named by the kernel itself (eBPF, as
root) or from /proc/kallsyms, as "[k] name" in every format; a thread asleep in a system call shows its
/proc/PID/task/TID/stack the same way in thread dumps. kernel=0 takes
them away; a daemon that may not see them gives what it gave before,
without an error."""
import os
import re
import subprocess
import threading
import time
import urllib.parse

import pytest

import browser
import util

HZ = 499
DD = 'echo ready; exec dd if=/dev/zero of=/dev/null bs=1M'


@pytest.fixture(params=['bpf', 'table'])
def namer(request, monkeypatch):
    """How the daemon about to start names kernel functions: asking the
    kernel, an address at a time (eBPF programs; root, as in CI), or
    reading /proc/kallsyms whole (PROFFS_NO_BPF, as without root). Comes
    before the proffs fixture, which starts the daemon."""
    util.daemon_bpf(monkeypatch, request.param == 'bpf', 'the eBPF namer')
    return request.param


def check_namer(proffs, namer):
    """The daemon named its kernel frames the way asked."""
    st = kernel_status(proffs)
    assert st['kallsyms_bpf'] == (namer == 'bpf'), st


def start_dd(target, **kw):
    """dd copying /dev/zero to /dev/null: nearly all its time is in the
    kernel, under read() and write()."""
    t = target('sh', '-c', DD, path='/bin/sh', **kw)
    for _ in range(100):
        if os.readlink(f'/proc/{t.pid}/exe').endswith('/dd'):
            return t
        time.sleep(0.01)
    pytest.fail('dd did not start')


def kernel_names():
    """Function names of this kernel, from /proc/kallsyms."""
    with open('/proc/kallsyms') as f:
        return {line.split()[2] for line in f
                if line.split()[1] in 'tTwW'}


def is_kernel(frame):
    return frame.startswith('[k] ')


def check_kernel_on_top(samples):
    """In every stack the kernel frames come first (leaf first), then only
    user frames; a kernel part ends where the kernel was entered: the
    system call entry (or an exception's, asm_exc_*) - but for the few
    the kernel's own unwinder stops short of it (ORC knows no frame in a
    retpoline thunk: perf -g gets the same one-frame chain)."""
    whole = part = 0
    for v, _, f in samples:
        nk = sum(1 for x in f if is_kernel(x))
        assert all(is_kernel(x) for x in f[:nk]), f
        if nk:
            part += v
            if re.match(r'\[k\] (entry_SYSCALL_64|asm_)', f[nk - 1]):
                whole += v
    assert whole >= 0.95 * part, (whole, part)


def test_dd_kernel_leaves_match_perf(namer, proffs, target, tmp_path):
    """dd's time is the kernel's: the same kernel functions are leaves in
    proffs as in `perf record -g` on the same process at the same time,
    each within 5 points, all of them above the user's read and write,
    whichever way the daemon names them.
    At 999 Hz for 5 s: a busy machine gives dd a fraction of a CPU, and
    two honest estimates of a 75% share from 300 samples each differ by
    more than 5 points one run in 20 (from 1,000, one in 300)."""
    hz = 999
    t = start_dd(target)
    p, theirs = util.alongside_perf(
        lambda: util.validate_pprof(util.save(
            proffs.read(t.pid, f'cpu_5s?hz={hz}.pb.gz'), 'dd.pb.gz')),
        t.pid, 5, str(tmp_path), hz=hz, call_graph='fp')
    assert p.total() >= 300 and len(theirs) >= 300, \
        (p.total(), len(theirs))
    samples = [(s.values[0], s.labels, s.frames) for s in p.samples]
    check_kernel_on_top(samples)
    ours_flat = {k[4:]: v for k, v in util.flat_shares(samples).items()
                 if is_kernel(k)}
    known = kernel_names()
    perf_flat = {k: v for k, v in util.flat_shares(theirs).items()
                 if k in known}
    assert sum(perf_flat.values()) >= 0.5, \
        f'dd was not in the kernel for perf: {perf_flat}'
    assert abs(sum(ours_flat.values()) - sum(perf_flat.values())) <= 0.05, \
        (ours_flat, perf_flat)
    big = {k for k, v in list(ours_flat.items()) + list(perf_flat.items())
           if v >= 0.05}
    for name in big:
        assert abs(ours_flat.get(name, 0) - perf_flat.get(name, 0)) <= 0.05, \
            f'{name}: proffs {ours_flat.get(name, 0):.3f}, ' \
            f'perf {perf_flat.get(name, 0):.3f}\n{ours_flat}\n{perf_flat}'
    # Under read(): the kernel's read path, then libc's read.
    reads = [f for _, _, f in samples if '[k] ksys_read' in f]
    assert reads, samples[:5]
    for f in reads:
        nk = sum(1 for x in f if is_kernel(x))
        assert f[nk] in ('read', '__GI___libc_read', '__libc_read'), f
    # pprof keeps the kernel's own name as the system name, in perf's
    # [kernel.kallsyms] mapping, which says its functions are known.
    kmaps = [m for m in p.mappings.values()
             if m.file == '[kernel.kallsyms]']
    assert len(kmaps) == 1 and '[FN]' in kmaps[0].flags, \
        [(m.file, m.flags) for m in p.mappings.values()]
    check_namer(proffs, namer)


def test_every_format_and_kernel_0(proffs, target):
    """[k] frames in .pb.gz, .folded and .txt of one session, the top
    table's numbers pprof's; kernel=0 removes them, and the time they
    had goes to read and write, the user frames that made the calls."""
    t = start_dd(target)
    names = [f'cpu_3s?hz={HZ}.pb.gz', f'cpu_3s?hz={HZ}.folded',
             f'cpu_3s?hz={HZ}.txt']
    out = util.read_together(proffs, t.pid, names)
    path = util.save(out[names[0]], 'dd-formats.pb.gz')
    p = util.validate_pprof(path)
    top = max(((k, v) for k, v in util.flat_shares(
        [(s.values[0], s.labels, s.frames) for s in p.samples]).items()),
        key=lambda kv: kv[1])[0]
    assert is_kernel(top), f'the top leaf is {top}'
    folded = out[names[1]].decode()
    util.save(out[names[1]], 'dd.folded')
    lines = folded.splitlines()
    assert lines and all(re.fullmatch(r'.+ \d+', l) for l in lines)
    assert any(l.rsplit(' ', 1)[0].endswith(';' + top) for l in lines), \
        f'{top} is no leaf in\n{folded}'
    text = out[names[2]].decode()
    util.save(out[names[2]], 'dd.txt')
    assert re.search(r'%\s+' + re.escape(top) + r'$', text, re.M), text
    want = util.pprof('-top', '-nodecount=1', path)
    assert re.search(r'%\s+' + re.escape(top) + r'$', want, re.M), want

    data = proffs.read(t.pid, f'cpu_3s?hz={HZ}&kernel=0.pb.gz')
    q = util.validate_pprof(util.save(data, 'dd-kernel0.pb.gz'))
    qs = [(s.values[0], s.labels, s.frames) for s in q.samples]
    assert not [f for _, _, f in qs if any(is_kernel(x) for x in f)]
    assert not [m for m in q.mappings.values()
                if m.file == '[kernel.kallsyms]']
    calls = sum(v for k, v in util.flat_shares(qs).items()
                if re.fullmatch(r'(__GI___libc_|__libc_)?(read|write)', k))
    assert calls >= 0.5, util.flat_shares(qs)
    # two sessions: kernel=0 is not served by the kernel=1 one
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                r'window_ms=3000 ' % t.pid)) == 2


def test_kernel_frames_in_the_flame_graph(proffs, target, driver):
    """The flame graph of dd, opened from the mount in Chromium: the
    kernel's read path is drawn above read, searchable by its name."""
    t = start_dd(target)
    name = urllib.parse.quote(f'cpu_3s?hz={HZ}.svg')
    url = 'file://' + proffs.path(t.pid, name)
    os.makedirs(util.OUT_DIR, exist_ok=True)
    shot = os.path.join(util.OUT_DIR, 'flame-kernel.png')
    m = browser.check_flame_svg(driver, url,
                                ['[k] vfs_read', '[k] ksys_read'], shot)
    assert 30 <= m['matched_pct'] <= 100, m
    svg = proffs.read(t.pid, f'cpu_3s?hz={HZ}.svg')
    _, text = util.check_svg(svg, 'dd-flame.svg')
    names = [n for n, _, _ in util.svg_frames(text)]
    assert '[k] vfs_read' in names and '[k] entry_SYSCALL_64_after_hwframe' \
        in names, names


def tid_named(pid, name):
    for tid in os.listdir(f'/proc/{pid}/task'):
        with open(f'/proc/{pid}/task/{tid}/comm') as f:
            if f.read().strip() == name:
                return int(tid)
    pytest.fail(f'no thread {name} in {pid}')


def proc_kstack(pid, tid):
    """The kernel's own view of a thread's kernel stack: function names,
    innermost first."""
    with open(f'/proc/{pid}/task/{tid}/stack') as f:
        return [re.match(r'\[<\w+>\] ([^+\s]+)', l).group(1)
                for l in f if l.strip()]


def wait_parked(pid, tid, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(f'/proc/{pid}/task/{tid}/stat') as f:
            if f.read().rsplit(')', 1)[1].split()[0] in 'SD':
                return
        time.sleep(0.01)
    pytest.fail(f'thread {tid} never slept')


def test_thread_dump_kernel_stacks(namer, proffs, target):
    """A thread parked in read() on a pipe: its dump shows the kernel
    stack /proc/PID/task/TID/stack shows, as [k] frames, then read and
    park_read; the thread asleep in vfork (never stopped) too; the
    spinning one none. kernel=0 shows none."""
    t = target('parked')
    reader, vforker = tid_named(t.pid, 'reader'), tid_named(t.pid, 'vforker')
    for tid in (reader, vforker):
        wait_parked(t.pid, tid)
    truth = {tid: proc_kstack(t.pid, tid) for tid in (reader, vforker)}
    assert truth[reader] and truth[vforker], truth
    assert 'ksys_read' in truth[reader], truth
    path = util.save(proffs.read(t.pid, 'goroutine.pb.gz'),
                     'goroutine-kernel.pb.gz')
    p = util.validate_pprof(path)
    # goroutine.pb.gz merges threads by stack: they are told by name here
    by_name = {s.labels['thread_name']: s.frames for s in p.samples}
    for name, tid in (('reader', reader), ('vforker', vforker)):
        f, names = by_name[name], truth[tid]
        assert f[:len(names)] == ['[k] ' + n for n in names], (f, names)
        assert not is_kernel(f[len(names)]), f
    assert by_name['reader'][len(truth[reader]):][:1] in (
        ['read'], ['__GI___libc_read'], ['__libc_read']), by_name['reader']
    assert 'park_read' in by_name['reader']
    assert not [x for x in by_name['spinner'] if is_kernel(x)], \
        by_name['spinner']
    text = proffs.read(t.pid, 'goroutine.txt?debug=2').decode()
    util.save(text.encode(), 'goroutine-kernel.txt')
    block = re.search(r'^thread %d \[.*?(?:\n\n|\Z)' % reader, text,
                      re.M | re.S).group(0)
    assert re.search(r'^\[k\] %s\(\.\.\.\)\n\t\[kernel.kallsyms\] '
                     % re.escape(truth[reader][0]), block, re.M), block
    assert proc_kstack(t.pid, reader) == truth[reader]

    path = util.save(proffs.read(t.pid, 'goroutine.pb.gz?kernel=0'),
                     'goroutine-kernel0.pb.gz')
    q = util.validate_pprof(path)
    assert not [s.frames for s in q.samples
                if any(is_kernel(x) for x in s.frames)]
    assert 'park_read' in {s.labels['thread_name']: s.frames
                           for s in q.samples}['reader']
    check_namer(proffs, namer)


def sysctl(name):
    with open(f'/proc/sys/kernel/{name}') as f:
        return int(f.read())


def test_unprivileged_daemon_leaves_them_out(tmp_path):
    """A daemon run by a plain user: /proc/.../stack is root's, so its
    thread dumps have no kernel frames; and unless perf_event_paranoid is
    1 or less and kptr_restrict 0 (then any user may see the kernel), its
    user's dd profiles as before, in user frames only. No error or
    warning in its log either way."""
    sees_kernel = sysctl('perf_event_paranoid') <= 1 and \
        sysctl('kptr_restrict') == 0
    dd = None
    with util.nobody_daemon() as mnt:
        try:
            # bs=1: a system call a byte, so that dd's own user time
            # (what a user-only profile holds) is a share of its CPU
            dd = subprocess.Popen(util.AS_NOBODY + [
                'dd', 'if=/dev/zero', 'of=/dev/null', 'bs=1'],
                stderr=subprocess.DEVNULL)
            time.sleep(0.2)
            got = {}
            for name, keep in ((f'cpu_2s?hz={HZ}.pb.gz', 'dd-user.pb.gz'),
                               ('goroutine.pb.gz',
                                'dd-user-threads.pb.gz')):
                r = subprocess.run(util.AS_NOBODY + ['cat', os.path.join(
                    mnt, str(dd.pid), name)], capture_output=True,
                    timeout=60)
                assert r.returncode == 0, r.stderr
                p = util.validate_pprof(util.save(r.stdout, keep))
                assert p.samples
                got[name] = [s.frames for s in p.samples]
        finally:
            if dd:
                dd.kill()
                dd.wait()
    cpu, dump = got.values()
    assert not [f for f in dump if any(is_kernel(x) for x in f)], dump
    with_kernel = [f for f in cpu if any(is_kernel(x) for x in f)]
    if sees_kernel:
        assert with_kernel, cpu
    else:
        assert not with_kernel, with_kernel
        # dd's user time, in its loop or at a read or write's return: what
        # holds for each sample is a user stack unwound to dd's own entry
        # (_start; dd is stripped)
        leaves = [f[0] for f in cpu]
        assert 'read' in leaves or 'write' in leaves, cpu
        roots = {f[-1] for f in cpu}
        assert len(roots) == 1 and re.fullmatch(r'dd\+0x[0-9a-f]+|_start',
                                                roots.pop()), cpu


@pytest.mark.parametrize('proffs_options', [('allow_other',)],
                         indirect=True)
def test_root_daemon_shows_them_to_whom_the_kernel_would(proffs, target):
    """The daemon (root) sees the kernel; a caller sees its frames only
    if the kernel would show them to the caller itself: nobody's read of
    its own dd has no [k] frame unless perf_event_paranoid lets every
    user see the kernel, and its thread dump none at all (/proc stacks
    are root's), where root's reads of the same process have them."""
    sees_kernel = sysctl('perf_event_paranoid') <= 1
    t = start_dd(target, user=util.NOBODY)
    parked = target('parked', user=util.NOBODY)
    got = {}
    for who, prefix in (('nobody', util.AS_NOBODY), ('root', [])):
        for pid, name in ((t.pid, f'cpu_2s?hz={HZ}.pb.gz'),
                          (parked.pid, 'goroutine.pb.gz')):
            r = subprocess.run(prefix + ['cat', proffs.path(pid, name)],
                               capture_output=True, timeout=60)
            assert r.returncode == 0, (who, name, r.stderr)
            p = util.validate_pprof(util.save(
                r.stdout, f'kernel-{who}-{name.split("?")[0]}'))
            got[who, name[:3]] = [s.frames for s in p.samples
                                  if any(is_kernel(x) for x in s.frames)]
    assert got['root', 'cpu'] and got['root', 'gor'], got
    assert not got['nobody', 'gor'], got['nobody', 'gor']
    assert bool(got['nobody', 'cpu']) == sees_kernel, got['nobody', 'cpu']


def kernel_status(proffs):
    text = proffs.read('', 'status').decode()
    return {k: int(v) for k, v in re.findall(
        r'^(kallsyms_\w+|dso_cache_idle_seconds): (\d+)$', text, re.M)}


def kernel_frames_named(proffs, pid, name, known):
    """The [k] frames of a profile of pid: there are some, named by the
    kernel's table (not by address)."""
    p = util.validate_pprof(util.save(proffs.read(pid, f'{name}.pb.gz'),
                                      f'dd-expiry-{name}.pb.gz'))
    frames = {x[4:] for s in p.samples for x in s.frames if is_kernel(x)}
    assert frames & known, frames
    return frames


@pytest.mark.parametrize('proffs_options', [('cache_idle=1',)],
                         indirect=True)
def test_kernel_table_expires(namer, proffs, target):
    """The kernel's symbol table expires like the DSO cache's objects
    (issue 29, item 4): with cache_idle=1, status shows it let go a
    second after the read that named dd's kernel frames; the next read
    holds it again while it runs (mapped again from /run/proffs; or the
    eBPF namer loaded again, a page and no table) and still names them;
    then it goes again."""
    t = start_dd(target)
    known = kernel_names()
    kernel_frames_named(proffs, t.pid, f'cpu_1s?hz={HZ}', known)
    time.sleep(1.5)
    st = kernel_status(proffs)
    assert st['kallsyms_idle_seconds'] == 1, st
    assert st['dso_cache_idle_seconds'] == 1, st    # one expiry
    assert st['kallsyms_bytes'] == 0 and st['kallsyms_symbols'] == 0, st
    assert st['kallsyms_holders'] == 0 and st['kallsyms_expired'] >= 1, st
    out = {}
    reader = threading.Thread(target=lambda: out.update(
        frames=kernel_frames_named(proffs, t.pid, f'cpu_3s?hz={HZ}',
                                   known)))
    reader.start()
    time.sleep(2)
    during = kernel_status(proffs)
    reader.join()
    assert 'frames' in out, 'the second read failed'
    assert during['kallsyms_holders'] == 1, during
    assert during['kallsyms_bpf'] == (namer == 'bpf'), during
    if namer == 'bpf':
        assert 0 < during['kallsyms_bytes'] <= 1 << 16, during
        assert during['kallsyms_symbols'] == 0, during
    else:
        assert during['kallsyms_bytes'] > 1 << 20, during
    time.sleep(1.5)
    after = kernel_status(proffs)
    assert after['kallsyms_bytes'] == 0 and after['kallsyms_holders'] == 0
    assert after['kallsyms_expired'] > st['kallsyms_expired'], (st, after)


def kernel_table_mapped(pid, namer):
    """Whether the daemon pid maps the boot's kernel table (kallsyms_i.h:
    /run/proffs/kallsyms-BOOT_ID), or the eBPF namer's page (its .bss
    map, ksym_bpf.c), seen from outside, not by a read."""
    mark = 'anon_inode:bpf-map' if namer == 'bpf' else '/kallsyms-'
    with open(f'/proc/{pid}/maps') as f:
        return any(mark in line for line in f)


@pytest.mark.parametrize('proffs_options', [('cache_idle=2',)],
                         indirect=True)
def test_idle_daemon_lets_the_kernel_table_go(namer, proffs, target):
    """Nobody reads, and the table still goes: the daemon's sweeper
    (fs/core/sweep.c) lets it go once idle, where the caches used to look
    only at a session's start or a status read, so an idle daemon kept
    its last session's table for ever. Watched in the daemon's own maps,
    with no read through the mount after the profile."""
    if os.geteuid():
        pytest.skip('the boot table is kept for root daemons only')
    t = start_dd(target)
    known = kernel_names()
    # table: the first daemon of a boot reads /proc/kallsyms and keeps
    # the table in /run/proffs; from the next use on, it is that file,
    # mapped. bpf: the namer's page, mapped while it is loaded
    kernel_frames_named(proffs, t.pid, f'cpu_1s?hz={HZ}', known)
    deadline = time.monotonic() + 30
    while kernel_status(proffs)['kallsyms_bytes']:
        assert time.monotonic() < deadline, kernel_status(proffs)
        time.sleep(0.5)
    kernel_frames_named(proffs, t.pid, f'cpu_1s?hz={HZ}', known)
    assert kernel_table_mapped(proffs.proc.pid, namer)
    check_namer(proffs, namer)
    deadline = time.monotonic() + 15
    while kernel_table_mapped(proffs.proc.pid, namer):
        assert time.monotonic() < deadline, 'still mapped, nobody reading'
        time.sleep(0.2)
    st = kernel_status(proffs)
    assert st['kallsyms_bytes'] == 0 and st['kallsyms_holders'] == 0, st
