# SPDX-License-Identifier: GPL-2.0-or-later
"""Heap profiles of processes in a pid namespace or a chroot (issue 16):
the agent where it can be loaded, the uprobe fallback (heap=auto) where
it cannot, exact either way."""
import os
import shutil
import subprocess

import pytest

import util
from test_heap import assert_exact, read_windowed
from test_heap_uprobe import check_uprobe_profile, read_uprobe_window


def libs_of(path):
    """The shared objects path loads, loader included (ldd)."""
    out = subprocess.run(['ldd', path], capture_output=True, text=True,
                         check=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        for p in parts:
            if p.startswith('/'):
                libs.append(p)
    return libs


@pytest.fixture
def root(tmp_path):
    """A minimal root holding the allocs target and what it loads, at
    the same paths, and an empty /proc to mount on."""
    r = tmp_path / 'root'
    src = os.path.join(util.TARGETS, 'allocs')
    for lib in libs_of(src) + [src]:
        dst = r / lib.lstrip('/')
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), dst)
    (r / 'proc').mkdir()
    os.chmod(tmp_path, 0o755)
    return str(r), src


def in_root(r, src, with_proc):
    """Run the target in a chroot of r, in a mount namespace of its own
    (so a /proc mounted for it leaves no trace)."""
    script = (f'mount -t proc proc {r}/proc && ' if with_proc else '') + \
        f'exec chroot {r} {src}'
    return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
            script]


def test_pid_namespace_gets_the_agent(proffs):
    """In a pid namespace the agent writes its own pid, not ours: the ring
    is matched through NSpid (every read failed with ENOENT before)."""
    t = util.Target('allocs', wrap=['unshare', '--mount', '--pid', '--fork',
                                    '--mount-proc'])
    try:
        with open(f'/proc/{t.pid}/status') as f:
            nspid = [l for l in f if l.startswith('NSpid:')][0].split()
        assert len(nspid) == 3 and nspid[2] == '1', nspid
        truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=3.pb.gz')
        assert_exact(util.validate_pprof(path), truth)
    finally:
        t.kill()


def test_chroot_with_proc_gets_the_agent(proffs, root):
    r, src = root
    t = util.Target('allocs', wrap=in_root(r, src, True))
    try:
        truth, path = read_windowed(proffs, t, 'heap?rate=1&seconds=3.pb.gz')
        assert_exact(util.validate_pprof(path), truth)
    finally:
        t.kill()


def test_chroot_without_proc_falls_back_to_uprobes(proffs, root):
    """The loader in the chroot cannot open /proc/self/fd/N: the agent is
    refused (ENOEXEC, one warning) and heap=auto measures the window with
    uprobes on the target's own libc, found through map_files/ (its maps
    name files from our root, not its own)."""
    r, src = root
    proffs.expect_log(r'dlopen of the agent failed')
    proffs.expect_log(r'agent not loaded: Exec format error')
    t = util.Target('allocs', wrap=in_root(r, src, False))
    try:
        truth, path = read_uprobe_window(proffs, t, 'heap_3s.pb.gz')
        p = util.validate_pprof(path)
        check_uprobe_profile(proffs, t, p, truth,
                             'the agent cannot be loaded')
        assert len(proffs.log_lines(r'pid %d: dlopen of the agent failed'
                                    % t.pid)) == 1
    finally:
        t.kill()
