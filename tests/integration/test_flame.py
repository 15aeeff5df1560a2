# SPDX-License-Identifier: GPL-2.0-or-later
"""Human renderings through the mount: flame graphs opened by a real
browser straight from /prof, collapsed stacks and top tables checked
against go tool pprof on the same samples."""

import os
import re
import shutil
import subprocess
import threading
import time

import pytest

import browser
import util
from util import pprof, save


def read_together(proffs, pid, names):
    """Open every name at once: one session, so the same samples."""
    out = {}

    def one(n):
        out[n] = proffs.read(pid, n)
    ths = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return out


@pytest.fixture
def driver():
    why = browser.available()
    if why:
        pytest.skip(why)
    d = browser.open_driver()
    yield d
    d.quit()


def test_flame_svg_opened_from_the_mount_in_chromium(proffs, target, driver):
    t = target('burn')
    url = 'file://' + proffs.path(t.pid, 'cpu_3s.svg')
    os.makedirs(util.OUT_DIR, exist_ok=True)
    shot = os.path.join(util.OUT_DIR, 'flame-mount.png')
    m = browser.check_flame_svg(driver, url, ['hot', 'sibling', 'level2'],
                                shot)
    # hot burns 3x sibling: about 75% of all samples
    assert 60 <= m['matched_pct'] <= 90, m
    assert os.path.getsize(shot) > 10000
    # the browser's stat waited for the result; one session served both
    assert len(proffs.log_lines(r'session \d+ start')) == 1


def test_flame_svg_is_well_formed_and_offline(proffs, target):
    t = target('qsorter')
    data = proffs.read(t.pid, 'flame_2s.svg')
    path = save(data, 'qsorter.svg')
    assert shutil.which('xmllint'), 'xmllint is not installed (libxml2-utils)'
    r = subprocess.run(['xmllint', '--noout', path], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    text = data.decode()
    assert 'cmp_ints' in text and 'qsorter' in text
    urls = set(re.findall(r'https?://[^"\s<>]+', text))
    assert urls <= {'http://www.w3.org/2000/svg',
                    'http://www.w3.org/1999/xlink'}, urls
    assert not re.search(r'<(script|image|use)[^>]+(src|href)=', text)


def test_stat_of_svg_waits_but_listing_does_not(proffs, target):
    t = target('burn')
    assert not [n for n in os.listdir(proffs.path(t.pid))
                if n.endswith('.svg')]
    start = time.monotonic()
    st = os.stat(proffs.path(t.pid, 'cpu_2s.svg'))
    waited = time.monotonic() - start
    assert waited >= 1.5 and st.st_size > 1000
    data = proffs.read(t.pid, 'cpu_2s.svg')
    assert len(data) == st.st_size
    # while a profile is being taken, ls -l answers at once
    cat = subprocess.Popen(['cat', proffs.path(t.pid, 'cpu_5s.svg')],
                           stdout=subprocess.DEVNULL)
    assert proffs.wait_log(r'window_ms=5000')
    start = time.monotonic()
    subprocess.run(['ls', '-l', proffs.path(t.pid)], check=True,
                   capture_output=True)
    assert time.monotonic() - start < 1.0
    cat.wait(timeout=20)


def test_folded_sums_equal_pprof_totals(proffs, target):
    t = target('burn')
    got = read_together(proffs, t.pid, ['cpu_2s.folded', 'cpu_2s.pb.gz',
                                        'cpu_2s.folded?sample=samples'])
    path = save(got['cpu_2s.pb.gz'], 'folded-ref.pb.gz')
    prof = util.validate_pprof(path)
    lines = got['cpu_2s.folded'].decode().splitlines()
    assert lines and all(re.fullmatch(r'\S.*;?\S* \d+', l) for l in lines)
    total_ns = sum(int(l.rsplit(' ', 1)[1]) for l in lines)
    counts = sum(int(l.rsplit(' ', 1)[1]) for l in
                 got['cpu_2s.folded?sample=samples'].decode().splitlines())
    assert total_ns == sum(s.values[1] for s in prof.samples)
    assert counts == sum(s.values[0] for s in prof.samples)
    assert any(l.startswith('_start;') and ';level2;hot ' in l
               for l in lines)


def table_rows(text):
    """The rows of a -top table: (flat, flat%, sum%, cum, cum%, name)."""
    rows, started = [], False
    for line in text.splitlines():
        if line.split() == ['flat', 'flat%', 'sum%', 'cum', 'cum%']:
            started = True
            continue
        if started and line.strip():
            rows.append(tuple(line.split(None, 5)))
    return rows


def test_txt_matches_go_tool_pprof_top(proffs, target):
    t = target('qsorter')
    got = read_together(proffs, t.pid, ['cpu_2s.txt', 'cpu_2s.pb.gz'])
    path = save(got['cpu_2s.pb.gz'], 'txt-ref.pb.gz')
    ours = table_rows(got['cpu_2s.txt'].decode())
    theirs = table_rows(pprof('-top', path))
    assert ours and ours == theirs
    assert ours[0][5] == 'cmp_ints'
