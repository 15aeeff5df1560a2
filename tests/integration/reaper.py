# SPDX-License-Identifier: GPL-2.0-or-later
"""reaper.py STATUS -- CMD [ARG...]: run CMD as a child subreaper.

A daemon that forks into the background (fuse_daemonize) is nobody's
child once its parent exits: nobody learns its exit status. Under a
subreaper (prctl PR_SET_CHILD_SUBREAPER) such orphans are re-parented to
the subreaper instead of init, so this script can wait for them. It
appends to STATUS, one line each, as it happens:

    cmd EXIT            CMD itself exited
    PID COMM EXIT       a process CMD left behind exited

EXIT as os.waitstatus_to_exitcode (a signal is negative). It ends once CMD
and every process it left behind are gone.

Imported, Reaper drives it from a test."""

import ctypes
import os
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _append(path, line):
    with open(path, 'a') as f:
        f.write(line + '\n')


def main(argv):
    if len(argv) < 4 or argv[2] != '--':
        sys.exit('usage: reaper.py STATUS -- CMD [ARG...]')
    status, cmd = argv[1], argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        sys.exit(f'reaper.py: prctl: {os.strerror(ctypes.get_errno())}')
    p = subprocess.Popen(cmd)
    _append(status, f'cmd {p.wait()}')
    while True:
        try:    # look before reaping: a zombie still has its comm
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            break
        try:
            with open(f'/proc/{info.si_pid}/comm') as f:
                comm = f.read().strip()
        except OSError:
            comm = '?'
        _, st = os.waitpid(info.si_pid, 0)
        _append(status, f'{info.si_pid} {comm} '
                        f'{os.waitstatus_to_exitcode(st)}')


class Reaper:
    """CMD under reaper.py; popen_kw go to subprocess.Popen."""

    def __init__(self, status, cmd, **popen_kw):
        self.status = status
        open(status, 'w').close()
        self.proc = subprocess.Popen([sys.executable, __file__, status,
                                      '--'] + list(cmd), **popen_kw)

    def _lines(self):
        """[(pid or 'cmd', comm or None, exit)]"""
        out = []
        with open(self.status) as f:
            for l in f.read().splitlines():
                head, code = l.rsplit(' ', 1)
                pid, _, comm = head.partition(' ')
                out.append((pid, comm or None, int(code)))
        return out

    def wait_cmd(self, timeout):
        """CMD's exit status; None if it is still running at timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for pid, _, code in self._lines():
                if pid == 'cmd':
                    return code
            if self.proc.poll() is not None:
                raise RuntimeError(f'reaper.py exited {self.proc.returncode}')
            time.sleep(0.1)
        return None

    def adopted(self):
        """[(pid, comm)] of the processes CMD left behind, still alive."""
        out = []
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open(f'/proc/{pid}/stat') as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index('(') + 1:stat.rindex(')')]
            fields = stat[stat.rindex(')') + 2:].split()
            if int(fields[1]) == self.proc.pid and fields[0] != 'Z':
                out.append((int(pid), comm))
        return out

    def wait(self, timeout):
        """Wait for everything CMD left to exit: {pid: (comm, exit)}.
        Raises subprocess.TimeoutExpired if something stays."""
        self.proc.wait(timeout=timeout)
        return {int(pid): (comm, code) for pid, comm, code in self._lines()
                if pid != 'cmd'}

    def kill_all(self):
        """After a failure: SIGKILL CMD and whatever it left (and what
        they leave in turn), until the reaper ends."""
        end = time.monotonic() + 10
        while self.proc.poll() is None and time.monotonic() < end:
            for pid, _ in self.adopted():
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


if __name__ == '__main__':
    main(sys.argv)
