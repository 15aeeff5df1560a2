#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""proffs against perf record --call-graph dwarf + perf script, same
targets, same rates, one run. Writes results.md and results.png.

    tests/bench/bench.py [--build DIR] [--out DIR] [--window S] [--quick]
                         [--readme]

Figures are ratios against perf measured in the same run: these machines
are noisy, absolute numbers are not comparable across runs. Every window
also measures the CPU that other processes used meanwhile (all busy CPU
time less the target's, the profiler's and this script's); a window that
shared the machine with more than LOAD_LIMIT CPUs of other work starved
the target and is run again, up to RETRIES times, each time after
waiting for a quiet second. Samples are shown
against what the target's CPU time allows (CPU seconds x Hz), which tells
lost samples from a target that did not run.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TICK = os.sysconf('SC_CLK_TCK')
LOAD_LIMIT = 0.15   # CPUs of other work a measurement tolerates
RETRIES = 3
QUIET_WAIT = 120    # seconds to wait for other work to end

PY_DEEP = '''
import sys, time
sys.setrecursionlimit(10000)
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
def deep(d): return fib(18) if d == 0 else deep(d - 1)
print("ready", flush=True)
ops, last = 0, time.monotonic()
while True:
    deep(40)
    ops += 1
    if time.monotonic() - last >= 0.1:
        last = time.monotonic()
        print("ops", ops, flush=True)
'''

# cc1, GCC's compiler proper, optimizing a generated translation unit: a
# large real program with deep native stacks (Python 3.11 no longer
# recurses in C for Python calls). Sized to keep it busy through every
# window of a row, reruns included; it reports no work done, so it has no
# slowdown figure.
CC1_FUNCTIONS = 12000
CC1_FUNCTION = '''
struct s{i} {{ int a, b; double c[8]; }};
int f{i}(struct s{i} *p, int n)
{{
	int r = 0;
	for (int k = 0; k < n; k++) {{
		if (p->a > k)
			r += (int)(p->c[k & 7] * {m}) ^ p->b;
		else switch (k % 5) {{
		case 0: r -= k; break;
		case 1: r *= 3; break;
		case 2: r += p->a << 2; break;
		default: r ^= {i};
		}}
		for (int j = 0; j < 4; j++)
			r += (r >> j) * (j + {m});
	}}
	return r;
}}
'''


def cc1_argv(tmp):
    cc1 = subprocess.run(['gcc', '-print-prog-name=cc1'], check=True,
                         capture_output=True, text=True).stdout.strip()
    src = os.path.join(tmp, 'big.c')
    with open(src, 'w') as f:
        for i in range(CC1_FUNCTIONS):
            f.write(CC1_FUNCTION.format(i=i, m=i % 7 + 1))
    # exec keeps the pid the bench profiles
    return ['sh', '-c', 'echo ready; exec "$0" -quiet -O2 "$1" -o /dev/null',
            cc1, src]


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def busy_seconds():
    """CPU time the whole machine spent busy, all CPUs, in seconds."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / TICK


def self_seconds():
    t = os.times()
    return t.user + t.system


class Meter:
    """CPU of the given processes, and of everything else, over a span."""

    def __init__(self, *pids):
        self.pids = pids
        self.t0 = time.monotonic()
        self.busy0 = busy_seconds()
        self.self0 = self_seconds()
        self.cpu0 = [cpu_seconds(p) for p in pids]

    def stop(self, extra_cpu=0.0):
        """(CPU seconds of each pid, other work in CPUs on average);
        extra_cpu is known CPU not in the pids (a child's rusage)."""
        wall = time.monotonic() - self.t0
        cpus = [cpu_seconds(p) - c for p, c in zip(self.pids, self.cpu0)]
        other = (busy_seconds() - self.busy0 - (self_seconds() - self.self0)
                 - sum(cpus) - extra_cpu)
        return cpus, max(other, 0.0) / wall


def wait_quiet(pids, limit=QUIET_WAIT):
    """Wait (up to limit seconds) for a second in which other processes
    than pids used at most LOAD_LIMIT CPUs."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        meter = Meter(*pids)
        time.sleep(1)
        if meter.stop()[1] <= LOAD_LIMIT:
            return


def retried(what, fn, pids):
    """fn() -> a measurement dict with 'other', started once the machine
    is quiet; again while other work shared the machine, keeping the least
    disturbed one. pids: the processes running meanwhile (the target)."""
    best = None
    for attempt in range(RETRIES):
        wait_quiet(pids)
        m = fn()
        m['reruns'] = attempt
        if best is None or m['other'] < best['other']:
            best = m
        if m['other'] <= LOAD_LIMIT:
            break
        print(f'{what}: {m["other"]:.2f} CPUs of other work meanwhile; '
              'again', flush=True)
    best['reruns'] = attempt
    return best


def hwm_kb(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmHWM'):
                return int(line.split()[1])
    return 0


class Target:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True)
        assert self.proc.stdout.readline().strip() == 'ready'
        self.pid = self.proc.pid
        self.ops = None       # the workers target reports its work
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            m = re.match(r'ops (\d+)', line)
            if m:
                with self.lock:
                    self.ops = (time.monotonic(), int(m.group(1)))

    def next_report(self):
        """self.ops as the target's next report line sets it."""
        with self.lock:
            seen = self.ops
        while True:
            time.sleep(0.02)
            with self.lock:
                if self.ops is not seen and self.ops:
                    return self.ops

    def rate(self, seconds):
        """Work done per second over the next `seconds`, or None for a
        target that does not report its work (its CPU time would not
        show a slowdown: a slowed target burns the same CPU but does less
        work)."""
        time.sleep(0.3)
        with self.lock:
            a = self.ops
        time.sleep(seconds)
        with self.lock:
            b = self.ops
        if a and b and b[0] > a[0]:
            return (b[1] - a[1]) / (b[0] - a[0])
        return None

    def base(self, seconds):
        """The unprofiled work rate, as a measurement."""
        meter = Meter(self.pid)
        r = self.rate(seconds)
        (cpu,), other = meter.stop()
        return {'rate': r, 'target_cpu': cpu, 'other': other}

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Daemon:
    """proffs on a temporary mount, its log kept; options are -o
    options, wrap a command to run it under (taskset)."""

    def __init__(self, build, *options, wrap=()):
        self.mnt = tempfile.mkdtemp(prefix='proffs-bench-')
        self.log = tempfile.NamedTemporaryFile('w+', suffix='.log')
        argv = list(wrap) + [os.path.join(build, 'fs', 'proffs'), '-f',
                             '-o', 'max_window=600,cache_ms=0']
        for o in options:
            argv += ['-o', o]
        self.proc = subprocess.Popen(argv + [self.mnt], stderr=self.log)
        for _ in range(300):
            if os.path.ismount(self.mnt):
                break
            time.sleep(0.05)
        else:
            sys.exit('proffs did not mount')

    def read(self, pid, name):
        with open(os.path.join(self.mnt, str(pid), name), 'rb') as f:
            return f.read()

    def samples(self):
        """Samples of the last session done, from the daemon's log."""
        done = re.findall(r'session \d+ done: .*samples=(\d+)',
                          self.log_text())
        return int(done[-1]) if done else 0

    def read_async(self, pid, name):
        th = threading.Thread(target=self.read, args=(pid, name),
                              daemon=True)
        th.start()
        return th

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def cpu_s(self):
        """The daemon's CPU so far: its own getrusage from /prof/status
        (microseconds), else /proc/PID/stat (10 ms ticks)."""
        try:
            with open(os.path.join(self.mnt, 'status')) as f:
                st = dict(line.rstrip('\n').split(': ', 1) for line in f)
            return (int(st['cpu_user_us']) + int(st['cpu_system_us'])) / 1e6
        except (OSError, KeyError):
            return cpu_seconds(self.proc.pid)

    def profile(self, pid, window, hz, target=None):
        """Read one profile; returns a dict of measurements."""
        name = f'cpu_{window}s?hz={hz}.pb.gz'
        cpu0 = self.cpu_s()
        rate = {}
        if target:
            th = threading.Thread(
                target=lambda: rate.update(r=target.rate(window - 1)))
            th.start()
        meter = Meter(pid, self.proc.pid)
        t0 = time.monotonic()
        data = self.read(pid, name)
        wall = time.monotonic() - t0
        (target_cpu, _), other = meter.stop()
        if target:
            th.join()
        cpu = self.cpu_s() - cpu0
        done = re.findall(r'session \d+ done: .*samples=(\d+)',
                          self.log_text())
        samples = int(done[-1]) if done else 0
        return {'cpu': cpu, 'samples': samples, 'bytes': len(data),
                'ready_ms': (wall - window) * 1000, 'rate': rate.get('r'),
                'hwm_kb': hwm_kb(self.proc.pid), 'other': other,
                'expected': target_cpu * hz * window / wall}

    def stop(self):
        subprocess.run(['fusermount3', '-u', self.mnt])
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # A mount namespace another process created meanwhile keeps
            # the connection alive after our unmount: ask the daemon.
            self.proc.terminate()
            self.proc.wait(timeout=30)
        os.rmdir(self.mnt)


def perf_profile(pid, window, hz, target, tmp):
    data = os.path.join(tmp, 'perf.data')
    rate = {}
    th = threading.Thread(target=lambda: rate.update(r=target.rate(window - 1)))
    th.start()
    t0 = time.monotonic()
    meter = Meter(pid)
    rec = subprocess.Popen(['perf', 'record', '-q', '-F', str(hz), '-e',
                            'cpu-clock', '--call-graph', 'dwarf', '-p',
                            str(pid), '-o', data, '--', 'sleep', str(window)],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(rec.pid, 0)
    rec.returncode = os.waitstatus_to_exitcode(status)
    if rec.returncode:
        sys.exit(f'perf record failed: {rec.returncode}')
    rec_cpu = ru.ru_utime + ru.ru_stime
    t1 = time.monotonic()
    (target_cpu,), other = meter.stop(rec_cpu)
    r1 = os.times()
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym'],
                         check=True, capture_output=True)
    t2 = time.monotonic()
    r2 = os.times()
    th.join()
    samples = sum(1 for block in out.stdout.split(b'\n\n') if block.strip())
    scr = (r2.children_user + r2.children_system -
           r1.children_user - r1.children_system)
    return {'cpu': rec_cpu + scr, 'cpu_record': rec_cpu, 'cpu_script': scr,
            'samples': samples, 'bytes': os.path.getsize(data),
            'ready_ms': (t2 - t0 - window) * 1000, 'rate': rate.get('r'),
            'other': other,
            'expected': target_cpu * hz * window / (t1 - t0)}


def us_per_sample(m):
    return 1e6 * m['cpu'] / m['samples'] if m['samples'] else float('nan')


def proffs_pair(build, t, window, hz, what):
    """The first (cold) and second (warm) session of a fresh daemon;
    a disturbed cold window needs a fresh daemon to run again."""
    def cold_then_warm():
        d = Daemon(build)
        try:
            cold = d.profile(t.pid, window, hz, t)
            cold['warm'] = retried(
                what + ', proffs warm',
                lambda: d.profile(t.pid, window, hz, t), [t.pid])
        finally:
            d.stop()
        return cold

    cold = retried(what + ', proffs cold', cold_then_warm, [t.pid])
    return cold, cold.pop('warm')


def run(args):
    build = args.build
    workers = os.path.join(build, 'tests', 'targets', 'workers')
    tmp = tempfile.mkdtemp(prefix='proffs-bench-')
    targets = [
        ('1 thread, 24-deep calls', [workers, '1']),
        ('1 thread, the same under a 24 KiB frame',
         [workers, '1', 'deep']),
        ('16 threads', [workers, '16']),
        ('python3, deep recursion', ['/usr/bin/python3', '-c', PY_DEEP]),
        ('cc1 (gcc -O2), large file', cc1_argv(tmp)),
    ]
    rates = [99] if args.quick else [99, 999]
    rows = []
    for tname, argv in targets:
        for hz in rates:
            what = f'{tname} @ {hz} Hz'
            t = Target(argv)
            try:
                base = retried(what + ', unprofiled',
                               lambda: t.base(args.window - 1), [t.pid])
                cold, warm = proffs_pair(build, t, args.window, hz, what)
                perf = retried(what + ', perf', lambda: perf_profile(
                    t.pid, args.window, hz, t, tmp), [t.pid])
                # unprofiled once more: how far two windows of the same
                # target differ with no profiler, the noise of a slowdown
                again = retried(what + ', unprofiled again',
                                lambda: t.base(args.window - 1), [t.pid])
            finally:
                t.stop()
            rows.append({'target': tname, 'hz': hz, 'base': base,
                         'again': again, 'cold': cold, 'warm': warm,
                         'perf': perf})
            print(f'{what}: proffs warm '
                  f'{us_per_sample(warm):.1f} us/sample, perf '
                  f'{us_per_sample(perf):.1f} us/sample', flush=True)
    mem = None
    if not args.quick:
        t = Target([workers, '4'])
        mem = {}
        try:
            for w in (10, 60):
                d = Daemon(build)
                try:
                    mem[w] = d.profile(t.pid, w, 999)['hwm_kb']
                finally:
                    d.stop()
        finally:
            t.stop()
    shutil.rmtree(tmp)
    return rows, mem


def disturbed(m):
    return m['other'] > LOAD_LIMIT


def slowdown(base, m):
    """Percent less work than unprofiled; marked when either window had
    other work beside it even after the reruns."""
    if not base['rate'] or not m['rate']:
        return '-'
    mark = '*' if disturbed(base) or disturbed(m) else ''
    return f"{(1 - m['rate'] / base['rate']) * 100:.1f}%{mark}"


def share(m):
    return f"{100 * m['samples'] / m['expected']:.0f}%" if m['expected'] \
        else '-'


def load_note(rows):
    ms = [r[k] for r in rows
          for k in ('base', 'again', 'cold', 'warm', 'perf')]
    worst = max(m['other'] for m in ms)
    reruns = sum(m['reruns'] for m in ms)
    note = (f'Other work on the machine during the measured windows: at '
            f'most {worst:.2f} CPUs (limit {LOAD_LIMIT}; {reruns} window(s) '
            'run again because of it).')
    if any(disturbed(m) for m in ms):
        note += (' \\* a slowdown measured with more than the limit of '
                 'other work beside the target or its unprofiled baseline '
                 f'(the least disturbed of {RETRIES} attempts): not the '
                 'profiler\'s alone.')
    return note


def arguments(readme=True, **defaults):
    """An ArgumentParser with the options every bench takes: --build,
    --out, --readme (where docs/performance.md has a block for it), and
    one --NAME per keyword (its default, and its type), e.g. seconds=4,
    rounds=5. The bench adds its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default=os.path.join(REPO, 'build'))
    ap.add_argument('--out', default=os.path.join(REPO, 'tests', 'bench'))
    for name, value in defaults.items():
        ap.add_argument('--' + name.replace('_', '-'), type=type(value),
                        default=value)
    if readme:
        ap.add_argument('--readme', action='store_true',
                        help='also put the results into '
                        'docs/performance.md')
    return ap


def publish(args, name, text, file=None):
    """The results: written to args.out (file, or NAME-results.md; none
    with --out ''), with --readme spliced into docs/performance.md too,
    and printed."""
    if args.out:
        with open(os.path.join(args.out, file or f'{name}-results.md'),
                  'w') as f:
            f.write(text)
    if getattr(args, 'readme', False):
        splice_readme(name, text)
    print(text)


def splice_readme(name, text):
    """Put text between docs/performance.md's <!-- bench:name --> and
    <!-- /bench:name --> lines, so the command regenerates the published
    figures too (they moved there from the README)."""
    path = os.path.join(REPO, 'docs', 'performance.md')
    with open(path) as f:
        readme = f.read()
    begin, end = f'<!-- bench:{name} -->\n', f'<!-- /bench:{name} -->'
    a, b = readme.find(begin), readme.find(end)
    if a < 0 or b < a:
        sys.exit(f'{path} has no {begin.strip()} ... {end} block')
    with open(path, 'w') as f:
        f.write(readme[:a + len(begin)] + text + readme[b:])


def report(rows, mem, args):
    lines = [
        '| target | Hz | samples, proffs / perf (of CPU time x Hz) | '
        'CPU per sample, '
        'proffs cold / warm | perf record + script | cold / warm ratio | '
        'target slowdown, proffs / perf | unprofiled twice (noise) | '
        'bytes ready after window, '
        'proffs / perf | output size, proffs / perf.data |',
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |']
    for r in rows:
        c, w, p = r['cold'], r['warm'], r['perf']
        lines.append(
            f"| {r['target']} | {r['hz']} | {w['samples']} / {p['samples']} "
            f"({share(w)} / {share(p)}) "
            f"| {us_per_sample(c):.1f} / {us_per_sample(w):.1f} µs "
            f"| {us_per_sample(p):.1f} µs "
            f"| {us_per_sample(c) / us_per_sample(p):.2f} / "
            f"{us_per_sample(w) / us_per_sample(p):.2f} "
            f"| {slowdown(r['base'], w)} / {slowdown(r['base'], p)} "
            f"| {slowdown(r['base'], r['again'])} "
            f"| {w['ready_ms']:.0f} ms / {p['ready_ms']:.0f} ms "
            f"| {w['bytes'] / 1024:.1f} KiB / {p['bytes'] / 1024:.0f} KiB |")
    if mem:
        lines += ['', f"Daemon peak memory (VmHWM), 4 threads at 999 Hz: "
                  f"{mem[10] / 1024:.1f} MiB for a 10 s window, "
                  f"{mem[60] / 1024:.1f} MiB for a 60 s window "
                  f"({(mem[60] / mem[10] - 1) * 100:+.1f}%)."]
    uname = os.uname()
    lines += ['', load_note(rows)]
    lines += ['', f'Machine: {os.cpu_count()} CPUs, kernel {uname.release}; '
              f'{args.window} s windows; CPU from /proc/PID/stat (proffs '
              'daemon) and getrusage of perf record and perf script; '
              'slowdown from the work rate the target reports, against '
              'the same target unprofiled just before (- where the target '
              'reports none: cc1); the noise column is a second unprofiled '
              'window after the profiled ones, against the first.']
    text = '\n'.join(lines) + '\n'
    publish(args, 'cpu', text, 'results.md')
    plot(rows, os.path.join(args.out, 'results.png'))


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('no matplotlib: no plot', file=sys.stderr)
        return
    labels = [f"{r['target']}\n{r['hz']} Hz" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    w = 0.27
    ax.bar([i - w for i in x], [us_per_sample(r['cold']) for r in rows], w,
           label='proffs, cold caches')
    ax.bar(list(x), [us_per_sample(r['warm']) for r in rows], w,
           label='proffs, warm caches')
    ax.bar([i + w for i in x], [us_per_sample(r['perf']) for r in rows], w,
           label='perf record --call-graph dwarf + perf script')
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel('CPU per sample (µs)')
    ax.set_title('Profiler CPU per sample, same targets, same run')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = arguments(window=10)
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args()
    rows, mem = run(args)
    report(rows, mem, args)


if __name__ == '__main__':
    main()
