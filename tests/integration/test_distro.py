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
is unmounted. The programs' driver is tests/stress/distro.py's, the
stress suite's."""
import subprocess
import time

import util


def check_unharmed(tmp_path, loop, name):
    """loop: the program's driver (distro.Loop): it measures its speed
    before the read (load) and wants KEEP of it after (check)."""
    d = util.Daemon(str(tmp_path))
    try:
        time.sleep(0.5)     # past its start-up
        loop.load()         # progress before the read
        data = d.read(loop.pid, 'heap?seconds=2.pb.gz')
        loop.alive('after the read')
        p = util.validate_pprof(util.save(data, f'{name}.pb.gz'))
        assert p.samples, 'no allocation sampled'
        assert not [c for c in p.comments if 'ERROR' in c], p.comments
        assert d.log_lines(rf'heap: pid {loop.pid}: agent loaded')
        loop.check('after the read')
        status = d.read('', 'status').decode()
        assert 'agent_harmed: 0' in status, status
        d.unmount()
        loop.check('once the daemon left')
    except BaseException:
        print(d.log_text())
        d.cleanup()
        raise


def test_debian_python3_keeps_running(tmp_path, service):
    """/usr/bin/python3.11 building lists: a heap read leaves it running
    at its speed, during and after the daemon."""
    check_unharmed(tmp_path, service('python3'), 'python3')


def test_debian_node_keeps_running(tmp_path, service):
    """/usr/bin/node allocating arrays, buffers and strings: a heap read
    neither kills it nor stops it."""
    check_unharmed(tmp_path, service('node'), 'node')


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
