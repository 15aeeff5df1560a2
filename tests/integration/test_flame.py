# SPDX-License-Identifier: GPL-2.0-or-later
"""Human renderings through the mount: flame graphs opened by a real
browser straight from /prof, collapsed stacks and top tables checked
against go tool pprof on the same samples."""

import html.parser
import os
import re
import shutil
import subprocess
import time
import urllib.parse

import pytest

import browser
import util
from util import pprof, read_together, save


def test_flame_svg_opened_from_the_mount_in_chromium(proffs, target, driver):
    t = target('burn')
    url = 'file://' + proffs.path(t.pid, 'flame_3s.svg')
    os.makedirs(util.OUT_DIR, exist_ok=True)
    shot = os.path.join(util.OUT_DIR, 'flame-mount.png')
    m = browser.check_flame_svg(driver, url, ['hot', 'sibling', 'level2'],
                                shot)
    # hot burns 3x sibling: about 75% of all samples
    assert 60 <= m['matched_pct'] <= 90, m
    assert os.path.getsize(shot) > 10000
    # the browser's stat waited for the result; one session served both
    assert len(proffs.log_lines(r'session \d+ start')) == 1
    assert proffs.log_lines(r'session \d+ start: pid=%d kind=cpu '
                            r'window_ms=3000 ' % t.pid)


LABEL_UNITS = {'ns': 1, 'us': 1e3, 'ms': 1e6, 's': 1e9, 'hrs': 3600e9,
               'B': 1, 'kB': 2**10, 'MB': 2**20, 'GB': 2**30, 'TB': 2**40}


def label_value(label):
    """A value as pprof labels it ("1.05s", "222.22ms", "48kB", "22"):
    two decimals at most, in the unit it picked."""
    m = re.fullmatch(r'(-?\d+(?:\.\d+)?)([a-zA-Z]*)', label)
    assert m, label
    return float(m.group(1)) * LABEL_UNITS.get(m.group(2), 1)


def close_label(label, value):
    """label says value, to its three significant digits."""
    return abs(label_value(label) - value) <= 0.006 * abs(value) + 0.01


def test_flame_svg_is_well_formed_and_offline(proffs, target):
    """flame_2s.svg read with cpu_2s.pb.gz (one session, the same
    samples): well-formed, self-contained, titled with the pid, command,
    kind, sample type, window, start date and total the profile has, in
    warm colours, one fill per function name."""
    t = target('qsorter')
    start = time.time_ns()
    got = read_together(proffs, t.pid, ['flame_2s.svg', 'cpu_2s.pb.gz'])
    end = time.time_ns()
    assert len(proffs.log_lines(r'session \d+ start')) == 1
    ref = save(got['cpu_2s.pb.gz'], 'qsorter-flame-ref.pb.gz')
    p = util.validate_pprof(ref)
    _, text = util.check_svg(got['flame_2s.svg'], 'qsorter.svg')
    assert 'cmp_ints' in text and 'qsorter' in text
    titles = util.svg_titles(text)
    assert titles['title'] == \
        f'cpu profile of pid {t.pid}: {" ".join(t.argv)}', titles
    m = re.fullmatch(r'cpu \(nanoseconds\), (\S+) s window from '
                     r'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, total (\S+)',
                     titles['sub'])
    assert m, titles
    window = float(m.group(1))
    assert 1.98 <= window <= 3.0, titles
    assert abs(window - p.duration_ns / 1e9) <= 0.015, (titles, p.duration)
    when = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(p.time_ns // 10**9))
    assert m.group(2) == when, (titles, p.time_ns)
    assert start // 10**9 <= p.time_ns // 10**9 <= end // 10**9
    assert close_label(m.group(3), p.total('cpu/nanoseconds')), titles
    frames = util.svg_frames(text)
    assert frames[0][0] == 'all'
    assert frames[0][1] == p.total('cpu/nanoseconds')
    util.check_fills(frames, 'warm')
    names = [f[0] for f in frames]
    assert any(names.count(n) > 1 for n in names), \
        'no function drawn twice: the one-fill check proved nothing'


def test_flame_svg_sample_picks_the_value(proffs, target):
    """?sample= on an .svg, before or after the format (SPEC §1):
    sample=samples draws the sample counts, the default the CPU time, of
    the same samples (one session): every frame's value differs by the
    period, and the subtitle names the type and its total."""
    t = target('burn')
    names = ['flame_2s.svg', 'flame_2s.svg?sample=samples',
             'flame_2s?sample=samples.svg', 'cpu_2s.pb.gz']
    got = read_together(proffs, t.pid, names)
    assert len(proffs.log_lines(r'session \d+ start')) == 1
    ref = save(got['cpu_2s.pb.gz'], 'sample-ref.pb.gz')
    p = util.validate_pprof(ref)
    assert got['flame_2s.svg?sample=samples'] == \
        got['flame_2s?sample=samples.svg']
    _, dflt = util.check_svg(got['flame_2s.svg'], 'flame-cpu.svg')
    _, counts = util.check_svg(got['flame_2s.svg?sample=samples'],
                               'flame-samples.svg')
    sub_d, sub_c = util.svg_titles(dflt)['sub'], util.svg_titles(counts)['sub']
    assert sub_d.startswith('cpu (nanoseconds), '), sub_d
    assert close_label(sub_d.rsplit(', total ', 1)[1],
                       p.total('cpu/nanoseconds')), sub_d
    assert sub_c.startswith('samples (count), ') and \
        sub_c.endswith(f', total {p.total("samples/count")}'), sub_c
    fd, fc = util.svg_frames(dflt), util.svg_frames(counts)
    assert fd[0][1] == p.total('cpu/nanoseconds')
    assert fc[0][1] == p.total('samples/count') > 0
    assert [(n, v) for n, v, _ in fd] == \
        [(n, v * p.period) for n, v, _ in fc]
    assert 'hot' in [n for n, _, _ in fc]


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


@pytest.mark.parametrize('name', ['cpu_2s.txt', 'cpu_2s.folded',
                                  'cpu_2s.pb.gz', 'goroutine?debug=2.txt'])
def test_stat_of_any_unlisted_name_gives_the_exact_size(proffs, target,
                                                         name):
    """Not only browsers trust st_size: the stat of every profile name
    readdir does not list waits for the result and gives its exact size
    (the listed names answer at once: test_listing_and_cmdline)."""
    t = target('burn')
    st = os.stat(proffs.path(t.pid, name))
    assert st.st_size > 0
    data = proffs.read(t.pid, name)
    assert len(data) == st.st_size


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


class IndexPage(html.parser.HTMLParser):
    """Title, h1 text and links (href, text) of an HTML page; fails on
    markup that is not balanced."""

    VOID = {'meta', 'br', 'hr', 'img', 'link', 'input'}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.open, self.text = [], {'title': '', 'h1': ''}
        self.links = []
        self.feed(text)
        self.close()
        assert not self.open, f'unclosed elements {self.open}'

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.open.append(tag)
        if tag == 'a':
            self.links.append([dict(attrs)['href'], ''])

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open, tag)
        self.open.pop()

    def handle_data(self, data):
        for tag in ('title', 'h1'):
            if tag in self.open:
                self.text[tag] += data
        if 'a' in self.open:
            self.links[-1][1] += data


# Links index.html must offer (SPEC §1, issues 4, 5 and 18), each served.
# None is a name readdir lists: a browser reads st_size bytes, and only
# unlisted names wait in stat for their exact size.
INDEX_LINKS = {'flame.svg', 'cpu_30s.pb.gz', 'goroutine?debug=1.txt',
               'goroutine?debug=2.txt', 'goroutine.pb.gz', 'cmdline',
               'heap.svg', 'heap?debug=1.txt', 'allocs.svg',
               'wall_5s.svg', 'block_5s.svg', 'mutex_5s.txt', 'memstats.txt'}


def test_index_html_links_and_command_line(proffs, target):
    args = ['a<1>', 'b&c', '"q"']
    t = target('burn', *args)
    path = proffs.path(t.pid, 'index.html')
    data = proffs.read(t.pid, 'index.html')
    assert os.stat(path).st_size == len(data)   # a browser reads st_size
    save(data, 'index.html')
    text = data.decode('utf-8')
    assert text.startswith('<!DOCTYPE html>')
    assert '<meta charset="utf-8">' in text
    page = IndexPage(text)
    assert page.text['title'] == f'proffs: {t.pid}'
    # the command line, every argument escaped
    assert page.text['h1'] == f'{t.pid}: ' + ' '.join(t.argv)
    assert 'a&lt;1&gt; b&amp;c &quot;q&quot;' in text
    # libxml2's HTML parser finds nothing to complain about
    assert shutil.which('xmllint'), 'xmllint is not installed (libxml2-utils)'
    r = subprocess.run(['xmllint', '--html', '--noout', path],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    # relative links, '?' escaped so a browser keeps it in the path,
    # each shown by its file name
    names = {}
    for href, label in page.links:
        assert '/' not in href and '?' not in href, href
        names[urllib.parse.unquote(href)] = label
    assert INDEX_LINKS <= set(names), names
    for name, label in names.items():
        assert label == name, (name, label)
    # every link is served: a snapshot reads, a windowed profile opens
    # (closing it at once stops the session it started; os.open, as
    # Python's open() would fstat, which waits for an SVG's result)
    for name in sorted(names):
        if name.startswith(('goroutine', 'threads', 'cmdline')):
            assert proffs.read(t.pid, name), name
        else:
            os.close(os.open(proffs.path(t.pid, name), os.O_RDONLY))
    assert proffs.read(t.pid, 'cmdline') == \
        b'\0'.join(a.encode() for a in t.argv) + b'\0'
    assert proffs.read(t.pid, 'goroutine?debug=1.txt').startswith(
        b'threads profile: total 1\n')


def test_index_html_in_chromium_leads_to_a_flame_graph(proffs, target,
                                                      driver):
    from selenium.webdriver.common.by import By

    t = target('burn', 'x<y')
    driver.get('file://' + proffs.path(t.pid, 'index.html'))
    assert driver.title == f'proffs: {t.pid}'
    h1 = driver.find_element(By.TAG_NAME, 'h1').text
    assert h1 == f'{t.pid}: {t.argv[0]} x<y', h1
    hrefs = {a.text: a.get_attribute('href')
             for a in driver.find_elements(By.TAG_NAME, 'a')}
    base = 'file://' + proffs.path(t.pid, '')
    assert hrefs['goroutine?debug=2.txt'] == base + 'goroutine%3Fdebug=2.txt'
    assert hrefs['flame.svg'] == base + 'flame.svg'
    # a text link shows its text, whole: its stat gave the exact size
    driver.find_element(By.LINK_TEXT, 'goroutine?debug=2.txt').click()
    body = driver.find_element(By.TAG_NAME, 'body').text
    assert body.startswith(f'thread {t.pid} ['), body[:200]
    assert 'main' in body, body
    driver.back()
    # follow the 5 s flame graph's link: the browser shows the graph
    link = driver.find_element(By.LINK_TEXT, 'cpu_5s.svg')
    link.click()
    assert driver.current_url == base + 'cpu_5s.svg'
    names = {f[0] for f in browser.frames(driver)}
    assert {'main', 'level1', 'level2', 'hot', 'sibling'} <= names, names
    driver.save_screenshot(os.path.join(util.OUT_DIR, 'index-flame.png'))
