#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What the off-CPU kinds cost: a 100-thread target (sleepwork: each
thread does a fixed piece of work, then sleeps) read as
wall_Ns?hz=99 (and block), by each method (offcpu=procfs, offcpu=sched),
against an unprofiled twin; and the daemon's CPU per thread-sample (a
look at one thread at one tick, procfs) or per event (a switch out of a
thread and its switch back in, sched) beside its CPU per sample of a cpu
profile of the same target in the same run. Writes offcpu-results.md.

    tests/bench/offcpu.py [--build DIR] [--out DIR] [--seconds S]
                          [--rounds N] [--readme]

As in heap.py, every figure is a pair: two fresh targets on one CPU,
taking turns on it, only one of them profiled, the daemon and this
script on the other CPU; the figure is the profiled one's work per
second of its own CPU time over the other's, over the same span. The
unprofiled pair is the noise. Threads looked at by /proc are never
stopped, so what the target can lose is what perf's cpu-clock samples
cost it (wall) and what the daemon's reads take from the kernel; under
sched, what the kernel's record and stack copy at each switch out and
the switching of the events with the threads cost it.
"""

import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import heap  # noqa: E402
from bench import cpu_seconds  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
THREADS = 100
WORKLOADS = [
    ('100 threads waking 100 times a second (10 ms sleeps)',
     [str(THREADS), '10000', '10000']),
    ('100 threads waking 10 times a second (100 ms sleeps)',
     [str(THREADS), '100000', '50000']),
    # few switches for its CPU time: where auto still traces
    ('20 threads waking 10 times a second, ~1 ms of work each',
     ['20', '100000', '1000000']),
]
KINDS = ['wall', 'block']
# (row, kind, method, query): the reads of each round, each method's
# daemon; sched's block once more without kernel frames, what the
# kernel's unwinding at each switch out costs
READS = [(f'{k} {m}', k, m, '') for m in ('procfs', 'sched')
         for k in KINDS] + [('block sched kernel=0', 'block', 'sched',
                             '&kernel=0')]
# and block by the default: the method auto took (its session line)
READS += [('block auto', 'block', 'auto', '')]
# what a session line counts the daemon's work in, by method
PER = {'procfs': 'looks', 'sched': 'switches', 'cpu': 'samples'}


class Sleepwork(bench.Target):
    """sleepwork pinned to the targets' CPU: its count and its own CPU
    time, to the nanosecond, from one line (at ~1% of a CPU, /proc's
    10 ms ticks read apart from the count were noise of several %)."""

    def _read(self):
        for line in self.proc.stdout:
            m = re.match(r'ops (\d+) cpu_ns (\d+)', line)
            if m:
                with self.lock:
                    self.ops = (int(m.group(1)), int(m.group(2)) / 1e9)

    def mark(self):
        """(pieces of work done, own CPU seconds), at the next report."""
        return self.next_report()


def start(args, argv):
    path = os.path.join(args.build, 'tests', 'targets', 'sleepwork')
    return [Sleepwork(['taskset', '-c', str(heap.TARGET_CPU), path] + argv)
            for _ in range(2)]


def session_line(d, kind):
    lines = [l for l in d.log_text().splitlines()
             if re.search(rf'session \d+ done: .*kind={kind} ', l)]
    return lines[-1] if lines else ''


def field(line, key):
    m = re.search(rf'\b{key}=(\d+)', line)
    return int(m.group(1)) if m else 0


def profiled(args, d, t, kind, method, query=''):
    """(speed ratio, daemon µs per thread-sample, event or CPU sample):
    t[0] profiled, t[1] its twin."""
    name = f'{kind}_{args.seconds}s?hz=99{query}.pb.gz'
    c0 = cpu_seconds(d.proc.pid)
    a, b = heap.pair_rates(t[0], t[1], lambda: d.read(t[0].pid, name))
    spent = cpu_seconds(d.proc.pid) - c0
    line = session_line(d, kind)
    if method == 'auto':
        method = re.search(r' method=(\w+) ', line).group(1)
    assert kind == 'cpu' or f'method={method} ' in line, line
    per = field(line, PER[method])
    return a / b, (spent * 1e6 / per if per else None), line


def cpu_sample_cost(args, d):
    """Daemon µs per sample of cpu_Ns?hz=99 on workers 16 (busy threads:
    a cpu profile of sleepwork has hardly a sample, its threads each
    running less than a period in the window)."""
    t = bench.Target([os.path.join(args.build, 'tests', 'targets',
                                   'workers'), '16'])
    try:
        time.sleep(1)
        # the first session reads the program's symbols: warm is the
        # second, as the looks' sessions are
        d.read(t.pid, 'cpu_2s?hz=99.pb.gz')
        c0 = cpu_seconds(d.proc.pid)
        d.read(t.pid, f'cpu_{args.seconds}s?hz=99.pb.gz')
        spent = cpu_seconds(d.proc.pid) - c0
    finally:
        t.stop()
    n = field(session_line(d, 'cpu'), 'samples')
    return spent * 1e6 / n if n else None


def run(args, argv):
    rows = [row for row, _, _, _ in READS] + ['cpu']
    res = {k: [] for k in ['unprofiled'] + rows}
    us = {k: [] for k in rows}
    lines = {}
    ds = {m: heap.Daemon(args.build, f'offcpu={m}')
          for m in ('procfs', 'sched', 'auto')}
    try:
        for r in range(args.rounds):
            t = start(args, argv)
            try:
                time.sleep(1)
                # the profiled one alternates between the two, the
                # noise row read the same way round
                if r % 2:
                    t.reverse()
                for row, kind, m, q in [('unprofiled', '', '', '')] + \
                        READS + [('cpu', 'cpu', 'cpu', '')]:
                    if args.only and row != 'unprofiled' and \
                            not re.search(args.only, row):
                        continue
                    if row == 'unprofiled':
                        a, b = heap.pair_rates(
                            t[0], t[1], lambda: time.sleep(args.seconds))
                        res[row].append(a / b)
                        continue
                    d = ds['procfs' if m == 'cpu' else m]
                    ratio, per, line = profiled(args, d, t, kind, m, q)
                    res[row].append(ratio)
                    if per and kind != 'cpu':
                        us[row].append(per)
                    lines[row] = line
                print(f'round {r + 1}: ' + ', '.join(
                    f'{k} {v[-1]:.3f}' for k, v in res.items() if v),
                    flush=True)
            finally:
                for x in t:
                    x.stop()
            if args.only and not re.search(args.only, 'cpu'):
                continue
            per = cpu_sample_cost(args, ds['procfs'])
            if per:
                us['cpu'].append(per)
    finally:
        for d in ds.values():
            fusermount(d)
    return res, us, lines


def fusermount(d):
    os.system(f'fusermount3 -u {d.mnt}')
    d.proc.wait()


def report(results, args):
    lines = [f'sleepwork target, threads each doing a fixed '
             f'piece of work then sleeping. Each speed is the median of '
             f'{args.rounds} paired measurements of {args.seconds} s: two '
             f'fresh targets taking turns on one CPU, only one profiled '
             f'(the daemon on the other CPU), the profiled one\'s work per '
             f'second of its own CPU time over the other\'s (min-max '
             f'after it); the target reports its work and its CPU time '
             f'(to the nanosecond) on one line; the twin profiled '
             f'alternates from round to round, the noise row (neither '
             f'profiled) read the same way round. auto: the method '
             f'offcpu=auto took, by the target\'s switches per second of '
             f'its CPU time (above 5,000: procfs). procfs: a thread-sample is one look at one '
             f'thread at one tick (hz=99), its cost the daemon\'s CPU over '
             f'the read divided by the looks; sched: an event is a switch '
             f'of a thread out of its CPU and back, its cost the daemon\'s '
             f'CPU divided by the switches out; a CPU sample\'s, the '
             f'daemon\'s CPU '
             f'over a cpu profile at 99 Hz of workers 16 (busy threads, '
             f'its second session: warm) divided by its samples, in the '
             f'same run (cpu rows: a cpu '
             f'profile of sleepwork itself, whose threads each run less '
             f'than a period in the window, has almost no sample).', '',
             '| workload | read | method | speed vs twin (median, min-max) '
             '| daemon CPU per thread-sample, event / CPU sample |',
             '| --- | --- | --- | --- | --- |']
    for workload, (res, us, sl) in results:
        for k, v in res.items():
            if not v:
                continue
            m = statistics.median(v)
            per = (f'{statistics.median(us[k]):.1f} µs'
                   if us.get(k) else '-')
            kind, _, method = k.partition(' ')
            method, _, query = method.partition(' ')
            if method == 'auto':
                took = re.search(r' method=(\w+) ', sl.get(k, ''))
                method = f'auto: {took.group(1) if took else "?"}'
            what = 'unprofiled (noise)' if k == 'unprofiled' else \
                f'{kind}_{args.seconds}s?hz=99' + (f'&{query}' if query
                                                   else '')
            lines.append(f'| {workload} | {what} | {method or "-"} | '
                         f'{m:.3f} ({(m - 1) * 100:+.1f}%), {min(v):.3f}-'
                         f'{max(v):.3f} | {per} |')
    lines += ['', 'Session lines of the last round:', '']
    for workload, (_, _, sl) in results:
        for row, _, _, _ in READS + [('cpu', 'cpu', 'cpu', '')]:
            lines.append(f'    {sl.get(row, "")[:300]}')
    text = '\n'.join(lines) + '\n'
    bench.publish(args, 'offcpu', text)


def main():
    ap = bench.arguments(seconds=10, rounds=4)
    ap.add_argument('--only', default='',
                    help='the reads whose row matches this regex (and the '
                    'noise row)')
    ap.add_argument('--workload', default='',
                    help='the workloads whose name has this')
    args = ap.parse_args()
    if os.cpu_count() < 2:
        sys.exit('needs two CPUs: the targets on one, the tools on the other')
    os.sched_setaffinity(0, {heap.TOOLS_CPU})
    results = []
    for workload, argv in WORKLOADS:
        if args.workload not in workload:
            continue
        print(f'== {workload}', flush=True)
        results.append((workload, run(args, argv)))
    report(results, args)


if __name__ == '__main__':
    main()
