# SPDX-License-Identifier: GPL-2.0-or-later
"""The CI guards of what a read costs the daemon, as ratios measured in
the same run, not times, so that a loaded CI machine slows both sides
alike.

The cold CPU read (issue 29, item 6): a fresh
daemon's first read of one busy thread at 999 Hz against perf record
--call-graph dwarf + perf script over the same thread, in the same run
(tests/bench/cold.py), as daemon CPU per sample over perf's: a ratio, not
a time, so that a loaded CI machine slows both sides alike.

The margin: the goal is 0.1 (docs/performance.md has the figures); this
fails above 0.25, which the code before issue 29 measured (0.25-0.45 here:
/proc/kallsyms read before every first window, 35 ms of it the kernel's),
and 3x that under AddressSanitizer, which slows the daemon and not perf.
The better of two runs counts: one stolen CPU slice is not a regression,
a regression shows in both; the second is left out when the first took
more than 25 s (a machine under a load of 40 stretches perf record's 2 s
to 20). About 15 s on a machine with two CPU hogs.
"""
import os
import subprocess
import sys

import pytest

import util

sys.path.insert(0, os.path.join(util.REPO, 'tests', 'bench'))
import cold  # noqa: E402
import python as pybench  # noqa: E402

BOUND = 0.25
ASAN_FACTOR = 3
# A Python sample against a native one (issue 26's goal: 2x): measured
# 1.66-1.85x with the eBPF reader, 9-10x with the eager one it replaced
# (tests/bench/python.py, load 15). The margin is for the fixed part of
# a session, which weighs more per sample when a loaded machine gives
# the target fewer samples (1.0-5.1x in single rounds at load 60).
PY_BOUND = 2.5


def sanitized():
    """Whether the daemon under test is an AddressSanitizer build."""
    r = subprocess.run(['readelf', '-d', util.DAEMON], capture_output=True,
                       text=True, check=True)
    return 'libasan' in r.stdout


def test_cold_read_against_perf():
    bound = BOUND * (ASAN_FACTOR if sanitized() else 1)
    rows = cold.measure(util.BUILD, runs=2, window=2, hz=999,
                        quiet_wait=0, budget_s=25)
    got = [(round(r['ratio'], 3), round(r['proffs']['cpu'] * 1000, 1),
            r['proffs']['samples'], round(r['perf']['cpu'] * 1000),
            r['perf']['samples']) for r in rows]
    print('ratio, proffs ms, samples, perf ms, samples:', got)
    assert all(r['proffs']['samples'] and r['perf']['samples']
               for r in rows), got
    assert min(r['ratio'] for r in rows) <= bound, got


def test_python_sample_against_native():
    """What a Python sample costs the daemon (issue 26: at most twice a
    native one), in the sampling thread's own CPU time (its session's log
    line), warm, the daemon as root reading the frames with eBPF: pyburn
    on Debian's python3 against the C burn, 3 s at 999 Hz each, the
    better of two rounds; fails past 2.5x (the eager reader, per sample:
    9-10x). About 30 s."""
    if os.geteuid():
        pytest.skip('the eBPF reader needs root')
    if os.environ.get('PROFFS_NO_BPF'):
        pytest.fail('PROFFS_NO_BPF is set: this guards the eBPF reader')
    progs = pybench.targets(util.BUILD, util.OUT_DIR)
    got = []
    for _ in range(2):
        py, npy = pybench.warm_us(util.BUILD, progs['pyburn'], 3, 999)
        nat, nnat = pybench.warm_us(util.BUILD, progs['burn'], 3, 999)
        assert npy >= 200 and nnat >= 200, (npy, nnat)
        got.append((round(py / nat, 2), round(py, 1), npy, round(nat, 1),
                    nnat))
    print('ratio, python us, samples, native us, samples:', got)
    assert min(r[0] for r in got) <= PY_BOUND, got
