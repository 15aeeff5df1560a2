# SPDX-License-Identifier: GPL-2.0-or-later
"""Go programs as they ship (issue 26): built with -ldflags='-s -w', with
no symbol table, DWARF or CFI, only Go's own .gopclntab. proffs names
their functions and lines from it, with no -symbolize=force and no
binary at hand for pprof, and unwinds their goroutines by Go's frame
sizes to runtime.main or runtime.goexit.

burngo.go (main.hot burns three times what main.sibling does) is built
twice here, stripped and not: the two have the same code at the same
addresses, so perf's samples of the stripped program (perf cannot name
them: it shows addresses) are named by the twin's symbol table.
Debian's /usr/bin/prometheus (Go 1.19, stripped) is run on 127.0.0.1
with a temporary configuration, scraping itself, its /metrics read in a
loop for load."""

import bisect
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

import util
from util import save, validate_pprof

SRC = os.path.join(util.TARGET_SRC, 'go', 'burngo.go')
PROMETHEUS = '/usr/bin/prometheus'
HZ = 999
ENDS = ('runtime.main', 'runtime.goexit')


def go_build(out, *flags):
    r = subprocess.run(['go', 'build'] + list(flags) + ['-o', out, SRC],
                       capture_output=True, text=True, env=util.go_env(),
                       cwd=os.path.dirname(out), timeout=300)
    assert r.returncode == 0, r.stderr


def sections(path):
    """{name: (addr, offset, size)} from readelf -SW."""
    out = subprocess.run(['readelf', '-SW', path], capture_output=True,
                         text=True, check=True).stdout
    return {m[1]: (int(m[2], 16), int(m[3], 16), int(m[4], 16))
            for m in re.finditer(r'\]\s+(\S+)\s+\S+\s+([0-9a-f]+) '
                                 r'([0-9a-f]+) ([0-9a-f]+)', out)}


def symbols(path):
    """Sorted (address, name) of the functions in path's symbol table."""
    out = subprocess.run(['nm', '-n', '--defined-only', path],
                         capture_output=True, text=True, check=True).stdout
    return [(int(a, 16), n) for a, t, n in
            (ln.split(None, 2) for ln in out.splitlines()
             if len(ln.split(None, 2)) == 3) if t in 'Tt']


def perf_fp(pid, seconds, tmp, exe, bias, syms):
    """perf record --call-graph fp of pid: its stacks, leaf first, each
    address of exe named by syms (perf prints an offset from exe's
    start, + bias = the ELF address), other frames left out."""
    data = os.path.join(tmp, 'perf.data')
    subprocess.run(['perf', 'record', '-q', '-F', str(HZ), '-e',
                    'cpu-clock', '--call-graph', 'fp', '-p', str(pid),
                    '-o', data, '--', 'sleep', str(seconds)],
                   check=True, capture_output=True, timeout=seconds + 60)
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,dso'],
                         check=True, capture_output=True, text=True,
                         timeout=300).stdout
    addrs = [a for a, _ in syms]
    stacks, cur = [], []
    for line in out.splitlines() + ['']:
        m = re.match(r'\s*([0-9a-f]+) \((.*)\)$', line)
        if m and m[2] == exe:
            i = bisect.bisect_right(addrs, int(m[1], 16) + bias) - 1
            cur.append(syms[i][1] if i >= 0 else '?')
        elif not line.strip():
            if cur:
                stacks.append(cur)
            cur = []
    return stacks


def c_code(path):
    """The address ranges of a Go binary's C code (cgo's, linked in by
    the external linker): the ranges .eh_frame describes, which Go's own
    functions never have. .gopclntab names nothing there, and a stripped
    binary's static C functions (cgo's threadentry) have no name at all."""
    out = subprocess.run(['readelf', '-wf', path], capture_output=True,
                         text=True, check=True).stdout
    return [(int(a, 16), int(b, 16)) for a, b in
            re.findall(r' FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)', out)]


def user_frames(sample):
    """The functions holding each location's code, leaf first, the
    kernel's left out."""
    return [loc.lines[-1][0] for loc in sample.locations
            if loc.lines and not loc.lines[-1][0].startswith('[k] ')]


def reach(p):
    """Samples whose stack ends at runtime.main or runtime.goexit, and
    all samples; a few that do not, for messages."""
    total = sum(s.values[0] for s in p.samples)
    good = [s for s in p.samples if user_frames(s)[-1:] and
            user_frames(s)[-1] in ENDS]
    bad = [user_frames(s)[-4:] for s in p.samples if s not in good]
    return sum(s.values[0] for s in good), total, bad[:5]


def test_stripped_go_named_lined_and_unwound(proffs, tmp_path):
    """Names and lines from .gopclntab in pprof -top (no -symbolize),
    main.hot and main.sibling at perf's shares within 5 points, 95% of
    the samples unwound to runtime.main or runtime.goexit."""
    stripped, twin = str(tmp_path / 'burngo-s'), str(tmp_path / 'burngo')
    go_build(stripped, '-ldflags=-s -w')
    go_build(twin)
    s_sec, t_sec = sections(stripped), sections(twin)
    assert '.symtab' not in s_sec and '.debug_info' not in s_sec and \
        '.gopclntab' in s_sec, s_sec
    assert s_sec['.text'] == t_sec['.text'], (s_sec['.text'], t_sec['.text'])
    bias = s_sec['.text'][0] - s_sec['.text'][1]
    t = util.Target('burngo-s', path=stripped)
    result = {}

    def ours():
        result['data'] = proffs.read(t.pid, f'cpu_{seconds}s?hz={HZ}.pb.gz')
    try:
        # about 2,500 samples each (two estimates of a 75% share from as
        # many differ by 5 points about once in 100,000), 5 to 12 s
        t0, c0 = time.monotonic(), util.cpu_seconds(t.pid)
        time.sleep(1)
        rate = (util.cpu_seconds(t.pid) - c0) / (time.monotonic() - t0)
        seconds = max(5, min(12, round(2500 / (max(rate, 0.01) * HZ))))
        th = threading.Thread(target=ours)
        th.start()
        theirs = perf_fp(t.pid, seconds, str(tmp_path), stripped, bias,
                         symbols(twin))
        th.join(timeout=60)
    finally:
        t.kill()
    path = save(result['data'], 'burngo-stripped.pb.gz')
    p = validate_pprof(path)
    top = util.pprof('-top', path)
    assert 'main.hot' in top and 'main.sibling' in top, top
    assert not re.search(r'burngo-s\+0x|\[unknown', top), top
    loop = next(i for i, ln in enumerate(open(SRC), 1)
                if 'x = x*6364136223846793005' in ln)
    hot = [ln for loc in p.locations.values() for ln in loc.lines
           if ln[0] == 'main.hot']
    assert any(f == SRC and abs(n - loop) <= 1 for _, f, n in hot), hot
    ours_ = [(s.values[0], user_frames(s)) for s in p.samples]
    total = sum(v for v, _ in ours_)
    assert total >= 200 and len(theirs) >= 200, (total, len(theirs))
    for func in ('main.hot', 'main.sibling'):
        o = sum(v for v, f in ours_ if func in f) / total
        th_ = sum(1 for f in theirs if func in f) / len(theirs)
        assert th_ >= 0.1 and abs(o - th_) <= 0.05, (func, o, th_)
    good, total, bad = reach(p)
    assert good >= 0.95 * total, (good, total, bad)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_prometheus_named_and_unwound(proffs, tmp_path):
    """Debian's stripped prometheus (Go 1.19), answering /metrics and a
    range query over every series: every location in its code named
    from .gopclntab, with a file, its own packages among them, and 95%
    of the samples unwound to runtime.main or runtime.goexit, or, for a
    thread's own work on no goroutine (sysmon), to runtime.mstart."""
    assert os.access(PROMETHEUS, os.X_OK), 'prometheus is not installed'
    assert '.symtab' not in sections(PROMETHEUS)
    port = free_port()
    conf = tmp_path / 'prometheus.yml'
    conf.write_text('global:\n  scrape_interval: 1s\nscrape_configs:\n'
                    '  - job_name: self\n    static_configs:\n'
                    f"      - targets: ['127.0.0.1:{port}']\n")
    log = open(tmp_path / 'prometheus.log', 'w')
    proc = subprocess.Popen([PROMETHEUS, f'--config.file={conf}',
                             f'--storage.tsdb.path={tmp_path / "data"}',
                             f'--web.listen-address=127.0.0.1:{port}'],
                            stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    stop = threading.Event()

    def load(path):
        while not stop.is_set():
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{port}{path}',
                                       timeout=5).read()
            except OSError:
                time.sleep(0.05)
    # every series at every second of the last hour: CPU in PromQL
    query = ('/api/v1/query_range?query=rate(%%7B__name__%%3D~%%22.%%2B%%22'
             '%%7D%%5B1m%%5D)&start=%d&end=%d&step=1'
             % (time.time() - 3600, time.time()))
    loaders = [threading.Thread(target=load, args=(path,))
               for path in ('/metrics', '/metrics', query, query)]
    try:
        end = time.monotonic() + 30
        while True:
            assert proc.poll() is None, open(tmp_path / 'prometheus.log').read()
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{port}/-/ready',
                                       timeout=1).read()
                break
            except OSError:
                assert time.monotonic() < end, 'prometheus is not ready'
                time.sleep(0.1)
        for th in loaders:
            th.start()
        data = proffs.read(proc.pid, f'cpu_5s?hz={HZ}.pb.gz')
    finally:
        stop.set()
        for th in loaders:
            if th.is_alive():
                th.join()
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    p = validate_pprof(save(data, 'prometheus.pb.gz'))
    mine = [loc for loc in p.locations.values()
            if loc.mapping and loc.mapping.file == PROMETHEUS]
    assert mine and all(loc.lines for loc in mine)
    # Go's functions have a package path; its few C ones (cgo's thread
    # start, named from .dynsym) have no file
    go = [loc for loc in mine if '.' in loc.lines[-1][0]]
    assert len(go) >= 0.9 * len(mine) and \
        all(ln[1] and ln[2] > 0 for loc in go for ln in loc.lines), \
        [loc.lines for loc in go if not all(ln[1] for ln in loc.lines)]
    names = {ln[0] for loc in mine for ln in loc.lines}
    assert any(n.startswith('github.com/prometheus/') for n in names)
    # Unnamed only in C code, which no table names: a thread's first
    # frame, cgo's static threadentry, in the 1 run of 4 or so where
    # prometheus starts a thread within the window.
    c = c_code(PROMETHEUS)
    assert c, 'no .eh_frame: not a cgo binary'
    unnamed = [loc.address for loc in mine
               if re.search(r'prometheus\+0x', loc.lines[-1][0])]
    assert all(any(a <= pc - 1 < b for a, b in c) for pc in unnamed), \
        [hex(pc) for pc in unnamed]
    assert not any('[unknown' in ln[0] for loc in mine
                   for ln in loc.lines)
    good, total, bad = reach(p)
    # A thread's own work, on no goroutine (sysmon; an idle M), starts at
    # runtime.mstart, where Go's own traceback ends it too: 5-7% of the
    # samples of a prometheus under this load. Every other stack gets to
    # its goroutine's start.
    threads = sum(s.values[0] for s in p.samples
                  if user_frames(s)[-1:] == ['runtime.mstart'])
    assert total >= 100 and good + threads >= 0.95 * total, \
        (good, threads, total, bad)
    assert good >= 0.8 * total, (good, threads, total, bad)
