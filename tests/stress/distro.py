# SPDX-License-Identifier: GPL-2.0-or-later
"""distro.py - the stress suite's loads into the programs a Debian server
runs, as apt installs them (issue 25): redis-server with its default
configuration (jemalloc, its background thread), nginx, postgres (a
backend under pgbench), sqlite3, python3 and node. Each load starts a fresh one, drives it with a real load,
reads heap_1s?rate=1.pb.gz of the process doing the work, and checks it
keeps answering correctly, and keeps progressing: right after the read,
and again once the daemon has let the agent go (the mount's heap_idle
runs out, the agent's lease ends: what the agent sees when the daemon
exits), and that it exits cleanly when asked.

Each program has one driver here (its start, load, checks and stop): the
integration tests (test_distro.py, test_distro_servers.py, through the
service fixture of their conftest.py) drive the same classes, so a check
added here is made by both.

Verdicts beyond stress.py's: wrong (a wrong answer or a failed request),
stalled (no progress), dead (it exited or died before it was asked to).
"""
import glob
import http.client
import itertools
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

REDIS_CONF = '/etc/redis/redis.conf'
REDIS_SERVER = '/usr/bin/redis-server'
NGINX = '/usr/sbin/nginx'
NGINX_CONF = '/etc/nginx/nginx.conf'
PATTERNS = ['redis', 'nginx', 'postgres', 'sqlite3', 'python3', 'node']
BAD = ('wrong', 'stalled', 'dead')
DISARM_WAIT_S = 15   # heap_idle (1 s) + the lease (3 s), on a busy machine
LEASE_S = 3.5

PY_LOOP = r'''
import sys, time
n = 0
print('ready', flush=True)
while True:
    keep = [str(i) * 3 for i in range(1000)]
    more = [[i] for i in range(200)]
    assert sum(len(k) for k in keep) == 8670
    n += 1
    if n % 20 == 0:
        print(n, time.process_time(), flush=True)
'''

JS_LOOP = r'''
const fs = require('fs');
let n = 0, keep = [];
process.stdout.write('ready\n');
function step() {
  let sum = 0;
  for (let k = 0; k < 500; k++) {
    const o = {a: new Array(50).fill(k), b: Buffer.alloc(256 + k % 64),
               s: 'x'.repeat(k % 50)};
    keep.push(o);
    sum += o.a.length + o.b.length + o.s.length;
    if (keep.length > 5000) keep = [];
  }
  if (sum !== 180688) throw new Error('wrong sum ' + sum);
  n++;
  if (n % 10 == 0) {
    const ns = fs.readFileSync('/proc/thread-self/schedstat', 'utf8');
    process.stdout.write(n + ' ' + Number(ns.split(' ')[0]) / 1e9 + '\n');
  }
  setImmediate(step);
}
step();
'''


class Bad(Exception):
    def __init__(self, verdict, detail):
        super().__init__(detail)
        self.verdict = verdict


def available():
    have = {
        'redis': os.path.exists(REDIS_CONF) and
        os.access(REDIS_SERVER, os.X_OK) and
        all(shutil.which(p) for p in ('redis-cli',
                                      'redis-benchmark')),
        'nginx': os.path.exists(NGINX_CONF) and os.access(NGINX, os.X_OK),
        'postgres': bool(pg_bin()),
        'sqlite3': bool(shutil.which('sqlite3')),
        'python3': os.access('/usr/bin/python3', os.X_OK),
        'node': os.access('/usr/bin/node', os.X_OK),
    }
    return [p for p in PATTERNS if have[p]]


def pg_bin():
    """The newest PostgreSQL's bin directory with a server and pgbench,
    or None."""
    for d in sorted(glob.glob('/usr/lib/postgresql/*/bin'), reverse=True):
        if all(os.access(f'{d}/{p}', os.X_OK)
               for p in ('initdb', 'postgres', 'pgbench', 'psql')):
            return d
    return None


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_until(fn, timeout, what, svc=None):
    """Until fn() is true (an OSError counts as not yet); Bad('dead') if
    svc's process exits first or timeout seconds pass."""
    end = time.monotonic() + timeout
    while True:
        try:
            if fn():
                return
        except OSError:
            pass
        if svc is not None:
            svc.alive(f'before: {what}')
        if time.monotonic() > end:
            raise Bad('dead', f'{what} within {timeout} s')
        time.sleep(0.05)


def edit_conf(conf, path, edits):
    """conf with each (regex, replacement) of edits applied to exactly one
    line: Debian's file changed only where a test must."""
    for pattern, repl in edits:
        conf, n = re.subn(pattern, lambda m: repl, conf, flags=re.M)
        if n != 1:
            raise Bad('error', f'{path}: no single {pattern}')
    return conf


class Service:
    """One program under test, the one driver the stress suite and the
    integration tests share: pid (the process read), load() starts its
    load, end_load() stops it (Bad('wrong') if it saw a wrong answer),
    check(when) asks it questions with known answers, stop() asks it to
    exit and returns its exit status, cleanup() kills what is left.
    Every failed check raises Bad(verdict, detail)."""
    stop_sig = signal.SIGTERM

    def __init__(self, rng, held):
        held.append(self)   # cleaned up even if the start fails
        self.rng = rng
        # Outside pytest's 0700 tree: nginx's worker runs as www-data.
        self.dir = tempfile.mkdtemp(prefix='proffs-stress-')
        os.chmod(self.dir, 0o755)
        self.errors = []
        self.halt = threading.Event()
        self.threads = []
        self.proc = None
        self.log = None

    def alive(self, when):
        if self.proc.poll() is not None:
            raise Bad('dead', f'exit {self.proc.returncode} {when}' +
                      (f': {self.log_text()[-300:]}' if self.log else ''))

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def driver(self, fn):
        def run():
            try:
                fn()
            except Exception as e:       # noqa: B902 - a verdict
                self.errors.append(f'{type(e).__name__}: {e}')
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def end_load(self):
        self.halt.set()
        for t in self.threads:
            t.join(60)
        if self.errors:
            raise Bad('wrong', 'during the load: ' + self.errors[0])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_sig)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Bad('hang', 'did not exit within 30 s of ' +
                      signal.Signals(self.stop_sig).name)

    def cleanup(self):
        self.halt.set()
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.log:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis(Service):
    """Debian's redis-server with Debian's configuration, changed only
    where a test must: its port, its directory, in the foreground, its log
    to stdout. Its default under test: jemalloc (Debian links the system
    libjemalloc) with "jemalloc-bg-thread yes", whose background thread
    must be running. Not the system service."""

    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.port = free_port()
        with open(REDIS_CONF) as f:
            conf = edit_conf(f.read(), REDIS_CONF, [
                (rf'^{key} .*$', f'{key} {value}')
                for key, value in (('port', str(self.port)),
                                   ('dir', self.dir), ('daemonize', 'no'),
                                   ('logfile', '""'),
                                   ('pidfile', self.dir + '/r.pid'))])
        if not re.search(r'^jemalloc-bg-thread yes$', conf, re.M):
            raise Bad('error', f'{REDIS_CONF}: not "jemalloc-bg-thread '
                      'yes", the default under test')
        with open(self.dir + '/redis.conf', 'w') as f:
            f.write(conf)
        self.log = open(self.dir + '/redis.log', 'w+')
        self.proc = subprocess.Popen([REDIS_SERVER,
                                      self.dir + '/redis.conf'],
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        wait_until(lambda: self.cli('PING', check=False) == 'PONG', 20,
                   'redis answered PING', self)
        with open(f'/proc/{self.pid}/maps') as f:
            if 'libjemalloc' not in f.read():
                raise Bad('error', 'redis-server without libjemalloc')
        # jemalloc starts it a moment after redis asks for it
        wait_until(lambda: 'jemalloc_bg_thd' in self.thread_names(), 20,
                   'the jemalloc background thread (the default under '
                   'test) started', self)
        self.count = 0
        if self.cli('SET', 'proffs:probe', 'value-25') != 'OK' or \
           self.cli('SET', 'proffs:count', '0') != 'OK':
            raise Bad('wrong', 'SET before the load')

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
        if check and r.returncode:
            raise Bad('wrong', f'redis-cli {" ".join(args)}: exit '
                      f'{r.returncode}: {r.stderr.strip()}')
        return r.stdout.strip()

    def bench(self, tests, n=None, loop=False):
        argv = ['redis-benchmark', '-p', str(self.port), '-q', '-c', '4',
                '-r', '10000', '-t', tests]
        return subprocess.Popen(argv + (['-n', str(n)] if n else []) +
                                (['-l'] if loop else []),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def load(self):
        """redis-benchmark, looping until end_load(): the load a read is
        taken under; it must see no error."""
        def run():
            b = self.bench('set,get,lpush,lpop,incr', loop=True)
            self.halt.wait()
            b.terminate()
            out, err = b.communicate(timeout=30)
            if 'error' in (out + err).lower():
                raise RuntimeError((out + err).strip()[-200:])
        self.driver(run)

    def check(self, when):
        """Answers, and correct ones: PING, a value written before the
        read read back, INCR counting on, a short benchmark with every
        request answered."""
        self.alive(when)
        if self.cli('PING') != 'PONG' or \
           self.cli('GET', 'proffs:probe') != 'value-25':
            raise Bad('wrong', f'PING or GET {when}')
        self.count += 1
        if self.cli('INCR', 'proffs:count') != str(self.count):
            raise Bad('wrong', f'INCR {when}')
        b = self.bench('set,get,lpush,incr', n=5000)
        out, err = b.communicate(timeout=60)
        out = out.replace('\r', '\n')
        done = re.findall(r'^(SET|GET|LPUSH[^:]*|INCR): ([\d.]+) requests '
                          r'per second', out, re.M)
        if b.returncode or 'error' in (out + err).lower() or \
                len(done) != 4 or not all(float(r) > 0 for _, r in done):
            raise Bad('wrong', f'redis-benchmark {when}: exit '
                      f'{b.returncode}: {out[-200:]} {err[-200:]}')


class Nginx(Service):
    """Debian's nginx with Debian's nginx.conf, changed only where a test
    must: one worker (pid, the process read), its pid file, its logs, and
    one server on a free port serving a directory of known files instead
    of sites-enabled. In the foreground; not the system service."""
    stop_sig = signal.SIGQUIT      # graceful

    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.port = free_port()
        root = self.dir + '/www'
        os.mkdir(root, 0o755)
        r = random.Random(25)
        self.files = {
            'index.html': b'<html><body>proffs issue 25</body></html>\n',
            'small.txt': bytes(r.randrange(32, 127) for _ in range(3000)),
            'big.bin': r.randbytes(1 << 20),
        }
        for name, body in self.files.items():
            with open(f'{root}/{name}', 'wb') as f:
                f.write(body)
            os.chmod(f'{root}/{name}', 0o644)
        server = ('server { listen 127.0.0.1:%d; root %s; '
                  'location / { try_files $uri =404; } }' % (self.port, root))
        with open(NGINX_CONF) as f:
            conf = edit_conf(f.read(), NGINX_CONF, (
                (r'^worker_processes .*;$', 'worker_processes 1;'),
                (r'^pid .*;$', f'pid {self.dir}/nginx.pid;'),
                (r'^\s*error_log .*;$', 'error_log stderr;'),
                (r'^\s*access_log .*;$', 'access_log off;'),
                (r'^\s*include /etc/nginx/sites-enabled/\*;$', server)))
        with open(self.dir + '/nginx.conf', 'w') as f:
            f.write(conf)
        self.log = open(self.dir + '/nginx.log', 'w+')
        self.proc = subprocess.Popen(
            [NGINX, '-c', self.dir + '/nginx.conf', '-e', 'stderr', '-g',
             'daemon off;'], stdout=self.log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until(lambda: self.get_all(1), 20, 'nginx answered', self)
        workers = self.workers()
        if len(workers) != 1:
            raise Bad('error', f'nginx workers {workers}, not one')
        self.pid = workers[0]
        self.done = []

    def workers(self):
        with open(f'/proc/{self.proc.pid}/task/{self.proc.pid}/'
                  'children') as f:
            return [int(p) for p in f.read().split()]

    def get_all(self, rounds, halt=None):
        """GET every file rounds times (or until halt is set) on one
        keep-alive connection; every body must be the file, byte for
        byte. The number of answers."""
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=20)
        n = 0
        try:
            for i in itertools.count():
                if halt is None and i >= rounds or halt and halt.is_set():
                    break
                for name, body in self.files.items():
                    c.request('GET', '/' + name)
                    r = c.getresponse()
                    got = r.read()
                    if r.status != 200 or got != body:
                        raise RuntimeError(f'{name}: status {r.status}, '
                                           f'{len(got)} bytes, not the file')
                    n += 1
        finally:
            c.close()
        return n

    def load(self):
        """Two clients of keep-alive GETs until end_load(); done: how
        many answers each had."""
        for _ in range(2):
            self.driver(lambda: self.done.append(self.get_all(0,
                                                              self.halt)))

    def check(self, when):
        """The same worker (none died and was replaced) answers every
        file right; the log says nothing of a crash."""
        self.alive(when)
        if self.workers() != [self.pid]:
            raise Bad('dead', f'worker {self.pid} replaced {when}: '
                      f'{self.log_text()[-300:]}')
        try:
            if self.get_all(50) != 150:
                raise RuntimeError('not 150 answers')
        except (OSError, RuntimeError, http.client.HTTPException) as e:
            raise Bad('wrong', f'{when}: {e}')
        if re.search(r'signal|alert|emerg|crit', self.log_text()):
            raise Bad('wrong', f'nginx log {when}: {self.log_text()}')


class Sqlite(Service):
    """sqlite3's shell on a database file, fed statements on its stdin;
    each batch ends with a SELECT whose answer is known."""

    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.proc = subprocess.Popen(['sqlite3', '-batch',
                                      self.dir + '/db'],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     bufsize=1)
        self.pid = self.proc.pid
        self.rows = 0
        self.lock = threading.Lock()
        self.ask('CREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT, b BLOB);')

    def ask(self, sql):
        """Run sql, then a SELECT of the table's size: it must be the
        number of rows inserted."""
        with self.lock:
            self.proc.stdin.write(sql + '\nSELECT count(*), sum(length(v))'
                                  ' FROM t;\n')
            self.proc.stdin.flush()
            line = self.proc.stdout.readline().strip()
        want = f'{self.rows}|{self.rows * 40}' if self.rows else '0|'
        if line != want:
            raise RuntimeError(f'sqlite3 said {line!r}, not {want!r}')

    def batch(self):
        rows = []
        for _ in range(50):
            self.rows += 1
            rows.append(f"({self.rows}, printf('%040d', {self.rows}), "
                        f"randomblob(300))")
        self.ask('BEGIN; INSERT INTO t VALUES ' + ','.join(rows) +
                 '; COMMIT; SELECT 1 FROM t WHERE v LIKE \'%7%\' LIMIT 0;'
                 ' CREATE TEMP TABLE IF NOT EXISTS s AS SELECT * FROM t '
                 'LIMIT 0; DELETE FROM s; INSERT INTO s SELECT * FROM t '
                 'ORDER BY v DESC LIMIT 500;')

    def load(self):
        def run():
            while not self.halt.is_set():
                self.batch()
        self.driver(run)

    def check(self, when):
        self.alive(when)
        try:
            self.batch()
        except (OSError, RuntimeError) as e:
            raise Bad('wrong', f'{when}: {e}')

    def stop(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Bad('hang', 'sqlite3 did not exit at the end of input')


class Postgres(Service):
    """A cluster of its own, run as nobody (postgres refuses root), with
    pgbench's tables. The process read is the backend of a psql session
    that runs a query with a known answer over and over (sorting md5s:
    palloc and malloc at work), beside two pgbench clients. Checks: the
    query's answer, the backend still the same process, a pgbench run
    with no failed transaction, and pgbench's invariant (the sums of the
    accounts', tellers' and branches' balances all equal the history's)."""
    stop_sig = signal.SIGINT       # fast shutdown
    NOBODY = 65534
    QUERY = ('SELECT count(*), sum(length(m)) FROM (SELECT md5(g::text) m '
             'FROM generate_series(1, 5000) g ORDER BY m) s;')
    ANSWER = '5000|160000'
    INVARIANT = ('SELECT (SELECT coalesce(sum(delta), 0) FROM '
                 'pgbench_history) = ALL (ARRAY[(SELECT sum(abalance) FROM '
                 'pgbench_accounts), (SELECT sum(tbalance) FROM '
                 'pgbench_tellers), (SELECT sum(bbalance) FROM '
                 'pgbench_branches)]);')

    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.bin = pg_bin()
        os.chown(self.dir, self.NOBODY, self.NOBODY)
        data = self.dir + '/data'
        subprocess.run([self.bin + '/initdb', '-D', data, '-A', 'trust',
                        '-U', 'postgres', '--no-sync', '-E', 'UTF8'],
                       user=self.NOBODY, group=self.NOBODY, check=True,
                       capture_output=True, timeout=120, cwd=self.dir)
        self.port = free_port()
        self.log = open(self.dir + '/postgres.log', 'w+')
        self.proc = subprocess.Popen(
            [self.bin + '/postgres', '-D', data, '-k', self.dir,
             '-p', str(self.port), '-c', 'listen_addresses=',
             '-c', 'fsync=off', '-c', 'max_connections=20'],
            user=self.NOBODY, group=self.NOBODY, cwd=self.dir,
            stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        self.conn = ['-h', self.dir, '-p', str(self.port), '-U', 'postgres',
                     'postgres']
        wait_until(lambda: subprocess.run(
            [self.bin + '/pg_isready', '-q'] + self.conn[:6],
            timeout=10).returncode == 0, 30, 'postgres answered', self)
        self.bench(['-i', '-s', '1', '-q'])
        self.lock = threading.Lock()
        self.sql = subprocess.Popen(
            [self.bin + '/psql', '-X', '-A', '-t', '-q'] + self.conn,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.pid = int(self.ask('SELECT pg_backend_pid();'))

    def bench(self, args, timeout=120):
        r = subprocess.run([self.bin + '/pgbench'] + args + self.conn,
                           capture_output=True, text=True, timeout=timeout)
        out = r.stdout + r.stderr
        failed = re.search(r'number of failed transactions: (\d+)', out)
        if r.returncode or (failed and failed.group(1) != '0'):
            raise RuntimeError(f'pgbench {" ".join(args)}: {out[-300:]}')
        return out

    def ask(self, sql):
        with self.lock:
            self.sql.stdin.write(sql + '\n')
            self.sql.stdin.flush()
            return self.sql.stdout.readline().strip()

    def work(self):
        got = self.ask(self.QUERY)
        if got != self.ANSWER:
            raise RuntimeError(f'the query said {got!r}, not '
                               f'{self.ANSWER!r}')

    def load(self):
        def run():
            while not self.halt.is_set():
                self.work()

        def clients():
            b = subprocess.Popen([self.bin + '/pgbench', '-n', '-c', '2',
                                  '-T', '3600'] + self.conn,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            self.halt.wait()
            b.terminate()
            out, _ = b.communicate(timeout=30)
            if re.search(r'error|abort', out, re.I):
                raise RuntimeError(out.strip()[-200:])
        self.driver(run)
        self.driver(clients)

    def check(self, when):
        self.alive(when)
        try:
            self.work()
            if self.ask('SELECT pg_backend_pid();') != str(self.pid):
                raise RuntimeError('the session\'s backend was replaced')
            self.bench(['-n', '-c', '2', '-t', '50'])
            if self.ask(self.INVARIANT) != 't':
                raise RuntimeError('pgbench\'s balances do not add up')
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            raise Bad('wrong', f'{when}: {e}')
        if re.search(r'terminated by signal|PANIC|server process .* '
                     r'exited', self.log_text()):
            raise Bad('crash', f'postgres log {when}: a backend died')

    def stop(self):
        self.sql.stdin.close()
        self.sql.wait(timeout=30)
        return super().stop()

    def cleanup(self):
        if getattr(self, 'sql', None) and self.sql.poll() is None:
            self.sql.kill()
            self.sql.wait()
        super().cleanup()


class Loop(Service):
    """python3 or node on an allocating loop that checks its own work
    (printing BAD when it finds it wrong) and prints a counter with its
    own CPU time at that step: its progress counted per second of its own
    CPU time, so that a busy machine does not fail it and a livelock (all
    CPU, no progress) does. Both numbers of a line come from the target
    at one moment: a harness thread that reads the lines late (this
    process is busy too) shifts the window, never the ratio, where the
    counter read late beside /proc's CPU time read now made a starved
    harness look like a stalled target. node's CPU time is its main
    thread's (schedstat, in ns), where the loop and the hooks it calls
    run: its GC and compiler threads work in bursts that are not steps. load() measures the speed before
    the read; check() wants at least KEEP of it."""
    SPAN = 1.5          # seconds of each progress measurement
    KEEP = 0.3          # at least this share of the speed before the read

    def __init__(self, rng, held, argv, script, text):
        super().__init__(rng, held)
        with open(self.dir + '/' + script, 'w') as f:
            f.write(text)
        self.log = open(self.dir + '/stderr.log', 'w+')
        self.proc = subprocess.Popen(argv + [self.dir + '/' + script],
                                     stdout=subprocess.PIPE,
                                     stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        line = self.proc.stdout.readline()
        if line.strip() != b'ready':
            raise Bad('dead', f'{argv} did not start: {line!r}: '
                      f'{self.log_text()[-300:]}')
        self.at = (0, 0.0)      # (steps, CPU seconds) of its last line
        self.bad = False
        threading.Thread(target=self._read, daemon=True).start()
        self.base = None

    def _read(self):
        for line in self.proc.stdout:
            if line.strip() == b'BAD':  # the loop found its work wrong
                self.bad = True
            try:
                n, cpu = line.split()
                self.at = (int(n), float(cpu))
            except ValueError:
                pass

    def speed(self, when):
        """(counter steps per CPU second, steps) over SPAN seconds; it
        must be alive throughout."""
        n0, c0 = self.at
        time.sleep(self.SPAN)
        self.alive(when)
        if self.bad:
            raise Bad('wrong', f'{when}: the program found its own work '
                      'wrong (it printed BAD)')
        n1, c1 = self.at
        return (n1 - n0) / max(c1 - c0, 1e-3), n1 - n0

    def load(self):
        self.base, steps = self.speed('before the read')
        if steps == 0:
            raise Bad('stalled', 'no progress before the read')

    def end_load(self):
        pass

    def check(self, when):
        self.alive(when)
        speed, steps = self.speed(when)
        if steps == 0 or speed < self.KEEP * self.base:
            raise Bad('stalled', f'progress {when}: {speed:.1f} steps per '
                      f'CPU s, {self.base:.1f} before ({steps} steps)')

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        return 0


def start(pattern, rng, held):
    if pattern == 'redis':
        return Redis(rng, held)
    if pattern == 'nginx':
        return Nginx(rng, held)
    if pattern == 'postgres':
        return Postgres(rng, held)
    if pattern == 'sqlite3':
        return Sqlite(rng, held)
    if pattern == 'python3':
        return Loop(rng, held, ['/usr/bin/python3'], 'loop.py', PY_LOOP)
    return Loop(rng, held, ['/usr/bin/node'], 'loop.js', JS_LOOP)


def disarmed(log_lines, pid):
    """The daemon let the agent go (heap_idle ran out), and the agent's
    lease has ended since."""
    end = time.monotonic() + DISARM_WAIT_S
    while not [l for l in log_lines(pid) if 'letting the agent disarm'
               in l]:
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    time.sleep(LEASE_S)
    return True


def one_load(mnt, pattern, seed, read_profile, log_lines, read_timeout):
    """Returns (verdict, detail, pid)."""
    rng = random.Random(seed)
    held = []
    pid = 0
    try:
        s = start(pattern, rng, held)
        pid = s.pid
        s.load()
        time.sleep(rng.uniform(0.1, 0.9))
        out = {}
        reader = threading.Thread(
            target=read_profile,
            args=(os.path.join(mnt, str(pid), 'heap_1s?rate=1.pb.gz'), out),
            daemon=True)
        reader.start()
        reader.join(read_timeout)
        read = out.get('result', 'hang')
        said = log_lines(pid) if read == 'ok' else []
        if any('the agent was refused' in l for l in said):
            read = 'refused'    # answered by uprobes: no agent
        elif any('agent cannot be loaded' in l for l in said):
            read = 'error:the agent could not be loaded'
        s.end_load()
        s.check('after the read')
        if read == 'ok':
            if not disarmed(log_lines, pid):
                return 'error', 'the daemon never let the agent go', pid
            s.check('after the daemon let the agent go')
        rc = s.stop()
        if rc < 0 and rc != -s.stop_sig:
            return 'crash', f'signal {-rc} when asked to exit', pid
        if rc > 0:
            return 'error', f'exit {rc} when asked to exit', pid
        if read == 'hang':
            return 'hang', f'read did not finish in {read_timeout} s', pid
        if read.startswith('error'):
            return 'error', read, pid
        return read, '', pid
    except Bad as e:
        return e.verdict, str(e), pid
    except Exception as e:      # noqa: B902 - the harness's own trouble
        return 'error', f'{type(e).__name__}: {e}', pid
    finally:
        for h in held:
            h.cleanup()
