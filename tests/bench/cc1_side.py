#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cc1 at 999 Hz, warm, two builds side by side: both builds' daemons on
one cc1 at once, their cold windows together, then their warm windows
read at the same time, so both see the same phase of cc1 and the same
load (tests/bench/cc1.py measures builds in turn, and cc1's phases move
its figures by more than a change does). Prints each build's daemon CPU
per sample of the warm window, and the ratio of the second to the
first, per round.

    tests/bench/cc1_side.py BUILD_A BUILD_B [--rounds N] [--window S]
                            [--hz HZ] [--save DIR]

--save keeps each warm profile (DIR/NAME-sideROUND.pb.gz) to compare
the stacks.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def one_round(builds, t, window, hz, save, rnd):
    ds = [bench.Daemon(b) for b in builds]
    res = {}

    def run(i, key):
        data = {}
        orig = ds[i].read

        def keep(pid, name):
            data['b'] = orig(pid, name)
            return data['b']
        ds[i].read = keep
        res[(i, key)] = ds[i].profile(t.pid, window, hz)
        if save and key == 'warm':
            name = os.path.basename(builds[i].rstrip('/'))
            with open(os.path.join(save, f'{name}-side{rnd}.pb.gz'),
                      'wb') as f:
                f.write(data['b'])
    try:
        for key in ('cold', 'warm'):
            ths = [threading.Thread(target=run, args=(i, key))
                   for i in range(len(ds))]
            for th in ths:
                th.start()
            for th in ths:
                th.join()
    finally:
        for d in ds:
            d.stop()
    return [res[(i, 'warm')] for i in range(len(ds))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('builds', nargs=2)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--window', type=int, default=10)
    ap.add_argument('--hz', type=int, default=999)
    ap.add_argument('--save')
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='proffs-cc1-')
    argv = bench.cc1_argv(tmp)
    names = [os.path.basename(b.rstrip('/')) for b in args.builds]
    try:
        for rnd in range(args.rounds):
            t = bench.Target(argv)
            try:
                w = one_round(args.builds, t, args.window, args.hz,
                              args.save, rnd)
            finally:
                t.stop()
            u = [bench.us_per_sample(m) for m in w]
            print(f'round {rnd + 1}: {names[0]} {u[0]:.1f} us/sample '
                  f'({w[0]["samples"]} samples), {names[1]} {u[1]:.1f} '
                  f'us/sample ({w[1]["samples"]} samples), other '
                  f'{w[0]["other"]:.2f} CPUs, ratio {u[1] / u[0]:.3f}',
                  flush=True)
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    threading.excepthook = lambda a: None
    main()
