# SPDX-License-Identifier: GPL-2.0-or-later
"""What a new user meets (issue 28): a reused result never looks live
(memstats.txt, watch-like rereads of a window), an idle process's empty
CPU profile says so and names wall, a whole host's profile is headed as
the host's."""

import os
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
