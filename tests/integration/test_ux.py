# SPDX-License-Identifier: GPL-2.0-or-later
"""What a new user meets (issue 28): a reused result never looks live
(memstats.txt, watch-like rereads of a window), an idle process's empty
CPU profile says so and names wall, a whole host's profile is headed as
the host's."""

import os
import re
import socket
import subprocess
import time

import pytest

import util


def test_memstats_is_current_on_every_read(proffs, target):
    """Two reads 1 s apart of an allocating process differ (the result
    cache gave the first one's figures for 10 s)."""
    t = target('mallocs', '2')
    first = proffs.read(t.pid, 'memstats.txt')
    time.sleep(1)
    second = proffs.read(t.pid, 'memstats.txt')
    assert first.startswith(b'# runtime.MemStats') and first != second


def test_rereading_a_window_takes_a_new_one(proffs, target):
    """watch -n1 cat cpu_1s.txt: each read is a new window, while a
    second rendering of it (.pb.gz after .txt) is the same session."""
    t = target('burn')
    proffs.read(t.pid, 'cpu_1s.txt')
    proffs.read(t.pid, 'cpu_1s.pb.gz')
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                r'window_ms=1000' % t.pid)) == 1
    proffs.read(t.pid, 'cpu_1s.txt')
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                r'window_ms=1000' % t.pid)) == 2


def test_idle_process_empty_cpu_profile_names_wall(proffs):
    idle = subprocess.Popen(['sleep', '60'])
    try:
        txt = proffs.read(idle.pid, 'cpu_2s.txt').decode()
        assert 'did not run on a CPU' in txt and 'wall_2s.svg' in txt, txt
        svg = proffs.read(idle.pid, 'cpu_1s.svg').decode()
        assert 'did not run on a CPU' in svg and 'wall_1s.svg' in svg
        p = util.validate_pprof(util.save(proffs.read(idle.pid,
                                                      'cpu_1s.pb.gz'),
                                          'idle-cpu.pb.gz'))
        assert not p.samples
        assert 'wall_1s.svg' in util.pprof('-raw', os.path.join(
            util.OUT_DIR, 'idle-cpu.pb.gz'))
    finally:
        idle.kill()
        idle.wait()


def test_whole_host_profile_is_headed_as_the_host(proffs, target):
    target('burn')
    txt = open(os.path.join(proffs.mnt, 'all', 'cpu_1s.txt')).read()
    head = txt.splitlines()[0]
    assert head == 'File: all processes of host %s' % socket.gethostname(), \
        head


def tmux(sock, *args, check=True):
    return subprocess.run(['tmux', '-S', sock] + list(args),
                          capture_output=True, text=True, check=check,
                          timeout=10)


HOT_ROW = re.compile(r'^\s+\d+(\.\d+)?%\s+\d+(\.\d+)?%\s+hot$', re.M)
REFRESH = re.compile(r'refresh (\d+)')


def test_top_in_tmux_shows_the_hot_function_refreshes_and_quits(
        proffs, target, tmp_path):
    """proffs top PID in a terminal (tmux): burn's hot function with its
    self and total shares within 3 s, the thread count, a new frame each
    second, and q quits."""
    t = target('burn')
    sock = str(tmp_path / 'tmux.sock')
    tmux(sock, 'new-session', '-d', '-s', 'top', '-x', '120', '-y', '30',
         f'{util.DAEMON} top -m {proffs.mnt} {t.pid}')
    try:
        start = time.monotonic()
        screen = ''
        while time.monotonic() - start < 3 and not HOT_ROW.search(screen):
            time.sleep(0.1)
            screen = tmux(sock, 'capture-pane', '-p', '-t', 'top').stdout
        assert HOT_ROW.search(screen), screen
        assert f'pid {t.pid} (burn), 1 thread ' in screen, screen
        first = int(REFRESH.search(screen).group(1))
        while time.monotonic() - start < 10:
            time.sleep(0.2)
            screen = tmux(sock, 'capture-pane', '-p', '-t', 'top').stdout
            m = REFRESH.search(screen)
            if m and int(m.group(1)) > first:
                break
        assert int(REFRESH.search(screen).group(1)) > first, screen
        # each frame is a new window: the daemon started one per frame
        assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                    r'window_ms=1000' % t.pid)) >= 2
        tmux(sock, 'send-keys', '-t', 'top', 'q')
        end = time.monotonic() + 3
        while time.monotonic() < end and \
                tmux(sock, 'has-session', '-t', 'top',
                     check=False).returncode == 0:
            time.sleep(0.1)
        assert tmux(sock, 'has-session', '-t', 'top',
                    check=False).returncode != 0, 'q did not quit'
    finally:
        tmux(sock, 'kill-server', check=False)


def first_proffs_mount():
    """The first proffs mount in mountinfo that answers (top's rule)."""
    with open('/proc/self/mountinfo') as f:
        for line in f:
            head, _, tail = line.partition(' - ')
            if tail.startswith('fuse.proffs '):
                mp = head.split()[4].encode().decode('unicode_escape')
                try:
                    os.stat(mp)
                    return mp
                except OSError:
                    pass


def top_output(*args):
    """proffs top ARGS for 1.5 s, then q: (exit status, stdout)."""
    p = subprocess.Popen([util.DAEMON, 'top'] + list(args),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    out, err = p.communicate('q', timeout=10)
    return p.returncode, out + err


def test_top_finds_the_mount_and_says_why_not(proffs):
    """Without -m, the first proffs mount that answers; a process that
    does not exist: the errno and what errors.txt says."""
    code, out = top_output('999999999')
    assert code == 0, out
    assert ('cannot read %s/999999999/cpu_1s.txt: No such file or '
            'directory' % first_proffs_mount()) in out, out
    code, out = top_output('-m', proffs.mnt, '999999999')
    assert code == 0 and '999999999: ENOENT: no such process' in out, out
    r = subprocess.run([util.DAEMON, 'top', '-x'], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 2 and 'usage: proffs top' in r.stderr


def test_status_shows_sessions_in_flight_and_where_the_log_goes(proffs,
                                                                 target):
    t = target('burn')
    cat = subprocess.Popen(['cat', proffs.path(t.pid, 'cpu_3s.pb.gz')],
                           stdout=subprocess.DEVNULL)
    try:
        assert proffs.wait_log(r'window_ms=3000')
        time.sleep(0.5)
        with open(os.path.join(proffs.mnt, 'status')) as f:
            st = f.read()
    finally:
        cat.wait(timeout=20)
    m = re.search(r'^# session \d+: pid %d cpu, \d+ readers?, ([\d.]+) s '
                  r'elapsed, ([\d.]+) s left$' % t.pid, st, re.M)
    assert m, st
    assert abs(float(m.group(1)) + float(m.group(2)) - 3) < 0.2, m.group(0)
    # a foreground daemon logs to stderr, and says so
    assert re.search(r'^# log: stderr', st, re.M), st
    with open(os.path.join(proffs.mnt, 'status')) as f:
        assert '# session' not in f.read()


def test_goroutine_debug1_kernel_frames_have_addresses(proffs, target):
    """goroutine.txt (debug=1) gives each kernel frame of a sleeping
    thread its function's address, as Go's dumps give every frame's, not
    0x0 (root: the kernel shows its stacks and addresses)."""
    t = target('parked')
    text = proffs.read(t.pid, 'goroutine.txt').decode()
    kernel = re.findall(r'^#\t(0x[0-9a-f]+)\t\[k\] (\S+)$', text, re.M)
    assert kernel, text
    assert all(int(a, 16) for a, _ in kernel), kernel
    with open('/proc/kallsyms') as f:
        syms = {}
        for line in f:
            addr, _, name = line.split()[:3]
            syms.setdefault(name, int(addr, 16))
    assert all(int(a, 16) == syms[n] for a, n in kernel), kernel
    for line in text.splitlines():
        if ' @ ' in line:
            assert ' 0x0 ' not in line + ' ', line


def test_a_process_is_named_as_it_runs_not_as_its_file(proffs, target,
                                                       tmp_path):
    """Run through a symlink (Debian's redis-server is one to
    redis-check-rdb), a process is headed by its own name."""
    link = tmp_path / 'my-server'
    os.symlink(os.path.join(util.TARGETS, 'burn'), link)
    t = target('burn', path=str(link))
    txt = proffs.read(t.pid, 'cpu_1s.txt').decode()
    assert txt.splitlines()[0] == 'File: my-server', txt[:200]


def grammar_words(text):
    """The kinds, parameters and formats a grammar block names."""
    lines = text[text.index('name     :='):].splitlines()
    end = next(i for i, l in enumerate(lines)
               if l.strip().startswith('format   :='))
    block = '\n'.join(lines[:end + 1])
    return set(re.findall(r'[a-z][a-z.]+', block)) - {'name', 'kind',
                                                       'duration', 'query',
                                                       'param', 'format'}


def test_help_and_man_page_say_the_readmes_grammar():
    """--help prints the grammar with three examples, --version starts
    with proffs's own, and the man page's grammar is the README's."""
    with open(os.path.join(util.REPO, 'README.md')) as f:
        readme = grammar_words(f.read())
    with open(os.path.join(util.REPO, 'contrib', 'proffs.1')) as f:
        man = grammar_words(f.read())
    assert {'memstats', 'kernel', 'wall', 'sample'} <= readme, readme
    assert man == readme, (man ^ readme)
    out = subprocess.run([util.DAEMON, '--help'], capture_output=True,
                         text=True).stdout
    assert grammar_words(out) >= readme - {'s', 'ms'}, \
        readme - grammar_words(out)
    assert len(re.findall(r'MOUNTPOINT/1234/', out)) >= 3, out
    first = subprocess.run([util.DAEMON, '--version'], capture_output=True,
                           text=True).stdout.splitlines()[0]
    assert first.startswith('proffs version '), first
