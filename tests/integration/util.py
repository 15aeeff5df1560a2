# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the integration tests: the daemon on a private mount,
target programs, go tool pprof and perf as external validators.

Set PROFFS_BUILD_DIR to test another build directory than <repo>/build,
PROFFS_TEST_OUT to keep the profiles the tests read somewhere else than
<build>/tests/integration-out."""

import calendar
import colorsys
import contextlib
import ctypes
import errno
import gzip
import hashlib
import html
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get('PROFFS_BUILD_DIR', os.path.join(REPO, 'build'))
DAEMON = os.path.join(BUILD, 'fs', 'proffs')
TARGETS = os.path.join(BUILD, 'tests', 'targets')
TARGET_SRC = os.path.join(REPO, 'tests', 'targets')
OUT_DIR = os.environ.get('PROFFS_TEST_OUT',
                         os.path.join(BUILD, 'tests', 'integration-out'))

# Daemon output that fails a test unless the test registered it: libfuse's
# output_checker words, valgrind and sanitizer reports.
BAD_LOG = re.compile(r'\b(exception|error|warning|fatal|traceback|fault|'
                     r'crash(ed)?|abort(ed)?|uninitiali[zs]ed)\b|'
                     r'^==\d+== |Sanitizer|^\*\*\*', re.I)


def wait_for_mount(proc, mnt, timeout=30.0):
    """Poll for the mount (0.1 s steps); fail fast if the daemon died."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.ismount(mnt):
            return
        if proc.poll() is not None:
            if os.path.ismount(mnt):
                return
            pytest.fail('file system process terminated prematurely '
                        f'(exit {proc.returncode})')
        time.sleep(0.1)
    pytest.fail(f'{mnt} was not mounted within {timeout} s')


class Daemon:
    """A foreground proffs on a private temporary mount point; its stdout
    and stderr go to tmpdir/daemon.log."""

    def __init__(self, tmpdir, options=(), wrap=()):
        """wrap: a command the daemon runs under (nsenter --net=...)."""
        # Outside pytest's private (0700) tmp tree: other users' tests
        # must reach the mount point.
        self.mnt = tempfile.mkdtemp(prefix='proffs-mnt-')
        os.chmod(self.mnt, 0o755)
        self.log_path = os.path.join(tmpdir, 'daemon.log')
        self.log = open(self.log_path, 'w')
        self.cmd = list(wrap) + [DAEMON, '-f', self.mnt]
        for o in options:
            self.cmd += ['-o', o]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.allowed = []
        self.stopped = False   # the test ended the daemon itself
        try:
            wait_for_mount(self.proc, self.mnt)
        except BaseException:
            self.cleanup()
            print(self.log_text())
            raise

    def path(self, pid, name=''):
        return os.path.join(self.mnt, str(pid), name)

    def read(self, pid, name):
        with open(self.path(pid, name), 'rb') as f:
            return f.read()

    def expect_log(self, pattern):
        """Allow daemon log lines matching pattern (a regex) that would
        otherwise fail the test."""
        self.allowed.append(re.compile(pattern))

    def log_text(self):
        self.log.flush()
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def log_lines(self, pattern):
        return [l for l in self.log_text().splitlines()
                if re.search(pattern, l)]

    def log_lines_of_pid(self, pid):
        """The agent's and injector's lines about pid."""
        return [l for l in self.log_lines(rf'\bpid {pid}\b')
                if re.search(r'inject|agent|heap', l)]

    def wait_log(self, pattern, timeout=5.0):
        """Lines matching pattern, waiting up to timeout for the first."""
        end = time.monotonic() + timeout
        while True:
            lines = self.log_lines(pattern)
            if lines or time.monotonic() >= end:
                return lines
            time.sleep(0.05)

    def unmount(self):
        """Clean unmount: the daemon must exit 0 within 30 s, leave no
        mount behind, and have logged nothing unexpected."""
        r = subprocess.run(['fusermount3', '-u', self.mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.cleanup()
            pytest.fail(f'fusermount3 -u failed: {r.stderr.strip()}')
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.cleanup()
            pytest.fail('daemon did not exit within 30 s of the unmount')
        self.stopped = True
        assert code == 0, f'daemon exited {code}:\n{self.log_text()}'
        assert not os.path.ismount(self.mnt)
        os.rmdir(self.mnt)
        self.check_log()

    def cleanup(self):
        """After a failure: lazy unmount, then stop the daemon hard."""
        subprocess.run(['fusermount3', '-u', '-z', self.mnt],
                       stderr=subprocess.DEVNULL)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stopped = True
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass

    def check_log(self):
        bad = [l for l in self.log_text().splitlines()
               if BAD_LOG.search(l) and
               not any(a.search(l) for a in self.allowed)]
        assert not bad, 'unexpected daemon log lines:\n' + '\n'.join(bad)


class Target:
    """A program from tests/targets, running until the test ends; waits
    for the "ready" line it prints once running."""

    def __init__(self, name, *args, path=None, user=None, wrap=(),
                 run_as=None):
        """wrap: a command the target runs under (unshare, chroot);
        run_as: the target's path as the wrapper sees it. self.pid is
        the target's own process, however deep the wrapper puts it."""
        prefix = ['setpriv', f'--reuid={user}', f'--regid={user}',
                  '--clear-groups', '--'] if user is not None else []
        prefix += list(wrap)
        self.argv = [path or os.path.join(TARGETS, name)] + \
            [str(a) for a in args]
        if not os.path.exists(self.argv[0]):
            pytest.fail(f'{self.argv[0]} is not built')
        argv = ([run_as] + self.argv[1:]) if run_as else self.argv
        self.proc = subprocess.Popen(prefix + argv,
                                     stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if line.strip() != b'ready':
            self.kill()
            pytest.fail(f'{name} did not start: {line!r}')
        self.pid = self._innermost(self.proc.pid)

    def _innermost(self, pid):
        """pid, or the descendant that runs the target (unshare --fork
        runs it as a child)."""
        want = os.path.basename(self.argv[0])
        for _ in range(8):
            try:
                if os.path.basename(os.readlink(f'/proc/{pid}/exe')) == want:
                    return pid
                with open(f'/proc/{pid}/task/{pid}/children') as f:
                    kids = f.read().split()
            except OSError:
                break
            if not kids:
                break
            pid = int(kids[0])
        return self.proc.pid

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


# go tool pprof needs a writable HOME and GOCACHE.
_go_tmp = tempfile.mkdtemp(prefix='proffs-go-')


def wait_main_parked(pid, timeout=5.0, tid=None):
    """The parked target says "ready" just before its main thread calls
    pause(): wait until it sleeps there (or thread tid sleeps), so what
    it is known to do by construction is what a dump sees."""
    end = time.monotonic() + timeout
    stat = f'/proc/{pid}/task/{tid}/stat' if tid else f'/proc/{pid}/stat'
    while time.monotonic() < end:
        with open(stat) as f:
            if f.read().rsplit(')', 1)[1].split()[0] == 'S':
                return
        time.sleep(0.01)


def go_env():
    env = dict(os.environ)
    env['HOME'] = _go_tmp
    env['GOCACHE'] = os.path.join(_go_tmp, 'gocache')
    env['PPROF_TMPDIR'] = _go_tmp
    return env


PPROF_COMPLAINT = re.compile(r'warn|error|fail|invalid|malformed|'
                             r'unrecogni|unknown|panic', re.I)


def go_own_dump(pid, path, timeout=20.0):
    """What a Go test target writes to path on SIGUSR1: its own goroutine
    dump or profile, the reference proffs' is compared with."""
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f'no dump from {pid} in {path}'
        time.sleep(0.02)
    with open(path, encoding='utf-8') as f:
        return f.read()


def pprof(*args, check=True, clean=False):
    """Run go tool pprof ARGS; returns stdout. check: exit status 0.
    clean: nothing on stderr that looks like a complaint either."""
    r = subprocess.run(['go', 'tool', 'pprof'] + [str(a) for a in args],
                       capture_output=True, text=True, env=go_env(),
                       timeout=120)
    if check:
        assert r.returncode == 0, f'pprof {args} failed:\n{r.stderr}'
    if clean:
        bad = [l for l in r.stderr.splitlines() if PPROF_COMPLAINT.search(l)]
        assert not bad, f'pprof {args} complained:\n{r.stderr}'
    return r.stdout


def read_together(proffs, pid, names):
    """Open every name at once: one session per kind and window, so the
    same samples; returns {name: bytes}."""
    out = {}

    def one(n):
        out[n] = proffs.read(pid, n)
    ths = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return out


def save(data, name):
    """Keep a profile with the test output; returns its path. A pprof
    file (name ending .pb or .pb.gz) is validated at once: every profile
    a test produces goes through -top, -traces and -raw, whatever the
    test goes on to read of it (validate_pprof)."""
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    with open(path, 'wb') as f:
        f.write(data)
    if name.endswith(('.pb', '.pb.gz')):
        validate_pprof(path)
    return path


# -- pprof -raw ------------------------------------------------------------
# Go 1.19's pprof prints Profile.String() (vendor/github.com/google/pprof/
# profile/profile.go): "Comment: " lines, PeriodType, Period, Time,
# Duration, "Samples:", the sample types, then per sample
# " %10d..." values ": " location ids, and an indented line of labels
# "key:[v1 v2] ..."; "Locations", one line per Line of a location
# ("%6d: %#x M=%d name file:line s=start", inlined callers on indented
# continuation lines); "Mappings", "%d: start/limit/offset file buildid
# [FN][FL][LN][IN]".

class Mapping:
    def __init__(self, mid, start, limit, offset, file, build_id, flags):
        self.id, self.start, self.limit, self.offset = mid, start, limit, \
            offset
        self.file, self.build_id, self.flags = file, build_id, flags


class Location:
    def __init__(self, lid, address, mapping_id):
        self.id, self.address, self.mapping_id = lid, address, mapping_id
        self.mapping = None
        self.lines = []    # (function, file, line), innermost first


class Sample:
    def __init__(self, values, location_ids):
        self.values, self.location_ids = values, location_ids
        self.labels = {}
        self.locations = []   # leaf first

    @property
    def frames(self):
        """Function names, leaf first, inlined functions expanded."""
        return [fn for loc in self.locations for fn, _, _ in loc.lines]


class Profile:
    def __init__(self):
        self.comments, self.sample_types, self.samples = [], [], []
        self.period_type, self.period, self.duration = None, None, None
        self.time_ns = None       # Time, unix nanoseconds
        self.duration_ns = None   # Duration; see validate_pprof
        self.locations, self.mappings = {}, {}

    def index(self, sample_type):
        return self.sample_types.index(sample_type)

    def total(self, sample_type='samples/count'):
        i = self.index(sample_type)
        return sum(s.values[i] for s in self.samples)

    def share(self, func, flat=True, sample_type='samples/count'):
        """Fraction of sample_type in func: as the leaf (flat) or anywhere
        on the stack (cumulative)."""
        i = self.index(sample_type)
        total = self.total(sample_type)
        hit = sum(s.values[i] for s in self.samples if s.frames and
                  (s.frames[0] == func if flat else func in s.frames))
        return hit / total if total else 0.0


_SAMPLE = re.compile(r'^\s+(-?\d+(?:\s+-?\d+)*): ((?:\d+ )*)$')
_LABEL = re.compile(r'(\S+?):\[([^\]]*)\]')
_LOC = re.compile(r'^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(?:\[F\] )?(.*)$')
_LINE = re.compile(r'^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\(.*\))?$')
_MAP = re.compile(r'^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) '
                  r'(.*?) (\S*) ((?:\[[A-Z]+\])*)$')


def _parse_line(text):
    if text == '??':
        return ('??', '', 0)
    m = _LINE.match(text)
    assert m, f'unparsable location line {text!r}'
    return (m.group(1), m.group(2), int(m.group(3)))


_TIME = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{1,9}))? '
                   r'([+-])(\d\d)(\d\d) \S+$')
_GO_DUR = re.compile(r'(\d+(?:\.\d*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)')
_GO_UNIT = {'ns': 1, 'us': 10**3, '\u00b5s': 10**3, '\u03bcs': 10**3,
            'ms': 10**6, 's': 10**9, 'm': 60 * 10**9, 'h': 3600 * 10**9}


def _parse_time(text):
    """Go's time.Time.String() ("2006-01-02 15:04:05.999999999 -0700
    MST", as -raw prints Time) in unix nanoseconds, exactly."""
    m = _TIME.match(text)
    assert m, f'unparsable Time {text!r}'
    secs = calendar.timegm(time.strptime(m.group(1), '%Y-%m-%d %H:%M:%S'))
    off = (int(m.group(4)) * 60 + int(m.group(5))) * 60
    secs -= off if m.group(3) == '+' else -off
    return secs * 10**9 + int((m.group(2) or '').ljust(9, '0'))


def _parse_go_duration(text):
    """A Go time.Duration.String() in nanoseconds, or None when pprof's
    -raw cut its unit off: it prints Duration with "%.4v", so "2.0183s"
    comes out as "2.01" (validate_pprof then finds the unit)."""
    pos, ns = 0, 0
    for m in _GO_DUR.finditer(text):
        if m.start() != pos:
            break
        ns += float(m.group(1)) * _GO_UNIT[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        return None
    return int(round(ns))


def parse_raw(text):
    """Parse `go tool pprof -raw` output into a Profile; asserts the
    structure pprof guarantees (every location and mapping id resolves)."""
    p = Profile()
    section, sample, loc = 'header', None, None
    for line in text.splitlines():
        if section == 'header':
            if line.startswith('Comment: '):
                p.comments.append(line[len('Comment: '):])
            elif line.startswith('PeriodType: '):
                p.period_type = line.split(None, 1)[1]
            elif line.startswith('Period: '):
                p.period = int(line.split()[1])
            elif line.startswith('Time: '):
                p.time_ns = _parse_time(line[len('Time: '):])
            elif line.startswith('Duration: '):
                p.duration = line.split()[1]
                p.duration_ns = _parse_go_duration(p.duration)
            elif line == 'Samples:':
                section = 'types'
        elif section == 'types':
            p.sample_types = [t.replace('[dflt]', '') for t in line.split()]
            section = 'samples'
        elif section == 'samples':
            if line == 'Locations':
                section = 'locations'
                continue
            m = _SAMPLE.match(line)
            if m:
                sample = Sample([int(v) for v in m.group(1).split()],
                                [int(i) for i in m.group(2).split()])
                assert len(sample.values) == len(p.sample_types), line
                p.samples.append(sample)
            elif line.strip():
                assert sample is not None, f'label before sample: {line!r}'
                sample.labels.update(_LABEL.findall(line))
        elif section == 'locations':
            if line == 'Mappings':
                section = 'mappings'
                continue
            m = _LOC.match(line)
            if m:
                loc = Location(int(m.group(1)), int(m.group(2), 16),
                               int(m.group(3)) if m.group(3) else None)
                p.locations[loc.id] = loc
                if m.group(4).strip():
                    loc.lines.append(_parse_line(m.group(4).strip()))
            elif line.strip():
                assert loc is not None, line
                loc.lines.append(_parse_line(line.strip()))
        elif section == 'mappings' and line.strip():
            m = _MAP.match(line)
            assert m, f'unparsable mapping {line!r}'
            p.mappings[int(m.group(1))] = Mapping(
                int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16),
                int(m.group(4), 16), m.group(5), m.group(6), m.group(7))
    assert section == 'mappings', f'pprof -raw output ended in {section}'
    for loc in p.locations.values():
        if loc.mapping_id is not None:
            loc.mapping = p.mappings[loc.mapping_id]
    for s in p.samples:
        s.locations = [p.locations[i] for i in s.location_ids]
    return p


# Profiles validate_pprof has read: {path: (sha256 of the bytes, Profile)}.
_validated = {}


def _digest(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def raw(path):
    """The profile at path, as pprof reads it."""
    done = _validated.get(path)
    if done and done[0] == _digest(path):
        return done[1]
    return parse_raw(pprof('-raw', path, clean=True))


_TOP_LABEL = re.compile(r'^Duration: (-?[\d.]+)(ns|us|ms|s|hrs), Total ',
                        re.M)
_TOP_UNIT = {'ns': 1, 'us': 1e3, 'ms': 1e6, 's': 1e9, 'hrs': 3600e9}


def _duration_from_top(p, top):
    """Where -raw cut Duration's unit off, the unit -top's label (three
    significant digits, with a unit) gives it: the reading of -raw's
    digits, as a prefix of Go's Duration.String(), closest to the label."""
    m = _TOP_LABEL.search(top)
    assert m, f'-raw has Duration {p.duration!r}, -top no label:\n{top}'
    label = float(m.group(1)) * _TOP_UNIT[m.group(2)]
    try:
        digits = float(p.duration)
    except ValueError:      # "1m30.5s" cut to "1m30": -top's label only
        return int(label)
    best = min((10**9, 10**6, 10**3, 1),
               key=lambda u: abs(digits * u - label))
    ns = digits * best
    assert abs(ns - label) <= 0.01 * label + 1, \
        f'-raw Duration {p.duration!r} and -top {m.group(0)!r} disagree'
    return int(ns)


def _varint(data, pos):
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def profile_window(path):
    """(time_nanos, duration_nanos) of a pprof file exactly, from its
    protobuf fields 9 and 10: -raw prints the duration to four digits."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    pos, fields = 0, {}
    while pos < len(data):
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            fields[key >> 3], pos = _varint(data, pos)
        elif wire == 2:
            n, pos = _varint(data, pos)
            pos += n
        else:
            pos += {1: 8, 5: 4}[wire]
    return fields.get(9, 0), fields.get(10, 0)


def validate_pprof(path):
    """Every profile a test reads goes through pprof's -top, -traces and
    -raw: each must succeed, print something and not complain. Returns the
    parsed -raw Profile (the same object for the same bytes at path, so a
    profile save() validated costs nothing more)."""
    digest = _digest(path)
    done = _validated.get(path)
    if done and done[0] == digest:
        return done[1]
    outs = {}
    for mode in ('-top', '-traces'):
        outs[mode] = pprof(mode, path, clean=True)
        assert outs[mode].strip(), \
            f'pprof {mode} printed nothing for {path}'
    p = parse_raw(pprof('-raw', path, clean=True))
    assert p.sample_types, f'{path}: no sample types'
    if p.duration is not None and p.duration_ns is None:
        p.duration_ns = _duration_from_top(p, outs['-top'])
    _validated[path] = (digest, p)
    return p


def traces(path, sample_index='samples'):
    """Samples of path as (value, labels, frames leaf first)."""
    p = raw(path)
    i = [t.split('/')[0] for t in p.sample_types].index(sample_index)
    return [(s.values[i], s.labels, s.frames) for s in p.samples]


def share(samples, func, leaf=False):
    """Fraction of the value of (value, labels, frames) samples whose
    stack holds func (or, with leaf, ends in it)."""
    total = sum(v for v, _, _ in samples)
    hit = sum(v for v, _, f in samples
              if ((f and f[0] == func) if leaf else func in f))
    return hit / total if total else 0.0


# -- SVG flame graphs --------------------------------------------------------

SVG_NAMESPACES = {'http://www.w3.org/2000/svg',
                  'http://www.w3.org/1999/xlink'}

# What would make a browser fetch something: a URL's scheme, a
# protocol-relative "//host" in an attribute or CSS url(), CSS @import,
# elements that load resources, a script's src, fetch/XHR/import().
_ELSEWHERE = re.compile(
    r'\b[a-z][a-z0-9+.-]*://[^"\'\s<>)]*|'
    r'\b(?:href|src|action)\s*=\s*["\']?\s*//|'
    r'url\(\s*["\']?\s*//|@import|'
    r'<(?:image|use|iframe|foreignObject|link|a)\b|'
    r'<script[^>]*\bsrc\s*=|\bfetch\s*\(|XMLHttpRequest|\bimport\s*\(',
    re.I)


def check_svg(data, name):
    """Keep an SVG the mount rendered as name, and check what a browser
    opening it from a file:// URL relies on: well-formed XML (xmllint),
    and nothing fetched from elsewhere (_ELSEWHERE; the SVG namespace
    URLs are names, not fetched). Returns (path, text)."""
    path = save(data, name)
    assert shutil.which('xmllint'), 'xmllint is not installed (libxml2-utils)'
    r = subprocess.run(['xmllint', '--noout', path], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    text = data.decode()
    refs = [m for m in _ELSEWHERE.findall(text)
            if m not in SVG_NAMESPACES]
    assert not refs, f'{name} refers elsewhere: {refs}'
    return path, text


_SVG_FRAME = re.compile(r'<g class="frame" data-v="(\d+)"><title>(.*?) '
                        r'\([^()]*\)</title><rect [^>]*fill="(#[0-9a-f]{6})"')
_SVG_TEXT = re.compile(r'<text class="(title|sub)"[^>]*>([^<]*)</text>')


def svg_frames(text):
    """[(name, value, fill)] of a flame graph's frames, in document order
    (the root, "all", first)."""
    return [(html.unescape(m.group(2)), int(m.group(1)), m.group(3))
            for m in _SVG_FRAME.finditer(text)]


def svg_titles(text):
    """{'title': ..., 'sub': ...}: a flame graph's two heading lines."""
    return {k: html.unescape(v) for k, v in _SVG_TEXT.findall(text)}


def hue(fill):
    """(hue in degrees, saturation, value) of "#rrggbb"."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    return h * 360, s, v


def check_fills(frames, palette):
    """Every frame in the palette's hues (warm: red, a little towards
    magenta, through orange to yellow, for CPU; green, for memory; blue,
    cyan to blue, for time off the CPU), saturated and bright; one fill
    per function name, wherever it is drawn."""
    lo, hi = {'warm': (-20, 70), 'green': (80, 160),
              'blue': (175, 245)}[palette]
    by_name = {}
    for name, _, fill in frames:
        h, s, v = hue(fill)
        if palette == 'warm' and h > 180:
            h -= 360                      # a red past magenta: -20..0
        assert lo <= h <= hi and s >= 0.5 and v >= 0.6, \
            f'{name}: {fill} (hue {h:.0f}) is not {palette}'
        by_name.setdefault(name, set()).add(fill)
    split = {n: f for n, f in by_name.items() if len(f) > 1}
    assert not split, f'names drawn in more than one fill: {split}'


# -- /proc -----------------------------------------------------------------

def reported_numbers(path, what, timeout=10):
    """The numbers a target wrote to path, once a whole line is there
    (it writes them itself, as the Java and Python targets do their CPU
    times); a failure naming what when none come within timeout s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(path) as f:
                text = f.read()
            if text.endswith('\n'):
                return [float(v) for v in text.split()]
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    pytest.fail(f'the target did not report {what}')


def marked_line(path, marker):
    """The number of the line of a target's source that ends with the
    comment marker (e.g. '# line: sleep'), where a test expects a frame."""
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(marker):
                return n
    raise AssertionError(f'no "{marker}" in {path}')


def threads(pid):
    """(tid, state letter, TracerPid) of each thread of pid, from its
    /proc status; a thread that ends while it is read is passed over
    (ENOENT, or ESRCH when it is a zombie)."""
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/status') as f:
                status = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        state = re.search(r'^State:\s+(\S)', status, re.M).group(1)
        tracer = int(re.search(r'^TracerPid:\s+(\d+)', status,
                               re.M).group(1))
        yield int(tid), state, tracer


# -- perf, the reference ---------------------------------------------------

def cpu_seconds(pid):
    """utime + stime of the process, from /proc/PID/stat: what a piece of
    work cost, whatever else the machine was doing (a busy machine moves
    the clock, not this)."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def perf_record(pid, seconds, tmp, hz=99, inlined=True, call_graph='dwarf'):
    """`perf record -F hz --call-graph dwarf -p pid -- sleep seconds`, then
    `perf script`: a list of (1, {}, frames leaf first), the shape
    traces() returns. cpu-clock, as proffs samples: a VM may have no PMU.
    inlined=False: perf script --no-inline, each frame the function that
    holds the code (from the symbol table: perf's inline chains can name
    code after the wrong symbol). call_graph='fp': perf follows frame
    pointers instead."""
    data = os.path.join(tmp, 'perf.data')
    subprocess.run(['perf', 'record', '-q', '-F', str(hz), '-e', 'cpu-clock',
                    '--call-graph', call_graph, '-p', str(pid), '-o', data,
                    '--', 'sleep', str(seconds)],
                   check=True, capture_output=True, timeout=seconds + 60)
    r = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym'] +
                       ([] if inlined else ['--no-inline']),
                       check=True, capture_output=True, text=True,
                       timeout=300)
    stacks, cur = [], []
    for line in r.stdout.splitlines() + ['']:
        if not line.strip():
            if cur:
                stacks.append((1, {}, cur))
            cur = []
            continue
        parts = line.split(None, 1)
        sym = parts[1] if len(parts) > 1 else '[unknown]'
        cur.append(sym.replace(' (inlined)', '').split('+0x')[0].strip())
    return stacks


def alongside_perf(fn, pid, seconds, tmp, hz=99, call_graph='dwarf'):
    """fn() on a thread of its own while perf_record() records pid: the
    same span, for a comparison. Returns (what fn returned, perf's
    stacks); an exception of fn is raised here."""
    result = {}

    def run():
        try:
            result['v'] = fn()
        except BaseException as e:   # re-raised in the caller's thread
            result['err'] = e
    th = threading.Thread(target=run)
    th.start()
    theirs = perf_record(pid, seconds, tmp, hz=hz, call_graph=call_graph)
    th.join(timeout=seconds + 120)
    if 'err' in result:
        raise result['err']
    assert 'v' in result, 'fn did not return'
    return result['v'], theirs


def flat_shares(samples):
    """{function: fraction of the value with it as the leaf}."""
    total = sum(v for v, _, _ in samples)
    out = {}
    for v, _, f in samples:
        if f:
            out[f[0]] = out.get(f[0], 0) + v
    return {k: v / total for k, v in out.items()} if total else {}


def expect_errno(fn, code):
    with pytest.raises(OSError) as e:
        fn()
    assert e.value.errno == code, \
        f'expected {errno.errorcode[code]}, got {e.value!r}'


@contextlib.contextmanager
def strace_attached(pid):
    """strace -p pid (without -f: the main thread only), once the kernel
    shows it attached (on a busy machine it had not always attached after
    0.5 s); yields strace's Popen, ended at the end of the block."""
    st = subprocess.Popen(['strace', '-p', str(pid), '-o', '/dev/null'],
                          stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 20
        while not traced_by(pid, st.pid):
            assert time.monotonic() < end, 'strace never attached'
            time.sleep(0.05)
        yield st
    finally:
        st.terminate()
        try:
            st.wait(timeout=5)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait()


def traced_by(pid, tracer):
    """pid's main thread is traced by tracer."""
    with open(f'/proc/{pid}/status') as f:
        line = [l for l in f if l.startswith('TracerPid:')][0]
    return int(line.split()[1]) == tracer


NOBODY = 65534


AS_NOBODY = ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
             '--clear-groups', '--']


@contextlib.contextmanager
def nobody_daemon():
    """A daemon run by nobody (no allow_other) on a mount of its own:
    yields the mount point. At the end it is unmounted and must exit 0
    with no error or warning in its log."""
    mnt = tempfile.mkdtemp(prefix='proffs-user-')
    os.chown(mnt, NOBODY, NOBODY)
    log = tempfile.NamedTemporaryFile('w+', prefix='proffs-user-log-')
    # /dev/fuse is root's on this machine; fusermount3 is not enough for
    # libfuse here without it.
    mode = os.stat('/dev/fuse').st_mode & 0o777
    os.chmod('/dev/fuse', 0o666)
    daemon = None
    try:
        daemon = subprocess.Popen(AS_NOBODY + [DAEMON, '-f', mnt],
                                  stdout=log, stderr=subprocess.STDOUT)
        # Without allow_other not even root may look into the mount:
        # /proc/mounts says when it is there.
        for _ in range(300):
            with open('/proc/mounts') as f:
                if f' {mnt} ' in f.read():
                    break
            assert daemon.poll() is None, 'the daemon died'
            time.sleep(0.1)
        yield mnt
    finally:
        os.chmod('/dev/fuse', mode)
        subprocess.run(AS_NOBODY + ['fusermount3', '-u', mnt])
        if daemon:
            daemon.wait(timeout=30)
            log.seek(0)
            text = log.read()
            assert daemon.returncode == 0, text
            assert not [l for l in text.splitlines()
                        if BAD_LOG.search(l)], text
        os.rmdir(mnt)


def as_user(uid, *cmd):
    """Run cmd with real, effective and saved uid and gid = uid."""
    return subprocess.run(['setpriv', f'--reuid={uid}', f'--regid={uid}',
                           '--clear-groups', '--'] + list(cmd),
                          capture_output=True, text=True, timeout=60)


MS_NOSUID, MS_NODEV = 2, 4


class UserDaemon(Daemon):
    """A proffs run by another user. /dev/fuse is root's alone here
    (0600), so the test mounts for it, as mount.fuse3's drop_privileges
    does: /dev/fuse opened and mounted by root, owned by uid, and the
    daemon started as uid on /dev/fd/N. Only uid can use the mount (no
    allow_other)."""

    def __init__(self, tmpdir, uid, options=()):
        gid = pwd.getpwuid(uid).pw_gid
        self.mnt = tempfile.mkdtemp(prefix='proffs-mnt-')
        os.chmod(self.mnt, 0o755)
        self.log_path = os.path.join(tmpdir, 'daemon.log')
        self.log = open(self.log_path, 'w')
        self.allowed, self.stopped = [], False
        fd = os.open('/dev/fuse', os.O_RDWR)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            data = (f'fd={fd},rootmode=40000,user_id={uid},'
                    f'group_id={gid}').encode()
            if libc.mount(b'proffs', self.mnt.encode(), b'fuse.proffs',
                          MS_NOSUID | MS_NODEV, data):
                err = ctypes.get_errno()
                pytest.fail(f'mount: {os.strerror(err)}')
            self.cmd = ['setpriv', f'--reuid={uid}', f'--regid={gid}',
                        '--clear-groups', '--', DAEMON, '-f',
                        f'/dev/fd/{fd}']
            for o in options:
                self.cmd += ['-o', o]
            self.proc = subprocess.Popen(self.cmd, stdout=self.log,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         pass_fds=(fd,))
        finally:
            os.close(fd)
        if not self.wait_log(r'fs: mounted on', timeout=30):
            self.cleanup()
            pytest.fail('daemon did not start:\n' + self.log_text())


def daemon_bpf(monkeypatch, on, what):
    """Whether the daemon about to start may use eBPF (Python's frames
    read in the kernel, kernel functions named by the kernel) or must do
    without (PROFFS_NO_BPF, as without root); skips what needs root
    (what: the thing tested) when the tests do not run as root."""
    if on and os.geteuid() != 0:
        pytest.skip(f'{what} needs root')
    if on:
        monkeypatch.delenv('PROFFS_NO_BPF', raising=False)
    else:
        monkeypatch.setenv('PROFFS_NO_BPF', '1')
