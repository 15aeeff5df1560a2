# SPDX-License-Identifier: GPL-2.0-or-later
"""contrib/run.sh, the README's first command: it builds, mounts proffs
in the background, profiles the bundled demo through the mount and prints
its top functions; the mount it leaves unmounts cleanly."""

import os
import re
import subprocess
import tempfile

import util
from reaper import Reaper

RUN_SH = os.path.join(util.REPO, 'contrib', 'run.sh')
# tests/targets/demo.c: flat shares by construction
DEMO = {'compress_block': 0.5, 'checksum': 0.3, 'parse_request': 0.2}


def test_run_sh_profiles_the_demo_and_unmounts(tmp_path):
    mnt = tempfile.mkdtemp(prefix='proffs-run-')
    out = tmp_path / 'demo'
    env = dict(os.environ, PROFFS_BUILD_DIR=util.BUILD,
               PROFFS_DEMO_OUT=str(out))
    env.pop('GOCACHE', None)        # run.sh picks its own
    log_path = tmp_path / 'run.log'
    # run.sh leaves the daemon in the background: under a subreaper its
    # exit status is ours to see.
    with open(log_path, 'w') as log:
        r = Reaper(str(tmp_path / 'reaped'), [RUN_SH, mnt], env=env,
                   stdout=log, stderr=subprocess.STDOUT,
                   stdin=subprocess.DEVNULL)
    text = ''
    try:
        code = r.wait_cmd(timeout=600)
        text = log_path.read_text(errors='replace')
        print(text)
        assert code == 0, f'run.sh exited {code}'
        assert os.path.ismount(mnt), f'run.sh left nothing on {mnt}'
        daemons = [pid for pid, comm in r.adopted() if comm == 'proffs']
        assert len(daemons) == 1, r.adopted()
        m = re.search(r'profiling the demo \(pid (\d+)\)', text)
        assert m, 'run.sh did not say which pid it profiled'
        demo = int(m.group(1))

        # the top functions, as go tool pprof -top prints them
        rows = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) == 6 and re.fullmatch(r'[\d.]+%', f[1]):
                rows[f[5]] = float(f[1][:-1]) / 100
        assert set(DEMO) <= set(rows), f'top functions missing: {rows}'
        for fn, want in DEMO.items():
            assert abs(rows[fn] - want) < 0.1, (fn, rows[fn], want)

        # the profile it wrote, read by pprof
        profile = out / 'cpu_5s.pb.gz'
        assert f'Wrote:   {profile}' in text
        p = util.validate_pprof(str(profile))
        util.save(profile.read_bytes(), 'run-sh-demo.pb.gz')
        assert p.sample_types == ['samples/count', 'cpu/nanoseconds']
        assert p.total() > 200      # 5 s at 99 Hz of a busy loop
        for fn, want in DEMO.items():
            assert abs(p.share(fn) - want) < 0.1, (fn, p.share(fn))
        assert f'fusermount3 -u {mnt}' in text
        # a line per step, as it starts, and where the daemon logs
        steps = re.findall(r'^run\.sh \[(\d)/6\] ', text, re.M)
        assert steps == [str(i) for i in range(1, 7)], text
        assert re.search(r'^ +the daemon logs to (syslog|/\S+)', text,
                         re.M), text
    except BaseException:
        subprocess.run(['fusermount3', '-u', '-z', mnt],
                       stderr=subprocess.DEVNULL)
        r.kill_all()
        raise
    # unmount as run.sh says: the daemon must exit 0 and be gone
    u = subprocess.run(['fusermount3', '-u', mnt], capture_output=True,
                       text=True)
    try:
        assert u.returncode == 0, u.stderr
        reaped = r.wait(timeout=30)
    except BaseException:
        subprocess.run(['fusermount3', '-u', '-z', mnt],
                       stderr=subprocess.DEVNULL)
        r.kill_all()
        raise
    assert reaped[daemons[0]] == ('proffs', 0), reaped
    assert not os.path.exists(f'/proc/{daemons[0]}')
    assert not os.path.ismount(mnt)
    # and the demo did not outlive run.sh (had it, as an orphan it would
    # have kept the reaper waiting)
    assert not os.path.exists(f'/proc/{demo}'), 'the demo still runs'
    os.rmdir(mnt)
