# SPDX-License-Identifier: GPL-2.0-or-later
"""Drive a flame graph SVG in headless Chromium (python3-selenium,
chromium, chromium-driver): load it by URL, find the frames, zoom, reset,
search. A helper module, no tests here; see test_render_browser.py."""
import re
import shutil
import tempfile
import time

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
GRAPH_WIDTH = 1180.0    # render/flame.c: 1200 px less two 10 px margins
HIT_FILL = 'rgb(230, 0, 230)'   # render/flame.c: HIT, a match's fill

# Name, x, width, display and fill as drawn of every frame, from the
# page itself.
_FRAMES_JS = """
var out = [];
var gs = document.getElementsByClassName('frame');
for (var i = 0; i < gs.length; i++) {
    var t = gs[i].getElementsByTagName('title')[0].textContent;
    var r = gs[i].getElementsByTagName('rect')[0];
    out.push([t.substring(0, t.lastIndexOf(' (')),
              parseFloat(r.getAttribute('x')),
              parseFloat(r.getAttribute('width')),
              gs[i].style.display,
              window.getComputedStyle(r).fill]);
}
return out;
"""


def available():
    """None if a browser can be driven here, else the reason why not."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return 'python3-selenium is not installed'
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            return f'{path} is not installed (chromium, chromium-driver)'
    return None


def open_driver():
    """A headless Chromium that talks to nothing but the page it loads.
    The caller quits it (driver.quit())."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix='proffs-chromium-')
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu',
                '--disable-quic', '--no-first-run',
                '--disable-background-networking',
                '--disable-component-update', '--disable-sync',
                '--disable-dev-shm-usage', '--window-size=1280,1000',
                '--user-data-dir=' + profile):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    return driver


def frames(driver):
    """[(name, x, width, display, fill)] for every frame, in document
    order; fill as the browser paints it ("rgb(r, g, b)")."""
    return [tuple(f) for f in driver.execute_script(_FRAMES_JS)]


def _widest(fs, name):
    best = None
    for i, (n, _, w, _, _) in enumerate(fs):
        if n == name and (best is None or w > fs[best][2]):
            best = i
    return best


def _click_frame(driver, index):
    from selenium.webdriver.common.by import By

    rect = driver.find_elements(By.CSS_SELECTOR, 'g.frame')[index]
    # The <g> is clicked through its rect (the text ignores the pointer).
    rect.find_element(By.TAG_NAME, 'rect').click()


def _covered_pct(fs, names):
    """The share of the graph's width under frames named in names,
    overlaps (a frame above another of them) counted once."""
    spans = sorted((f[1], f[1] + f[2]) for f in fs if f[0] in names)
    total, end = 0.0, None
    for a, b in spans:
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return 100.0 * total / GRAPH_WIDTH


def _search_as_user(driver, regex):
    """Click "Search", type regex into the prompt it opens, press OK."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.ID, 'search').click()
    alert = WebDriverWait(driver, 5).until(EC.alert_is_present())
    alert.send_keys(regex)
    alert.accept()


def check_flame_svg(driver, url, hot_names, screenshot_path):
    """Load the flame graph at url and exercise it: every name in
    hot_names is a frame; clicking the widest frame of hot_names[0] zooms
    it to the full width; "Reset Zoom" restores it; searching for it as a
    user does (the Search control, its prompt) paints every frame of it,
    and only those, in the highlight colour, and #matched reports the
    share of the width they cover; Search again clears it, every fill as
    before. Saves a screenshot of the search result. Returns the
    measurements as a dict."""
    from selenium.webdriver.common.by import By

    hot = hot_names[0]
    t0 = time.monotonic()
    driver.get(url)
    nframes = driver.execute_script(
        'return document.getElementsByClassName("frame").length')
    load_s = time.monotonic() - t0
    assert driver.execute_script('return typeof search') == 'function', \
        'no global search() in the page'
    fs = frames(driver)
    names = {f[0] for f in fs}
    missing = [n for n in hot_names if n not in names]
    assert not missing, f'frames missing from {url}: {missing}'

    i = _widest(fs, hot)
    before = fs[i][2]
    t0 = time.monotonic()
    _click_frame(driver, i)
    zoom_s = time.monotonic() - t0
    after = frames(driver)[i]
    assert abs(after[2] - GRAPH_WIDTH) < 1.0, \
        f'{hot} is {after[2]} px wide after zoom, not {GRAPH_WIDTH}'
    assert after[3] != 'none', f'{hot} hidden after zooming into it'
    root = frames(driver)[0]
    assert root[0] == 'all' and root[3] != 'none', 'root hidden on zoom'

    driver.find_element(By.ID, 'reset').click()
    reset = frames(driver)[i]
    assert abs(reset[2] - before) < 0.05, \
        f'{hot} is {reset[2]} px wide after reset, not {before}'
    assert all(f[3] != 'none' for f in frames(driver)), \
        'frames still hidden after reset'

    plain = frames(driver)
    assert all(f[4] != HIT_FILL for f in plain), 'highlighted before search'
    t0 = time.monotonic()
    _search_as_user(driver, '^' + re.escape(hot) + '$')
    search_s = time.monotonic() - t0
    found = frames(driver)
    for was, now in zip(plain, found):
        want = HIT_FILL if was[0] == hot else was[4]
        assert now[4] == want, \
            f'{now[0]} is {now[4]} after searching {hot}, not {want}'
    text = driver.find_element(By.ID, 'matched').text
    m = re.fullmatch(r'Matched: (\d+(?:\.\d)?)%', text.strip())
    assert m, f'#matched says {text!r}'
    matched = float(m.group(1))
    covered = _covered_pct(plain, {hot})
    assert abs(matched - covered) < 0.06, (matched, covered)
    driver.save_screenshot(screenshot_path)
    # Search again: the highlight goes, every frame its own fill again
    driver.find_element(By.ID, 'search').click()
    cleared = frames(driver)
    assert [f[4] for f in cleared] == [f[4] for f in plain], \
        'fills not restored when the search was cleared'
    assert not driver.find_element(By.ID, 'matched').text.strip()
    return {'url': url, 'frames': nframes, 'load_s': load_s,
            'zoom_s': zoom_s, 'search_s': search_s,
            'matched_pct': matched, 'width_before': before,
            'width_zoomed': after[2], 'screenshot': screenshot_path}
