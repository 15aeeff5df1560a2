# SPDX-License-Identifier: GPL-2.0-or-later
"""Installed as a system service: meson install, the mount helper, the
systemd unit, /status."""

import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

import util
from reaper import Reaper


@pytest.fixture(scope='module')
def destdir():
    d = tempfile.mkdtemp(prefix='proffs-dest-')
    r = subprocess.run(['meson', 'install', '-C', util.BUILD, '--destdir',
                        d, '--no-rebuild'], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    yield d
    shutil.rmtree(d)


def installed(destdir, pattern):
    hits = []
    for root, _, files in os.walk(destdir):
        hits += [os.path.join(root, f) for f in files
                 if re.fullmatch(pattern, f)]
    assert len(hits) == 1, f'{pattern}: {hits}'
    return hits[0]


def test_install_puts_every_file_in_place(destdir):
    exe = installed(destdir, 'proffs')
    assert exe.endswith('/bin/proffs') and os.access(exe, os.X_OK)
    assert installed(destdir, r'proffs\.1').endswith('/man/man1/proffs.1')
    unit = installed(destdir, r'proffs\.service')
    assert '/systemd/system/' in unit
    # the heap agent, where the installed daemon looks for it
    agent = installed(destdir, r'libproffs-heap\.so')
    prefix = os.path.dirname(os.path.dirname(exe))
    assert agent.startswith(prefix + '/lib') and \
        agent.endswith('/proffs/libproffs-heap.so'), agent
    helper = installed(destdir, r'mount\.fuse\.proffs')
    assert helper.endswith('/sbin/mount.fuse.proffs')
    assert os.access(helper, os.X_OK)
    out = subprocess.run([exe, '--version'], capture_output=True, text=True)
    assert out.returncode == 0 and 'proffs version' in out.stdout
    out = subprocess.run([exe, '--help'], capture_output=True, text=True)
    assert 'max_window=N' in out.stdout and '(300)' in out.stdout


def test_installed_binary_serves_a_profile(destdir, target, tmp_path):
    exe = installed(destdir, 'proffs')
    t = target('burn')
    mnt = tempfile.mkdtemp(prefix='proffs-inst-')
    p = subprocess.Popen([exe, '-f', mnt], stderr=subprocess.PIPE)
    try:
        util.wait_for_mount(p, mnt)
        with open(os.path.join(mnt, str(t.pid), 'cpu_1s.pb.gz'), 'rb') as f:
            path = util.save(f.read(), 'installed.pb.gz')
        assert util.share(util.traces(path), 'hot') > 0.5
        with open(os.path.join(mnt, 'status')) as f:
            status = f.read()
        assert 'sessions_done_cpu: 1' in status
        assert 'results_served: 1' in status
        # a heap profile, by the agent the install put beside it
        check_heap(mnt, target('mallocs', '1'), 'installed')
    finally:
        subprocess.run(['fusermount3', '-u', mnt])
    assert p.wait(timeout=10) == 0
    err = p.stderr.read().decode()
    assert 'cannot be read' not in err, err
    os.rmdir(mnt)


def check_heap(mnt, t, what):
    """A heap window of t, measured by the agent loaded into it."""
    with open(os.path.join(mnt, str(t.pid), 'heap_1s.pb.gz'), 'rb') as f:
        path = util.save(f.read(), f'{what}-heap.pb.gz')
    p = util.validate_pprof(path)
    assert any('sampled inside the process by libproffs-heap' in c
               for c in p.comments), p.comments
    assert any('batch' in s.frames for s in p.samples), \
        [s.frames for s in p.samples]


def unit_caps(unit):
    """The unit's CapabilityBoundingSet, as setpriv names them."""
    m = re.search(r'^CapabilityBoundingSet=(.*)$', open(unit).read(), re.M)
    return [c.lower().removeprefix('cap_') for c in m.group(1).split()]


def thread_nices(pid):
    """The nice value of every thread of pid."""
    out = []
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                out.append(int(f.read().rsplit(')', 1)[1].split()[16]))
        except FileNotFoundError:
            pass
    return out


def test_installed_daemon_under_the_units_capabilities(destdir, target):
    """The installed daemon, with only the capabilities the unit leaves
    it (its CapabilityBoundingSet, nothing inheritable), does all it does
    as root: CPU windows with its sampling thread at nice -10 (the
    sampler's setpriority), thread dumps (ptrace), heap profiles (the
    agent loaded by ptrace), for another user's process, allow_other."""
    exe = installed(destdir, 'proffs')
    caps = unit_caps(installed(destdir, r'proffs\.service'))
    known = subprocess.run(['setpriv', '--list-caps'], capture_output=True,
                           text=True).stdout.split()
    bounding = '-all,' + ','.join('+' + c for c in caps if c in known)
    burn = target('burn', user=util.NOBODY)
    mnt = tempfile.mkdtemp(prefix='proffs-caps-')
    # nice=0: the threads that answer reads stay at 0, so a thread at
    # -10 is the sampler's own setpriority
    p = subprocess.Popen(['setpriv', '--inh-caps=-all',
                          f'--bounding-set={bounding}', '--', exe, '-f',
                          '-o', 'allow_other,nice=0', mnt],
                         stderr=subprocess.PIPE)
    try:
        util.wait_for_mount(p, mnt)
        # the daemon really runs with no more than the unit's set
        with open(f'/proc/{p.pid}/status') as f:
            st = dict(l.split(':\t', 1) for l in f)
        cap_sys_module = 16
        assert not int(st['CapEff'], 16) & (1 << cap_sys_module), st
        cat = subprocess.Popen(['cat', os.path.join(mnt, str(burn.pid),
                                                    'cpu_3s.pb.gz')],
                               stdout=subprocess.PIPE)
        end = time.monotonic() + 2.5
        while -10 not in thread_nices(p.pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert -10 in thread_nices(p.pid), \
            f'no sampling thread at nice -10: {thread_nices(p.pid)}'
        path = util.save(cat.communicate(timeout=20)[0], 'caps-cpu.pb.gz')
        assert util.share(util.traces(path), 'hot') > 0.5
        parked = target('parked', user=util.NOBODY)
        with open(os.path.join(mnt, str(parked.pid), 'goroutine.txt')) as f:
            dump = f.read()
        assert 'main' in dump and '[not stopped]' not in dump, dump
        check_heap(mnt, target('mallocs', '1', user=util.NOBODY), 'caps')
    finally:
        subprocess.run(['fusermount3', '-u', mnt])
    assert p.wait(timeout=10) == 0
    err = p.stderr.read().decode()
    assert 'cannot be read' not in err, err
    os.rmdir(mnt)


def test_systemd_unit_verifies(destdir):
    if not shutil.which('systemd-analyze'):
        pytest.skip('systemd-analyze not installed')
    unit = installed(destdir, r'proffs\.service')
    exe = installed(destdir, 'proffs')
    text = open(unit).read()
    assert 'allow_other' in text and '/prof' in text
    # verify checks that ExecStart exists and that man:proffs(1) resolves:
    # point both at the staged install.
    m = re.search(r'^ExecStart=(\S+)', text, re.M)
    staged = os.path.join(os.path.dirname(unit), 'staged', 'proffs.service')
    os.makedirs(os.path.dirname(staged), exist_ok=True)
    with open(staged, 'w') as f:
        f.write(text.replace(m.group(1), exe))
    man = os.path.dirname(os.path.dirname(installed(destdir, r'proffs\.1')))
    r = subprocess.run(['systemd-analyze', 'verify', staged],
                       capture_output=True, text=True,
                       env=dict(os.environ, MANPATH=man + ':'))
    assert r.returncode == 0, r.stderr


def test_mount_t_fuse_proffs_and_umount(destdir, target):
    """mount(8) finds /sbin/mount.fuse.proffs; staged from the install,
    with the daemon path rewritten to the staged binary."""
    helper = installed(destdir, r'mount\.fuse\.proffs')
    exe = installed(destdir, 'proffs')
    text = re.sub(r'"\S+/proffs#', f'"{exe}#', open(helper).read())
    real = '/sbin/mount.fuse.proffs'
    if os.path.exists(real):
        pytest.skip(f'{real} already installed on this machine')
    with open(real, 'w') as f:
        f.write(text)
    os.chmod(real, 0o755)
    mnt = tempfile.mkdtemp(prefix='proffs-mount-')
    t = target('burn')
    r = None
    try:
        # The helper daemonizes proffs: under a subreaper its exit status
        # is ours to see.
        work = tempfile.mkdtemp(prefix='proffs-reap-')
        with open(os.path.join(work, 'mount.log'), 'w') as log:
            r = Reaper(os.path.join(work, 'reaped'),
                       ['mount', '-t', 'fuse.proffs', 'proffs', mnt, '-o',
                        'allow_other'], stdout=log, stderr=subprocess.STDOUT)
        code = r.wait_cmd(timeout=30)
        with open(os.path.join(work, 'mount.log')) as log:
            assert code == 0, f'mount exited {code}: {log.read()}'
        assert os.path.ismount(mnt)
        daemons = [pid for pid, comm in r.adopted() if comm == 'proffs']
        assert len(daemons) == 1, r.adopted()
        assert str(t.pid) in os.listdir(mnt)
        with open(os.path.join(mnt, str(t.pid), 'cpu_1s.pb.gz'), 'rb') as f:
            assert f.read(2) == b'\x1f\x8b'
        u = subprocess.run(['umount', mnt], capture_output=True, text=True)
        assert u.returncode == 0, u.stderr
        assert not os.path.ismount(mnt)
        # the daemon went away with the mount, and exited 0
        reaped = r.wait(timeout=30)
        assert reaped.get(daemons[0]) == ('proffs', 0), reaped
        assert not os.path.exists(f'/proc/{daemons[0]}')
    finally:
        if os.path.ismount(mnt):
            subprocess.run(['umount', '-l', mnt])
        if r is not None:
            r.kill_all()
            shutil.rmtree(work)
        os.unlink(real)
        os.rmdir(mnt)
