# SPDX-License-Identifier: GPL-2.0-or-later
"""The flight recorder (issue 27): -o record keeps low-rate CPU samples of
every process; cpu_lastNs names answer from it at once, also for a
process that exited; base= gives differential profiles (pprof, SVG, txt).
Every pprof read here goes through go tool pprof (util.save)."""

import collections
import errno
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

import util
from util import expect_errno, pprof, save, validate_pprof

# A higher rate than the default 19 Hz, so that a 10 s window holds
# thousands of samples even where burn gets a fifth of a CPU (a busy CI
# machine): the 3-point tolerance is then about 3 standard errors.
RECORD = ('record', 'record_hz=997')


def read_timed(proffs, pid, name):
    t0 = time.monotonic()
    data = proffs.read(pid, name)
    return data, time.monotonic() - t0


def leaf_shares(path):
    return util.flat_shares(util.traces(path))


def share_of_hot(shares):
    hot, sib = shares.get('hot', 0), shares.get('sibling', 0)
    assert hot + sib > 0.95, shares
    return hot / (hot + sib)


def check_split(path, perf_hot, perf_n):
    """burn's hot:sibling split in the profile at path: 3:1 give or take
    what a busy machine does to it, and within 3 points of perf's over
    the same span where both hold thousands of samples (a standard error
    of the difference under one point), else 5 (as test_cpu holds the
    live read)."""
    n = sum(s.values[0] for s in validate_pprof(path).samples)
    assert n > 200, 'too few samples'
    hot = share_of_hot(leaf_shares(path))
    assert 0.69 <= hot <= 0.81, (hot, n)
    tol = 0.03 if min(n, perf_n) >= 4000 else 0.05
    assert abs(hot - perf_hot) <= tol, \
        f'hot: proffs {hot:.3f} of {n}, perf {perf_hot:.3f} of {perf_n}'


@pytest.mark.parametrize('proffs_options', [RECORD + ('record_s=9',)],
                         indirect=True)
def test_last_window_split_then_after_exit_then_aged_out(proffs, target,
                                                         tmp_path):
    t = target('burn')
    # perf records the same 8 s: the twin for the shares. burn's 3:1 is
    # by construction, yet beside two hogs one 8 s window measured 0.785
    # with 7,495 samples (the asan leg), and perf itself measures
    # 0.776-0.789 there: a busy machine moves the split, and a fixed
    # 0.75 +- 3 points failed the recorder for it.
    (data, took), theirs = util.alongside_perf(
        lambda: (time.sleep(8.5),
                 read_timed(proffs, t.pid, 'cpu_last8s.pb.gz'))[1],
        t.pid, 8, str(tmp_path), hz=997, call_graph='fp')
    assert took < 1.0, f'a last window took {took:.2f} s'
    path = save(data, 'record-last8s.pb.gz')
    p = validate_pprof(path)
    assert p.sample_types == ['samples/count', 'cpu/nanoseconds']
    assert p.period == 10**9 // 997
    assert p.duration_ns == 8 * 10**9
    perf_hot = share_of_hot(util.flat_shares(theirs))
    assert len(theirs) > 200, 'perf: too few samples'
    check_split(path, perf_hot, len(theirs))
    # nothing sampled at the read: the session took no window
    assert proffs.log_lines(r'session \d+ done: pid=%d kind=cpu '
                            r'window_ms=8000 .*recorder' % t.pid)

    # the whole host, from the recorder: burn among the pids
    data = proffs.read('all', 'cpu_last5s.pb.gz')
    path = save(data, 'record-all-last5s.pb.gz')
    validate_pprof(path)
    assert str(t.pid) in pprof('-tags', path)

    t.kill()
    assert not os.path.exists(f'/proc/{t.pid}')
    # gone from /proc, still readable by its pid
    data, took = read_timed(proffs, t.pid, 'cpu_last7s.pb.gz')
    assert took < 1.0
    path = save(data, 'record-after-exit.pb.gz')
    validate_pprof(path)
    check_split(path, perf_hot, len(theirs))
    assert 'exited' in pprof('-top', path)
    txt = proffs.read(t.pid, 'cpu_last7s.txt').decode()
    assert re.search(r'\bhot\n', txt)

    # record_s=9: 10 s on, its buckets aged out, and so did the pid
    time.sleep(10)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last4s.pb.gz'),
                 errno.ENOENT)
    assert not os.path.exists(proffs.path(t.pid))


def test_last_window_without_the_recorder_is_einval(proffs, target):
    t = target('burn')
    for name in ('cpu_last10s.pb.gz', 'cpu_5s.txt?base=prev',
                 'cpu_5s.svg?base=last60s'):
        expect_errno(lambda: proffs.read(t.pid, name), errno.EINVAL)
    assert len(proffs.log_lines(r'EINVAL: no flight recorder: the daemon '
                                r'runs without -o record')) == 3
    # a kind's name with a bad duration or value: EINVAL (README's errno
    # table); a name of no kind or format: ENOENT
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last0s.pb.gz'),
                 errno.EINVAL)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last5ms.pb.gz'),
                 errno.EINVAL)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_5s?base=next.pb.gz'),
                 errno.EINVAL)
    # json is trace's format alone (with its CPU profile's .pb.gz and
    # .pb); trace's past is the recorder's
    expect_errno(lambda: proffs.read(t.pid, 'cpu_5s.json'), errno.ENOENT)
    expect_errno(lambda: proffs.read(t.pid, 'trace_5s.svg'), errno.ENOENT)
    expect_errno(lambda: proffs.read(t.pid, 'trace_last5s.json'),
                 errno.EINVAL)


@pytest.mark.parametrize('proffs_options', [RECORD + ('record_s=30',)],
                         indirect=True)
def test_bad_combinations_are_einval_with_a_reason(proffs, target):
    t = target('burn')
    cases = {
        'heap_last10s.pb.gz': 'for cpu profiles',
        'cpu_last20s.pb.gz?base=prev': 'further back than the recorder',
        'cpu_last40s.pb.gz': 'further back than the recorder',
        'cpu_last5s.folded?base=prev': 'served as .pb.gz',
    }
    for name, why in cases.items():
        expect_errno(lambda: proffs.read(t.pid, name), errno.EINVAL)
        assert proffs.log_lines(re.escape(name) + r'.*EINVAL: .*' + why), \
            name


def pprof_flat(top, func):
    """The flat value go tool pprof -top prints for func, in ms."""
    for line in top.splitlines():
        f = line.split()
        if len(f) >= 6 and f[-1] == func:
            m = re.fullmatch(r'(-?[\d.]+)(ms|s|us|ns)?', f[0])
            scale = {'s': 1e3, 'ms': 1, 'us': 1e-3, 'ns': 1e-6,
                     None: 1}[m.group(2)]
            return float(m.group(1)) * scale
    return 0.0


def diff_fills_js():
    return """
var out = [];
var gs = document.getElementsByClassName('frame');
for (var i = 0; i < gs.length; i++) {
    var t = gs[i].getElementsByTagName('title')[0].textContent;
    var r = gs[i].getElementsByTagName('rect')[0];
    out.push([t.substring(0, t.indexOf(' (')),
              parseInt(gs[i].getAttribute('data-d')),
              window.getComputedStyle(r).fill, t]);
}
return out;
"""


@pytest.mark.parametrize('proffs_options', [RECORD], indirect=True)
def test_base_prev_diff_has_new_up_and_old_down(proffs, target, driver):
    # before() for 3 s, then after(): the last 3 s against the 3 s before
    t = target('switcher', 3)
    assert t.proc.stdout.readline().strip() == b'switched'
    time.sleep(3.5)
    names = ['cpu_last3s?base=prev.pb.gz', 'cpu_last3s?base=prev.svg',
             'cpu_last3s?base=prev.txt']
    # at one moment: a window read seconds later (a busy machine) holds
    # only after(), as does the one before it, and their diff is noise
    got = util.read_together(proffs, t.pid, names)
    path = save(got[names[0]], 'record-diff.pb.gz')
    validate_pprof(path)
    top = pprof('-top', path)
    assert pprof_flat(top, 'after') > 0, top
    assert pprof_flat(top, 'before') < 0, top
    tags = pprof('-tags', path)
    assert 'pprof::base' in tags and 'true' in tags

    txt = got[names[2]].decode()
    rows = {l.split()[-1]: l.split() for l in txt.splitlines()[3:]}
    assert rows['after'][2].startswith('+'), txt
    assert rows['before'][2].startswith('-'), txt

    # the SVG in Chromium: frames that grew drawn red, shrank blue
    svg = os.path.join(util.OUT_DIR, 'record-diff.svg')
    with open(svg, 'wb') as f:
        f.write(got[names[1]])
    driver.get('file://' + svg)    # the SVG read with the others
    frames = driver.execute_script(diff_fills_js())
    assert any(n == 'after' for n, _, _, _ in frames), frames
    for name, d, fill, title in frames:
        r, g, b = (int(x) for x in re.findall(r'\d+', fill)[:3])
        if d > 0:
            assert r == 255 and b < 255, (name, d, fill)
        elif d < 0:
            assert b == 255 and r < 255, (name, d, fill)
        assert re.search(r'new .*, base .*, delta [+-]', title), title
    after = [f for f in frames if f[0] == 'after'][0]
    assert after[1] > 0


@pytest.mark.parametrize('proffs_options', [RECORD], indirect=True)
def test_fresh_window_against_the_recorders_last_seconds(proffs, target):
    t = target('switcher', 2.5)
    assert t.proc.stdout.readline().strip() == b'switched'
    data = proffs.read(t.pid, 'cpu_2s.pb.gz?base=last4s')
    path = save(data, 'record-diff-last.pb.gz')
    validate_pprof(path)
    top = pprof('-top', path)
    assert pprof_flat(top, 'after') > 0, top
    assert pprof_flat(top, 'before') < 0, top
    assert 'scaled to this window' in top


@pytest.mark.parametrize('proffs_options',
                         [RECORD + ('http=127.0.0.1:0',)], indirect=True)
def test_http_last_is_the_recorder_too(proffs, target):
    import test_http
    t = target('burn')
    time.sleep(3.5)
    url = test_http.base(proffs) + \
        f'/debug/pprof/profile?pid={t.pid}&last=3'
    t0 = time.monotonic()
    status, _, body = test_http.get(url)
    assert status == 200, body
    assert time.monotonic() - t0 < 1.0
    path = save(body, 'record-http-last3.pb.gz')
    validate_pprof(path)
    # burn's profile (its 3:1 split is the first test's: 3 s here)
    shares = leaf_shares(path)
    assert shares['hot'] > shares['sibling'] > 0.1, shares
    t.kill()
    # exited: still there by pid, with base=prev too
    status, _, body = test_http.get(url + '&base=prev&seconds=3')
    assert status == 200, body
    validate_pprof(save(body, 'record-http-diff.pb.gz'))
    status, _, body = test_http.get(test_http.base(proffs) +
                                    f'/debug/pprof/profile?pid={t.pid}'
                                    '&last=x')
    assert status == 400, (status, body)


# -- trace_Ns.json ------------------------------------------------------------

SPEEDSCOPE = '1.25.0'


def speedscope_release():
    """speedscope's built app, from npm (a real client), installed once
    into the build directory."""
    prefix = os.path.join(util.BUILD, 'tests', 'speedscope')
    release = os.path.join(prefix, 'node_modules', 'speedscope', 'dist',
                           'release')
    if not os.path.exists(os.path.join(release, 'index.html')):
        npm = shutil.which('npm')
        assert npm, 'npm is not installed (contrib/deps.sh: npm)'
        subprocess.run([npm, 'install', '--prefix', prefix, '--no-audit',
                        '--no-fund', '--no-save',
                        f'speedscope@{SPEEDSCOPE}'], check=True,
                       timeout=300, stdout=subprocess.DEVNULL)
    return release


class Server:
    """A local HTTP server over a directory (speedscope fetches its
    profile: file:// fetches are refused)."""

    def __init__(self, root):
        import functools
        import http.server
        handler = functools.partial(QuietHandler, directory=root)
        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                     handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever,
                         daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _quiet_handler():
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    return Quiet


QuietHandler = _quiet_handler()


def trace_events(data):
    d = json.loads(data)
    return d['traceEvents']


def slice_self_time(events):
    """Self time per slice name (µs), replaying each thread's B/E events;
    checks they nest."""
    out = collections.Counter()
    stacks = {}
    for e in events:
        if e['ph'] == 'M':
            continue
        st = stacks.setdefault(e['tid'], [])
        if st:
            out[st[-1][0]] += e['ts'] - st[-1][1]
            st[-1][1] = e['ts']
        if e['ph'] == 'B':
            st.append([e['name'], e['ts']])
        else:
            assert e['ph'] == 'E' and st, e
            st.pop()
            if st:
                st[-1][1] = e['ts']
    assert not any(stacks.values()), 'slices left open'
    return out


def on_cpu_time(events):
    """On-CPU time per thread (µs): its outermost slices without a
    category (the off-CPU ones carry one)."""
    out = collections.Counter()
    depth, start = collections.Counter(), {}
    for e in events:
        if e['ph'] == 'B':
            if not depth[e['tid']] and 'cat' not in e:
                start[e['tid']] = e['ts']
            depth[e['tid']] += 1
        elif e['ph'] == 'E':
            depth[e['tid']] -= 1
            if not depth[e['tid']] and e['tid'] in start:
                out[e['tid']] += e['ts'] - start.pop(e['tid'])
    return out


def test_trace_json_loads_in_speedscope(proffs, target, driver):
    release = speedscope_release()
    burn, workers = target('burn'), target('workers', 3)
    trace_name, cpu_name = ('trace_3s.json?hz=999&kernel=0',
                            'trace_3s.pb.gz?hz=999&kernel=0')
    names = {(burn.pid, trace_name): None, (burn.pid, cpu_name): None,
             (workers.pid, trace_name): None}

    def one(key):
        names[key] = proffs.read(*key)
    ths = [threading.Thread(target=one, args=(k,)) for k in names]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    # the .json and the .pb.gz of one window: one session, one set of
    # samples, the pprof its CPU profile
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=trace'
                                % burn.pid)) == 1
    trace = names[(burn.pid, trace_name)]
    path = save(names[(burn.pid, cpu_name)], 'trace-cpu.pb.gz')
    validate_pprof(path)
    cpu = collections.Counter()
    for v, _, frames in util.traces(path, sample_index='cpu'):
        cpu[frames[0]] += v / 1000      # µs, as the trace's times

    # metadata first, then nested slices; slice time per function
    # within 5% of the CPU profile's
    ev = trace_events(trace)
    kinds = [e['ph'] for e in ev]
    assert kinds[0] == 'M' and 'M' not in kinds[kinds.index('B'):]
    assert ev[0]['name'] == 'process_name'
    self_time = slice_self_time(ev)
    for func in ('hot', 'sibling'):
        assert abs(self_time[func] - cpu[func]) <= 0.05 * cpu[func], \
            (func, self_time[func], cpu[func])

    # one track per thread, named, in speedscope: the 3 workers ran, the
    # main thread waits. It wakes every 200 ms to print (ops.h), so a
    # sample may land there: its on-CPU time is a sliver, and its track
    # holds its off-CPU slice
    wev = trace_events(names[(workers.pid, trace_name)])
    tids = {e['tid'] for e in wev if e['ph'] == 'B'}
    assert len(tids) == 4 and workers.pid in tids, tids
    on_cpu = on_cpu_time(wev)
    assert set(on_cpu) - {workers.pid} == tids - {workers.pid}, on_cpu
    assert on_cpu.get(workers.pid, 0) < 0.02 * min(
        v for t, v in on_cpu.items() if t != workers.pid), on_cpu
    assert any(e['tid'] == workers.pid and 'cat' in e for e in wev
               if e['ph'] == 'B'), 'no off-CPU slice on the main thread'
    named = {e['tid']: e['args']['name'] for e in wev
             if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert tids <= set(named), (tids, named)
    root = tempfile.mkdtemp(prefix='proffs-speedscope-')
    os.symlink(release, os.path.join(root, 'ss'))
    for name, data in (('burn.json', trace),
                       ('workers.json', names[(workers.pid, trace_name)])):
        with open(os.path.join(root, name), 'wb') as f:
            f.write(data)
        save(data, 'trace-' + name)
    srv = Server(root)
    try:
        for name, n in (('burn.json', 1), ('workers.json', 4)):
            base = f'http://127.0.0.1:{srv.port}'
            driver.get('about:blank')   # a new hash alone loads nothing
            driver.get(f'{base}/ss/index.html#profileURL={base}/{name}')
            end = time.monotonic() + 30
            text = ''
            while time.monotonic() < end:
                text = driver.execute_script(
                    'return document.body.innerText')
                if 'tid' in text:
                    break
                time.sleep(0.2)
            # speedscope numbers the tracks: "(1/3)"; one alone, none
            assert 'went wrong' not in text, \
                (name, text, driver.get_log('browser'))
            assert (f'(1/{n})' in text) if n > 1 else ('(1/' not in text), \
                text
            assert re.search(r'\(tid \d+\)', text), text
            assert 'rror' not in text and 'went wrong' not in text, \
                (name, text, driver.get_log('browser'))
    finally:
        srv.stop()
        shutil.rmtree(root)


def slice_spans(events, cat):
    """Per (tid, name): the total length (µs) of the slices of category
    cat, and each one's args, replaying the B/E events (the wait slices
    are outermost: no on-CPU slice is open around or inside one)."""
    spans = collections.Counter()
    args = collections.defaultdict(list)
    stacks = {}
    for e in events:
        if e['ph'] == 'M':
            continue
        st = stacks.setdefault(e['tid'], [])
        if e['ph'] == 'B':
            if e.get('cat') == cat:
                assert not st, ('a wait inside a slice', e, st)
            st.append(e)
            continue
        b = st.pop()
        assert b['name'] == e['name'], (b, e)
        if b.get('cat') == cat:
            spans[(e['tid'], b['name'])] += e['ts'] - b['ts']
            args[(e['tid'], b['name'])].append(b['args'])
    return spans, args


def test_trace_off_cpu_slices_named_by_their_wait(proffs, target):
    """A thread parked in read, one in nanosleep: each track holds one
    slice named by its wait over (nearly) the whole window, its stack in
    args; the spinner's on-CPU slices still match the CPU profile."""
    t = target('parked')
    trace_name, cpu_name = ('trace_3s.json?hz=499&kernel=0',
                            'trace_3s.pb.gz?hz=499&kernel=0')
    got = {}

    def one(name):
        got[name] = proffs.read(t.pid, name)
    ths = [threading.Thread(target=one, args=(n,))
           for n in (trace_name, cpu_name)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    path = save(got[cpu_name], 'trace-parked-cpu.pb.gz')
    validate_pprof(path)
    cpu = collections.Counter()
    for v, _, frames in util.traces(path, sample_index='cpu'):
        cpu[frames[0]] += v / 1000      # µs
    save(got[trace_name], 'trace-parked.json')
    ev = trace_events(got[trace_name])
    kinds = [e['ph'] for e in ev]
    assert kinds[0] == 'M' and 'M' not in kinds[kinds.index('B'):]
    tid_of = {e['args']['name'].rsplit(' ', 1)[0]: e['tid'] for e in ev
              if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert {'reader', 'sleeper', 'spinner'} <= set(tid_of), tid_of
    spans, args = slice_spans(ev, 'off-cpu')
    window_us = 3e6
    for thread, waits, func in (('reader', ('read',), 'park_read'),
                                ('sleeper', ('nanosleep', 'clock_nanosleep'),
                                 'park_sleep')):
        tid = tid_of[thread]
        mine = {name: us for (t_, name), us in spans.items() if t_ == tid}
        wait = max(mine, key=mine.get)
        assert wait in waits, (thread, mine)
        assert mine[wait] >= 0.9 * window_us, (thread, mine)
        # merged: one slice (a busy machine may split it: a few)
        assert len(args[(tid, wait)]) <= 3, args[(tid, wait)]
        assert all(func in a['stack'] and a['state'] == 'sleeping'
                   for a in args[(tid, wait)]), args[(tid, wait)]
    # the spinner never sleeps: off the CPU it is only ever waiting for
    # one (runnable); its on-CPU time per function is the CPU profile's
    # within 5%
    spin = {name: us for (t_, name), us in spans.items()
            if t_ == tid_of['spinner']}
    assert set(spin) <= {'runnable'}, spin
    self_time = slice_self_time(ev)
    assert cpu['spin_forever'] > 0.03 * window_us, cpu
    assert abs(self_time['spin_forever'] - cpu['spin_forever']) <= \
        0.05 * cpu['spin_forever'], (self_time['spin_forever'], cpu)


def test_trace_in_all_and_by_name(proffs, target):
    """/prof/all's trace: one track group per process, named by its
    command; /prof/name/<comm>/ answers for that process, its waits
    too."""
    burn, parked = target('burn'), target('parked')
    got = util.read_together(proffs, 'all', ['trace_2s.json?hz=299&kernel=0',
                                              'trace_2s.pb.gz?hz=299&kernel=0'])
    path = save(got['trace_2s.pb.gz?hz=299&kernel=0'], 'trace-all.pb.gz')
    validate_pprof(path)
    data = got['trace_2s.json?hz=299&kernel=0']
    save(data, 'trace-all.json')
    ev = trace_events(data)
    kinds = [e['ph'] for e in ev]
    assert kinds[0] == 'M' and 'M' not in kinds[kinds.index('B'):]
    procs = {e['pid']: e['args']['name'] for e in ev
             if e['ph'] == 'M' and e['name'] == 'process_name'}
    assert procs.get(burn.pid) == f'burn {burn.pid}', procs
    # every thread's track in its process's group
    threads = {(e['pid'], e['tid']) for e in ev
               if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert {(e['pid'], e['tid']) for e in ev if e['ph'] == 'B'} <= threads
    assert all(p in procs for p, _ in threads), (procs, threads)
    burn_funcs = {e['name'] for e in ev
                  if e['ph'] == 'B' and e['pid'] == burn.pid}
    assert {'hot', 'sibling', 'main'} <= burn_funcs, burn_funcs
    self_time = slice_self_time(ev)
    assert self_time['hot'] > self_time['sibling'] > 0, self_time

    data = proffs.read('name/parked', 'trace_2s.json?kernel=0')
    ev = trace_events(data)
    waits = {e['name'] for e in ev
             if e['ph'] == 'B' and e.get('cat') == 'off-cpu'}
    assert 'read' in waits and {e['pid'] for e in ev} == {parked.pid}, \
        (waits, {e['pid'] for e in ev})
    slice_self_time(ev)


@pytest.mark.parametrize('proffs_options', [RECORD + ('record_s=30',)],
                         indirect=True)
def test_trace_last_window_from_the_recorder(proffs, target):
    """trace_last3s.json: the recorder keeps counts per second, so one
    slice per (thread, second, stack), as long as its samples; the slice
    time per function is the same window's CPU profile's."""
    burn = target('burn')
    time.sleep(4.5)
    names = ['trace_last3s.json', 'trace_last3s.pb.gz']
    got = util.read_together(proffs, burn.pid, names)
    path = save(got['trace_last3s.pb.gz'], 'trace-last3s.pb.gz')
    p = validate_pprof(path)
    cpu = collections.Counter()
    for v, _, frames in util.traces(path, sample_index='cpu'):
        cpu[frames[0]] += v / 1000      # µs
    save(got['trace_last3s.json'], 'trace-last3s.json')
    ev = trace_events(got['trace_last3s.json'])
    kinds = [e['ph'] for e in ev]
    assert kinds[0] == 'M' and 'M' not in kinds[kinds.index('B'):]
    assert {e['pid'] for e in ev} == {burn.pid}
    self_time = slice_self_time(ev)
    n = sum(s.values[0] for s in p.samples)
    assert n > 300, n
    for func in ('hot', 'sibling'):
        assert abs(self_time[func] - cpu[func]) <= 0.05 * cpu[func], \
            (func, self_time[func], cpu[func])
    # the slices of a second stay in it: no slice crosses a second
    # boundary of the window unless the next second goes on with it
    leaf_b = [e for e in ev if e['ph'] == 'B' and e['name'] in
              ('hot', 'sibling')]
    secs = {int(e['ts'] // 1e6) for e in leaf_b}
    assert len(secs) >= 3, secs
    # a whole host's timeline from the recorder, and base= refused
    data = proffs.read('all', 'trace_last2s.json')
    ev = trace_events(data)
    assert burn.pid in {e['pid'] for e in ev if e['ph'] == 'B'}
    slice_self_time(ev)
    expect_errno(lambda: proffs.read(burn.pid, 'trace_3s.json?base=prev'),
                 errno.EINVAL)
    assert proffs.log_lines(r'EINVAL: trace takes no base=')


def status_of(proffs):
    text = proffs.read('', 'status').decode()
    return {k: int(v) for k, v in re.findall(r'^(record_\w+): (\d+)$', text,
                                             re.M)}


@pytest.mark.parametrize('proffs_options',
                         [('record', 'record_hz=997', 'record_s=60',
                           'record_mem=12M')], indirect=True)
def test_record_mem_bounds_the_ring_oldest_first(proffs, target):
    """A target whose every sample is a new stack, ~100 frames deep,
    fills a 12 MiB recorder within seconds: what status counts (dictionaries, stacks, buckets,
    contexts) stays under the bound, and the seconds that go are the
    oldest: what is left is the last seconds, without a hole."""
    t = target('manystacks')
    start = time.monotonic()
    seen = []
    while time.monotonic() - start < 40:
        st = status_of(proffs)
        seen.append(st)
        assert st['record_max_bytes'] == 12 << 20, st
        assert st['record_bytes'] <= st['record_max_bytes'], st
        if st['record_dropped_buckets'] >= 3:
            break
        time.sleep(0.5)
    ran = time.monotonic() - start
    assert seen[-1]['record_dropped_buckets'] >= 3, (ran, seen[-1])
    # the ring used what it was given
    assert max(s['record_bytes'] for s in seen) > 8 << 20, seen[-1]
    ev = trace_events(proffs.read(t.pid, 'trace_last50s.json'))
    secs = sorted({int(e['ts'] // 1e6) for e in ev if e['ph'] == 'B'})
    # the window's last second is the newest (ts from the window's
    # start, 50 s ago, in whole seconds); the target ran `ran` s
    assert secs and secs[-1] >= 48, secs
    first_possible = 50 - int(ran) - 2
    assert secs[0] > first_possible + 2, (secs, ran)
    # a second without a sample of it is one the target spent off the
    # CPU (a machine loaded many times over), not one dropped: a few
    assert secs[-1] - secs[0] + 1 - len(secs) <= 2, secs
    # and seconds, not the ring, go: the stacks only dropped seconds
    # named are freed with them (else the ring shrank to one second)
    assert len(secs) >= 3, (secs, seen[-1])
    # the stacks it holds of the target are those of the seconds it
    # keeps: no more than their samples (every sample a new stack), but
    # for the few of samples taken as the read came (a stack is made
    # before its sample goes into its second), or refused as too late
    # for the ring
    path = save(proffs.read(t.pid, 'cpu_last50s.pb.gz'),
                'record-mem-last50s.pb.gz')
    p = validate_pprof(path)
    kept = sum(s.values[0] for s in p.samples)
    held = int(re.search(r'holds (\d+) distinct stacks',
                         pprof('-comments', path)).group(1))
    assert 0 < held <= kept * 1.01 + 10, (held, kept)
    st = status_of(proffs)
    assert st['record_bytes'] <= st['record_max_bytes'], st


def thread_nices(pid):
    """Each thread's nice, from /proc/PID/task/*/stat (field 19)."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                s = f.read()
        except OSError:
            continue    # a thread that just ended
        out[int(tid)] = int(s[s.rindex(')') + 2:].split()[16])
    return out


@pytest.mark.parametrize('proffs_options,nice',
                         [(RECORD, -10), (RECORD + ('nice=-5',), -5),
                          (RECORD + ('nice=0',), 0)],
                         indirect=['proffs_options'])
def test_threads_that_answer_reads_run_at_nice(proffs, target, nice):
    """-o nice=N (default -10): the FUSE workers (and the main thread they
    are created from) answer at N; the recorder keeps its own -10."""
    if os.geteuid() != 0:
        pytest.skip('a negative nice needs root or CAP_SYS_NICE')
    burn = target('burn')
    time.sleep(1.5)
    proffs.read(burn.pid, 'cmdline')    # a worker, at least one
    proffs.read(burn.pid, 'cpu_last1s.pb.gz')
    nices = thread_nices(proffs.proc.pid)
    assert nices[proffs.proc.pid] == nice, nices
    at = [t for t, n in nices.items() if n == nice]
    assert len(at) >= 2, nices     # the main thread and a worker
    assert set(nices.values()) <= {nice, -10}, nices
