#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What the flight recorder (-o record) costs, at its defaults (19 Hz per
CPU, 600 s, 64 MiB): a target of 200 busy threads (workers 200) on a
2-CPU machine, with the recorder on and off in turns.

    tests/bench/record.py [--build DIR] [--seconds S] [--rounds N]
                          [--threads N] [--out FILE]

- Slowdown: the recorder samples every process, so no twin runs without
  it; the target's work per second of its own CPU time with the recorder
  on over the same with it off, the spans taking turns (off, on, off,
  on...), against off over off (the noise).
- The daemon's CPU: its utime + stime over a span with the recorder on,
  in % of one CPU.
- Memory: the daemon's peak RSS with the recorder on against off, and
  what the recorder counts as held (its stop line, mem_bytes).
- A last read: the time to read cpu_last30s.pb.gz of the target (READS
  a round, a second apart), beside the time to read its cmdline (what
  any read costs on a machine whose CPUs 200 threads keep busy; the two
  take turns going first, as the first read after a sleep waits longer
  for the reader itself to get a CPU); the same two from a reader at
  nice -10 (the daemon's part, less the reader's wait); and the
  session's own time (its log line, elapsed_ms: the recorder's part).
  Its CPU: the daemon's threads' but the recorder's (proffs-record), on
  the CPU over the read (/proc/PID/task/*/schedstat: the FUSE requests,
  the window, the rendering), and the window's part alone (the session
  line's daemon_cpu_us).
"""

import argparse
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import heap  # noqa: E402
from bench import cpu_seconds, hwm_kb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def span_rate(t, seconds):
    """The target's work per second of its own CPU time over seconds."""
    a = t.mark()
    time.sleep(seconds)
    b = t.mark()
    return (b[0] - a[0]) / (b[1] - a[1])


READS = 5


def answering_cpu_ns(pid):
    """On-CPU ns of the daemon's threads but the recorder's."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/comm') as f:
                if f.read().strip() == 'proffs-record':
                    continue
            with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def stop_line(d):
    m = re.search(r'record: stopped: .*', d.log_text())
    return m.group(0) if m else ''


def field(line, key):
    m = re.search(rf'\b{key}=(\d+)', line)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--threads', type=int, default=200)
    ap.add_argument('--out', default=os.path.join(
        REPO, 'tests', 'bench', 'record-results.md'))
    args = ap.parse_args()
    exe = os.path.join(args.build, 'tests', 'targets', 'workers')
    t = heap.Mallocs([exe, str(args.threads)])
    on_off, off_off, daemon_pct, reads, hwm = [], [], [], [], {}
    plain, session_ms, live, read_cpu, window_cpu = [], [], [], [], []
    urgent = {'cpu_last30s.pb.gz': [], 'cmdline': []}
    lines = []
    try:
        time.sleep(1)
        for r in range(args.rounds):
            off1 = span_rate(t, args.seconds)
            d = bench.Daemon(args.build, 'record')
            try:
                time.sleep(1)
                c0 = cpu_seconds(d.proc.pid)
                w0 = time.monotonic()
                on = span_rate(t, args.seconds)
                daemon_pct.append(100 * (cpu_seconds(d.proc.pid) - c0) /
                                  (time.monotonic() - w0))
                for i in range(READS):
                    # the first read after a sleep waits longer for
                    # the reader itself to get a CPU: each goes first
                    # in turn
                    if i % 2:
                        t0 = time.monotonic()
                        d.read(t.pid, 'cmdline')
                        plain.append((time.monotonic() - t0) * 1000)
                    c0 = answering_cpu_ns(d.proc.pid)
                    t0 = time.monotonic()
                    d.read(t.pid, 'cpu_last30s.pb.gz')
                    reads.append((time.monotonic() - t0) * 1000)
                    read_cpu.append((answering_cpu_ns(d.proc.pid) - c0)
                                    / 1e6)
                    if not i % 2:
                        t0 = time.monotonic()
                        d.read(t.pid, 'cmdline')
                        plain.append((time.monotonic() - t0) * 1000)
                    m = re.findall(r'session \d+ done: .*daemon_cpu_us='
                                   r'(\d+) recorder ', d.log_text())
                    window_cpu.append(int(m[-1]) / 1000 if m else -1)
                    time.sleep(1)
                # the same from a reader at nice -10: what is left is
                # the daemon's part, not the reader's wait for a CPU
                os.setpriority(os.PRIO_PROCESS, 0, -10)
                try:
                    for i in range(READS):
                        order = ['cpu_last30s.pb.gz', 'cmdline']
                        for name in order[::-1] if i % 2 else order:
                            t0 = time.monotonic()
                            d.read(t.pid, name)
                            urgent[name].append(
                                (time.monotonic() - t0) * 1000)
                        time.sleep(1)
                finally:
                    os.setpriority(os.PRIO_PROCESS, 0, 0)
                t0 = time.monotonic()
                d.read(t.pid, 'cpu_1s.pb.gz')
                live.append((time.monotonic() - t0 - 1) * 1000)
                m = re.findall(r'session \d+ done: .*recorder '
                               r'elapsed_ms=(\d+)', d.log_text())
                session_ms.append(int(m[-1]) if m else -1)
                hwm.setdefault('on', []).append(hwm_kb(d.proc.pid))
            finally:
                d.stop()
            lines.append(stop_line(d))
            off2 = span_rate(t, args.seconds)
            on_off.append(on / ((off1 + off2) / 2))
            off_off.append(off2 / off1)
            d = bench.Daemon(args.build)
            try:
                time.sleep(1)
                hwm.setdefault('off', []).append(hwm_kb(d.proc.pid))
            finally:
                d.stop()
            print(f'round {r + 1}: on/off {on_off[-1]:.4f}, off/off '
                  f'{off_off[-1]:.4f}, daemon {daemon_pct[-1]:.2f}% of a '
                  f'CPU, last read {reads[-1]:.0f} ms, {lines[-1]}',
                  flush=True)
    finally:
        t.stop()

    def med(v):
        return statistics.median(v)
    mem = [field(l, 'mem_bytes') for l in lines]
    ul, uc = urgent['cpu_last30s.pb.gz'], urgent['cmdline']
    out = [
        f'workers {args.threads} (busy threads), {os.cpu_count()} CPUs, '
        f'the recorder at its defaults (19 Hz per CPU, 600 s, 64 MiB); '
        f'{args.rounds} rounds of {args.seconds:.0f} s spans, medians '
        f'(min-max after them).', '',
        '| measure | value |', '| --- | --- |',
        f'| target work per own CPU second, recorder on / off | '
        f'{med(on_off):.4f} ({min(on_off):.4f}-{max(on_off):.4f}) |',
        f'| the same, off / off (noise) | {med(off_off):.4f} '
        f'({min(off_off):.4f}-{max(off_off):.4f}) |',
        f'| daemon CPU with the recorder on | {med(daemon_pct):.2f}% of '
        f'one CPU ({min(daemon_pct):.2f}-{max(daemon_pct):.2f}) |',
        f'| cpu_last30s.pb.gz read, wall ({len(reads)} reads) | '
        f'{med(reads):.0f} ms ({min(reads):.0f}-{max(reads):.0f}) |',
        f'| cmdline read, wall (any read, same load) | {med(plain):.0f} '
        f'ms ({min(plain):.0f}-{max(plain):.0f}) |',
        f'| the same two, read by a reader at nice -10 | '
        f'{med(ul):.0f} ms ({min(ul):.0f}-{max(ul):.0f}) / '
        f'{med(uc):.0f} ms ({min(uc):.0f}-{max(uc):.0f}) |',
        f'| daemon CPU of a cpu_last30s read (its threads but the '
        f'recorder\'s) | {med(read_cpu):.2f} ms ({min(read_cpu):.2f}-'
        f'{max(read_cpu):.2f}) |',
        f'| of which the window from the ring (daemon_cpu_us) | '
        f'{med(window_cpu):.2f} ms ({min(window_cpu):.2f}-'
        f'{max(window_cpu):.2f}) |',
        f'| cpu_1s.pb.gz read, wall less its 1 s window (a live '
        f'read\'s reply, same load) | {med(live):.0f} ms '
        f'({min(live):.0f}-{max(live):.0f}) |',
        f'| the last session itself (elapsed_ms) | {med(session_ms)} ms '
        f'({min(session_ms)}-{max(session_ms)}) |',
        f'| daemon peak RSS, recorder on / off | '
        f'{med(hwm["on"]) / 1024:.1f} MiB / '
        f'{med(hwm["off"]) / 1024:.1f} MiB |',
        f'| held by the recorder (its count) | '
        f'{med(mem) / 1024:.0f} KiB |', '',
        'Stop lines:', ''] + ['    ' + l for l in lines]
    with open(args.out, 'w') as f:
        f.write('\n'.join(out) + '\n')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
