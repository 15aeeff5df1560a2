# SPDX-License-Identifier: GPL-2.0-or-later
"""Human renderings through the mount: flame graphs opened by a real
browser straight from /prof, collapsed stacks and top tables checked
against go tool pprof on the same samples."""

import html.parser
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.parse

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


# Links index.html must offer (SPEC §1, issues 4 and 5), each served.
# None is a name readdir lists: a browser reads st_size bytes, and only
# unlisted names wait in stat for their exact size.
INDEX_LINKS = {'flame.svg', 'cpu_30s.pb.gz', 'goroutine?debug=1.txt',
               'goroutine?debug=2.txt', 'goroutine.pb.gz', 'cmdline',
               'heap.svg', 'heap?debug=1.txt', 'allocs.svg'}


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
