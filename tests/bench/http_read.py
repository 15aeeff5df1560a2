#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""An HTTP read against a mount read of the same profile (SPEC §8 for
HTTP, issue 20), and both against perf record --call-graph dwarf + perf
script on the same target, in one run. Writes http-results.md.

    tests/bench/http_read.py [--build DIR] [--out DIR] [--window S] [--runs N]

One daemon with -o http=127.0.0.1:0 and cache_ms=0 (every read is a
session of its own); the target is workers with 4 threads at 999 Hz, so
a 5 s window holds about 10,000 samples when it has the CPUs. Reads
alternate, mount then HTTP, --runs times; each row is the median.
Figures: the daemon's CPU per sample (its whole CPU time over the read,
the HTTP server included) and how long after the window's end the bytes
were in the reader's hands, each beside perf's, as ratios.
"""

import os
import re
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

HZ = 999


def http_port(d):
    for _ in range(100):
        m = re.search(r'http: listening on \S+:(\d+) ', d.log_text())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    sys.exit('proffs did not say where it listens')


def measure(d, pid, window, read):
    """One read by read(); the same figures as bench.Daemon.profile."""
    cpu0 = bench.cpu_seconds(d.proc.pid)
    meter = bench.Meter(pid, d.proc.pid)
    t0 = time.monotonic()
    data = read()
    wall = time.monotonic() - t0
    (target_cpu, _), other = meter.stop()
    cpu = bench.cpu_seconds(d.proc.pid) - cpu0
    done = re.findall(r'session \d+ done: .*samples=(\d+)', d.log_text())
    return {'cpu': cpu, 'samples': int(done[-1]) if done else 0,
            'bytes': len(data), 'ready_ms': (wall - window) * 1000,
            'other': other, 'expected': target_cpu * HZ * window / wall}


def run(args):
    workers = os.path.join(args.build, 'tests', 'targets', 'workers')
    tmp = tempfile.mkdtemp(prefix='proffs-bench-http-')
    t = bench.Target([workers, '4'])
    d = bench.Daemon(args.build, 'http=127.0.0.1:0')
    rows = {'mount': [], 'http': [], 'perf': []}
    try:
        port = http_port(d)
        name = f'cpu_{args.window}s?hz={HZ}.pb.gz'
        url = (f'http://127.0.0.1:{port}/debug/pprof/profile?pid={t.pid}'
               f'&seconds={args.window}&hz={HZ}')

        def via_http():
            with urllib.request.urlopen(url, timeout=args.window + 60) as r:
                return r.read()
        for i in range(args.runs):
            for how, read in (('mount', lambda: d.read(t.pid, name)),
                              ('http', via_http)):
                m = bench.retried(f'{how} {i}', lambda: measure(
                    d, t.pid, args.window, read), [t.pid])
                rows[how].append(m)
                print(f'{how} {i}: {bench.us_per_sample(m):.1f} us/sample, '
                      f'ready {m["ready_ms"]:.0f} ms, {m["samples"]} '
                      'samples', flush=True)
            rows['perf'].append(bench.retried(f'perf {i}', lambda: bench.
                                              perf_profile(t.pid,
                                                           args.window, HZ,
                                                           t, tmp), [t.pid]))
    finally:
        d.stop()
        t.stop()
    return rows


def med(ms, f):
    return statistics.median(f(m) for m in ms)


def report(rows, args):
    perf_us = med(rows['perf'], bench.us_per_sample)
    perf_ready = med(rows['perf'], lambda m: m['ready_ms'])
    lines = [f'Workers, 4 threads, {HZ} Hz, {args.window} s windows; '
             f'medians of {args.runs} runs of each, alternating, one '
             'daemon (cache_ms=0).', '',
             '| read | samples | daemon us/sample | vs perf | bytes ready '
             'after the window (ms) | vs perf |',
             '| --- | ---: | ---: | ---: | ---: | ---: |']
    for how in ('mount', 'http', 'perf'):
        ms = rows[how]
        us = med(ms, bench.us_per_sample)
        ready = med(ms, lambda m: m['ready_ms'])
        lines.append(f'| {how} | {med(ms, lambda m: m["samples"]):.0f} | '
                     f'{us:.1f} | {us / perf_us:.2f} | {ready:.0f} | '
                     f'{ready / perf_ready:.2f} |')
    http_us = med(rows['http'], bench.us_per_sample)
    mount_us = med(rows['mount'], bench.us_per_sample)
    lines += ['', f'HTTP / mount, daemon CPU per sample: '
              f'{http_us / mount_us:.2f}; bytes ready: '
              f'{med(rows["http"], lambda m: m["ready_ms"]):.0f} ms against '
              f'{med(rows["mount"], lambda m: m["ready_ms"]):.0f} ms.']
    text = '\n'.join(lines) + '\n'
    bench.publish(args, 'http', text)


def main():
    ap = bench.arguments(readme=False, window=5, runs=3)
    args = ap.parse_args()
    report(run(args), args)


if __name__ == '__main__':
    main()
