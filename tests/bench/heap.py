#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What heap profiling costs a malloc-heavy program, in one run: the
mallocs target (a thread allocating and freeing small blocks as fast as
it can, reporting blocks done) with the proffs agent armed at the
default rate, during a session and between sessions; with the agent
disarmed after its idle time; under `heaptrack -p` and after heaptrack
detached; under the uprobe fallback (until its breaker ends the window).
Also the daemon's CPU per allocation sample. Writes heap-results.md.

    tests/bench/heap.py [--build DIR] [--out DIR] [--seconds S]
                        [--rounds N] [--readme] [--only WORD ...]
                        [--workload WORD] [--rate BYTES]

--only runs the conditions whose name has one of the words (the
unprofiled pair always runs: it is the noise); --workload the workloads
whose name has the word ("only", "fill"); --rate the sessions' sampling
rate instead of the default (`heap?rate=N&seconds=S.pb.gz`): a rate that
hardly samples shows what the hooks cost without sampling, in the build's
own layout.

This VM's speed drifts by tens of percent between seconds, and its two
CPUs are not equally fast at any moment (other guests), far more than the
costs measured. So every measurement is a pair: two fresh targets run at
once on the same CPU, taking turns on it, and only one is profiled; the
figure is the ratio of their speeds over the same span, in blocks per
second of each one's own CPU time. The daemon, heaptrack and this script
run on the other CPU. An "unprofiled" pair (neither profiled) shows how
well two targets agree when nothing differs: the noise left in every
other ratio.
"""

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
from bench import Target, cpu_seconds  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TARGET_CPU, TOOLS_CPU = 0, 1


def Daemon(build, *options):
    """proffs on the tools' CPU."""
    return bench.Daemon(build, *options, wrap=('taskset', '-c',
                                               str(TOOLS_CPU)))


class Mallocs(Target):
    """The mallocs target, pinned to one CPU."""

    def mark(self):
        """(blocks done, own CPU seconds), at the next report."""
        return self.next_report()[1], cpu_seconds(self.pid)


def pair_rates(a, b, span):
    """Blocks per own CPU second of a and b, over the same span: span()
    runs between the two marks (a sleep, or a read of a profile)."""
    a0, b0 = a.mark(), b.mark()
    span()
    a1, b1 = a.mark(), b.mark()
    return ((a1[0] - a0[0]) / (a1[1] - a0[1]),
            (b1[0] - b0[0]) / (b1[1] - b0[1]))


def sleep_span(args):
    return lambda: time.sleep(args.seconds)


def unprofiled(args, t, c):
    return pair_rates(t, c, sleep_span(args))


def heap_file(args, seconds):
    """The heap file of a window of seconds, at --rate if given."""
    if args.rate:
        return f'heap?rate={args.rate}&seconds={seconds}.pb.gz'
    return f'heap_{seconds}s.pb.gz'


def armed_between_sessions(args, t, c):
    d = Daemon(args.build, 'heap_idle=600')
    try:
        d.read(t.pid, heap_file(args, 1))
        return pair_rates(t, c, sleep_span(args))
    finally:
        d.stop()


def armed_in_session(args, t, c):
    """Also the daemon's CPU per sample, from the session's log line."""
    d = Daemon(args.build)
    try:
        d.read(t.pid, heap_file(args, 1))
        cpu0 = cpu_seconds(d.proc.pid)
        window = int(args.seconds) + 2
        th = d.read_async(t.pid, heap_file(args, window))
        time.sleep(0.5)
        rates = pair_rates(t, c, sleep_span(args))
        th.join()
        cpu = cpu_seconds(d.proc.pid) - cpu0
        samples = int(re.findall(r'session \d+ done: .*samples=(\d+)',
                                 d.log_text())[-1])
        if samples:
            armed_in_session.us.append(cpu / samples * 1e6)
            armed_in_session.per_s.append(samples / window)
        return rates
    finally:
        d.stop()


armed_in_session.us, armed_in_session.per_s = [], []


def disarmed(args, t, c):
    d = Daemon(args.build, 'heap_idle=1')
    try:
        d.read(t.pid, heap_file(args, 1))
        time.sleep(1 + 3 + 2)   # idle, then the agent's lease
        if 'letting the agent disarm' not in d.log_text():
            sys.exit('the agent was not let disarm')
        return pair_rates(t, c, sleep_span(args))
    finally:
        d.stop()


def heaptrack_run(args, t, c, after):
    """heaptrack -p (every allocation, injected with gdb): the rate under
    it, or (after) once it has detached."""
    out = tempfile.mkdtemp(prefix='heaptrack-')
    ht = subprocess.Popen(['taskset', '-c', str(TOOLS_CPU), 'heaptrack',
                           '-o', os.path.join(out, 'ht'),
                           '-p', str(t.pid)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(5)   # gdb attaches and injects
        if after:
            ht.send_signal(signal.SIGINT)
            # it first interprets what the target wrote, which takes
            # minutes here at times: the row is then left out rather
            # than hold the whole run up
            ht.wait(timeout=90)
            time.sleep(1)
        return pair_rates(t, c, sleep_span(args))
    finally:
        if ht.poll() is None:
            ht.kill()
            ht.wait()
        shutil.rmtree(out, ignore_errors=True)


def under_heaptrack(args, t, c):
    return heaptrack_run(args, t, c, False)


def after_heaptrack(args, t, c):
    return heaptrack_run(args, t, c, True)


def uprobe_fallback(args, t, c):
    """The uprobe fallback over a window, breaker and all, measured over
    the read, which the breaker brings to an early end: the probes are
    in for most of it. Also the target's CPU per probe hit."""
    d = Daemon(args.build, 'heap=uprobe')
    try:
        t0 = time.monotonic()
        rates = pair_rates(t, c, lambda: d.read(
            t.pid, heap_file(args, int(args.seconds))))
        uprobe_fallback.ran.append(time.monotonic() - t0)
        trip = re.findall(r'tripped after [\d.]+ s: (\d+) probe hits in '
                          r'([\d.]+) s', d.log_text())
        if trip:
            uprobe_fallback.us.append(float(trip[-1][1]) /
                                      int(trip[-1][0]) * 1e6)
        return rates
    finally:
        d.stop()


uprobe_fallback.ran, uprobe_fallback.us = [], []

CONDITIONS = [
    ('unprofiled (the noise of a pair)', unprofiled),
    ('agent armed, between sessions', armed_between_sessions),
    ('agent armed, in a session', armed_in_session),
    ('agent disarmed (after idle)', disarmed),
    ('under heaptrack -p', under_heaptrack),
    ('after heaptrack detached', after_heaptrack),
    ('uprobe fallback, until the breaker', uprobe_fallback),
]

WORKLOADS = [
    ('malloc and free only', []),
    ('malloc, fill the block, free', ['fill']),
]


def start(args, workload):
    """A target on the targets' CPU, with address randomization off: two
    processes with different layouts differ in speed by up to 20% (cache
    aliasing), which would drown what is measured."""
    exe = os.path.join(args.build, 'tests', 'targets', 'mallocs')
    return Mallocs(['setarch', os.uname().machine, '-R', 'taskset', '-c',
                    str(TARGET_CPU), exe, '1'] + workload)


def run(args, workload):
    ratios = {name: [] for name, _ in CONDITIONS}
    for r in range(args.rounds):
        for name, fn in CONDITIONS:
            if 'heaptrack' in name and not shutil.which('heaptrack'):
                continue
            if args.only and not any(o in name for o in args.only):
                continue
            # which of the two starts first alternates
            c = start(args, workload) if r % 2 else None
            t = start(args, workload)
            c = c or start(args, workload)
            try:
                time.sleep(0.5)
                rt, rc = fn(args, t, c)
            except (OSError, subprocess.SubprocessError) as e:
                print(f'round {r + 1}: {name}: failed: {e}', flush=True)
                continue
            finally:
                t.stop()
                c.stop()
            ratios[name].append(rt / rc)
            print(f'round {r + 1}: {name}: {rt:,.0f} vs {rc:,.0f} '
                  f'blocks per CPU second: {rt / rc:.3f}', flush=True)
    return ratios


def report(results, args):
    lines = [f'mallocs target: one thread allocating and freeing 16-256 '
             f'byte blocks in batches of 64 (writing one byte of each, or '
             f'filling it). Each figure is the median of {args.rounds} '
             f'paired measurements of {args.seconds} s: two fresh targets '
             f'taking turns on one CPU, only one profiled (the daemon on '
             f'the other CPU); the speed of the profiled one over that of '
             f'the other, in blocks per second of its own CPU time. The '
             f'unprofiled pair shows the noise left (its spread: '
             f'min-max).', '',
             '| workload | condition | speed vs unprofiled (median) | '
             'min-max |', '| --- | --- | --- | --- |']
    for workload, ratios in results:
        for name, _ in CONDITIONS:
            v = ratios[name]
            if not v:
                continue
            m = statistics.median(v)
            lines.append(f'| {workload} | {name} | {m:.3f} '
                         f'({(m - 1) * 100:+.1f}%) | {min(v):.3f}-'
                         f'{max(v):.3f} |')
    us, per_s = armed_in_session.us, armed_in_session.per_s
    rate = (f'rate {args.rate} (the sessions; between them the default)'
            if args.rate else 'the default rate')
    if args.rate and not us:
        lines += ['', f'Sessions sampled at {rate}.']
    if us:
        lines += ['', f'Daemon CPU per allocation sample (unwind, '
                  f'symbolize, count) at {rate}: '
                  f'{statistics.median(us):.1f} µs (median; '
                  f'{statistics.median(per_s):,.0f} samples/s).']
    if uprobe_fallback.ran:
        lines += ['', f'Uprobe fallback: the read of a {args.seconds} s '
                  f'window returned after '
                  f'{statistics.median(uprobe_fallback.ran):.1f} s (median),'
                  f' its breaker having ended it']
        if uprobe_fallback.us:
            hit = statistics.median(uprobe_fallback.us)
            lines[-1] += (f'; the target\'s CPU per probe hit, its own work '
                          f'included: {hit:.1f} µs')
        lines[-1] += '.'
    text = '\n'.join(lines) + '\n'
    bench.publish(args, 'heap', text)


def main():
    ap = bench.arguments(seconds=4, rounds=5)
    ap.add_argument('--only', nargs='+', default=[],
                    help='only the conditions whose name has a word')
    ap.add_argument('--workload', default='',
                    help='only the workloads whose name has this word')
    ap.add_argument('--rate', type=int, default=0,
                    help="the sessions' sampling rate in bytes")
    args = ap.parse_args()
    if (args.only or args.workload or args.rate) and args.readme:
        sys.exit('--readme takes the whole run at the default rate, not '
                 '--only/--workload/--rate')
    if args.only:
        args.only.append('unprofiled')
    if os.geteuid() != 0:
        sys.exit('run as root (the uprobe fallback and heaptrack -p)')
    if os.cpu_count() < 2:
        sys.exit('needs two CPUs: the targets on one, the tools on the other')
    os.sched_setaffinity(0, {TOOLS_CPU})
    results = []
    for workload, argv in WORKLOADS:
        if args.workload not in workload:
            continue
        print(f'== {workload}', flush=True)
        results.append((workload, run(args, argv)))
    report(results, args)


if __name__ == '__main__':
    main()
