#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What heap profiling costs a malloc-heavy program, in one run: the
mallocs target (threads allocating and freeing small blocks as fast as
they can, reporting blocks per second) unprofiled; with the proffs agent
armed at the default rate, during a session and between sessions; with
the agent disarmed after its idle time; under `heaptrack -p` and after
heaptrack detached; under the uprobe fallback. Also the daemon's CPU per
allocation sample. Writes heap-results.md.

    tests/bench/heap.py [--build DIR] [--out DIR] [--seconds S]
                        [--rounds N] [--threads N]

Every condition runs on a fresh target, in rounds that visit every
condition in turn: slowdowns are against the unprofiled rate of the same
round, and the median round is reported (these machines are noisy).
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Target, cpu_seconds  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class Daemon:
    """proffs on a temporary mount, its log kept."""

    def __init__(self, build, *options):
        self.mnt = tempfile.mkdtemp(prefix='proffs-heapbench-')
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log')
        argv = [os.path.join(build, 'fs', 'proffs'), '-f',
                '-o', 'max_window=600,cache_ms=0']
        for o in options:
            argv += ['-o', o]
        self.proc = subprocess.Popen(argv + [self.mnt], stderr=self.log)
        for _ in range(300):
            if os.path.ismount(self.mnt):
                break
            time.sleep(0.05)
        else:
            sys.exit('proffs did not mount')

    def read(self, pid, name):
        with open(os.path.join(self.mnt, str(pid), name), 'rb') as f:
            return f.read()

    def read_async(self, pid, name):
        th = threading.Thread(target=self.read, args=(pid, name),
                              daemon=True)
        th.start()
        return th

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        subprocess.run(['fusermount3', '-u', self.mnt])
        self.proc.wait(timeout=30)
        os.rmdir(self.mnt)


def wait_agent(pid, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(f'/proc/{pid}/maps') as f:
            if 'proffs-heap' in f.read():
                return
        time.sleep(0.05)
    sys.exit(f'the agent never loaded into {pid}')


class Mallocs(Target):
    """The mallocs target; its rate is blocks per second of its own CPU
    time, so that other work on the machine (the daemon's included) does
    not count as the target's slowdown."""

    def rate(self, seconds):
        time.sleep(0.3)
        with self.lock:
            a = self.ops
        c0 = cpu_seconds(self.pid)
        time.sleep(seconds)
        with self.lock:
            b = self.ops
        c1 = cpu_seconds(self.pid)
        if not a or not b or c1 <= c0:
            sys.exit('the mallocs target did not report its work')
        # ops lines come every 200 ms: scale to the CPU time between them
        return (b[1] - a[1]) / (c1 - c0) * (seconds / (b[0] - a[0]))


WORKLOADS = [
    ('malloc and free only', []),
    ('malloc, fill the block, free', ['fill']),
]


def target(args):
    return Mallocs([os.path.join(args.build, 'tests', 'targets', 'mallocs'),
                    str(args.threads)] + args.workload)


def unprofiled(args, t):
    return t.rate(args.seconds)


def armed_between_sessions(args, t):
    d = Daemon(args.build, 'heap_idle=600')
    try:
        d.read(t.pid, 'heap_1s.pb.gz')
        return t.rate(args.seconds)
    finally:
        d.stop()


def armed_in_session(args, t):
    """Also the daemon's CPU per sample, from the session's log line."""
    d = Daemon(args.build)
    try:
        d.read(t.pid, 'heap_1s.pb.gz')
        cpu0 = cpu_seconds(d.proc.pid)
        th = d.read_async(t.pid, f'heap_{int(args.seconds) + 2}s.pb.gz')
        time.sleep(0.5)
        rate = t.rate(args.seconds)
        th.join()
        cpu = cpu_seconds(d.proc.pid) - cpu0
        samples = int(re.findall(r'session \d+ done: .*samples=(\d+)',
                                 d.log_text())[-1])
        armed_in_session.us_per_sample = cpu / samples * 1e6 \
            if samples else float('nan')
        armed_in_session.samples_per_s = samples / (int(args.seconds) + 2)
        return rate
    finally:
        d.stop()


def disarmed(args, t):
    d = Daemon(args.build, 'heap_idle=1')
    try:
        d.read(t.pid, 'heap_1s.pb.gz')
        time.sleep(1 + 3 + 2)   # idle, then the agent's lease
        if 'letting the agent disarm' not in d.log_text():
            sys.exit('the agent was not let disarm')
        return t.rate(args.seconds)
    finally:
        d.stop()


def heaptrack_run(args, t, after):
    """heaptrack -p (every allocation, injected with gdb): the rate under
    it, or (after) once it has detached."""
    out = tempfile.mkdtemp(prefix='heaptrack-')
    ht = subprocess.Popen(['heaptrack', '-o', os.path.join(out, 'ht'),
                           '-p', str(t.pid)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(5)   # gdb attaches and injects
        if not after:
            return t.rate(args.seconds)
        ht.send_signal(signal.SIGINT)
        ht.wait(timeout=60)
        time.sleep(1)
        return t.rate(args.seconds)
    finally:
        if ht.poll() is None:
            ht.kill()
            ht.wait()
        shutil.rmtree(out, ignore_errors=True)


def under_heaptrack(args, t):
    return heaptrack_run(args, t, False)


def after_heaptrack(args, t):
    return heaptrack_run(args, t, True)


def uprobe_fallback(args, t):
    """The uprobe fallback over a window, breaker and all: the target's
    rate from the read's start to its end, which the breaker brings
    early (the probes are in for most of it)."""
    d = Daemon(args.build, 'heap=uprobe')
    try:
        time.sleep(0.3)
        with t.lock:
            a = t.ops
        c0 = cpu_seconds(t.pid)
        t0 = time.monotonic()
        d.read(t.pid, f'heap_{int(args.seconds)}s.pb.gz')
        uprobe_fallback.ran_s = time.monotonic() - t0
        time.sleep(0.25)   # the next ops line
        with t.lock:
            b = t.ops
        c1 = cpu_seconds(t.pid)
        trip = re.findall(r'tripped after [\d.]+ s: (\d+) probe hits in '
                          r'([\d.]+) s', d.log_text())
        if trip:
            uprobe_fallback.us_per_hit = (float(trip[-1][1]) /
                                          int(trip[-1][0]) * 1e6)
        return (b[1] - a[1]) / (c1 - c0)
    finally:
        d.stop()


CONDITIONS = [
    ('unprofiled', unprofiled),
    ('agent armed, between sessions', armed_between_sessions),
    ('agent armed, in a session', armed_in_session),
    ('agent disarmed (after idle)', disarmed),
    ('under heaptrack -p', under_heaptrack),
    ('after heaptrack detached', after_heaptrack),
    ('uprobe fallback', uprobe_fallback),
]


def run(args):
    rows = {name: [] for name, _ in CONDITIONS}
    for r in range(args.rounds):
        for name, fn in CONDITIONS:
            if 'heaptrack' in name and not shutil.which('heaptrack'):
                continue
            t = target(args)
            try:
                time.sleep(0.5)
                rate = fn(args, t)
            except OSError as e:
                print(f'round {r + 1}: {name}: failed: {e}', flush=True)
                continue
            finally:
                t.stop()
            rows[name].append(rate)
            print(f'round {r + 1}: {name}: {rate:,.0f} blocks/s',
                  flush=True)
    return rows


def report(results, args):
    lines = [f'mallocs target, {args.threads} thread(s), malloc+free of '
             f'16-256 byte blocks in batches of 64; {args.rounds} rounds of '
             f'{args.seconds} s per condition, each on a fresh process; '
             f'blocks per second of the target\'s own CPU time; median of '
             f'the per-round ratios to the unprofiled rate of the same '
             f'round.', '',
             '| workload | condition | blocks per CPU second (median) | '
             'vs unprofiled |',
             '| --- | --- | --- | --- |']
    for workload, rows in results:
        base = rows['unprofiled']
        for name, _ in CONDITIONS:
            v = rows[name]
            if not v:
                continue
            ratios = [x / b for x, b in zip(v, base)]
            r = statistics.median(ratios)
            lines.append(f'| {workload} | {name} | '
                         f'{statistics.median(v):,.0f} | '
                         f'{r:.3f} ({(r - 1) * 100:+.1f}%) |')
    us = getattr(armed_in_session, 'us_per_sample', None)
    if us is not None:
        lines += ['', f'Daemon CPU per allocation sample (unwind, symbolize,'
                  f' count), at the default rate: {us:.1f} µs '
                  f'({armed_in_session.samples_per_s:,.0f} samples/s).']
    ran = getattr(uprobe_fallback, 'ran_s', None)
    if ran is not None:
        hit = getattr(uprobe_fallback, 'us_per_hit', None)
        lines += ['', f'Uprobe fallback: the read of a {args.seconds} s '
                  f'window returned after {ran:.1f} s, the breaker having '
                  f'ended it' + (f'; the target\'s CPU per probe hit, '
                                 f'its own work included: {hit:.1f} µs'
                                 if hit else '') + '.']
    text = '\n'.join(lines) + '\n'
    with open(os.path.join(args.out, 'heap-results.md'), 'w') as f:
        f.write(text)
    print(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--out', default=os.path.join(REPO, 'tests', 'bench'))
    ap.add_argument('--seconds', type=int, default=4)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--threads', type=int, default=1)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('run as root (the uprobe fallback and heaptrack -p)')
    results = []
    for workload, argv in WORKLOADS:
        args.workload = argv
        print(f'== {workload}', flush=True)
        results.append((workload, run(args)))
    report(results, args)


if __name__ == '__main__':
    main()
