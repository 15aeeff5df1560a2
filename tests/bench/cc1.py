#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cc1 at 999 Hz, warm: the daemon's CPU per sample against perf record
--call-graph dwarf + perf script, in one run, for one or more builds
measured in turn (the build before and after a change), several rounds.

    tests/bench/cc1.py [--build DIR]... [--rounds N] [--window S]
                       [--hz HZ] [--save DIR] [--perf-daemon DIR]

Each round starts a fresh cc1 (bench.py's generated file) and, for each
build in turn (the order alternating between rounds), a fresh daemon: a
cold window, then the warm one measured; then perf on the same cc1.
--save keeps each warm profile (DIR/NAME-ROUND.pb.gz) to compare the
stacks; --perf-daemon records the first build's daemon (perf record -g)
over its warm window of round 1 (perf record -a -g: the sessions'
threads come and go), into DIR/NAME.perf.data, the daemon's pid into
DIR/NAME.perf.data.pid (perf report --pid).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def warm(build, t, window, hz, save=None, perf_out=None):
    """(cold, warm) measurements of a fresh daemon's first two sessions;
    the warm profile saved to save, the daemon recorded into perf_out."""
    d = bench.Daemon(build)
    try:
        cold = d.profile(t.pid, window, hz)
        rec = None
        if perf_out:
            rec = subprocess.Popen(
                ['perf', 'record', '-q', '--call-graph', 'dwarf,16384', '-F', '20000',
                 '-p', str(d.proc.pid),
                 '-o', perf_out, '--', 'sleep',
                 str(window + 1)], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
        if save:
            data = {}
            orig = d.read

            def keep(pid, name):
                data['b'] = orig(pid, name)
                return data['b']
            d.read = keep
        w = d.profile(t.pid, window, hz)
        if perf_out:
            with open(perf_out + '.pid', 'w') as f:
                f.write(str(d.proc.pid))
        if rec:
            rec.wait()
        if save:
            with open(save, 'wb') as f:
                f.write(data['b'])
    finally:
        d.stop()
    return cold, w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', action='append')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--window', type=int, default=10)
    ap.add_argument('--hz', type=int, default=999)
    ap.add_argument('--save')
    ap.add_argument('--perf-daemon')
    args = ap.parse_args()
    builds = args.build or [os.path.join(bench.REPO, 'build')]
    tmp = tempfile.mkdtemp(prefix='proffs-cc1-')
    argv = bench.cc1_argv(tmp)
    rows = []
    try:
        for rnd in range(args.rounds):
            t = bench.Target(argv)
            try:
                order = builds if rnd % 2 == 0 else builds[::-1]
                res = {}
                for b in order:
                    name = os.path.basename(b.rstrip('/'))
                    save = (os.path.join(args.save, f'{name}-{rnd}.pb.gz')
                            if args.save else None)
                    pout = (os.path.join(args.perf_daemon,
                                         f'{name}.perf.data')
                            if args.perf_daemon and rnd == 0 else None)
                    res[b] = warm(b, t, args.window, args.hz, save, pout)
                perf = bench.perf_profile(t.pid, args.window, args.hz, t,
                                          tmp)
            finally:
                t.stop()
            p = bench.us_per_sample(perf)
            for b in builds:
                c, w = res[b]
                u = bench.us_per_sample(w)
                line = (f'round {rnd + 1} {b}: cold '
                        f'{bench.us_per_sample(c):.1f} us, warm {u:.1f} '
                        f'us/sample ({w["samples"]} samples, other '
                        f'{w["other"]:.2f} CPUs), perf {p:.1f} us '
                        f'({perf["samples"]} samples), ratio {u / p:.3f}')
                rows.append(line)
                print(line, flush=True)
    finally:
        shutil.rmtree(tmp)
    print('\n'.join(rows))


if __name__ == '__main__':
    threading.excepthook = lambda a: None
    main()
