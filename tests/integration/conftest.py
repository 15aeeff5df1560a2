# SPDX-License-Identifier: GPL-2.0-or-later
import os
import shutil

import pytest

import util


def pytest_configure(config):
    if not os.path.exists(util.DAEMON):
        raise pytest.UsageError(f'{util.DAEMON} is not built')


@pytest.fixture
def proffs_options():
    """Mount options for the proffs fixture; override per test module."""
    return ()


@pytest.fixture
def proffs(tmp_path, proffs_options):
    """A mounted proffs; unmounted at the end, which must exit 0 with a
    clean log."""
    if not os.path.exists('/dev/fuse') or not shutil.which('fusermount3'):
        pytest.skip('no FUSE here')
    d = util.Daemon(str(tmp_path), proffs_options)
    yield d
    if d.stopped:
        return
    if d.proc.poll() is not None:
        d.cleanup()
        pytest.fail(f'daemon died (exit {d.proc.returncode}):\n'
                    + d.log_text())
    d.unmount()


@pytest.fixture
def target():
    """Start programs from tests/targets; killed at the end."""
    started = []

    def start(name, *args, **kw):
        t = util.Target(name, *args, **kw)
        started.append(t)
        return t
    yield start
    for t in started:
        t.kill()
