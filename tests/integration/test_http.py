# SPDX-License-Identifier: GPL-2.0-or-later
"""Profiles over HTTP (-o http=, SPEC §9, issue 20): go tool pprof on a
URL, -http and -base; a real Prometheus scraping /metrics; who may see
what (403 for another user's process, 401 off loopback without the
token, in network namespaces the test makes); a client's leaving ends
its wait; the paths fleet scrapers ask by default."""

import contextlib
import errno
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

import util
from util import NOBODY, as_user

LISTEN = re.compile(r'http: listening on (\S+):(\d+) ')


@pytest.fixture
def proffs_options(request):
    return getattr(request, 'param', ('allow_other', 'http=127.0.0.1:0'))


def port_of(proffs):
    lines = proffs.wait_log(LISTEN.pattern)
    assert lines, 'the daemon did not say where it listens'
    return int(LISTEN.search(lines[0]).group(2))


def base(proffs):
    return f'http://127.0.0.1:{port_of(proffs)}'


def get(url, headers=None, timeout=120):
    """(status, headers, body) of a GET; errors are answers too."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_url(url, timeout=60, proc=None):
    """Poll url until it answers 200; its body."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f'{proc.args[0]} exited {proc.returncode}')
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return r.read()
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f'{url} never answered')


def metric(text, name, **labels):
    """The value of one sample of /metrics' text."""
    want = ','.join(f'{k}="{v}"' for k, v in labels.items())
    line = f'{name}{{{want}}} ' if labels else f'{name} '
    for l in text.splitlines():
        if l.startswith(line):
            return float(l.split()[-1])
    raise AssertionError(f'no {line!r} in /metrics')


def burns(p):
    """Whether p is a profile of burn, whatever the load: samples, and
    nearly all of them in hot or sibling under main (a 1 s window on a
    busy machine has too few samples to hold burn's 3:1 every time)."""
    n = sum(s.values[0] for s in p.samples)
    ours = sum(s.values[0] for s in p.samples if 'main' in s.frames and
               ('hot' in s.frames or 'sibling' in s.frames))
    return n > 0 and ours >= 0.95 * n


def hot_share(p):
    """hot's share of hot + sibling: 3:1 by construction in burn, so
    above one half in any window but the very shortest, as in
    test_cpu.py, on a machine however busy."""
    hot = sum(s.values[0] for s in p.samples if 'hot' in s.frames)
    sib = sum(s.values[0] for s in p.samples if 'sibling' in s.frames)
    assert hot + sib > 0, 'no sample in hot or sibling'
    return hot / (hot + sib)


def test_go_tool_pprof_reads_a_url(proffs, target):
    """go tool pprof 'http://.../debug/pprof/profile?pid=N&seconds=5',
    as a Go service is profiled: burn's hot and sibling at 3:1, the
    window 5 s."""
    t = target('burn')
    url = f'{base(proffs)}/debug/pprof/profile?pid={t.pid}&seconds=5'
    assert 'hot' in util.pprof('-top', url, clean=True)
    # pprof fetches it again and writes what it read: validated whole;
    # the second fetch, within cache_ms, is the first one's result.
    os.makedirs(util.OUT_DIR, exist_ok=True)
    path = os.path.join(util.OUT_DIR, 'http-profile.pb.gz')
    util.pprof('-proto', '-output', path, url, clean=True)
    p = util.validate_pprof(path)
    assert burns(p) and hot_share(p) > 0.5, hot_share(p)
    assert abs(p.duration_ns / 1e9 - 5) < 0.5, p.duration
    assert len(proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                                r'window_ms=5000' % t.pid)) == 1
    # The same bytes a file gets are a valid profile too.
    status, hdrs, body = get(f'{base(proffs)}/{t.pid}/cpu_1s.pb.gz')
    assert status == 200 and body[:2] == b'\x1f\x8b'
    assert hdrs['Content-Type'] == 'application/octet-stream'
    util.validate_pprof(util.save(body, 'http-cpu_1s.pb.gz'))


def test_go_tool_pprof_http_ui(proffs, target):
    """go tool pprof -http on a proffs URL serves its web UI: its top
    table and flame graph name burn's functions."""
    t = target('burn')
    ui = free_port()
    url = f'{base(proffs)}/debug/pprof/profile?pid={t.pid}&seconds=2'
    proc = subprocess.Popen(['go', 'tool', 'pprof', f'-http=127.0.0.1:{ui}',
                             '-no_browser', url], env=util.go_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        top = wait_url(f'http://127.0.0.1:{ui}/ui/top', proc=proc).decode()
        assert 'hot' in top and 'sibling' in top and 'level2' in top
        flame = wait_url(f'http://127.0.0.1:{ui}/ui/flamegraph').decode()
        assert 'hot' in flame
    finally:
        proc.terminate()
        out = proc.communicate(timeout=20)[0].decode()
    assert 'Serving web UI' in out, out


class Fetch(threading.Thread):
    """A GET in the background (a windowed profile takes its window)."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.result = url, None
        self.start()

    def run(self):
        self.result = get(self.url)

    def body(self, timeout=60):
        self.join(timeout)
        assert not self.is_alive(), f'{self.url}: no answer'
        status, _, body = self.result
        assert status == 200, (status, body)
        return body


def test_base_between_two_heap_profiles(proffs, target):
    """Two heap profiles fetched over HTTP, then go tool pprof -base: only
    what the target allocated in between, as it says it did."""
    import test_heap as th
    t = target('allocs')
    url = f'{base(proffs)}/debug/pprof/heap?pid={t.pid}&rate=1'
    f = Fetch(url + '&seconds=2')          # loads the agent
    th.wait_agent(t.pid)
    th.workload(t)
    f.body()
    # Not the same URL as the second: that would be this result again,
    # cached for cache_ms, as in the mount.
    before = util.save(get(f'{base(proffs)}/debug/pprof/heap?pid={t.pid}')
                       [2], 'http-heap-before.pb.gz')
    f = Fetch(url + '&seconds=3')          # keeps rate=1 meanwhile
    time.sleep(0.5)
    truth = th.workload(t)
    after = util.save(get(url)[2], 'http-heap-after.pb.gz')
    f.body()
    d = util.parse_raw(util.pprof('-raw', '-base', before, after))
    got = th.site_values(d, 'site_small')
    want = truth['site_small']
    assert abs(got[1] - want[1]) <= 0.02 * want[1], (got, want)
    assert abs(got[3] - want[3]) <= 0.02 * want[3], (got, want)
    top = util.pprof('-top', '-base', before, after)
    assert 'site_small' in top, top
    # the agent's load, counted: one, loaded (not armed again), no failure
    m = get(f'{base(proffs)}/metrics')[2].decode()
    assert metric(m, 'proffs_heap_agent_loads_total', outcome='loaded') == 1
    assert metric(m, 'proffs_heap_agent_loads_total', outcome='armed') == 0
    assert 'proffs_heap_agent_loads_total{outcome="E' not in m
    # a quiet allocator: its default rate never made coarser
    assert metric(m, 'proffs_heap_agent_throttled_total') == 0


def test_delta_heap_is_a_window(proffs, target):
    """godeltaprof's delta_heap is a heap profile over a window: 5 s by
    default, seconds= when given."""
    t = target('allocs')
    th_url = f'{base(proffs)}/debug/pprof/delta_heap?pid={t.pid}'
    status, _, body = get(th_url + '&seconds=2')
    assert status == 200
    util.validate_pprof(util.save(body, 'http-delta_heap.pb.gz'))
    assert proffs.log_lines(r'session \d+ start: pid=%d kind=heap '
                            r'window_ms=2000' % t.pid)
    status, _, body = get(th_url)
    assert status == 200
    assert proffs.log_lines(r'session \d+ start: pid=%d kind=heap '
                            r'window_ms=5000' % t.pid)


# The paths Grafana Alloy's pyroscope.scrape and Parca ask by default
# (their documentation and pkg/config), with the query they add.
SCRAPER_PATHS = [
    '/debug/pprof/profile?seconds=2',     # both: process_cpu, delta
    '/debug/pprof/allocs', '/debug/pprof/goroutine',
    '/debug/pprof/block', '/debug/pprof/mutex',
    '/debug/pprof/delta_heap?seconds=1', '/debug/pprof/delta_mutex',
    '/debug/pprof/delta_block', '/debug/fgprof?seconds=1',
]


def kind_of(path):
    """The mount's kind for a scraper's path."""
    k = path.split('?')[0].rsplit('/', 1)[1]
    k = k[len('delta_'):] if k.startswith('delta_') else k
    return {'fgprof': 'wall'}.get(k, k)


def named(path):
    """Whether the mount has a file of that name, asked of a lookup
    alone (O_PATH): a stat of a profile name waits for its window (the
    exact size), which would make each check cost a default 30 s."""
    try:
        os.close(os.open(path, os.O_PATH))
    except FileNotFoundError:
        return False
    return True


def test_scraper_default_paths(proffs, target):
    """Every default path of Alloy and Parca answers as the mount's
    grammar has its kind: 200 with a valid pprof profile for a kind the
    mount serves, 404 for one it has not (yet), nothing else. A new kind
    in fs/core/name.c is served here with no code of its own."""
    t = target('allocs')
    # the agent in first, so allocs answers at once
    assert get(f'{base(proffs)}/{t.pid}/heap_1s.pb.gz')[0] == 200
    for path in SCRAPER_PATHS:
        sep = '&' if '?' in path else '?'
        status, _, body = get(f'{base(proffs)}{path}{sep}pid={t.pid}')
        served = named(proffs.path(t.pid, kind_of(path) + '.pb.gz'))
        assert status == (200 if served else 404), (path, status, body)
        if served:
            util.validate_pprof(util.save(
                body, 'scrape-' + path.split('?')[0].replace('/', '_') +
                '.pb.gz'))
    assert kind_of('/debug/pprof/delta_heap') == 'heap'
    assert not named(proffs.path(t.pid, 'nosuchkind.pb.gz'))


def test_identical_requests_share_one_session(proffs, target):
    """Two HTTP clients and a reader of the mount asking the same window
    share one session and get identical bytes."""
    t = target('burn')
    url = f'{base(proffs)}/debug/pprof/profile?pid={t.pid}&seconds=2'
    a, b = Fetch(url), Fetch(url)
    assert proffs.wait_log(r'session \d+ start')
    with open(proffs.path(t.pid, 'cpu_2s.pb.gz'), 'rb') as f:
        mine = f.read()
    assert a.body() == b.body() == mine
    assert len(proffs.log_lines(r'session \d+ start')) == 1


def test_client_leaving_ends_the_session(proffs, target):
    """A client that disconnects mid-window ends its wait as an
    interrupted read does: the session, left without readers, stops."""
    t = target('burn')
    port = port_of(proffs)
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(b'GET /debug/pprof/profile?pid=%d&seconds=60 HTTP/1.1\r\n'
              b'Host: x\r\n\r\n' % t.pid)
    assert proffs.wait_log(r'session \d+ start: pid=%d' % t.pid)
    start = time.monotonic()
    s.close()
    assert proffs.wait_log(r'session \d+ stopped: pid=%d .*no readers'
                           % t.pid, timeout=5)
    assert time.monotonic() - start < 3
    assert proffs.log_lines(r'http: .*the client went away')


def run_as(uid, url):
    """curl url as uid: (status, body)."""
    r = as_user(uid, 'curl', '-s', '-o', '-', '-w', '\n%{http_code}', url)
    body, _, code = r.stdout.rpartition('\n')
    return int(code), body


def test_another_user_gets_403(proffs, target):
    """A loopback client is the uid owning its socket: nobody profiles its
    own process, gets 403 for root's (and a log line, a count in
    /metrics), and /all shows it only its own."""
    mine = target('burn', user=NOBODY)
    roots = target('burn')
    b = base(proffs)
    code, body = run_as(NOBODY, f'{b}/debug/pprof/profile?pid={roots.pid}'
                        '&seconds=1')
    assert code == 403, body
    assert 'may not ptrace' in body
    assert proffs.log_lines(r'http: 127\.0\.0\.1:\d+ uid %d: GET '
                            r'/debug/pprof/profile\?pid=%d&seconds=1: 403 '
                            r'EACCES' % (NOBODY, roots.pid))
    code, _ = run_as(NOBODY, f'{b}/{roots.pid}/cmdline')
    assert code == 403
    r = subprocess.run(['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
                        '--clear-groups', '--', 'curl', '-sf',
                        f'{b}/debug/pprof/profile?pid={mine.pid}&seconds=1'],
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout[:2] == b'\x1f\x8b'
    p = util.validate_pprof(util.save(r.stdout, 'http-nobody.pb.gz'))
    assert burns(p)
    # A whole host, as nobody: its own process only.
    r = subprocess.run(['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
                        '--clear-groups', '--', 'curl', '-sf',
                        f'{b}/all/cpu_1s.pb.gz'],
                       capture_output=True, timeout=60)
    assert r.returncode == 0
    p = util.validate_pprof(util.save(r.stdout, 'http-all-nobody.pb.gz'))
    pids = {s.labels.get('pid') for s in p.samples}
    assert str(mine.pid) in pids and str(roots.pid) not in pids, pids
    m = get(f'{b}/metrics')[2].decode()
    assert metric(m, 'proffs_refusals_total', via='http',
                  reason='EACCES') == 2
    with open(os.path.join(proffs.mnt, 'status')) as f:
        assert 'http_refused_EACCES: 2\n' in f.read()


# -- a client off loopback, in network namespaces of the test's own ------

class Netns:
    """Two network namespaces joined by a veth pair, with link-local
    addresses that exist nowhere else: the server's side (srv) and a
    client's (cli). Removed at the end."""
    SRV, CLI = '169.254.77.1', '169.254.77.2'

    def __init__(self):
        tag = f'{os.getpid()}-{int(time.monotonic() * 1000) % 100000}'
        self.srv, self.cli = f'pfs-srv-{tag}', f'pfs-cli-{tag}'
        self.made = []
        try:
            for ns in (self.srv, self.cli):
                self.ip('netns', 'add', ns)
                self.made.append(ns)
            self.ip('link', 'add', 'pfs0', 'netns', self.srv, 'type',
                    'veth', 'peer', 'name', 'pfs1', 'netns', self.cli)
            for ns, dev, addr in ((self.srv, 'pfs0', self.SRV),
                                  (self.cli, 'pfs1', self.CLI)):
                self.ip('-n', ns, 'addr', 'add', f'{addr}/30', 'dev', dev)
                self.ip('-n', ns, 'link', 'set', dev, 'up')
                self.ip('-n', ns, 'link', 'set', 'lo', 'up')
        except BaseException:
            self.remove()
            raise

    @staticmethod
    def ip(*args):
        r = subprocess.run(['ip'] + list(args), capture_output=True,
                           text=True)
        assert r.returncode == 0, f'ip {" ".join(args)}: {r.stderr}'

    def enter(self, ns):
        return ['nsenter', f'--net=/run/netns/{ns}', '--']

    def remove(self):
        for ns in self.made:
            subprocess.run(['ip', 'netns', 'del', ns])
        self.made = []


@pytest.fixture
def netns():
    if not shutil.which('ip') or not shutil.which('nsenter'):
        pytest.fail('ip (iproute2) and nsenter (util-linux) are needed')
    n = Netns()
    yield n
    n.remove()


def netns_daemon(tmp_path, netns, options):
    return util.Daemon(str(tmp_path), options, wrap=netns.enter(netns.srv))


def curl_in(netns, ns, url, *args):
    r = subprocess.run(netns.enter(ns) + ['curl', '-s', '-o', '-', '-w',
                                          '\n%{http_code}'] + list(args) +
                       [url], capture_output=True, timeout=60)
    body, _, code = r.stdout.rpartition(b'\n')
    return int(code), body.decode(errors='replace')


def test_remote_client_needs_the_token(tmp_path, netns, target):
    """Off loopback, a client without the token gets 401 (logged and
    counted), with it the daemon's rights; on the server's own loopback
    no token is needed. Both ends are namespaces of this test, joined by
    a veth pair."""
    token = tmp_path / 'token'
    token.write_text('s3cret-token-for-the-test-' + os.urandom(8).hex())
    token.chmod(0o600)
    d = netns_daemon(tmp_path, netns, ('http=0.0.0.0:0',
                                       f'http_token={token}'))
    try:
        t = target('burn')
        port = port_of(d)
        remote = f'http://{netns.SRV}:{port}'
        code, body = curl_in(netns, netns.cli, f'{remote}/metrics')
        assert code == 401, body
        code, _ = curl_in(netns, netns.cli, f'{remote}/debug/pprof/profile'
                          f'?pid={t.pid}&seconds=1', '-H',
                          'Authorization: Bearer wrong-token-0123456789')
        assert code == 401
        assert len(d.log_lines(r'http: 169\.254\.77\.2:\d+ uid \?: GET .*'
                               r'401 EKEYREJECTED')) == 2
        code, body = curl_in(netns, netns.cli, f'{remote}/debug/pprof/'
                             f'profile?pid={t.pid}&seconds=1', '-H',
                             f'Authorization: Bearer {token.read_text()}')
        assert code == 200
        code, body = curl_in(netns, netns.srv,
                             f'http://127.0.0.1:{port}/metrics')
        assert code == 200
        assert metric(body, 'proffs_refusals_total', via='http',
                      reason='EKEYREJECTED') == 2
        assert metric(body, 'proffs_sessions_total', kind='cpu',
                      result='done') == 1
    except BaseException:
        d.cleanup()
        print(d.log_text())
        raise
    d.unmount()


def test_without_a_token_only_loopback(tmp_path, netns):
    """No http_token: a client off loopback is refused whatever it
    sends."""
    d = netns_daemon(tmp_path, netns, ('http=0.0.0.0:0',))
    try:
        port = port_of(d)
        for hdr in ((), ('-H', 'Authorization: Bearer anything-at-all')):
            code, _ = curl_in(netns, netns.cli,
                              f'http://{netns.SRV}:{port}/metrics', *hdr)
            assert code == 401
    except BaseException:
        d.cleanup()
        print(d.log_text())
        raise
    d.unmount()


@pytest.mark.parametrize('proffs_options', [('allow_other',)],
                         indirect=True)
def test_no_socket_without_http(proffs):
    """Nothing listens unless asked: without -o http= the daemon has no
    socket at all."""
    fds = os.listdir(f'/proc/{proffs.proc.pid}/fd')
    links = [os.readlink(f'/proc/{proffs.proc.pid}/fd/{fd}') for fd in fds]
    assert not [l for l in links if l.startswith('socket:')], links
    assert not proffs.log_lines('http:')


# -- Prometheus ---------------------------------------------------------------

def test_prometheus_scrapes_metrics(proffs, target, tmp_path):
    """Debian's Prometheus, on loopback with a configuration of this test,
    scrapes /metrics; a query through its HTTP API returns proffs'
    count of CPU sessions, the number /metrics and /prof/status show."""
    prom = shutil.which('prometheus')
    if not prom:
        pytest.fail('prometheus is not installed (contrib/deps.sh)')
    t = target('burn')
    b = base(proffs)
    assert get(f'{b}/debug/pprof/profile?pid={t.pid}&seconds=1')[0] == 200
    cfg = tmp_path / 'prometheus.yml'
    cfg.write_text('global:\n  scrape_interval: 1s\n'
                   'scrape_configs:\n  - job_name: proffs\n'
                   '    static_configs:\n'
                   f'      - targets: ["127.0.0.1:{port_of(proffs)}"]\n')
    web = free_port()
    proc = subprocess.Popen([prom, f'--config.file={cfg}',
                             f'--storage.tsdb.path={tmp_path / "data"}',
                             f'--web.listen-address=127.0.0.1:{web}'],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    try:
        q = ('http://127.0.0.1:%d/api/v1/query?query=' % web +
             urllib.parse.quote('proffs_sessions_total{kind="cpu",'
                                'result="done"}'))
        end, value = time.monotonic() + 60, None
        while time.monotonic() < end and value is None:
            try:
                with urllib.request.urlopen(q, timeout=5) as r:
                    res = json.load(r)['data']['result']
                    if res:
                        value = float(res[0]['value'][1])
            except OSError:
                assert proc.poll() is None, 'prometheus exited'
            time.sleep(0.5)
        assert value == 1, value
        assert res[0]['metric']['job'] == 'proffs'
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    m = get(f'{b}/metrics')[2].decode()
    assert metric(m, 'proffs_sessions_total', kind='cpu', result='done') == 1
    assert metric(m, 'proffs_samples_total', kind='cpu') > 0
    assert metric(m, 'proffs_session_duration_seconds_count',
                  kind='cpu') == 1
    assert metric(m, 'proffs_session_duration_seconds_bucket', kind='cpu',
                  le='5') == 1
    assert metric(m, 'proffs_session_duration_seconds_bucket', kind='cpu',
                  le='1') == 0
    assert metric(m, 'proffs_served_bytes_total') > 0
    with open(os.path.join(proffs.mnt, 'status')) as f:
        st = dict(l.rstrip('\n').split(': ', 1) for l in f)
    assert st['sessions_done_cpu'] == '1' and int(st['samples_cpu']) > 0
    assert st['latency_cpu_le_5000ms'] == '1'


# -- pages, errors --------------------------------------------------------------

def test_pages_and_errors(proffs, target):
    """The index pages link what they list; every error of the mount's
    table has its status, and a body that says why."""
    t = target('burn')
    b = base(proffs)
    status, hdrs, page = get(f'{b}/debug/pprof/?pid={t.pid}')
    assert status == 200 and hdrs['Content-Type'].startswith('text/html')
    page = page.decode()
    for kind in ('profile', 'heap', 'allocs', 'goroutine'):
        assert f'/debug/pprof/{kind}?pid={t.pid}' in page, page
    status, _, page = get(f'{b}/')
    assert f'/debug/pprof/?pid={t.pid}' in page.decode()
    status, _, page = get(f'{b}/{t.pid}/')
    assert status == 200 and 'flame.svg' in page.decode()
    status, hdrs, _ = get(f'{b}/{t.pid}/goroutine?debug=2.txt')
    assert status == 200 and hdrs['Content-Type'].startswith('text/plain')
    status, _, text = get(f'{b}/debug/pprof/goroutine?pid={t.pid}&debug=2')
    assert status == 200 and b'level2' in text and b'thread ' in text
    status, hdrs, svg = get(f'{b}/{t.pid}/cpu_1s.svg')
    assert status == 200 and hdrs['Content-Type'] == 'image/svg+xml'
    util.check_svg(svg, 'http-cpu_1s.svg')
    cases = [
        (f'/debug/pprof/profile?pid={t.pid}&seconds=0', 400, 'bad value'),
        (f'/debug/pprof/profile?pid={t.pid}&seconds=9999', 400,
         'max_window'),
        (f'/debug/pprof/nosuchkind?pid={t.pid}', 404, 'no such profile'),
        ('/debug/pprof/profile', 400, 'which process'),
        ('/debug/pprof/profile?pid=999999999', 404, 'no such process'),
        (f'/debug/pprof/profile?pid={t.pid}&name=burn', 400,
         'more than one target'),
        (f'/debug/pprof/profile?pid={t.pid}&sample=a%26b', 400, 'word'),
        ('/nowhere', 404, 'no such page'),
    ]
    for path, want, why in cases:
        status, _, body = get(b + path)
        assert (status, why in body.decode()) == (want, True), (path, body)
    c = http.client.HTTPConnection('127.0.0.1', port_of(proffs), timeout=10)
    c.request('POST', '/metrics', body=b'x')
    r = c.getresponse()
    assert r.status in (400, 405), r.status
    c.close()


# -- stable names, the whole host ---------------------------------------------

def named_copy(tmp_path, name):
    """burn under another file name: its comm is that name."""
    path = os.path.join(tempfile.mkdtemp(prefix='proffs-named-'), name)
    shutil.copy(os.path.join(util.TARGETS, 'burn'), path)
    os.chmod(os.path.dirname(path), 0o755)
    return path


def test_name_resolves_across_restart(proffs, target, tmp_path):
    """/prof/name/<comm>/ and /name/<comm>/debug/pprof/... name the
    oldest process of that comm, the same after it restarts; @newest and
    @2 the others."""
    comm = f'pfn{os.getpid() % 100000}'
    exe = named_copy(tmp_path, comm)
    first = target(comm, path=exe)
    b = base(proffs)
    for gen in range(2):
        old = first
        p = util.save(proffs.read(f'name/{comm}', 'cpu_1s.pb.gz'),
                      f'name-{gen}.pb.gz')
        assert burns(util.validate_pprof(p))
        assert proffs.log_lines(r'open name/%s/cpu_1s.pb.gz by uid 0: '
                                r'pid %d$' % (comm, first.pid))
        for url in (f'{b}/name/{comm}/debug/pprof/profile?seconds=1&hz=98',
                    f'{b}/debug/pprof/profile?name={comm}&seconds=1&hz=97'):
            status, _, body = get(url)
            assert status == 200
            util.validate_pprof(util.save(body, f'name-http-{gen}.pb.gz'))
        assert len(proffs.log_lines(r'session \d+ start: pid=%d '
                                    % first.pid)) == 3
        with open(os.path.join(proffs.mnt, 'name', comm, 'cmdline')) as f:
            assert f.read().startswith(exe)
        # restart: a new process of the same name
        first.kill()
        first = target(comm, path=exe)
        assert first.pid != old.pid
    second = target(comm, path=exe)
    for sel, want in (('', first), ('@1', first), ('@2', second),
                      ('@newest', second)):
        proffs.read(f'name/{comm}{sel}', 'cpu_500ms.pb.gz')
        assert proffs.log_lines(r'open name/%s%s/cpu_500ms.pb.gz by uid 0:'
                                r' pid %d$' % (comm, sel, want.pid)), sel
    assert comm in os.listdir(os.path.join(proffs.mnt, 'name'))
    util.expect_errno(lambda: os.listdir(os.path.join(
        proffs.mnt, 'name', comm + '@3')), errno.ENOENT)
    assert get(f'{b}/debug/pprof/profile?name={comm}@3')[0] == 404


def systemd_runs():
    return os.path.isdir('/run/systemd/system')


class FakeUnit:
    """A unit as systemd makes one, where systemd does not run (CI's
    chroot, this machine's container): a cgroup named after it under
    system.slice, in the cgroup2 mount or the name=systemd hierarchy,
    holding the unit's processes. proffs reads only that, so the test
    runs the same code as on a systemd machine."""

    def __init__(self, name):
        self.root = self.cgroup_root()
        self.slice = os.path.join(self.root, 'system.slice')
        self.made_slice = not os.path.isdir(self.slice)
        os.makedirs(self.slice, exist_ok=True)
        self.dir = os.path.join(self.slice, name)
        os.mkdir(self.dir)

    @staticmethod
    def cgroup_root():
        with open('/proc/self/mountinfo') as f:
            for line in f:
                fields = line.split(' - ')
                mnt = line.split()[4]
                fstype, _, opts = fields[1].split()[:3]
                if fstype == 'cgroup2' or (fstype == 'cgroup' and
                                           'name=systemd' in opts):
                    return mnt
        pytest.fail('no cgroup2 or name=systemd hierarchy mounted')

    def wrap(self):
        """Run a target in the unit: sh joins it, then execs."""
        procs = os.path.join(self.dir, 'cgroup.procs')
        return ['sh', '-c', f'echo $$ > {procs} && exec "$0" "$@"']

    def remove(self):
        # the unit's processes are the test's and are gone by now
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                break
            except OSError:
                time.sleep(0.1)
        if self.made_slice:
            try:
                os.rmdir(self.slice)
            except OSError:
                pass


def check_unit(proffs, unit, pid, gen):
    """The unit's files and URLs profile pid, burn's shape."""
    b = base(proffs)
    p = util.save(proffs.read(f'unit/{unit}', 'cpu_1s.pb.gz'),
                  f'unit-{gen}.pb.gz')
    assert burns(util.validate_pprof(p))
    assert proffs.log_lines(r'open unit/%s/cpu_1s.pb.gz by uid 0: pid %d$'
                            % (re.escape(unit), pid))
    short = unit[:-len('.service')]   # systemctl's habit
    # other rates than the file's: sessions of their own, not its result
    for url in (f'{b}/unit/{unit}/debug/pprof/profile?seconds=1&hz=98',
                f'{b}/debug/pprof/profile?unit={short}&seconds=1&hz=97'):
        status, _, body = get(url)
        assert status == 200, body
    assert len(proffs.log_lines(r'session \d+ start: pid=%d ' % pid)) == 3


@contextlib.contextmanager
def unit_of(target, unit):
    """A unit running burn, restarted by the caller with restart(): a
    transient systemd unit under systemd, else a FakeUnit. Yields
    (pid_now, restart), pid_now() its main pid."""
    if systemd_runs():
        burn = os.path.join(util.TARGETS, 'burn')
        subprocess.run(['systemd-run', f'--unit={unit}', burn], check=True)

        def pid_now():
            for _ in range(50):
                pid = int(subprocess.run(
                    ['systemctl', 'show', '-p', 'MainPID', '--value', unit],
                    capture_output=True, text=True).stdout)
                if pid:
                    return pid
                time.sleep(0.1)
            pytest.fail(f'{unit} has no main pid')

        def restart():
            subprocess.run(['systemctl', 'restart', unit], check=True)
        try:
            yield pid_now, restart
        finally:
            subprocess.run(['systemctl', 'stop', unit])
        return
    fake = FakeUnit(unit)
    running = [target('burn', wrap=fake.wrap())]

    def restart():
        running[0].kill()
        running[0] = target('burn', wrap=fake.wrap())
    try:
        yield (lambda: running[0].pid), restart
    finally:
        running[0].kill()
        fake.remove()


def test_unit_resolves_across_restart(proffs, target):
    """/prof/unit/<unit>/ and /unit/<unit>/debug/pprof/... follow the
    unit's main process across a restart. Under systemd a transient unit
    (systemd-run, systemctl restart); elsewhere (CI's chroot, where
    systemd is not PID 1) a cgroup made as systemd makes one, which is
    all proffs reads either way."""
    unit = f'proffs-test-{os.getpid()}.service'
    pids = []
    with unit_of(target, unit) as (pid_now, restart):
        for gen in range(2):
            pids.append(pid_now())
            check_unit(proffs, unit, pids[-1], gen)
            restart()
    assert pids[0] != pids[1]
    util.expect_errno(lambda: os.listdir(os.path.join(
        proffs.mnt, 'unit', unit)), errno.ENOENT)
    assert get(f'{base(proffs)}/unit/{unit}/debug/pprof/profile')[0] == 404


FLEET = os.path.join(util.REPO, 'contrib', 'fleet')
PREFIX = re.compile(r'(?:path_prefix: |"__profile_path_prefix__" = ")'
                    r'(/[^"\s]*)')


def test_fleet_configs_prefixes(proffs, target, tmp_path):
    """The path prefixes contrib/fleet's Parca and Alloy configurations
    scrape, with their example unit and command named after this test's
    own programs, answer their default CPU and memory paths."""
    prefixes = set()
    for f in ('parca.yaml', 'proffs.alloy'):
        with open(os.path.join(FLEET, f)) as fh:
            prefixes |= set(PREFIX.findall(fh.read()))
    assert prefixes == {'/unit/nginx.service', '/name/postgres', '/all'}
    unit = f'proffs-fleet-{os.getpid()}.service'
    comm = f'pff{os.getpid() % 100000}'
    named = target(comm, path=named_copy(tmp_path, comm))
    b = base(proffs)
    with unit_of(target, unit) as (pid_now, _):
        for prefix in sorted(prefixes):
            p = prefix.replace('nginx.service', unit).replace(
                'postgres', comm)
            paths = ['/debug/pprof/profile?seconds=1']
            if prefix != '/all':
                paths.append('/debug/pprof/allocs')
                assert get(f'{b}{p}/heap_1s.pb.gz')[0] == 200  # the agent
            for path in paths:
                status, _, body = get(b + p + path)
                assert status == 200, (p, path, body)
                util.validate_pprof(util.save(
                    body, 'fleet' + (p + path).split('?')[0]
                    .replace('/', '_') + '.pb.gz'))
        assert proffs.log_lines(r'session \d+ start: pid=%d ' % pid_now())
    assert proffs.log_lines(r'session \d+ start: pid=%d ' % named.pid)


def test_all_shows_every_process_with_labels(proffs, target, tmp_path):
    """/prof/all/cpu_3s.pb.gz (and over HTTP): samples of every process,
    each with the labels pid and comm, burn's 3:1 shape within each."""
    names = [f'pfa{i}{os.getpid() % 10000}' for i in range(2)]
    ts = [target(n, path=named_copy(tmp_path, n)) for n in names]
    data = proffs.read('all', 'cpu_3s.pb.gz')
    p = util.validate_pprof(util.save(data, 'all-cpu_3s.pb.gz'))
    for t, n in zip(ts, names):
        mine = [s for s in p.samples if s.labels.get('pid') == str(t.pid)]
        assert mine, f'no sample of {n}'
        assert {s.labels.get('comm') for s in mine} == {n}
        sub = util.Profile()
        sub.samples = mine
        assert burns(sub), n
    tags = util.pprof('-tags', util.save(data, 'all-tags.pb.gz'))
    assert 'comm' in tags and names[0] in tags and names[1] in tags
    status, _, body = get(f'{base(proffs)}/all/cpu_1s.pb.gz')
    assert status == 200
    p = util.validate_pprof(util.save(body, 'all-http.pb.gz'))
    assert {str(t.pid) for t in ts} <= {s.labels.get('pid')
                                         for s in p.samples}
    with open(os.path.join(proffs.mnt, 'all', 'cpu_1s.svg'), 'rb') as f:
        util.check_svg(f.read(), 'all-cpu_1s.svg')
    util.expect_errno(lambda: open(os.path.join(proffs.mnt, 'all',
                                                'heap.pb.gz')),
                      errno.ENOENT)
