# SPDX-License-Identifier: GPL-2.0-or-later
"""A Python target with a known profile, run by Debian's /usr/bin/python3.

    pyburn.py [DUMP [REF]]

The main thread alternates heavy() and light(), whose loops are the same
(x ^= i keeps every int one digit: each turn costs the same) but run 3:1
iterations, so they burn CPU 3:1, a random number of turns each time (a
period would beat with the sampler's), tens of milliseconds' worth: a
profiler that reads Python frames a little after its sample (proffs
reads them as the sample is handled) then meets as many switches from
heavy() to light() as back within that little while, and its errors
cancel. A thread named "sleeper" parks in
time.sleep() inside parked_here(). SIGUSR1 makes faulthandler write
every thread's traceback to DUMP (a C-level handler: no Python code runs
for it). Prints "ready" once both run.

Given REF, it also counts the CPU time heavy() and light() took
(time.thread_time) and writes the two figures to REF on SIGUSR2:
test_python profiles such a process and holds its shares to its own
count (an unprofiled twin beside it was once the reference, and its
count strayed by up to 6 points where the profiled process's own and
its profile agreed).

Line numbers the tests check are marked with "# line:" comments."""
import faulthandler
import random
import signal
import sys
import threading
import time

N = 300000


def heavy(n):
    x = 0
    for i in range(3 * n):  # line: heavy
        x ^= i
    return x


def light(n):
    x = 0
    for i in range(n):  # line: light
        x ^= i
    return x


def parked_here(started):
    started.set()
    while True:
        time.sleep(60)  # line: sleep


spent = [0.0, 0.0]     # CPU seconds in heavy(), light(): the twin's


def burn():
    turns = random.Random(26).randrange
    while True:
        n = turns(N // 4, 2 * N)
        heavy(n)
        light(n)


def burn_measured():
    turns = random.Random(26).randrange
    clock = time.thread_time
    while True:
        n = turns(N // 4, 2 * N)
        t0 = clock()
        heavy(n)
        t1 = clock()
        light(n)
        t2 = clock()
        spent[0] += t1 - t0
        spent[1] += t2 - t1


def report(signum, frame):
    with open(sys.argv[2], 'w') as f:
        f.write(f'{spent[0]} {spent[1]}\n')


def main():
    dump = open(sys.argv[1], 'w') if len(sys.argv) > 1 else sys.stderr
    faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
    if len(sys.argv) > 2:
        signal.signal(signal.SIGUSR2, report)
    started = threading.Event()
    threading.Thread(target=parked_here, args=(started,), name='sleeper',
                     daemon=True).start()
    started.wait()
    print('ready', flush=True)
    if len(sys.argv) > 2:
        burn_measured()
    burn()


if __name__ == '__main__':
    main()
