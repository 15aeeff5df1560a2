# SPDX-License-Identifier: GPL-2.0-or-later
"""Telling the user (issue 28): each mistake of a new user gives the same
errno through the mount and over HTTP, and a sentence saying what to do
in /prof/<pid>/errors.txt (or /prof/errors.txt, or the HTTP body); who
sees which entries; a process's directory is as visible as the listing
says."""

import errno
import os
import re
import urllib.parse

import pytest

import util
from util import NOBODY, as_user
from test_http import base, get


@pytest.fixture
def proffs_options(request):
    return getattr(request, 'param', ('allow_other', 'http=127.0.0.1:0'))


# name, errno, a part of the sentence that says what to do
MISTAKES = [
    ('cpu_5.pb.gz', errno.EINVAL,
     'a duration needs a unit: cpu_5s.pb.gz or cpu_500ms.pb.gz'),
    ('cpu_5s.pdf', errno.ENOENT, "'pdf' is not a format"),
    ('heap?seconds=-1.pb.gz', errno.EINVAL,
     'seconds= takes a whole number'),
    ('cpu_1h', errno.EINVAL, "not 'h': cpu_3600s"),
    ('cpu?foo=1', errno.EINVAL, "unknown parameter 'foo'"),
    ('memstats.pb.gz', errno.ENOENT, 'do not come as .pb.gz'),
    ('cpu_900s.pb.gz', errno.EINVAL, 'longer than max_window'),
]
HTTP_STATUS = {errno.EINVAL: 400, errno.ENOENT: 404, errno.EACCES: 403}


def errors_txt(proffs, pid=None, user=None):
    path = (proffs.path(pid, 'errors.txt') if pid
            else os.path.join(proffs.mnt, 'errors.txt'))
    if user is not None:
        r = as_user(user, 'cat', path)
        assert r.returncode == 0, r.stderr
        return r.stdout
    with open(path) as f:
        return f.read()


def test_each_mistake_same_errno_and_a_sentence(proffs, target):
    t = target('parked')
    url = base(proffs)
    for name, code, sentence in MISTAKES:
        util.expect_errno(lambda: open(proffs.path(t.pid, name), 'rb'),
                          code)
        # the newest entry first: this mistake, its errno, its sentence
        first = errors_txt(proffs, t.pid).splitlines()[0]
        assert re.match(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d %s: %s: .*%s'
                        % (re.escape(name), errno.errorcode[code],
                           re.escape(sentence)), first), (name, first)
        # over HTTP, the same file name: the same errno, as a status,
        # and the same sentence in the body
        status, _, body = get(f'{url}/{t.pid}/'
                              + urllib.parse.quote(name, safe='?=&'))
        assert status == HTTP_STATUS[code], (name, status, body)
        assert sentence in body.decode(), (name, body)
    # its stat gives its exact size, as a browser needs
    with open(proffs.path(t.pid, 'errors.txt'), 'rb') as f:
        data = f.read()
    assert os.stat(proffs.path(t.pid, 'errors.txt')).st_size == len(data)
    # HTTP's refusals are in errors.txt too, as their URL
    assert '/%d/cpu_1h: EINVAL' % t.pid in errors_txt(proffs, t.pid)
    # over HTTP, errors.txt is the same file
    status, _, body = get(f'{url}/{t.pid}/errors.txt')
    assert status == 200 and 'cpu_5.pb.gz: EINVAL' in body.decode()
    # Go's paths: the same mistake, the same status
    status, _, body = get(f'{url}/debug/pprof/heap?pid={t.pid}&seconds=-1')
    assert status == 400, (status, body)


def test_names_without_a_pid_are_the_callers_own(proffs, target):
    mine = target('parked', user=NOBODY)
    util.expect_errno(lambda: open(proffs.path(999999999, 'cpu.pb.gz'),
                                   'rb'), errno.ENOENT)
    util.expect_errno(lambda: open(os.path.join(proffs.mnt, 'all',
                                                'heap.pb.gz'), 'rb'),
                      errno.ENOENT)
    own = errors_txt(proffs)
    assert re.search(r'^\S+ \S+ 999999999: ENOENT: no such process', own,
                     re.M), own
    assert 'heap.pb.gz: ENOENT: not in all/: only whole-host' in own, own
    # nobody sees none of root's, but its own mistake, in both files
    r = as_user(NOBODY, 'cat', proffs.path(mine.pid, 'cpu_5'))
    assert 'Invalid argument' in r.stderr, r.stderr
    theirs = errors_txt(proffs, user=NOBODY)
    assert '999999999' not in theirs and 'all/' not in theirs, theirs
    assert '%d/cpu_5: EINVAL: a duration needs a unit' % mine.pid in theirs
    assert 'cpu_5: EINVAL' in errors_txt(proffs, mine.pid, user=NOBODY)


def test_access_to_a_pid_directory_matches_the_listing(proffs, target):
    """nobody may not list root's process, nor read its index.html, its
    cmdline or its errors.txt, as /prof does not list it to nobody; its
    own process it may."""
    mine = target('parked', user=NOBODY)
    roots = target('parked')
    util.expect_errno(lambda: open(proffs.path(roots.pid, 'cpu_1h'), 'rb'),
                      errno.EINVAL)
    for path in ('', 'index.html', 'cmdline', 'errors.txt'):
        r = as_user(NOBODY, 'ls' if not path else 'cat',
                    proffs.path(roots.pid, path))
        assert r.returncode != 0 and 'Permission denied' in r.stderr, \
            (path, r.stdout, r.stderr)
        r = as_user(NOBODY, 'ls' if not path else 'cat',
                    proffs.path(mine.pid, path))
        assert r.returncode == 0, (path, r.stderr)
    # root's refused opens show in root's errors.txt of that pid, with
    # who may not: nobody's EACCES
    assert re.search(r'index.html: EACCES|cpu_1h: EINVAL',
                     errors_txt(proffs, roots.pid))
    # the root lists the daemon's own files
    listed = os.listdir(proffs.mnt)
    assert listed[:5] == ['status', 'errors.txt', 'unit', 'name', 'all'], \
        listed[:6]


@pytest.mark.parametrize('proffs_options', [()], indirect=True)
def test_errors_txt_is_bounded(proffs, target):
    t = target('parked')
    for i in range(300):
        util.expect_errno(lambda: open(proffs.path(t.pid, f'cpu_{i}'),
                                       'rb'), errno.EINVAL)
    lines = errors_txt(proffs, t.pid).splitlines()
    assert len(lines) == 256, len(lines)
    assert lines[0].split()[2] == 'cpu_299:', lines[0]
    # the same mistake at once again is counted, not added
    for _ in range(3):
        util.expect_errno(lambda: open(proffs.path(t.pid, 'cpu_299'),
                                       'rb'), errno.EINVAL)
    lines = errors_txt(proffs, t.pid).splitlines()
    assert lines[0].endswith('(4 times)') and len(lines) == 256, lines[0]


def test_a_failed_session_is_in_errors_txt(proffs, target):
    """A session that fails (the target traced by strace: a thread dump
    is EBUSY) is noted under its pid, with what to do."""
    t = target('parked')
    with util.strace_attached(t.pid):
        util.expect_errno(lambda: proffs.read(t.pid, 'goroutine.txt'),
                          errno.EBUSY)
    first = errors_txt(proffs, t.pid).splitlines()[0]
    assert re.search(r' goroutine: EBUSY: .*traced by a debugger; try '
                     r'again', first), first
