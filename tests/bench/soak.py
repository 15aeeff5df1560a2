#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Does the daemon's memory stay flat? One daemon, reads of CPU profiles,
flame graphs and thread dumps of many short-lived processes of different
programs (each brings its own binaries and libraries into the daemon's
caches), for --minutes; the daemon's RSS is sampled throughout. At the
end, once every process is gone, the caches' expiry time is waited out
and the RSS taken again. Writes soak-results.md.

    tests/bench/soak.py [--build DIR] [--out DIR] [--minutes M]
                        [--live N] [--life S] [--record]

Pass: the RSS after expiry is within 20% of the RSS after the first
session (issue 29). With --record the daemon runs the flight recorder at
its defaults (-o record), cpu_last30s.pb.gz joins the reads, the
recorder's own count is sampled beside the RSS, and the end waits out
the recorder's span as well, so the ring has let every process go
(issue 27: the memory bound after hours).
"""

import os
import random
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

PY = ('import time\nx = 0\nwhile True:\n    x = (x * 31 + 7) % 1000003\n'
      '    if x == 1: time.sleep(0)\n')


def programs(build):
    workers = os.path.join(build, 'tests', 'targets', 'workers')
    return [
        [workers, '1'], [workers, '4'],
        ['/usr/bin/python3', '-c', PY],
        ['perl', '-e', '$x=0; while (1) { $x = ($x * 31 + 7) % 1000003 }'],
        ['sh', '-c', 'while :; do :; done'],
        ['bash', '-c', 'while :; do :; done'],
        ['awk', 'BEGIN { while (1) x = (x * 31 + 7) % 1000003 }'],
        ['gzip', '-c', '/dev/zero'],
        ['sha256sum', '/dev/zero'],
        ['md5sum', '/dev/zero'],
        ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=4k'],
        ['xz', '-c', '/dev/zero'],
        ['bzip2', '-c', '/dev/zero'],
        ['sqlite3', ':memory:', 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL '
         'SELECT x + 1 FROM c) SELECT count(*) FROM c;'],
        ['openssl', 'speed', '-seconds', '600', 'sha256'],
    ]


def available(argv):
    return subprocess.run(['sh', '-c', f'command -v {argv[0]}'],
                          capture_output=True).returncode == 0


def rss_kb(pid, what='VmRSS'):
    """VmRSS, or its part RssAnon, RssFile or RssShmem, in KiB."""
    with open(f'/proc/{pid}/status') as f:
        return int(re.search(what + r':\s+(\d+)', f.read()).group(1))


def parts(pid):
    """RssAnon / RssFile / RssShmem, in KiB."""
    return tuple(rss_kb(pid, w) for w in ('RssAnon', 'RssFile', 'RssShmem'))


def largest_maps(pid, n=8):
    """The n mappings holding the most RSS: (KiB, what), what the file
    or [heap], [stack], anon."""
    rows, what = [], None
    with open(f'/proc/{pid}/smaps') as f:
        for line in f:
            m = re.match(r'[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$', line)
            if m:
                what = m.group(1) or 'anon'
            elif line.startswith('Rss:'):
                rows.append((int(line.split()[1]), what))
    merged = {}
    for kb, w in rows:
        merged[w] = merged.get(w, 0) + kb
    return sorted(((kb, w) for w, kb in merged.items()), reverse=True)[:n]


def status(mnt):
    with open(os.path.join(mnt, 'status')) as f:
        return dict(line.rstrip('\n').split(': ', 1) for line in f)


RECORD_S = 600       # the recorder's default span (record_s=)


class Pool:
    """Live processes, each ended after its life; new ones started."""

    def __init__(self, progs, live, life):
        self.progs, self.live, self.life = progs, live, life
        self.procs = []          # (Popen, end time)
        self.started = 0
        self.lock = threading.Lock()

    def tick(self):
        now = time.monotonic()
        with self.lock:
            for p, end in list(self.procs):
                if now >= end:
                    p.kill()
                    p.wait()
                    self.procs.remove((p, end))
            while len(self.procs) < self.live:
                argv = random.choice(self.progs)
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
                self.procs.append((p, now + random.uniform(*self.life)))
                self.started += 1

    def pick(self):
        with self.lock:
            return random.choice(self.procs)[0].pid if self.procs else None

    def stop(self):
        with self.lock:
            for p, _ in self.procs:
                p.kill()
                p.wait()
            self.procs = []


def reader(d, pool, end, counts, names):
    while time.monotonic() < end:
        pid = pool.pick()
        if not pid:
            time.sleep(0.1)
            continue
        try:
            d.read(pid, random.choice(names))
            counts['ok'] += 1
        except OSError:
            counts['err'] += 1   # the process ended meanwhile


def main():
    ap = bench.arguments(minutes=15.0, live=8, readers=2)
    ap.add_argument('--life', type=float, nargs=2, default=(10, 40))
    ap.add_argument('--record', action='store_true')
    args = ap.parse_args()
    progs = [p for p in programs(args.build) if available(p)]
    pool = Pool(progs, args.live, args.life)
    names = ['cpu_1s?hz=499.pb.gz', 'cpu_2s.pb.gz', 'flame_1s.svg',
             'goroutine.txt', 'cpu_1s.txt']
    if args.record:
        names.append('cpu_last30s.pb.gz')
    d = bench.Daemon(args.build, *(['record'] if args.record else []))
    rows, counts = [], {'ok': 0, 'err': 0}
    try:
        pool.tick()
        time.sleep(0.5)
        d.read(pool.pick(), 'cpu_1s.pb.gz')
        first = rss_kb(d.proc.pid)
        first_parts = parts(d.proc.pid)
        first_maps = largest_maps(d.proc.pid)
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        th = [threading.Thread(target=reader, args=(d, pool, end, counts, names))
              for _ in range(args.readers)]
        for t in th:
            t.start()
        last = 0
        while time.monotonic() < end:
            pool.tick()
            if time.monotonic() - last >= 30:
                last = time.monotonic()
                st = status(d.mnt)
                rows.append((last - t0, rss_kb(d.proc.pid),
                             int(st['dso_cache_objects']),
                             int(st['dso_cache_expired']), counts['ok'],
                             pool.started,
                             int(st.get('record_bytes', 0)) // 1024,
                             int(st.get('dso_cache_bytes', 0)) // 1024,
                             rss_kb(d.proc.pid, 'RssAnon'),
                             rss_kb(d.proc.pid, 'RssFile'),
                             rss_kb(d.proc.pid, 'RssShmem')))
                print('%6.0f s: RSS %.1f MiB, %d objects cached, %d let '
                      'go, %d reads, %d processes, recorder %d KiB, '
                      'objects %d KiB; RSS anon/file/shmem %d/%d/%d KiB' % (
                          rows[-1][0], rows[-1][1] / 1024, *rows[-1][2:]),
                      flush=True)
            time.sleep(0.5)
        for t in th:
            t.join()
        pool.stop()
        peak = max(r[1] for r in rows)
        st = status(d.mnt)
        bound = int(st.get('memory_bound_bytes', 0)) // 1024
        idle = int(st['dso_cache_idle_seconds'])
        # the ring keeps an ended process's buckets for its whole span
        span = RECORD_S if args.record else 0
        time.sleep(max(idle, span) + 2)
        st = status(d.mnt)      # sweeps the cache
        time.sleep(1)
        after = rss_kb(d.proc.pid)
        after_parts = parts(d.proc.pid)
        after_maps = largest_maps(d.proc.pid)
        st = status(d.mnt)
    finally:
        pool.stop()
        d.stop()
    ratio = after / first
    text = '\n'.join([
        f'Soak: {args.minutes:g} min of reads ({counts["ok"]} done, '
        f'{counts["err"]} of processes that ended meanwhile) over '
        f'{pool.started} processes of {len(progs)} programs, '
        f'{args.live} alive at a time for {args.life[0]:g}-'
        f'{args.life[1]:g} s each, {args.readers} readers.',
        '',
        *([f'The flight recorder ran at its defaults (-o record: 19 Hz '
           f'per CPU, {RECORD_S} s, record_mem 64 MiB) and '
           f'cpu_last30s.pb.gz was among the reads; its largest count was '
           f'{max(r[6] for r in rows)} KiB.', ''] if args.record else []),
        '| time | daemon RSS | anon / file / shmem | objects cached | '
        'their bytes | let go | reads | processes | recorder |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        *[f'| {r[0]:.0f} s | {r[1] / 1024:.1f} MiB | {r[8] / 1024:.1f} / '
          f'{r[9] / 1024:.1f} / {r[10] / 1024:.1f} MiB | {r[2]} | '
          f'{r[7] / 1024:.1f} MiB | {r[3]} | '
          f'{r[4]} | {r[5]} | {r[6]} KiB |' for r in rows],
        '',
        f'RSS after the first session {first / 1024:.1f} MiB, peak '
        f'{peak / 1024:.1f} MiB, after every process ended and the '
        f'caches\' expiry ({idle} s) {after / 1024:.1f} MiB '
        f'({(ratio - 1) * 100:+.0f}% of the first; '
        f'{st["dso_cache_objects"]} objects left cached, '
        f'kallsyms {int(st["kallsyms_bytes"]) / 2**20:.1f} MiB). '
        f'Bound: within 20%: {"met" if ratio <= 1.2 else "NOT met"}.',
        '',
        'RSS anon / file / shmem after the first session '
        + ' / '.join(f'{x / 1024:.1f}' for x in first_parts) +
        ' MiB, after the expiry '
        + ' / '.join(f'{x / 1024:.1f}' for x in after_parts) +
        ' MiB. The mappings holding the most, after the first session: '
        + ', '.join(f'{w} {kb} KiB' for kb, w in first_maps) +
        '; after the expiry: '
        + ', '.join(f'{w} {kb} KiB' for kb, w in after_maps) + '.',
        '',
        *([f'The bounded parts (memory_bound_bytes: record_mem + dso_mem) '
           f'{bound / 1024:.0f} MiB; the DSO cache held at most '
           f'{max(r[7] for r in rows) / 1024:.1f} MiB; RSS peaked '
           f'{(peak - first) / 1024:+.1f} MiB over the first session\'s '
           f'({"within" if peak - first <= bound else "OVER"} the bound).',
           ''] if bound else [])])
    bench.publish(args, 'soak', text,
                  'soak-record-results.md' if args.record else None)
    return 0 if ratio <= 1.2 else 1


if __name__ == '__main__':
    sys.exit(main())
