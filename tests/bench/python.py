#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What a Python sample costs the daemon (issue 26: at most twice a
native sample). Daemon CPU per sample of cpu_Ns?hz=HZ, warm caches (the
second session of a daemon), for:

  - pyburn: tests/targets/pyburn.py on /usr/bin/python3 (3.11): a few
    Python frames under one evaluation-loop frame;
  - py-deep: bench.py's PY_DEEP, 40-60 Python frames under one;
  - burn: the C program tests/targets/burn, a native sample.

With --baseline DIR, the Python targets are also read by the proffs
built in DIR, named --label in the table: e.g. one that merges no
Python frames (the same stacks, native frames only), or the build
before a change. Rounds alternate the daemons; the figure is
the median of the rounds. Ratios within one run only (a busy machine).
The CPU time is the sampling thread's own (CLOCK_THREAD_CPUTIME_ID, in
the session's log line): the baseline build needs that line too, or is
measured by the daemon's clock ticks, too coarse for a few seconds.
Writes python-results.md in --out.

    tests/bench/python.py [--build DIR] [--baseline DIR] [--out DIR]
                          [--window S] [--hz N] [--rounds N] [--label NAME]
"""

import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

REPO = bench.REPO
PYTHON = '/usr/bin/python3'


def targets(build, tmp):
    deep = os.path.join(tmp, 'deep.py')
    with open(deep, 'w') as f:
        f.write(bench.PY_DEEP)
    return {
        'pyburn': [PYTHON, os.path.join(REPO, 'tests', 'targets',
                                        'pyburn.py')],
        'py-deep': [PYTHON, deep],
        'burn': [os.path.join(build, 'tests', 'targets', 'burn')],
    }


def warm_us(build, argv, window, hz, cleanup=None):
    """µs of daemon CPU per sample in a daemon's second session, and the
    sample count. The CPU time is the session's sampling thread's, as its
    log line says it (daemon_cpu_us), or else the whole daemon's,
    counted in clock ticks (a build that does not log it). cleanup(pid)
    runs once the target is gone."""
    t = bench.Target(argv)
    d = bench.Daemon(build)
    try:
        d.profile(t.pid, window, hz)
        m = d.profile(t.pid, window, hz)
    finally:
        d.stop()
        t.stop()
        if cleanup:
            cleanup(t.pid)
    done = re.findall(r'session \d+ done: .*samples=(\d+) .*'
                      r'daemon_cpu_us=(\d+)', d.log_text())
    if done and int(done[-1][0]):
        return int(done[-1][1]) / int(done[-1][0]), int(done[-1][0])
    return bench.us_per_sample(m), m['samples']


def main(targets_of=None, cleanup=None, runtime='Python',
         script='python.py', results='python-results.md'):
    """The bench: each target of targets_of(build, tmp) (this file's by
    default; java.py passes its own) read warm by this build and the
    baseline's, round after round, against burn."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--baseline')
    ap.add_argument('--label', default='baseline',
                    help='the baseline reader\'s name in the table')
    ap.add_argument('--out', default=os.path.dirname(
        os.path.abspath(__file__)))
    ap.add_argument('--window', type=int, default=3)
    ap.add_argument('--hz', type=int, default=999)
    ap.add_argument('--rounds', type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        progs = (targets_of or targets)(args.build, tmp)
        runs = [(name, 'proffs', args.build) for name in progs]
        if args.baseline:
            runs += [(name, args.label, args.baseline) for name in progs]
        got = {}
        for r in range(args.rounds):
            for name, who, build in runs:
                us, n = warm_us(build, progs[name], args.window, args.hz,
                                cleanup=cleanup)
                got.setdefault((name, who), []).append((us, n))
                print(f'round {r}: {name} {who}: {us:.1f} us/sample '
                      f'({n} samples)', flush=True)
    text = table(got, args, runtime, script)
    print(text)
    with open(os.path.join(args.out, results), 'w') as f:
        f.write(text)


def table(got, args, runtime, script):
    """The results: medians of the rounds, each against burn read by the
    same reader in the same run."""
    med = {k: statistics.median(u for u, _ in v) for k, v in got.items()}
    lines = [f'# Daemon CPU per {runtime} sample', '',
             f'{args.rounds} rounds, cpu_{args.window}s?hz={args.hz}, '
             'warm (second session of a daemon), median µs of daemon CPU '
             f'per sample; tests/bench/{script}.', '',
             '| target | reader | µs/sample | × native (burn) | '
             f'× {args.label}, same stacks |',
             '| --- | --- | --- | --- | --- |']
    for (name, who), us in sorted(med.items()):
        native = med.get(('burn', who), med[('burn', 'proffs')])
        base = med.get((name, args.label))
        same = f'{us / base:.2f}' if base and who == 'proffs' else ''
        lines.append(f'| {name} | {who} | {us:.1f} | {us / native:.2f} | '
                     f'{same} |')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    main()
