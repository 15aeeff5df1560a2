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

# Name, x and width of every frame, from the page itself.
_FRAMES_JS = """
var out = [];
var gs = document.getElementsByClassName('frame');
for (var i = 0; i < gs.length; i++) {
    var t = gs[i].getElementsByTagName('title')[0].textContent;
    var r = gs[i].getElementsByTagName('rect')[0];
    out.push([t.substring(0, t.lastIndexOf(' (')),
              parseFloat(r.getAttribute('x')),
              parseFloat(r.getAttribute('width')),
              gs[i].style.display]);
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
    """[(name, x, width, display)] for every frame, in document order."""
    return [tuple(f) for f in driver.execute_script(_FRAMES_JS)]


def _widest(fs, name):
    best = None
    for i, (n, _, w, _) in enumerate(fs):
        if n == name and (best is None or w > fs[best][2]):
            best = i
    return best


def _click_frame(driver, index):
    from selenium.webdriver.common.by import By

    rect = driver.find_elements(By.CSS_SELECTOR, 'g.frame')[index]
    # The <g> is clicked through its rect (the text ignores the pointer).
    rect.find_element(By.TAG_NAME, 'rect').click()


def check_flame_svg(driver, url, hot_names, screenshot_path):
    """Load the flame graph at url and exercise it: every name in
    hot_names is a frame; clicking the widest frame of hot_names[0] zooms
    it to the full width; "Reset Zoom" restores it; search() for it
    highlights it and reports its share in #matched. Saves a screenshot
    of the search result. Returns the measurements as a dict."""
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

    t0 = time.monotonic()
    ret = driver.execute_script(
        'return search(arguments[0])', '^' + re.escape(hot) + '$')
    search_s = time.monotonic() - t0
    text = driver.find_element(By.ID, 'matched').text
    m = re.fullmatch(r'Matched: (\d+(?:\.\d)?)%', text.strip())
    assert m, f'#matched says {text!r}'
    matched = float(m.group(1))
    assert abs(matched - ret) < 0.051, (matched, ret)
    driver.save_screenshot(screenshot_path)
    return {'url': url, 'frames': nframes, 'load_s': load_s,
            'zoom_s': zoom_s, 'search_s': search_s,
            'matched_pct': matched, 'width_before': before,
            'width_zoomed': after[2], 'screenshot': screenshot_path}
