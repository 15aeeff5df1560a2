# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures: a proffs mounted on a private directory for each test, the
target programs, and the daemon's log as part of every verdict."""
import os
import random
import shutil
import signal
import sys

import pytest

import browser
import util

sys.path.insert(0, os.path.join(util.REPO, 'tests', 'stress'))
import distro  # noqa: E402

# Started in the background by a non-interactive shell (nohup ... &), the
# test runner inherits SIGINT ignored, and so would every reader and
# daemon it starts, as exec keeps an ignored signal ignored: the tests of
# Ctrl-C would then test nothing but the ignoring. A handled signal is
# reset to its default by exec.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Fixture teardown needs to know whether the test body failed.
    outcome = yield
    rep = outcome.get_result()
    setattr(item, 'rep_' + rep.when, rep)


@pytest.fixture
def proffs_options(request):
    """Mount options for the proffs fixture: () unless a test asks for
    others (@pytest.mark.parametrize('proffs_options', [(...)],
    indirect=True)) or a module overrides this fixture."""
    return getattr(request, 'param', ())


@pytest.fixture
def proffs(request, tmp_path, proffs_options):
    """A mounted proffs (util.Daemon). At the end it is unmounted with
    fusermount3 -u and must exit 0 with no unexpected error or warning in
    its log; if the test failed, it is torn down hard and its log shown."""
    if not os.path.exists('/dev/fuse') or not shutil.which('fusermount3'):
        pytest.skip('no FUSE here (/dev/fuse, fusermount3)')
    if not os.access(util.DAEMON, os.X_OK):
        pytest.fail(f'{util.DAEMON} is not built')
    d = util.Daemon(str(tmp_path), proffs_options)
    yield d
    rep = getattr(request.node, 'rep_call', None)
    if rep is not None and rep.failed:
        d.cleanup()
        print(f'daemon log ({" ".join(d.cmd)}):\n{d.log_text()}')
        return
    if d.stopped:
        return
    if d.proc.poll() is not None:
        d.cleanup()
        pytest.fail(f'daemon died (exit {d.proc.returncode}):\n'
                    + d.log_text())
    d.unmount()


@pytest.fixture
def expect_log(proffs):
    """expect_log(regex): a daemon log line the test provokes on purpose
    (e.g. a warning) does not fail it."""
    return proffs.expect_log


@pytest.fixture
def target():
    """target(name, *argv, user=None): start tests/targets/<name>, wait
    for its "ready"; killed at the end of the test."""
    started = []

    def start(name, *args, **kw):
        t = util.Target(name, *args, **kw)
        started.append(t)
        return t
    yield start
    for t in started:
        t.kill()


@pytest.fixture
def driver():
    """Headless Chromium through selenium (browser.py); skipped where it
    is not installed."""
    why = browser.available()
    if why:
        pytest.skip(why)
    d = browser.open_driver()
    yield d
    d.quit()


@pytest.fixture
def service():
    """service(pattern): one of Debian's programs (redis, nginx, postgres,
    sqlite3, python3, node) started by its driver in tests/stress/distro.py,
    the one the stress suite runs; its checks raise distro.Bad(verdict,
    detail), a failure. Not installed is a failure too (contrib/deps.sh).
    Killed at the end of the test."""
    held = []

    def start(pattern):
        if pattern not in distro.available():
            pytest.fail(f'{pattern} is not installed (contrib/deps.sh)')
        try:
            return distro.start(pattern, random.Random(25), held)
        except distro.Bad as e:
            pytest.fail(f'{pattern} did not start: {e.verdict}: {e}')
    yield start
    for s in held:
        s.cleanup()
