# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the integration tests: the daemon on a private mount,
target programs, go tool pprof and perf as external validators."""

import errno
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get('PROFFS_BUILD_DIR', os.path.join(REPO, 'build'))
DAEMON = os.path.join(BUILD, 'fs', 'proffs')
TARGETS = os.path.join(BUILD, 'tests', 'targets')
OUT_DIR = os.environ.get('PROFFS_TEST_OUT',
                         os.path.join(BUILD, 'tests', 'integration-out'))

# Daemon log lines that fail a test unless the test expects them.
BAD_LOG = re.compile(r'^proffs: (error|warning):|^\*\*\*|Sanitizer|'
                     r'runtime error|Segmentation fault|Aborted|traceback|'
                     r'uninitialized', re.I)


def wait_for_mount(proc, mnt, timeout=30.0):
    """Poll for the mount (0.1 s steps); fail fast if the daemon died."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.ismount(mnt):
            return
        if proc.poll() is not None:
            if os.path.ismount(mnt):
                return
            pytest.fail('file system process terminated prematurely '
                        f'(exit {proc.returncode})')
        time.sleep(0.1)
    pytest.fail(f'{mnt} was not mounted within {timeout} s')


class Daemon:
    """A foreground proffs on a private temporary mount point."""

    def __init__(self, tmpdir, options=()):
        # Outside pytest's private (0700) tmp tree: other users' tests
        # must reach the mount point.
        self.mnt = tempfile.mkdtemp(prefix='proffs-mnt-')
        os.chmod(self.mnt, 0o755)
        self.log_path = os.path.join(tmpdir, 'daemon.log')
        self.log = open(self.log_path, 'w')
        cmd = [DAEMON, '-f', self.mnt]
        for o in options:
            cmd += ['-o', o]
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.allowed = []
        self.stopped = False   # the test ended the daemon itself
        wait_for_mount(self.proc, self.mnt)

    def path(self, pid, name=''):
        return os.path.join(self.mnt, str(pid), name)

    def read(self, pid, name):
        with open(self.path(pid, name), 'rb') as f:
            return f.read()

    def expect_log(self, pattern):
        """Allow a daemon log line matching pattern (regex)."""
        self.allowed.append(re.compile(pattern))

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def log_lines(self, pattern):
        return [l for l in self.log_text().splitlines()
                if re.search(pattern, l)]

    def wait_log(self, pattern, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lines = self.log_lines(pattern)
            if lines:
                return lines
            time.sleep(0.05)
        return []

    def unmount(self):
        """Clean unmount; the daemon must exit 0 within 30 s."""
        subprocess.run(['fusermount3', '-u', '-z', self.mnt], check=True)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail('daemon did not exit after unmount')
        assert code == 0, f'daemon exited {code}:\n{self.log_text()}'
        os.rmdir(self.mnt)
        self.check_log()

    def cleanup(self):
        subprocess.run(['fusermount3', '-u', '-z', self.mnt],
                       stderr=subprocess.DEVNULL)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def check_log(self):
        bad = [l for l in self.log_text().splitlines()
               if BAD_LOG.search(l) and
               not any(a.search(l) for a in self.allowed)]
        assert not bad, 'unexpected daemon log lines:\n' + '\n'.join(bad)


class Target:
    """A program from tests/targets, running until the test ends."""

    def __init__(self, name, *args, path=None, user=None):
        prefix = ['setpriv', f'--reuid={user}', f'--regid={user}',
                  '--clear-groups', '--'] if user is not None else []
        self.proc = subprocess.Popen(prefix +
                                     [path or os.path.join(TARGETS, name)] +
                                     [str(a) for a in args],
                                     stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        assert line.strip() == b'ready', f'{name} did not start: {line!r}'
        self.pid = self.proc.pid

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def go_env(tmp):
    env = dict(os.environ)
    env.setdefault('HOME', tmp)
    env['GOCACHE'] = os.path.join(tmp, 'gocache')
    env['PPROF_TMPDIR'] = tmp
    return env


_go_tmp = tempfile.mkdtemp(prefix='proffs-go-')


def pprof(*args, check=True):
    """Run go tool pprof; returns stdout."""
    r = subprocess.run(['go', 'tool', 'pprof'] + [str(a) for a in args],
                       capture_output=True, text=True, env=go_env(_go_tmp),
                       timeout=120)
    if check:
        assert r.returncode == 0, f'pprof {args} failed:\n{r.stderr}'
    return r.stdout


def save(data, name):
    """Keep a profile with the test output; returns its path."""
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    with open(path, 'wb') as f:
        f.write(data)
    return path


def validate_pprof(path):
    """Every profile a test produces goes through pprof's three readers."""
    for mode in ('-top', '-traces', '-raw'):
        out = pprof(mode, path)
        assert out.strip(), f'pprof {mode} printed nothing for {path}'


def traces(path, sample_index='samples', extra=()):
    """Parse `pprof -traces`: list of (value, labels dict, [frames])
    with frames leaf first."""
    out = pprof('-traces', f'-sample_index={sample_index}', *extra, path)
    result = []
    blocks = re.split(r'^-+\+-+$', out, flags=re.M)[1:]
    for b in blocks:
        labels, frames, value = {}, [], None
        for line in b.splitlines():
            if not line.strip():
                continue
            m = re.match(r'^\s*([\w.]+):\s+(.*)$', line)
            if value is None and m and not re.match(r'^\s*\d', line):
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r'^\s+(\d+)\s+(\S.*)$', line)
            if value is None and m:
                value = int(m.group(1))
                frames.append(m.group(2).strip())
            else:
                frames.append(line.strip())
        if value is not None:
            result.append((value, labels, frames))
    return result


def share(samples, func, leaf=False):
    """Fraction of sample value whose stack holds func (or ends in it)."""
    total = sum(v for v, _, _ in samples)
    hit = sum(v for v, _, f in samples
              if ((f and f[0] == func) if leaf else func in f))
    return hit / total if total else 0.0


def perf_record(pid, seconds, tmp, hz=99):
    """perf record --call-graph dwarf of pid; returns perf script stacks as
    a list of (1, {}, frames) in the shape traces() returns."""
    data = os.path.join(tmp, 'perf.data')
    subprocess.run(['perf', 'record', '-q', '-F', str(hz), '-e', 'cpu-clock',
                    '--call-graph', 'dwarf', '-p', str(pid), '-o', data,
                    '--', 'sleep', str(seconds)],
                   check=True, capture_output=True, timeout=seconds + 60)
    r = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym'],
                       check=True, capture_output=True, text=True,
                       timeout=300)
    stacks, cur = [], []
    for line in r.stdout.splitlines() + ['']:
        if not line.strip():
            if cur:
                stacks.append((1, {}, cur))
            cur = []
            continue
        parts = line.split(None, 1)
        cur.append(parts[1].split('+')[0].strip() if len(parts) > 1
                   else '[unknown]')
    return stacks


def expect_errno(fn, code):
    with pytest.raises(OSError) as e:
        fn()
    assert e.value.errno == code, \
        f'expected {errno.errorcode[code]}, got {e.value!r}'


NOBODY = 65534


def as_user(uid, *cmd):
    """Run cmd with real, effective and saved uid and gid = uid."""
    return subprocess.run(['setpriv', f'--reuid={uid}', f'--regid={uid}',
                           '--clear-groups', '--'] + list(cmd),
                          capture_output=True, text=True, timeout=60)
