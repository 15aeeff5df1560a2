# SPDX-License-Identifier: GPL-2.0-or-later
"""A heap agent hook is never a trap (issue 25): whatever goes wrong
around it, the agent disarms - every GOT entry back to the allocator -
and the program goes on as if it were not there.

The agent is preloaded into the mallocs target, sampling every
allocation; the test plays the daemon's part in the shared ring itself
(tests/integration/test_heap.py reads the same target through a real
daemon): it attaches and beats, then breaks one thing - stops beating (the
daemon is gone), writes an impossible tail (a broken ring), or never
reads (a stuck ring). Each time the target's own malloc and free must be
libc's again within seconds, the agent must say why in the ring, and the
target must go on allocating."""
import mmap
import os
import struct
import subprocess
import threading
import time

import pytest

import util
from test_heap import next_report, wait_hooked

# struct ph_shared (sampler/heap/agent/heap_ring.h), x86-64 offsets
HEAD, STATE, DISARMS, WHY = 64, 104, 112, 160
TAIL, DAEMON_PID, HEARTBEAT = 192, 212, 216
WHY_LEASE, WHY_RING, WHY_STUCK = 1, 4, 5


class Ring:
    """The target's ring, mapped here; a thread beating its heartbeat
    while beating is set, and reading (records skipped, not parsed)
    while reading is."""

    def __init__(self, pid):
        fd = None
        for name in os.listdir(f'/proc/{pid}/fd'):
            link = os.readlink(f'/proc/{pid}/fd/{name}')
            if link.startswith('/memfd:proffs-heap-ring'):
                fd = os.open(f'/proc/{pid}/fd/{name}', os.O_RDWR)
                break
        assert fd is not None, 'no ring in the target'
        self.m = mmap.mmap(fd, 4096)
        os.close(fd)
        self.beating = self.reading = True
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def get(self, off, fmt='Q'):
        return struct.unpack_from(fmt, self.m, off)[0]

    def put(self, off, value, fmt='Q'):
        struct.pack_into(fmt, self.m, off, value)

    def attach(self):
        """As a daemon does: its pid, a first beat, and a beat every
        100 ms; everything written so far read."""
        self.put(TAIL, self.get(HEAD))
        self.put(HEARTBEAT, self.get(HEARTBEAT) + 1)
        self.put(DAEMON_PID, os.getpid(), 'i')
        self.thread.start()

    def _beat(self):
        while self.beating or self.reading:
            if self.beating:
                self.put(HEARTBEAT, self.get(HEARTBEAT) + 1)
            if self.reading:
                self.put(TAIL, self.get(HEAD))
            time.sleep(0.02)


class Preloaded:
    """The mallocs target with the agent preloaded, sampling every
    allocation (next_report() reads it as it reads a util.Target)."""

    def __init__(self):
        agent = os.path.join(util.BUILD, 'sampler', 'heap', 'agent',
                             'libproffs-heap.so')
        env = dict(os.environ, LD_PRELOAD=agent, PROFFS_HEAP_RATE='1')
        self.proc = subprocess.Popen(
            [os.path.join(util.TARGETS, 'mallocs'), '2'],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
        self.pid = self.proc.pid
        if self.proc.stdout.readline().strip() != b'ready':
            self.proc.kill()
            pytest.fail('mallocs did not start')


@pytest.mark.parametrize('fault', ['daemon_gone', 'broken_ring',
                                   'stuck_ring'])
def test_agent_disarms_and_the_program_goes_on(fault):
    t = Preloaded()
    try:
        assert next_report(t).hooked == (True, True), 'not armed'
        r = Ring(t.pid)
        assert r.get(STATE, 'I') == 1
        r.attach()
        time.sleep(0.5)
        assert next_report(t).hooked == (True, True), 'disarmed early'
        if fault == 'daemon_gone':
            r.beating = False       # the lease runs out in 3 s
            want = WHY_LEASE
        elif fault == 'broken_ring':
            r.reading = False
            time.sleep(0.1)         # its last read done
            r.put(TAIL, r.get(HEAD) + 4096)
            want = WHY_RING
        else:
            r.reading = False       # beating, never reading: it fills
            want = WHY_STUCK
        assert wait_hooked(t, False, timeout=10) == (False, False), \
            f'{fault}: the agent is still armed'
        assert r.get(STATE, 'I') == 0
        assert r.get(WHY, 'I') == want, r.get(WHY, 'I')
        assert r.get(DISARMS, 'I') >= 1
        a = next_report(t).ops
        time.sleep(0.5)
        b = next_report(t)
        assert b.ops > a and b.hooked == (False, False), \
            f'{fault}: the program stopped: {a} -> {b.ops}'
        r.beating = r.reading = False
    finally:
        t.proc.kill()
        t.proc.wait()
