#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What a Java sample costs the daemon (issue 26: at most twice a native
sample). Daemon CPU per sample of cpu_Ns?hz=HZ, warm caches (the second
session of a daemon: the JVM attached, its perf map read, its methods
compiled), for:

  - java: tests/targets/Known.java on /usr/bin/java (OpenJDK 17), no
    flag: compiled heavy() and light() under an interpreted main();
  - burn: the C program tests/targets/burn, a native sample.

Measured as tests/bench/python.py measures Python (its warm_us), in the
same run, rounds alternating the targets; the figure is the median of
the rounds. With --baseline DIR, the JVM is also read by the proffs
built in DIR (e.g. a build before a change). Writes java-results.md in
--out.

    tests/bench/java.py [--build DIR] [--baseline DIR] [--out DIR]
                        [--window S] [--hz N] [--rounds N] [--label NAME]
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import python  # noqa: E402

REPO = bench.REPO
JAVA = '/usr/bin/java'


def targets(build, tmp):
    src = os.path.join(REPO, 'tests', 'targets', 'Known.java')
    subprocess.run(['javac', '-d', tmp, src], check=True)
    return {
        'java': [JAVA, '-cp', tmp, 'Known'],
        'burn': [os.path.join(build, 'tests', 'targets', 'burn')],
    }


def leftovers(pid):
    """What attaching leaves behind a JVM, once it is gone."""
    for path in (f'/tmp/perf-{pid}.map', f'/tmp/.java_pid{pid}'):
        try:
            os.unlink(path)
        except OSError:
            pass


def main():
    python.main(targets, leftovers, 'Java', 'java.py', 'java-results.md')


if __name__ == '__main__':
    main()
