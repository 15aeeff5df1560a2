# SPDX-License-Identifier: GPL-2.0-or-later
"""The flight recorder (issue 27): -o record keeps low-rate CPU samples of
every process; cpu_lastNs names answer from it at once, also for a
process that exited; base= gives differential profiles (pprof, SVG, txt).
Every pprof read here goes through go tool pprof (util.save)."""

import errno
import os
import re
import time
import urllib.parse

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


@pytest.mark.parametrize('proffs_options', [RECORD + ('record_s=14',)],
                         indirect=True)
def test_last_window_split_then_after_exit_then_aged_out(proffs, target):
    t = target('burn')
    time.sleep(10.5)
    data, took = read_timed(proffs, t.pid, 'cpu_last10s.pb.gz')
    assert took < 1.0, f'a last window took {took:.2f} s'
    path = save(data, 'record-last10s.pb.gz')
    p = validate_pprof(path)
    assert p.sample_types == ['samples/count', 'cpu/nanoseconds']
    assert p.period == 10**9 // 997
    assert p.duration_ns == 10 * 10**9
    shares = leaf_shares(path)
    hot, sib = shares.get('hot', 0), shares.get('sibling', 0)
    assert hot + sib > 0.95, shares
    # burn's split is 3:1 by construction: 75% and 25%, within 3 points
    assert abs(hot / (hot + sib) - 0.75) <= 0.03, shares
    assert sum(s.values[0] for s in p.samples) > 500, 'too few samples'
    # nothing sampled at the read: the session took no window
    assert proffs.log_lines(r'session \d+ done: pid=%d kind=cpu '
                            r'window_ms=10000 .*recorder' % t.pid)

    # the whole host, from the recorder: burn among the pids
    data = proffs.read('all', 'cpu_last5s.pb.gz')
    path = save(data, 'record-all-last5s.pb.gz')
    validate_pprof(path)
    assert str(t.pid) in pprof('-tags', path)

    t.kill()
    assert not os.path.exists(f'/proc/{t.pid}')
    # gone from /proc, still readable by its pid
    data, took = read_timed(proffs, t.pid, 'cpu_last9s.pb.gz')
    assert took < 1.0
    path = save(data, 'record-after-exit.pb.gz')
    validate_pprof(path)
    shares = leaf_shares(path)
    assert abs(shares['hot'] / (shares['hot'] + shares['sibling']) -
               0.75) <= 0.04, shares
    assert 'exited' in pprof('-top', path)
    txt = proffs.read(t.pid, 'cpu_last9s.txt').decode()
    assert re.search(r'\bhot\n', txt)

    # record_s=14: 15 s on, its buckets aged out, and so did the pid
    time.sleep(15.5)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last5s.pb.gz'),
                 errno.ENOENT)
    assert not os.path.exists(proffs.path(t.pid))


def test_last_window_without_the_recorder_is_einval(proffs, target):
    t = target('burn')
    for name in ('cpu_last10s.pb.gz', 'cpu_5s.txt?base=prev',
                 'cpu_5s.svg?base=last60s'):
        expect_errno(lambda: proffs.read(t.pid, name), errno.EINVAL)
    assert len(proffs.log_lines(r'EINVAL: no flight recorder: the daemon '
                                r'runs without -o record')) == 3
    # a grammatical name, a bad value: EINVAL; no grammar: ENOENT
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last0s.pb.gz'),
                 errno.EINVAL)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_last5ms.pb.gz'),
                 errno.ENOENT)
    expect_errno(lambda: proffs.read(t.pid, 'cpu_5s?base=next.pb.gz'),
                 errno.ENOENT)


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
    # before() for 5 s, then after(): the last 5 s against the 5 s before
    t = target('switcher', 5)
    assert t.proc.stdout.readline().strip() == b'switched'
    time.sleep(5.5)
    names = ['cpu_last5s?base=prev.pb.gz', 'cpu_last5s?base=prev.svg',
             'cpu_last5s?base=prev.txt']
    got = {n: proffs.read(t.pid, n) for n in names}
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
    url = 'file://' + proffs.path(t.pid, urllib.parse.quote(names[1]))
    driver.get(url)
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
    t = target('switcher', 4)
    assert t.proc.stdout.readline().strip() == b'switched'
    data = proffs.read(t.pid, 'cpu_2s.pb.gz?base=last6s')
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
    time.sleep(4.5)
    url = test_http.base(proffs) + \
        f'/debug/pprof/profile?pid={t.pid}&last=4'
    t0 = time.monotonic()
    status, _, body = test_http.get(url)
    assert status == 200, body
    assert time.monotonic() - t0 < 1.0
    path = save(body, 'record-http-last4.pb.gz')
    validate_pprof(path)
    shares = leaf_shares(path)
    assert abs(shares['hot'] / (shares['hot'] + shares['sibling']) -
               0.75) <= 0.05, shares
    t.kill()
    # exited: still there by pid, with base=prev too
    status, _, body = test_http.get(url + '&base=prev&seconds=4')
    assert status == 200, body
    validate_pprof(save(body, 'record-http-diff.pb.gz'))
    status, _, body = test_http.get(test_http.base(proffs) +
                                    f'/debug/pprof/profile?pid={t.pid}'
                                    '&last=x')
    assert status == 400, (status, body)
