# SPDX-License-Identifier: GPL-2.0-or-later
"""Heap and allocs profiles of running processes (issue 5, SPEC §3-4):
the agent is loaded into a target that never heard of proffs, and what
it reports per allocation site is compared with what the target knows it
allocated."""
import errno
import json
import math
import os
import re
import select
import signal
import subprocess
import tempfile
import threading
import time

import pytest

import util

TYPES = ['alloc_objects/count', 'alloc_space/bytes', 'inuse_objects/count',
         'inuse_space/bytes']


class Reader(threading.Thread):
    """Reads a file of the mount in the background (a windowed profile
    blocks for its window)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.data, self.error = path, None, None
        self.start()

    def run(self):
        try:
            with open(self.path, 'rb') as f:
                self.data = f.read()
            if self.data is None:   # Python's answer to EAGAIN
                raise BlockingIOError(errno.EAGAIN, os.strerror(
                    errno.EAGAIN), self.path)
        except OSError as e:
            self.error = e

    def result(self, timeout=60):
        self.join(timeout)
        assert not self.is_alive(), f'{self.path}: read did not return'
        if self.error:
            raise self.error
        return self.data


def agent_loaded(pid):
    with open(f'/proc/{pid}/maps') as f:
        return 'proffs-heap' in f.read()


def wait_agent(pid, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if agent_loaded(pid):
            return
        time.sleep(0.02)
    pytest.fail(f'the heap agent never appeared in {pid}')


def workload(t, sig=signal.SIGUSR1):
    """Run the target's sites once; what it says it allocated."""
    os.kill(t.pid, sig)
    line = t.proc.stdout.readline()
    truth = json.loads(line)
    assert 'error' not in truth, truth
    return truth


def holds(s, site):
    """The sample's stack has function site (C++: any signature)."""
    return any(f == site or f.startswith(site + '(') for f in s.frames)


def site_values(p, site):
    """The four values of the samples whose stack holds site."""
    idx = [p.index(t) for t in TYPES]
    tot = [0, 0, 0, 0]
    for s in p.samples:
        if holds(s, site):
            for k, i in enumerate(idx):
                tot[k] += s.values[i]
    return tot


def default_type(path):
    text = util.pprof('-raw', path)
    types = text.split('Samples:\n', 1)[1].splitlines()[0].split()
    dflt = [t for t in types if t.endswith('[dflt]')]
    return dflt[0].replace('[dflt]', '') if dflt else types[-1]


def check_header(p, path, kind):
    assert p.sample_types == TYPES
    assert p.period_type == 'space bytes'
    assert default_type(path) == ('alloc_space/bytes' if kind == 'allocs'
                                  else 'inuse_space/bytes')


def assert_exact(p, truth, tolerance=0.02):
    """Every site within 2% of what it allocated and still holds."""
    for site, want in truth.items():
        got = site_values(p, site)
        for name, g, w in zip(TYPES, got, want[:4]):
            assert abs(g - w) <= tolerance * w, \
                f'{site} {name}: {g}, truth {w}'


def read_windowed(proffs, t, name, sig=signal.SIGUSR1):
    """Start a windowed read (it loads the agent), run the workload once
    the agent is in, and return (truth, profile path)."""
    r = Reader(proffs.path(t.pid, name))
    wait_agent(t.pid)
    truth = workload(t, sig)
    data = r.result()
    path = util.save(data, f'{name.replace("?", "_")}-{t.pid}.pb.gz')
    return truth, path


def test_rate1_every_site_exact(proffs, target):
    """With rate=1 every allocation is sampled: in-use and allocated
    objects and bytes per site match the truth within 2%, and blocks
    freed elsewhere show nothing in use at the site that made them."""
    t = target('allocs')
    truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=3.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'heap')
    assert_exact(p, truth)
    assert site_values(p, 'site_large')[2:] == [0, 0]
    assert site_values(p, 'release_large') == [0, 0, 0, 0]
    # strdup allocates inside libc: the stack goes through it.
    assert any(s.frames[0] in ('strdup', '__strdup') and
               s.frames[1] == 'site_strdup'
               for s in p.samples if 'site_strdup' in s.frames), \
        [s.frames[:3] for s in p.samples if 'site_strdup' in s.frames]
    # Go's bucket label: the size of each allocation.
    small = [s for s in p.samples if 'site_small' in s.frames]
    assert small and all(s.labels.get('bytes') == '48 bytes'
                         for s in small), [s.labels for s in small]
    # No frame of the agent itself in any stack.
    assert not [s for s in p.samples for loc in s.locations
                if loc.mapping and 'proffs-heap' in loc.mapping.file]
    # All of it went through the hooks of malloc and free that leave by
    # a direct jump (libc is within reach of the agent: fast.c).
    assert proffs.log_lines(r'heap: pid %d: agent loaded .*; \d+ GOT '
                            r'entries, 2 of 2 hooks leave by a direct '
                            r'jump$' % t.pid)


def test_allocator_out_of_direct_reach(proffs, target):
    """A process that mapped 16 GiB below its libraries before the agent
    came (a JVM's heap, a Go arena) gets the agent more than 2 GiB from
    libc: the hooks of malloc and free keep their indirect jumps out and
    count the same. At rate=1 every block is sampled and every free seen:
    the target never holds more than its batch of 64 blocks."""
    t = target('mallocs', 1, 'far')
    data = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=1.pb.gz')).result()
    path = util.save(data, f'far-{t.pid}.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'heap')
    assert proffs.log_lines(r'heap: pid %d: agent loaded .*, 0 of 2 hooks '
                            r'leave by a direct jump$' % t.pid)
    allocs, _, inuse, _ = site_values(p, 'batch')
    assert allocs > 10000, allocs
    assert 0 <= inuse <= 64, inuse
    assert next_report(t).hooked == (True, True)


def test_since_loading_without_window(proffs, target):
    """After the first read loaded the agent, heap.pb.gz answers at once
    with everything since loading; allocs.pb.gz defaults to
    alloc_space; pprof's sample flags and -base work on them."""
    t = target('allocs')
    truth, _ = read_windowed(proffs, t, 'heap?rate=1&seconds=2.pb.gz')
    start = time.monotonic()
    heap = util.save(proffs.read(t.pid, 'heap.pb.gz'), 'heap-now.pb.gz')
    assert time.monotonic() - start < 2, 'heap.pb.gz waited'
    p = util.validate_pprof(heap)
    check_header(p, heap, 'heap')
    for site in ('site_small', 'site_calloc', 'site_strdup'):
        got = site_values(p, site)
        assert abs(got[3] - truth[site][3]) <= 0.02 * truth[site][3], \
            (site, got)
    allocs = util.save(proffs.read(t.pid, 'allocs.pb.gz'), 'allocs.pb.gz')
    check_header(util.validate_pprof(allocs), allocs, 'allocs')
    top = util.pprof('-top', '-alloc_space', allocs)
    assert 'site_large' in top, top
    top = util.pprof('-top', '-inuse_space', heap)
    assert 'site_realloc' in top and 'site_large' not in top, top
    objs = util.pprof('-top', '-sample_index=alloc_objects', allocs)
    assert 'site_small' in objs, objs
    # A second workload, then -base: only what happened in between. A
    # session asking rate=1 runs meanwhile: with none, the agent goes
    # back to the default rate.
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=3.pb.gz'))
    time.sleep(0.5)
    truth2 = workload(t)
    later = util.save(proffs.read(t.pid, 'heap?rate=1.pb.gz'),
                      'heap-later.pb.gz')
    r.result()
    d = util.parse_raw(util.pprof('-raw', '-base', heap, later))
    got = site_values(d, 'site_small')
    want = truth2['site_small']
    assert abs(got[3] - want[3]) <= 0.02 * want[3], (got, want)
    assert abs(got[1] - want[1]) <= 0.02 * want[1], (got, want)


def poisson_sd(n, size, rate):
    """Relative standard deviation of Go's estimate of n allocations of
    size bytes sampled at mean rate: each is sampled with probability
    1 - exp(-size / rate) and counted 1 / that."""
    p = -math.expm1(-size / rate)
    return math.sqrt((1 - p) / (n * p))


def test_default_rate_within_sampling_error(proffs, target):
    """At Go's default rate (512 KiB) each site's estimate is within four
    standard deviations of the truth, the error Go's sampling predicts.
    The rate is named: this workload allocates 10 GB in a second or two,
    more than 5,000 samples a second, so a read at the default would be
    throttled (test_default_rate_throttled_on_a_fast_allocator); a named
    rate, the default's value too, never is."""
    t = target('allocs', 1000)
    truth, path = read_windowed(proffs, t,
                                'heap?rate=524288&seconds=8.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'heap')
    assert p.period == 524288
    checked = 0
    for site, (n, nbytes, in_n, in_bytes, size) in truth.items():
        if not size:
            continue
        sd = poisson_sd(n, size, 524288)
        if sd > 0.1:     # too few samples expected to say anything
            continue
        got = site_values(p, site)
        for k, want in ((0, n), (1, nbytes), (2, in_n), (3, in_bytes)):
            if want == 0:
                assert abs(got[k]) <= 4 * sd * nbytes / size, (site, got)
            else:
                assert abs(got[k] - want) <= 4 * sd * want, \
                    f'{site} {TYPES[k]}: {got[k]} vs {want} (sd {sd:.3f})'
        checked += 1
    assert checked >= 3, truth
    # Go's legacy text carries the sampled counts; pprof scales them back
    # to what the .pb.gz says, within the rounding of the unscaling.
    legacy = proffs.read(t.pid, 'heap?rate=524288&seconds=8&debug=1.txt')
    assert re.match(rb'heap profile: \d+: \d+ \[\d+: \d+\] @ heap/1048576\n',
                    legacy), legacy[:100]
    lp = util.validate_pprof(util.save(legacy, 'heap-legacy.txt'))
    for typ in TYPES:
        want = p.total(typ)
        assert abs(lp.total(typ) - want) <= 0.01 * want, (typ, want,
                                                         lp.total(typ))
    assert site_values(lp, 'site_calloc')[3] > 0, 'not symbolized'


def test_default_rate_throttled_on_a_fast_allocator(proffs, target):
    """A thread allocating as fast as it can would take some 27,000
    samples a second at the default rate: the daemon makes the rate
    coarser until it takes at most 5,000 (heap_throttle.h), says so in
    the profile and the log, and weights each sample by its own rate, so
    the counts still match what the target allocated. A session that
    names another rate, finer or coarser, gets it."""
    t = target('mallocs', 1)
    Reader(proffs.path(t.pid, 'allocs_1s.pb.gz')).result()   # armed
    a0, t0 = ops_now(t)
    data = Reader(proffs.path(t.pid, 'allocs_3s.pb.gz')).result()
    a1, t1 = ops_now(t)
    path = util.save(data, f'allocs-throttled-{t.pid}.pb.gz')
    p = util.validate_pprof(path)
    note = [c for c in p.comments if 'made coarser' in c]
    assert len(note) == 1, p.comments
    m = re.search(r'default rate \((\d+) bytes\).*\(now (\d+)\).*: (\d+) '
                  r'samples$', note[0])
    assert m, note[0]
    asked, rate, samples = (int(x) for x in m.groups())
    assert asked == 524288 and rate > asked and p.period == rate, note[0]
    assert 0 < samples <= 1.2 * 5000 * 3, note[0]
    assert proffs.log_lines(rf'heap: pid {t.pid}: more than 5000 samples a '
                            r'second: sampling \d+ times coarser')
    status = proffs.read('', 'status').decode()
    n = re.search(r'^agent_throttled: (\d+)$', status, re.M)
    assert n and int(n.group(1)) >= 1, status
    # The window lies within [t0, t1], which the target's own count
    # brackets; the estimate is off by a factor (the rate it was drawn
    # at) if a sample is weighted by another rate.
    objects = p.total('alloc_objects/count')
    assert objects <= 1.1 * (a1 - a0), (objects, a1 - a0)
    assert objects >= 0.75 * (a1 - a0) * 3 / (t1 - t0), \
        (objects, a1 - a0, t1 - t0)
    # blocks of 16 to 256 bytes, as many of each: 136 on average
    size = p.total('alloc_space/bytes') / objects
    assert 136 * 0.95 <= size <= 136 * 1.05, size
    # a rate asked in the name, the default's value too: as asked, not
    # throttled
    for rate in (262144, 524288, 1048576):
        data = Reader(proffs.path(
            t.pid, f'allocs?rate={rate}&seconds=1.pb.gz')).result()
        p = util.validate_pprof(util.save(data,
                                          f'allocs-{rate}-{t.pid}.pb.gz'))
        assert p.period == rate, (rate, p.period)
        assert not [c for c in p.comments if 'made coarser' in c], \
            p.comments


def test_cxx_operator_new(proffs, target):
    """A C++ target allocating through operator new (objects, arrays,
    std::string buffers made inside libstdc++) is profiled the same way."""
    t = target('allocs_cxx')
    truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=3.pb.gz')
    p = util.validate_pprof(path)
    assert_exact(p, truth)
    node = [s for s in p.samples if holds(s, 'site_new_node')]
    assert any(f.startswith('operator new') for s in node
               for f in s.frames[:2]), [s.frames[:3] for s in node]


@pytest.mark.parametrize('alloc', ['tcmalloc', 'jemalloc'])
def test_cxx_allocator_operator_new(proffs, target, alloc):
    """The same C++ sites linked with tcmalloc or jemalloc, whose operator
    new and delete allocate without calling malloc: the agent hooks them
    where the allocator defines them, and every site is exact at rate=1
    (issue 16; they came back empty before)."""
    t = target('allocs_cxx_' + alloc)
    maps = open(f'/proc/{t.pid}/maps').read()
    assert f'lib{alloc}' in maps, f'{alloc} is not loaded'
    truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=3.pb.gz')
    assert_exact(util.validate_pprof(path), truth)


def test_rate_drop_reaches_a_thread_holding_a_budget(proffs, target):
    """The hooks read only their thread's budget, never the rate: when a
    session asks a lower rate than the agent samples at, the daemon
    zeroes the budgets drawn at the old one. The target's thread, having
    allocated at the default rate (so holding a budget of some 512 KiB),
    has every allocation of a rate=1 window counted from its first."""
    t = target('allocs')
    read_windowed(proffs, t, 'heap_2s.pb.gz')
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=3.pb.gz'))
    time.sleep(0.5)
    truth = workload(t)
    path = util.save(r.result(), 'heap-rate-drop.pb.gz')
    assert_exact(util.validate_pprof(path), truth)


def test_library_loaded_later(proffs, target):
    """A library dlopen'd after the agent armed has its allocations
    sampled from its first one. A window is a difference: the sites of
    the workload run before it opened show nothing in it, though the
    agent saw them (the profile without a window has them)."""
    t = target('allocs')
    before, _ = read_windowed(proffs, t, 'heap?rate=1&seconds=2.pb.gz')
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=3.pb.gz'))
    time.sleep(0.5)
    truth = workload(t, signal.SIGUSR2)
    path = util.save(r.result(), 'heap-plugin.pb.gz')
    p = util.validate_pprof(path)
    assert_exact(p, truth)
    loc = [l for s in p.samples if 'plugin_alloc' in s.frames
           for l in s.locations if l.lines and l.lines[0][0] ==
           'plugin_alloc']
    assert loc and loc[0].mapping.file.endswith('libplugin.so')
    for site in before:
        assert site_values(p, site) == [0, 0, 0, 0], \
            f'{site}, allocated before the window, is in it'
    since = util.save(proffs.read(t.pid, 'heap.pb.gz'), 'heap-since.pb.gz')
    q = util.validate_pprof(since)
    assert_exact(q, before)
    assert_exact(q, truth)


def test_preloaded_agent_sees_allocations_from_the_start(proffs, target):
    """Started with LD_PRELOAD, the agent records before any read: the
    first heap.pb.gz answers at once with allocations made before it
    (every one of them: the ring is made big enough to hold them all)."""
    agent = os.path.join(util.BUILD, 'sampler', 'heap', 'agent',
                         'libproffs-heap.so')
    env = dict(os.environ, LD_PRELOAD=agent, PROFFS_HEAP_RATE='1',
               PROFFS_HEAP_RING_MB='64')
    proc = subprocess.Popen([os.path.join(util.TARGETS, 'allocs')],
                            stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b'ready'
        os.kill(proc.pid, signal.SIGUSR1)
        truth = json.loads(proc.stdout.readline())
        start = time.monotonic()
        data = proffs.read(proc.pid, 'heap.pb.gz')
        assert time.monotonic() - start < 3
        path = util.save(data, 'heap-preload.pb.gz')
        p = util.validate_pprof(path)
        assert_exact(p, truth)
        assert not [c for c in p.comments if 'dropped' in c], p.comments
        assert 'preloaded' in '\n'.join(proffs.log_lines('heap: pid'))
    finally:
        proc.kill()
        proc.wait()


def test_human_formats(proffs, target):
    """heap.svg (green flame graph), .folded and .txt come from the same
    samples as the pprof file; ?sample= picks the value shown."""
    t = target('allocs')
    truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=2.pb.gz')
    p = util.raw(path)
    folded = proffs.read(t.pid, 'heap?rate=1&seconds=2.folded').decode()
    total = sum(int(l.rsplit(' ', 1)[1]) for l in folded.splitlines())
    assert total == p.total('inuse_space/bytes')
    assert any('site_small' in l for l in folded.splitlines())
    alloc = proffs.read(
        t.pid, 'heap?rate=1&seconds=2&sample=alloc_space.folded').decode()
    assert sum(int(l.rsplit(' ', 1)[1]) for l in alloc.splitlines()) == \
        p.total('alloc_space/bytes')
    txt = proffs.read(t.pid, 'heap?rate=1&seconds=2.txt').decode()
    assert 'site_calloc' in txt and 'flat%' in txt
    # Go's heap?debug=1 text: exact at rate=1, read back by pprof.
    legacy = proffs.read(t.pid, 'heap?rate=1&seconds=2&debug=1.txt')
    assert legacy.startswith(b'heap profile: ') and b' @ heap/2\n' in \
        legacy.split(b'\n')[0] + b'\n', legacy[:100]
    lp = util.validate_pprof(util.save(legacy, 'heap-legacy-rate1.txt'))
    for typ in TYPES:
        assert lp.total(typ) == p.total(typ), typ
    assert site_values(lp, 'site_small') == site_values(p, 'site_small')
    svg = proffs.read(t.pid, 'heap?rate=1&seconds=2.svg')
    # well-formed and self-contained, as the CPU flame graph
    util.check_svg(svg, 'heap.svg')
    assert b'site_realloc' in svg and b'inuse_space' in svg
    # The memory palette: every frame green (green the largest part).
    fills = [f for f in re.findall(rb'<rect[^>]* fill="#([0-9a-f]{6})"', svg)
             if f != b'f6f6f0']
    assert fills
    for f in fills:
        r, g, b = (int(f[i:i + 2], 16) for i in (0, 2, 4))
        assert g > r and g > b, f


def test_allocs_svg(proffs, target):
    """allocs.svg through the mount: a well-formed, self-contained flame
    graph, in greens, of alloc_space (allocs' default) with the sites
    the target allocates from; ?sample=alloc_objects draws the counts
    of the same samples (one session), titled so."""
    t = target('allocs')
    base = 'allocs?rate=1&seconds=2'
    names = [base + '.svg', base + '&sample=alloc_objects.svg',
             base + '.pb.gz']
    readers = {n: Reader(proffs.path(t.pid, n)) for n in names}
    wait_agent(t.pid)
    truth = workload(t)
    got = {n: r.result() for n, r in readers.items()}
    assert len(proffs.log_lines(r'session \d+ start')) == 1
    path = util.save(got[base + '.pb.gz'], 'allocs-svg-ref.pb.gz')
    p = util.validate_pprof(path)
    check_header(p, path, 'allocs')
    want = {'alloc_space (bytes)': 'alloc_space/bytes',
            'alloc_objects (count)': 'alloc_objects/count'}
    subs = set()
    for name, keep in ((base + '.svg', 'allocs.svg'),
                       (base + '&sample=alloc_objects.svg',
                        'allocs-objects.svg')):
        _, text = util.check_svg(got[name], keep)
        titles = util.svg_titles(text)
        assert titles['title'] == \
            f'allocs profile of pid {t.pid}: {" ".join(t.argv)}', titles
        typ = titles['sub'].split(', ', 1)[0]
        subs.add(typ)
        frames = util.svg_frames(text)
        util.check_fills(frames, 'green')
        assert frames[0][:2] == ('all', p.total(want[typ])), \
            (frames[0], typ)
        # every allocation of the site, exactly (rate=1): the sum of its
        # frames is the site's value, and what the target counted
        k = TYPES.index(want[typ])
        for site in ('site_small', 'site_calloc', 'site_realloc'):
            drawn = sum(v for n, v, _ in frames if n == site)
            assert drawn == site_values(p, site)[k], (site, typ, drawn)
            assert abs(drawn - truth[site][k]) <= 0.02 * truth[site][k], \
                (site, typ, drawn, truth[site])
    assert subs == set(want), subs


class Report:
    """One report line of the mallocs target:
    "ops TOTAL hooked M F threads C0,C1,..." (tests/targets/mallocs.c)."""

    def __init__(self, line, when):
        m = re.match(rb'ops (\d+) hooked ([01]) ([01]) threads ([\d,]+)$',
                     line)
        assert m, line
        self.ops, self.when = int(m.group(1)), when
        # its own calls of malloc and free go through the agent's hooks
        self.hooked = (m.group(2) == b'1', m.group(3) == b'1')
        self.threads = [int(c) for c in m.group(4).split(b',')]


def next_report(t, timeout=3.0):
    """The next report line of the mallocs target: what was printed so
    far is skipped, the next line is waited for."""
    fd = t.proc.stdout.fileno()
    while select.select([fd], [], [], 0)[0]:
        if not os.read(fd, 65536):
            pytest.fail('target closed its output')
    buf = b''
    end = time.monotonic() + timeout
    while b'\n' not in buf:
        left = end - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], \
            'target printed nothing'
        buf += os.read(fd, 65536)
    return Report(buf.split(b'\n')[0], time.monotonic())


def ops_now(t, timeout=3.0):
    """The count of blocks the mallocs target reports next, and when."""
    r = next_report(t, timeout)
    return r.ops, r.when


def hooked(t):
    """(malloc, free) of the mallocs target go through the agent now: a
    report line started after this call (the GOT is read as it prints)."""
    return next_report(t).hooked


def wait_hooked(t, want, timeout=10):
    """Wait until the target's malloc and free are hooked (want True) or
    libc's again (False); returns what the last report said."""
    end = time.monotonic() + timeout
    while True:
        h = hooked(t)
        if h == (want, want) or time.monotonic() > end:
            return h


def pin_together(*targets):
    """Every thread of the targets on CPU 0, where they take turns: this
    VM's speed drifts by tens of percent from one second to the next, but
    alike for both of a pair on one CPU."""
    for t in targets:
        for tid in os.listdir(f'/proc/{t.pid}/task'):
            os.sched_setaffinity(int(tid), {0})


def paired_speed(t, c, seconds=2.0):
    """t's blocks per second of its own CPU time over c's, both mallocs
    targets pinned together, measured over the same span: 1.0 when
    nothing slows t down that does not slow c."""
    a = [(ops_now(x)[0], util.cpu_seconds(x.pid)) for x in (t, c)]
    time.sleep(seconds)
    b = [(ops_now(x)[0], util.cpu_seconds(x.pid)) for x in (t, c)]
    rt, rc = ((b[i][0] - a[i][0]) / (b[i][1] - a[i][1]) for i in (0, 1))
    return rt / rc


def settled_speed(t, c, windows=3):
    """paired_speed over several windows, the median: a vCPU the host
    takes away for a few hundred ms is charged to whichever target was
    running and moves one window by tens of percent (seen once in CI
    under load, 0.43 for a target with libc's malloc again); a target
    the agent still slows is slow in every window."""
    return sorted(paired_speed(t, c) for _ in range(windows))[windows // 2]


def task_holds(pid):
    """Threads of pid that are stopped (state t or T) or traced, as
    {tid: (state, TracerPid)}."""
    return {tid: (state, tracer) for tid, state, tracer in util.threads(pid)
            if state in 'tT' or tracer}


def test_loads_into_busy_allocators(proffs, target):
    """The agent loads into processes allocating on 8 threads: 100
    loads into fresh processes, none deadlocks (a read that does not
    return within 30 s fails), each target is left with no thread
    stopped or traced, every one of its threads keeps allocating, and it
    is profiled."""
    for i in range(100):
        t = target('mallocs', 8)
        data = Reader(proffs.path(t.pid, 'heap_200ms.pb.gz')).result(30)
        assert data[:2] == b'\x1f\x8b'
        held = task_holds(t.pid)
        assert not held, f'attempt {i}: threads left held: {held}'
        # Every thread allocates on: a thread deadlocked by the load
        # never counts again; one the busy machine starved does, soon.
        a = b = next_report(t)
        assert len(a.threads) == 8
        end = time.monotonic() + 10
        while True:
            b = next_report(t)
            stuck = [k for k, (x, y) in enumerate(zip(a.threads, b.threads))
                     if y <= x]
            if not stuck or time.monotonic() > end:
                break
        assert b.ops > a.ops, f'attempt {i}: target stopped after the load'
        assert not stuck, \
            f'attempt {i}: threads {stuck} stopped allocating ' \
            f'({a.threads} then {b.threads}); ' \
            f'held now: {task_holds(t.pid)}'
        assert b.hooked == (True, True), f'attempt {i}: not armed'
        if i % 20 == 0:
            p = util.validate_pprof(util.save(data, f'busy-{i}.pb.gz'))
            assert any('batch' in s.frames for s in p.samples)
        t.kill()
    loads = proffs.log_lines(r'heap: pid \d+: agent loaded')
    assert len(loads) == 100, len(loads)


def test_agent_disarms_when_the_daemon_dies(tmp_path, target):
    """SIGKILL of the daemon while the agent samples every allocation:
    within a few seconds the target is back at its unprofiled speed."""
    d = util.Daemon(str(tmp_path))
    t = target('mallocs', 1)
    c = target('mallocs', 1)    # never profiled: the speed to compare
    pin_together(t, c)
    try:
        assert hooked(t) == (False, False)
        r = Reader(d.path(t.pid, 'heap?rate=1&seconds=30.pb.gz'))
        wait_agent(t.pid)
        time.sleep(1)
        slowed = paired_speed(t, c)
        assert slowed < 0.5, slowed
        assert hooked(t) == (True, True), 'the agent did not arm'
        d.proc.kill()
        d.proc.wait()
        time.sleep(5)
        # Disarmed: the target's own GOT entries are libc's again (an
        # agent still armed at a low rate would be fast, yet hooked).
        assert hooked(t) == (False, False), 'the agent is still armed'
        after = settled_speed(t, c)
        assert after > 0.8, (after, slowed)
        r.join(5)
    finally:
        d.cleanup()


@pytest.mark.parametrize('proffs_options', [('heap_idle=1',)],
                         indirect=True)
def test_idle_agent_disarms_and_arms_again(proffs, target):
    """With heap_idle=1 the agent disarms itself once no session used it
    for a second (plus its lease), which gives the target its speed back;
    the next read arms it again."""
    t = target('mallocs', 1)
    c = target('mallocs', 1)    # never profiled: the speed to compare
    pin_together(t, c)
    assert hooked(t) == (False, False)
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=4.pb.gz'))
    wait_agent(t.pid)
    time.sleep(0.5)
    speed = paired_speed(t, c, 1.5)
    assert speed < 0.5, speed
    assert hooked(t) == (True, True), 'the agent did not arm'
    r.result()
    assert proffs.wait_log('letting the agent disarm', timeout=10)
    time.sleep(4)
    assert hooked(t) == (False, False), 'the agent is still armed'
    speed = settled_speed(t, c)
    assert speed > 0.8, speed
    # The next read arms it again: hooked while it samples.
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=2.pb.gz'))
    assert wait_hooked(t, True) == (True, True), 'the agent did not re-arm'
    p = util.validate_pprof(util.save(r.result(), 'rearmed.pb.gz'))
    assert any('batch' in s.frames for s in p.samples)
    assert proffs.log_lines(r'heap: pid \d+: agent armed')


def test_unprivileged_daemon_profiles_its_users_heap(tmp_path):
    """A daemon run by a plain user (no allow_other) loads the agent into
    that user's own process and gets the exact profile: ptrace rights
    are enough, and the agent's code is read from its own file where
    /proc/PID/map_files is root's."""
    target = None
    with util.nobody_daemon() as mnt:
        try:
            target = subprocess.Popen(
                util.AS_NOBODY + [os.path.join(util.TARGETS, 'allocs')],
                stdout=subprocess.PIPE)
            assert target.stdout.readline().strip() == b'ready'
            path = os.path.join(mnt, str(target.pid),
                                'heap?rate=1&seconds=3.pb.gz')
            reader = subprocess.Popen(util.AS_NOBODY + ['cat', path],
                                      stdout=subprocess.PIPE)
            wait_agent(target.pid)
            os.kill(target.pid, signal.SIGUSR1)
            truth = json.loads(target.stdout.readline())
            data = reader.communicate(timeout=60)[0]
            assert reader.returncode == 0
            p = util.validate_pprof(util.save(data,
                                              'heap-unprivileged.pb.gz'))
            assert_exact(p, truth)
        finally:
            if target:
                target.kill()
                target.wait()


def test_forked_child_starts_disarmed(proffs, target):
    """A child forked while the agent samples every allocation starts
    disarmed: it shares the parent's ring, yet writes nothing into it;
    and the child can be profiled on its own."""
    t = target('forker')
    r = Reader(proffs.path(t.pid, 'heap?rate=1&seconds=3.pb.gz'))
    wait_agent(t.pid)
    os.kill(t.pid, signal.SIGUSR1)
    line = t.proc.stdout.readline()
    assert line.startswith(b'child '), line
    child = int(line.split()[1])
    try:
        truth = json.loads(t.proc.stdout.readline())
        p = util.validate_pprof(util.save(r.result(), 'heap-forker.pb.gz'))
        assert_exact(p, truth)
        assert site_values(p, 'site_child') == [0, 0, 0, 0]
        # its own profile: another agent goes in, the parent's ring (which
        # the child holds too) is left alone
        data = proffs.read(child, 'heap_500ms.pb.gz')
        util.validate_pprof(util.save(data, 'heap-forked-child.pb.gz'))
        assert proffs.log_lines(r'heap: pid %d: agent loaded' % child)
    finally:
        os.kill(child, signal.SIGKILL)


def test_agent_reaches_another_mount_namespace(proffs):
    """The agent goes in through a memfd, so a process whose mount
    namespace has no libproffs-heap.so (a container) gets it too."""
    agent_dir = os.path.join(util.BUILD, 'sampler', 'heap', 'agent')
    script = (f'mount -t tmpfs none {agent_dir} && '
              f'exec {os.path.join(util.TARGETS, "allocs")}')
    # --kill-child: the namespace, with its copy of our mount, must go
    # when the test ends, or the daemon could not end with the unmount.
    proc = subprocess.Popen(['unshare', '--mount', '--propagation',
                             'private', '--fork', '--kill-child', 'sh',
                             '-c', script], stdout=subprocess.PIPE)
    pid = None
    try:
        assert proc.stdout.readline().strip() == b'ready'
        with open(f'/proc/{proc.pid}/task/{proc.pid}/children') as f:
            pid = int(f.read().split()[0])
        agent = os.path.join(agent_dir, 'libproffs-heap.so')
        assert os.path.exists(agent)
        assert not os.path.exists(f'/proc/{pid}/root{agent}'), \
            'the target still sees the agent file'
        r = Reader(proffs.path(pid, 'heap?rate=1&seconds=3.pb.gz'))
        wait_agent(pid)
        os.kill(pid, signal.SIGUSR1)
        truth = json.loads(proc.stdout.readline())
        p = util.validate_pprof(util.save(r.result(), 'heap-mntns.pb.gz'))
        assert_exact(p, truth)
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
