# SPDX-License-Identifier: GPL-2.0-or-later
"""The mount's inodes of processes that ended go (issue 29, "memory that
stays flat"). The kernel keeps the dentries and inodes of /prof/<pid>/
and its files cached after the process ends, and the daemon keeps a node
for each while the kernel holds it: 3,000 short-lived processes looked
at grew the daemon by 3.4 MiB, for good, and a 2-hour soak ended with
10.8 MiB held. The daemon now deletes the directory of a process gone
(fs/fuse/gone.c, every 5 s), and /prof/status counts the inodes."""
import os
import re
import subprocess
import time

import util

PASS_S = 5              # GONE_PERIOD_MS


def inodes(proffs):
    text = proffs.read('', 'status').decode()
    return int(re.search(r'^inodes: (\d+)$', text, re.M).group(1))


def look_at(proffs, pid):
    """What a user does to a process's directory: list it, read its
    command line, stat a profile file it lists (a name it does not
    list waits for its profile, to say its size)."""
    listed = sorted(n for n in os.listdir(proffs.path(pid))
                    if n.endswith('.pb.gz'))
    proffs.read(pid, 'cmdline')
    os.stat(proffs.path(pid, listed[0]))


def wait_inodes(proffs, at_most, timeout):
    deadline = time.monotonic() + timeout
    while True:
        n = inodes(proffs)
        if n <= at_most or time.monotonic() > deadline:
            return n
        time.sleep(0.5)


def test_directories_of_processes_gone_go(proffs):
    base = inodes(proffs)
    procs = [subprocess.Popen(['sleep', '600']) for _ in range(200)]
    try:
        for p in procs:
            look_at(proffs, p.pid)
        # the kernel holds them: a directory and two files each
        held = inodes(proffs)
        assert held >= base + 3 * 200 - 10, (base, held)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    # within two passes of the gone thread, only what was there before
    # (the root's names) is left
    left = wait_inodes(proffs, base + 2, timeout=2 * PASS_S + 3)
    assert left <= base + 2, (base, held, left)
    # the directories come back on a new look, and go again
    procs = [subprocess.Popen(['sleep', '600']) for _ in range(20)]
    for p in procs:
        look_at(proffs, p.pid)
        p.kill()
        p.wait()
    assert wait_inodes(proffs, base + 2, 2 * PASS_S + 3) <= base + 2


def test_open_profile_of_process_gone_still_reads(proffs, target):
    """A file open under a process that ended stays: the kernel keeps
    what is open, the read gets the session's profile, and the close
    frees it; the daemon serves on."""
    t = target('burn')
    with open(proffs.path(t.pid, 'cpu_2s.txt'), 'rb') as f:
        time.sleep(0.5)
        t.kill()
        assert not os.path.exists(f'/proc/{t.pid}')
        # two passes after the process ended, its directory is not
        # deleted under the open file
        time.sleep(2 * PASS_S + 1)
        text = f.read().decode()
    assert re.search(r'\bhot\n', text), text
    # closed: the next pass deletes it (the root's status is left)
    left = wait_inodes(proffs, 1, 2 * PASS_S + 3)
    assert left <= 1, left
    assert proffs.read('', 'status').startswith(b'version:')
