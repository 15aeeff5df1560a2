# SPDX-License-Identifier: GPL-2.0-or-later
"""A Python target with a known profile, run by Debian's /usr/bin/python3.

The main thread alternates heavy() and light(), whose loops are the same
(x ^= i keeps every int one digit: each turn costs the same) but run 3:1
iterations, so they burn CPU 3:1; it also counts the CPU time each took
(time.thread_time), a reference for the test, written to the file named
by argv[2] on SIGUSR2. A thread named "sleeper" parks in time.sleep()
inside parked_here(). SIGUSR1 makes faulthandler write every thread's
traceback to the file named by argv[1] (a C-level handler: no Python code
runs for it). Prints "ready" once both run.

Line numbers the tests check are marked with "# line:" comments."""
import faulthandler
import signal
import sys
import threading
import time

N = 20000


def heavy():
    x = 0
    for i in range(3 * N):  # line: heavy
        x ^= i
    return x


def light():
    x = 0
    for i in range(N):  # line: light
        x ^= i
    return x


def parked_here(started):
    started.set()
    while True:
        time.sleep(60)  # line: sleep


spent = [0.0, 0.0]     # CPU seconds in heavy(), light()


def burn():
    clock = time.thread_time
    while True:
        t0 = clock()
        heavy()
        t1 = clock()
        light()
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
    burn()


if __name__ == '__main__':
    main()
