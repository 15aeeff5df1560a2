#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""stress.py - load the heap agent into fresh processes at random moments
and give each load a verdict (issue 16).

Each load starts a new target running one allocation pattern (heapstress
PATTERN, or heapstress_cxx built on libstdc++, tcmalloc or jemalloc),
waits a random 0.1-0.9 s, reads heap_1s?rate=1.pb.gz through a mounted
proffs, then (0.3 s after the read) tells the target to end its run
(SIGUSR2), and waits for it to check its blocks.

Verdicts: ok; refused (the read failed with EAGAIN: threads never safe at
once, a clean refusal); abort (the target died of SIGABRT); crash (another
fatal signal); corrupt (a block changed: exit 3); hang (the read or the
target did not finish in time); stopped (the target was left in a
ptrace or job-control stop); error (any other failed read or exit).
Passes when nothing is bad and at most max(1, loads // 100) are refused.

The patterns redis, nginx, sqlite3, python3 and node are Debian's own
programs under a real load, checked for correct answers and progress
after the read and after the daemon let the agent go (distro.py; their
verdicts wrong, stalled and dead are bad too).

    stress.py --loads 1000 --jobs 2 [--seed S] [--patterns a,b]
              [--build DIR] [--mount DIR | --proffs-build DIR]
"""
import argparse
import collections
import concurrent.futures
import errno
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import distro

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
C_PATTERNS = ['grow', 'calloc', 'threads', 'realloc', 'fork', 'signal',
              'dlopen', 'threadloop', 'fpu']
CXX_PATTERNS = ['cxx', 'cxx_tcmalloc', 'cxx_jemalloc']
DISTRO_PATTERNS = distro.PATTERNS
BAD = ('abort', 'crash', 'corrupt', 'hang', 'stopped', 'error') + distro.BAD
RUN_S = 60           # at most; SIGUSR2 ends it once the read is done
AFTER_READ_S = 0.3   # the pattern runs on this long with the agent armed
READ_TIMEOUT = 40    # a 1 s window, the load, and room for a busy machine
EXIT_TIMEOUT = 40


def command(build, pattern):
    d = os.path.join(build, 'tests', 'stress')
    if pattern in C_PATTERNS:
        return [os.path.join(d, 'heapstress'), pattern, str(RUN_S)]
    name = 'heapstress_' + pattern
    return [os.path.join(d, name), str(RUN_S)]


def available(build, patterns):
    have = distro.available()
    return [p for p in patterns if p in have or p not in DISTRO_PATTERNS
            and os.access(command(build, p)[0], os.X_OK)]


def proc_state(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return None


def read_profile(path, out):
    try:
        with open(path, 'rb') as f:
            data = f.read()
        # Python's readall() returns None where read(2) says EAGAIN
        if data is None:
            out['result'] = 'refused'
            return
        out['result'] = 'ok' if data[:2] == b'\x1f\x8b' else 'error:short'
    except OSError as e:
        out['result'] = ('refused' if e.errno == errno.EAGAIN else
                         'error:' + (errno.errorcode.get(e.errno) or
                                     str(e.errno)))


def one_load(build, mnt, pattern, seed, log_lines=None):
    """Returns (verdict, detail, pid)."""
    if pattern in DISTRO_PATTERNS:
        return distro.one_load(mnt, pattern, seed, read_profile, log_lines,
                               READ_TIMEOUT)
    rng = random.Random(seed)
    t = subprocess.Popen(command(build, pattern), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(rng.uniform(0.1, 0.9))
    out = {}
    reader = threading.Thread(
        target=read_profile,
        args=(os.path.join(mnt, str(t.pid), 'heap_1s?rate=1.pb.gz'), out),
        daemon=True)
    reader.start()
    reader.join(READ_TIMEOUT)
    read = out.get('result', 'hang')
    # The target runs until the read is done, however slow the load: a
    # target that finished first would make the verdict meaningless.
    time.sleep(AFTER_READ_S)
    try:
        t.send_signal(signal.SIGUSR2)
    except ProcessLookupError:
        pass
    try:
        stdout, stderr = t.communicate(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        state = proc_state(t.pid)
        t.kill()
        t.communicate()
        return ('stopped' if state in ('t', 'T') else 'hang',
                f'target state {state} after {EXIT_TIMEOUT} s', t.pid)
    rc = t.returncode
    if rc == -signal.SIGABRT:
        return 'abort', stderr.strip()[-200:], t.pid
    if rc < 0:
        return 'crash', f'signal {-rc}: {stderr.strip()[-200:]}', t.pid
    if rc == 3:
        return 'corrupt', stderr.strip()[-200:], t.pid
    if rc != 0 or 'checksum' not in stdout:
        return 'error', f'exit {rc}: {stderr.strip()[-200:]}', t.pid
    if read == 'hang':
        return 'hang', f'read did not finish in {READ_TIMEOUT} s', t.pid
    if read.startswith('error'):
        return 'error', read, t.pid
    return fallback(read, log_lines, t.pid), '', t.pid


def fallback(read, log_lines, pid):
    """A read the daemon answered with the uprobe fallback because the
    agent was refused (heap=auto) is a refused load, however good its
    profile."""
    if read == 'ok' and log_lines and \
       any('the agent was refused' in l for l in log_lines(pid)):
        return 'refused'
    return read


class Mount:
    """Our own proffs, from the build directory, for the run."""

    def __init__(self, build):
        self.dir = tempfile.mkdtemp(prefix='proffs-stress-')
        self.log_path = self.dir + '.log'
        agent = os.path.join(build, 'sampler', 'heap', 'agent', 'libproffs-heap.so')
        self.log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(
            [os.path.join(build, 'fs', 'proffs'), '-f', '-o',
             'agent=' + agent, '-o', 'heap_idle=1', self.dir],
            stdout=self.log,
            stderr=subprocess.STDOUT)
        end = time.monotonic() + 10
        while not os.path.ismount(self.dir):
            if self.proc.poll() is not None or time.monotonic() > end:
                sys.exit('stress: proffs did not mount')
            time.sleep(0.05)

    def close(self):
        subprocess.run(['fusermount3', '-u', self.dir])
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.rmdir(self.dir)

    def load_costs(self):
        """(load ms, hold us, rounds) of every agent load the log shows."""
        pat = re.compile(r'agent loaded in (\d+) ms: \d+ threads held '
                         r'(\d+) us, (\d+) rounds')
        with open(self.log_path, errors='replace') as f:
            return [tuple(int(x) for x in m.groups())
                    for m in map(pat.search, f) if m]

    def lines(self, pid):
        # polled every 0.1 s over a log of every load so far: the plain
        # substring test first keeps this harness, whose threads also
        # read the targets' progress, off the CPU
        key, word = f'pid {pid}', re.compile(rf'\bpid {pid}\b')
        with open(self.log_path, errors='replace') as f:
            return [l.rstrip() for l in f if key in l and word.search(l)
                    and re.search(r'inject|agent|heap', l)]


def plan_loads(loads, patterns, distro_share=None):
    """Which pattern each load runs: round robin; with distro_share, that
    share of the loads (rounded up) goes to the distro patterns among
    patterns, the rest to the others."""
    ours = [p for p in patterns if p not in DISTRO_PATTERNS]
    theirs = [p for p in patterns if p in DISTRO_PATTERNS]
    if distro_share is None or not ours or not theirs:
        return [patterns[i % len(patterns)] for i in range(loads)]
    n = min(loads, -int(-loads * distro_share // 1))
    return [theirs[i % len(theirs)] for i in range(n)] + \
        [ours[i % len(ours)] for i in range(loads - n)]


def run(build, mnt, loads, jobs, seed, patterns, log_lines=None,
        distro_share=None):
    """Returns {pattern: Counter(verdict)} and the list of bad loads."""
    rng = random.Random(seed)
    plan = plan_loads(loads, patterns, distro_share)
    rng.shuffle(plan)
    table = collections.defaultdict(collections.Counter)
    bad = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        futs = {ex.submit(one_load, build, mnt, p, rng.random(),
                          log_lines): p
                for p in plan}
        for f in concurrent.futures.as_completed(futs):
            p = futs[f]
            verdict, detail, pid = f.result()
            table[p][verdict] += 1
            if verdict in BAD or verdict == 'refused':
                extra = log_lines(pid) if log_lines else []
                bad.append((p, verdict, pid, detail, extra))
    return table, bad


def report(table, bad, loads):
    cols = ['ok', 'refused'] + list(BAD)
    print(f'{"pattern":14}' + ''.join(f'{c:>9}' for c in cols))
    total = collections.Counter()
    for p in sorted(table):
        total.update(table[p])
        print(f'{p:14}' + ''.join(f'{table[p][c]:>9}' for c in cols))
    print(f'{"all":14}' + ''.join(f'{total[c]:>9}' for c in cols))
    for p, verdict, pid, detail, extra in bad:
        print(f'{verdict}: {p} pid {pid}: {detail}')
        for l in extra[-3:]:
            print('    ' + l)
    nbad = sum(total[c] for c in BAD)
    ok = nbad == 0 and total['refused'] <= max(1, loads // 100)
    print(f'stress: {loads} loads, {total["ok"]} ok, {total["refused"]} '
          f'refused, {nbad} bad: {"PASS" if ok else "FAIL"}')
    return ok, total


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0


def print_costs(costs):
    """What a load costs the target: how long it took, how long its
    threads were held, how many rounds unsafe threads were let go."""
    if not costs:
        return
    for i, what in enumerate(('load ms', 'threads held us', 'rounds')):
        v = [c[i] for c in costs]
        print(f'stress: {what}: median {pct(v, 0.5)}, p90 {pct(v, 0.9)}, '
              f'p99 {pct(v, 0.99)}, max {max(v)} ({len(v)} loads)')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--loads', type=int, default=100)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--patterns', default=','.join(C_PATTERNS +
                                                   CXX_PATTERNS +
                                                   DISTRO_PATTERNS))
    ap.add_argument('--distro-share', type=float, default=0.35,
                    help='the share of loads into Debian\'s programs')
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--mount', help='a mounted proffs to use')
    ap.add_argument('--proffs-build', help='the build directory of the '
                    'proffs to mount (default: --build), e.g. an older one '
                    'to compare with')
    a = ap.parse_args()
    want = a.patterns.split(',')
    patterns = available(a.build, want)
    if patterns != want:
        print('stress: not built, skipped: ' +
              ', '.join(sorted(set(want) - set(patterns))))
    m = None if a.mount else Mount(a.proffs_build or a.build)
    try:
        t0 = time.monotonic()
        table, bad = run(a.build, a.mount or m.dir, a.loads, a.jobs,
                         a.seed, patterns, m.lines if m else None,
                         a.distro_share)
        ok, _ = report(table, bad, a.loads)
        print(f'stress: {time.monotonic() - t0:.0f} s')
        if m:
            print_costs(m.load_costs())
    finally:
        if m:
            m.close()
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
