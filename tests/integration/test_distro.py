# SPDX-License-Identifier: GPL-2.0-or-later
"""The binaries a Debian server runs are never harmed by a heap read
(issue 25). Debian's /usr/bin/python3.11 and /usr/bin/node are non-PIE
executables (ET_EXEC) whose .dynsym gives malloc and free the addresses
of their own PLT stubs; an agent that took those for the real functions
went round in a loop through its own redirected GOT entries (python spun
for good in the free hook, node died of SIGSEGV), and the daemon said
result=ok.

Each test runs the distro's program on an allocating loop that prints a
counter, reads heap?seconds=2.pb.gz through the mount, and checks that
the program goes on progressing as it did before: counted per second of
its own CPU time, so that a busy machine does not fail it and a livelock
(all CPU, no progress) does - after the read, and again once the daemon
is unmounted."""
import os
import subprocess
import threading
import time

import pytest

import util

PY_LOOP = r'''
import sys
n = 0
print('ready', flush=True)
while True:
    keep = [str(i) * 3 for i in range(1000)]
    more = [[i] for i in range(200)]
    n += 1
    if n % 20 == 0:
        print(n, flush=True)
'''

JS_LOOP = r'''
let n = 0, keep = [];
process.stdout.write('ready\n');
function step() {
  for (let k = 0; k < 500; k++) {
    keep.push({a: new Array(50).fill(k), b: Buffer.alloc(256 + k % 64),
               s: 'x'.repeat(k % 50)});
    if (keep.length > 5000) keep = [];
  }
  n++;
  if (n % 10 == 0) process.stdout.write(n + '\n');
  setImmediate(step);
}
step();
'''

TICK = os.sysconf('SC_CLK_TCK')
SPAN = 1.5          # seconds of each progress measurement
KEEP = 0.3          # at least this share of the speed before the read


class Loop:
    """A distro program on an allocating loop; count: the counter it
    printed last."""

    def __init__(self, argv):
        if not os.access(argv[0], os.X_OK):
            pytest.fail(f'{argv[0]} is not installed (contrib/deps.sh)')
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        line = self.proc.stdout.readline()
        if line.strip() != b'ready':
            self.kill()
            pytest.fail(f'{argv} did not start: {line!r}')
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.count = int(line)
            except ValueError:
                pass

    def cpu(self):
        """Seconds of CPU time it has used (user and system)."""
        with open(f'/proc/{self.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def speed(self):
        """(counter steps per CPU second, steps) over SPAN seconds; it
        must be alive throughout."""
        n0, c0 = self.count, self.cpu()
        time.sleep(SPAN)
        assert self.proc.poll() is None, \
            f'the program died: exit {self.proc.returncode}'
        n1, c1 = self.count, self.cpu()
        return (n1 - n0) / max(c1 - c0, 1.0 / TICK), n1 - n0

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def check_unharmed(tmp_path, argv, name):
    loop = Loop(argv)
    d = util.Daemon(str(tmp_path))
    try:
        time.sleep(0.5)     # past its start-up
        before, steps = loop.speed()
        assert steps > 0, 'the program made no progress before the read'
        data = d.read(loop.pid, 'heap?seconds=2.pb.gz')
        assert loop.proc.poll() is None, \
            f'the program died after the read: exit {loop.proc.returncode}'
        p = util.validate_pprof(util.save(data, f'{name}.pb.gz'))
        assert p.samples, 'no allocation sampled'
        assert not [c for c in p.comments if 'ERROR' in c], p.comments
        assert d.log_lines(rf'heap: pid {loop.pid}: agent loaded')
        after, steps = loop.speed()
        assert steps > 0 and after >= KEEP * before, \
            f'progress after the read: {after:.1f}/cpu s, before ' \
            f'{before:.1f}/cpu s ({steps} steps)'
        status = d.read('', 'status').decode()
        assert 'agent_harmed: 0' in status, status
        d.unmount()
        gone, steps = loop.speed()
        assert steps > 0 and gone >= KEEP * before, \
            f'progress once the daemon left: {gone:.1f}/cpu s, before ' \
            f'{before:.1f}/cpu s ({steps} steps)'
    except BaseException:
        print(d.log_text())
        d.cleanup()
        raise
    finally:
        loop.kill()


def test_debian_python3_keeps_running(tmp_path):
    """/usr/bin/python3.11 building lists: a heap read leaves it running
    at its speed, during and after the daemon."""
    script = tmp_path / 'loop.py'
    script.write_text(PY_LOOP)
    check_unharmed(tmp_path, ['/usr/bin/python3', str(script)], 'python3')


def test_debian_node_keeps_running(tmp_path):
    """/usr/bin/node allocating arrays, buffers and strings: a heap read
    neither kills it nor stops it."""
    script = tmp_path / 'loop.js'
    script.write_text(JS_LOOP)
    check_unharmed(tmp_path, ['/usr/bin/node', str(script)], 'node')


CRASH = r'''
import os, resource, signal, time
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
print('ready', flush=True)
while 'proffs-heap' not in open('/proc/self/maps').read():
    time.sleep(0.01)
time.sleep(0.3)
os.kill(os.getpid(), signal.SIGSEGV)
'''


def test_a_target_that_crashes_after_a_load_is_an_error(proffs, expect_log,
                                                        tmp_path):
    """A process that dies of SIGSEGV right after the agent was loaded
    (here by its own hand: the daemon cannot tell) is never result=ok:
    an error naming the pid, agent_harmed in status, and the profile's
    comment says so."""
    script = tmp_path / 'crash.py'
    script.write_text(CRASH)
    proc = subprocess.Popen(['/usr/bin/python3', str(script)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout.readline().strip() == b'ready'
        expect_log(rf'pid[ =]{proc.pid}\b.*(harmed|SIGSEGV)')
        data = proffs.read(proc.pid, 'heap?seconds=2.pb.gz')
        assert proc.wait(5) == -11
        p = util.validate_pprof(util.save(data, 'crashed.pb.gz'))
        assert [c for c in p.comments if 'ERROR' in c and 'SIGSEGV' in c], \
            p.comments
        assert proffs.log_lines(rf'error: heap: pid {proc.pid}: harmed by '
                                r'the heap agent: it died of SIGSEGV')
        assert proffs.log_lines(rf'pid={proc.pid} .*result=harmed')
        status = proffs.read('', 'status').decode()
        assert 'agent_harmed: 1' in status, status
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
