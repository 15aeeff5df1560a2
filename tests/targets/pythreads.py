# SPDX-License-Identifier: GPL-2.0-or-later
"""A Python target whose threads threading named: "worker-a" and
"worker-b" burn CPU, "idle-c" and "odd\\nname" (a newline in it) sleep,
the main thread waits. The kernel knows them all as "python3" (3.11
names no OS thread). Prints "ready" once each runs its function
(threading has it in _active by then), then one line of JSON, every
thread's name -> kernel id.

Where the interpreter keeps a Thread's attributes differs: by default in
values beside the object (keyed by its class's shared keys); "idle-c"'s
are asked for as a dict (vars(): before 3.13 a dict object then holds
those values), "odd\\nname" gets a dict of its own (its __dict__
replaced by a copy: a plain dict, in every version). Each is read."""
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
        if name == 'idle-c':
            vars(t)
        elif name.startswith('odd'):
            t.__dict__ = dict(vars(t))
    print('ready', flush=True)
    print(json.dumps({t.name: t.native_id for t in
                      [threading.current_thread()] + threads}), flush=True)
    while True:
        time.sleep(60)


if __name__ == '__main__':
    main()
