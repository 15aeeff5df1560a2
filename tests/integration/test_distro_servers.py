# SPDX-License-Identifier: GPL-2.0-or-later
"""The programs a Debian server runs, as apt installs them (issue 25):
the first heap read of each gives a profile, and the program goes on
answering correctly after the read and after the daemon has gone.

redis-server keeps its default configuration: jemalloc (Debian links the
system libjemalloc) with "jemalloc-bg-thread yes", whose background
thread lives asleep inside libjemalloc. It used to be refused by every
read (EAGAIN: "threads never all at a safe point ... an allocator library
in libjemalloc.so.2")."""
import http.client
import itertools
import os
import random
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

import util

REDIS_CONF = '/etc/redis/redis.conf'
REDIS_SERVER = '/usr/bin/redis-server'
# What redis's own code calls to allocate (src/zmalloc.c), by the names
# its .dynsym gives them.
REDIS_ALLOC = ('zmalloc', 'zcalloc', 'zrealloc', 'zmalloc_usable',
               'zcalloc_usable', 'zrealloc_usable', 'ztrymalloc_usable',
               'zstrdup')
AGENT_DISARM_S = 3.5    # the agent disarms 3 s after the last beat


def need(*paths):
    for p in paths:
        if not os.path.exists(p) and not shutil.which(p):
            pytest.skip(f'{p} is not installed (contrib/deps.sh)')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Redis:
    """Debian's redis-server with Debian's configuration, changed only
    where a test must: its port, its directory, in the foreground, its log
    to stdout. Not the system service."""

    def __init__(self, tmp):
        self.port = free_port()
        self.dir = str(tmp)
        with open(REDIS_CONF) as f:
            conf = f.read()
        for key, value in (('port', str(self.port)), ('dir', self.dir),
                           ('daemonize', 'no'), ('logfile', '""'),
                           ('pidfile', os.path.join(self.dir, 'r.pid'))):
            conf, n = re.subn(rf'^{key} .*$', f'{key} {value}', conf,
                              flags=re.M)
            assert n == 1, f'{REDIS_CONF}: no single "{key}" line'
        # The default under test: it must be there, as shipped.
        assert re.search(r'^jemalloc-bg-thread yes$', conf, re.M)
        path = os.path.join(self.dir, 'redis.conf')
        with open(path, 'w') as f:
            f.write(conf)
        self.log = open(os.path.join(self.dir, 'redis.log'), 'w+')
        self.proc = subprocess.Popen([REDIS_SERVER, path], stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def wait_ready(self):
        end = time.monotonic() + 20
        while self.cli('PING', check=False) != 'PONG':
            assert self.proc.poll() is None, self.log_text()
            assert time.monotonic() < end, 'redis never answered PING'
            time.sleep(0.05)
        with open(f'/proc/{self.pid}/maps') as f:
            assert 'libjemalloc' in f.read()
        # jemalloc starts it a moment after redis asks for it
        while 'jemalloc_bg_thd' not in self.thread_names():
            assert time.monotonic() < end, \
                'no jemalloc background thread: not the default under test'
            time.sleep(0.05)

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def thread_names(self):
        names = []
        for tid in os.listdir(f'/proc/{self.pid}/task'):
            try:
                with open(f'/proc/{self.pid}/task/{tid}/comm') as f:
                    names.append(f.read().strip())
            except OSError:
                pass
        return names

    def cli(self, *args, check=True):
        r = subprocess.run(['redis-cli', '-p', str(self.port)] +
                           list(args), capture_output=True, text=True,
                           timeout=20)
        if check:
            assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def load(self):
        """redis-benchmark, looping until stopped: the load a read is
        taken under."""
        return subprocess.Popen(
            ['redis-benchmark', '-p', str(self.port), '-q', '-l', '-c', '4',
             '-r', '10000', '-t', 'set,get,lpush,lpop,incr'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def check(self, when):
        """Answers, and correct ones: PING, a value written before the
        read read back, a short benchmark with every request answered."""
        assert self.proc.poll() is None, f'redis died {when}'
        assert self.cli('PING') == 'PONG', when
        assert self.cli('GET', 'proffs:probe') == 'value-25', when
        assert self.cli('INCR', 'proffs:count') == str(self.count + 1), when
        self.count += 1
        r = subprocess.run(['redis-benchmark', '-p', str(self.port), '-q',
                            '-n', '5000', '-c', '4', '-t', 'set,get,lpush'],
                           capture_output=True, text=True, timeout=60)
        out = r.stdout.replace('\r', '\n')
        assert r.returncode == 0, f'{when}: {r.stderr}'
        assert 'error' not in (out + r.stderr).lower(), f'{when}: {out}'
        done = re.findall(r'^(SET|GET|LPUSH[^:]*): ([\d.]+) requests per '
                          r'second', out, re.M)
        assert len(done) == 3, f'{when}: {out}'
        assert all(float(rps) > 0 for _, rps in done), out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def redis(tmp_path):
    need(REDIS_CONF, REDIS_SERVER, 'redis-cli', 'redis-benchmark')
    os.makedirs(tmp_path / 'redis')
    r = Redis(tmp_path / 'redis')
    r.count = 0
    assert r.cli('SET', 'proffs:probe', 'value-25') == 'OK'
    assert r.cli('SET', 'proffs:count', '0') == 'OK'
    yield r
    r.stop()


def test_redis_default_config_first_read(proffs, redis):
    """The first heap read of Debian's redis-server, default settings,
    under redis-benchmark: a profile at once (the agent loaded, not the
    uprobe fallback), with redis's own allocation sites; redis answers
    correctly after the read and after the daemon has gone."""
    load = redis.load()
    try:
        time.sleep(0.3)     # the benchmark is running
        data = proffs.read(redis.pid, 'heap_2s.pb.gz')
    finally:
        load.terminate()
        _, err = load.communicate(timeout=10)
    assert 'error' not in err.lower(), err
    assert data is not None, 'the first read was refused (EAGAIN)'
    path = util.save(data, f'redis-heap-{redis.pid}.pb.gz')
    p = util.validate_pprof(path)
    assert not [c for c in p.comments if 'uprobe' in c or 'refused' in c],\
        p.comments
    assert proffs.log_lines(r'heap: pid %d: agent loaded in \d+ ms' %
                            redis.pid), proffs.log_text()
    with open(f'/proc/{redis.pid}/maps') as f:
        assert 'proffs-heap' in f.read()
    assert p.samples, 'no sample under redis-benchmark'
    mine = [s for s in p.samples
            if any(f in REDIS_ALLOC for f in s.frames)]
    assert mine, [s.frames for s in p.samples]
    # allocs of the same agent: the event loop's stacks, from main on
    a = util.validate_pprof(util.save(proffs.read(redis.pid, 'allocs.pb.gz'),
                                      f'redis-allocs-{redis.pid}.pb.gz'))
    assert any('aeMain' in s.frames and
               any(f in REDIS_ALLOC for f in s.frames) for s in a.samples)
    redis.check('after the read')
    proffs.unmount()
    time.sleep(AGENT_DISARM_S)
    redis.check('after the daemon has gone')


def test_refused_agent_falls_back_to_uprobes(proffs, target, expect_log):
    """heap=auto and a process the agent is refused for every time (a
    thread asleep inside dl_iterate_phdr, holding the loader's lock a
    dlopen waits on): the read is answered by the uprobe fallback, whose
    profile says why, not with an EAGAIN no retry cures. The agent is
    never loaded."""
    t = target('dlstuck')
    expect_log(r'inject: pid %d: threads never all at a safe point .* '
               r'dl_iterate_phdr in libc\.so\.6.*; refused' % t.pid)
    for i, name in enumerate(('heap_1s.pb.gz', 'allocs_1s.pb.gz')):
        data = proffs.read(t.pid, name)     # the same answer every time
        assert data is not None, 'refused with EAGAIN'
        p = util.validate_pprof(util.save(data, f'dlstuck-{i}.pb.gz'))
        assert any(re.search(r'the agent was refused: threads never all '
                             r'at a safe point .*dl_iterate_phdr', c)
                   for c in p.comments), p.comments
        assert any('site_dlstuck' in s.frames for s in p.samples), \
            [s.frames for s in p.samples]
    assert len(proffs.log_lines(r'heap: pid %d: the agent was refused '
                                r'\(threads never all at a safe point.*'
                                r'\): uprobes for 1000 ms instead'
                                % t.pid)) == 2, proffs.log_text()
    with open(f'/proc/{t.pid}/maps') as f:
        assert 'proffs-heap' not in f.read(), 'the agent was loaded'
    assert t.proc.poll() is None


NGINX = '/usr/sbin/nginx'
NGINX_CONF = '/etc/nginx/nginx.conf'


class Nginx:
    """Debian's nginx with Debian's nginx.conf, changed only where a test
    must: one worker (the process read), its pid file, its logs, and one
    server on a free port serving a directory of known files instead of
    sites-enabled. In the foreground; not the system service."""

    def __init__(self):
        self.port = free_port()
        # Outside pytest's 0700 tree: the worker runs as www-data.
        self.dir = tempfile.mkdtemp(prefix='proffs-nginx-')
        os.chmod(self.dir, 0o755)
        root = os.path.join(self.dir, 'www')
        os.mkdir(root, 0o755)
        rnd = random.Random(25)
        self.files = {
            'index.html': b'<html><body>proffs issue 25</body></html>\n',
            'small.txt': bytes(rnd.randrange(32, 127) for _ in range(3000)),
            'big.bin': bytes(rnd.getrandbits(8) for _ in range(1 << 20)),
        }
        for name, body in self.files.items():
            with open(os.path.join(root, name), 'wb') as f:
                f.write(body)
            os.chmod(os.path.join(root, name), 0o644)
        with open(NGINX_CONF) as f:
            conf = f.read()
        server = ('server { listen 127.0.0.1:%d; root %s; '
                  'location / { try_files $uri =404; } }' %
                  (self.port, root))
        for pattern, repl in (
                (r'^worker_processes .*;$', 'worker_processes 1;'),
                (r'^pid .*;$', f'pid {self.dir}/nginx.pid;'),
                (r'^\s*error_log .*;$', 'error_log stderr;'),
                (r'^\s*access_log .*;$', 'access_log off;'),
                (r'^\s*include /etc/nginx/sites-enabled/\*;$', server)):
            conf, n = re.subn(pattern, lambda m: repl, conf, flags=re.M)
            assert n == 1, f'{NGINX_CONF}: no single {pattern}'
        path = os.path.join(self.dir, 'nginx.conf')
        with open(path, 'w') as f:
            f.write(conf)
        self.log = open(os.path.join(self.dir, 'nginx.log'), 'w+')
        self.proc = subprocess.Popen(
            [NGINX, '-c', path, '-e', 'stderr', '-g', 'daemon off;'],
            stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def wait_ready(self):
        end = time.monotonic() + 20
        while True:
            assert self.proc.poll() is None, self.log_text()
            try:
                self.get_all(1)
                break
            except OSError:
                assert time.monotonic() < end, 'nginx never answered'
                time.sleep(0.05)
        self.worker = self.workers()
        assert len(self.worker) == 1, self.worker
        self.worker = self.worker[0]

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def workers(self):
        with open(f'/proc/{self.proc.pid}/task/{self.proc.pid}/'
                  'children') as f:
            return [int(p) for p in f.read().split()]

    def get_all(self, rounds, stop=None):
        """GET every file rounds times (or until stop is set) on one
        keep-alive connection; every body must be the file, byte for
        byte. The number of answers."""
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=20)
        n = 0
        try:
            for i in itertools.count():
                if stop is None and i >= rounds or stop and stop.is_set():
                    break
                for name, body in self.files.items():
                    c.request('GET', '/' + name)
                    r = c.getresponse()
                    got = r.read()
                    assert r.status == 200, (name, r.status)
                    assert got == body, f'{name}: {len(got)} bytes, ' \
                        'not the file'
                    n += 1
        finally:
            c.close()
        return n

    def check(self, when):
        """The same worker (none died and was replaced) answers every
        file right; the log says nothing of a crash."""
        assert self.proc.poll() is None, f'nginx died {when}'
        assert self.workers() == [self.worker], \
            f'{when}: worker {self.worker} replaced: {self.log_text()}'
        assert self.get_all(50) == 150, when
        assert not re.search(r'signal|alert|emerg|crit', self.log_text()), \
            self.log_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def nginx():
    need(NGINX, NGINX_CONF)
    n = Nginx()
    yield n
    n.stop()


def test_nginx_first_read(proffs, nginx):
    """The first heap read of Debian's nginx worker, under a load of
    keep-alive GETs: a profile with nginx's pool allocations; every body
    of the load and after it byte-identical to the file served, after the
    read and after the daemon has gone, by the same worker."""
    stop = threading.Event()
    done, errors = [], []

    def load():
        try:
            done.append(nginx.get_all(0, stop))
        except BaseException as e:     # noqa: B902 - reported below
            errors.append(e)
    loaders = [threading.Thread(target=load) for _ in range(2)]
    for t in loaders:
        t.start()
    try:
        data = proffs.read(nginx.worker, 'heap_2s.pb.gz')
    finally:
        stop.set()
        for t in loaders:
            t.join(30)
    assert not errors, errors
    assert data is not None, 'the first read was refused (EAGAIN)'
    assert sum(done) > 0
    p = util.validate_pprof(util.save(data, f'nginx-heap-{nginx.worker}'
                                            '.pb.gz'))
    assert not [c for c in p.comments if 'uprobe' in c or 'refused' in c],\
        p.comments
    assert proffs.log_lines(r'heap: pid %d: agent loaded in \d+ ms' %
                            nginx.worker), proffs.log_text()
    a = util.validate_pprof(util.save(
        proffs.read(nginx.worker, 'allocs.pb.gz'),
        f'nginx-allocs-{nginx.worker}.pb.gz'))
    assert any('ngx_create_pool' in s.frames or 'ngx_alloc' in s.frames
               for s in a.samples), [s.frames for s in a.samples]
    nginx.check('after the read')
    proffs.unmount()
    time.sleep(AGENT_DISARM_S)
    nginx.check('after the daemon has gone')
