# SPDX-License-Identifier: GPL-2.0-or-later
"""A Python target whose threads threading named: "worker-a" and
"worker-b" burn CPU, "idle-c" and "odd\\nname" (a newline in it) sleep,
the main thread waits. The kernel knows them all as "python3" (3.11
names no OS thread). Prints "ready" once each runs its function
(threading has it in _active by then), then one line of JSON, every
thread's name -> kernel id."""
import json
import threading
import time


def burn(running):
    running.set()
    x = 0
    while True:
        for i in range(100000):
            x ^= i


def idle(running):
    running.set()
    while True:
        time.sleep(60)


def main():
    threads = []
    for name, fn in (('worker-a', burn), ('worker-b', burn),
                     ('idle-c', idle), ('odd\nname', idle)):
        running = threading.Event()
        t = threading.Thread(target=fn, args=(running,), name=name,
                             daemon=True)
        t.start()
        running.wait()
        threads.append(t)
    print('ready', flush=True)
    print(json.dumps({t.name: t.native_id for t in
                      [threading.current_thread()] + threads}), flush=True)
    while True:
        time.sleep(60)


if __name__ == '__main__':
    main()
