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
NGINX_CONF = '/etc/nginx/nginx.conf'
PATTERNS = ['redis', 'nginx', 'postgres', 'sqlite3', 'python3', 'node']
BAD = ('wrong', 'stalled', 'dead')
DISARM_WAIT_S = 15   # heap_idle (1 s) + the lease (3 s), on a busy machine
LEASE_S = 3.5

PY_LOOP = r'''
import sys
n = 0
print('ready', flush=True)
while True:
    keep = [str(i) * 3 for i in range(1000)]
    more = [[i] for i in range(200)]
    assert sum(len(k) for k in keep) == 8670
    n += 1
    if n % 20 == 0:
        print(n, flush=True)
'''

JS_LOOP = r'''
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
  if (n % 10 == 0) process.stdout.write(n + '\n');
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
        all(shutil.which(p) for p in ('redis-server', 'redis-cli',
                                      'redis-benchmark')),
        'nginx': os.path.exists(NGINX_CONF) and
        os.access('/usr/sbin/nginx', os.X_OK),
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


def wait_until(fn, timeout, what):
    end = time.monotonic() + timeout
    while True:
        try:
            if fn():
                return
        except OSError:
            pass
        if time.monotonic() > end:
            raise Bad('dead', f'{what} within {timeout} s')
        time.sleep(0.05)


class Service:
    """One program under test: pid (the process read), load() starts its
    driver, check(when) asks it questions with known answers, stop()
    asks it to exit and returns its exit status."""
    stop_sig = signal.SIGTERM

    def __init__(self, rng, held):
        held.append(self)   # cleaned up even if the start fails
        self.rng = rng
        self.dir = tempfile.mkdtemp(prefix='proffs-stress-')
        os.chmod(self.dir, 0o755)
        self.errors = []
        self.halt = threading.Event()
        self.threads = []
        self.proc = None

    def alive(self, when):
        if self.proc.poll() is not None:
            raise Bad('dead', f'exit {self.proc.returncode} {when}')

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
        if getattr(self, 'log', None):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Redis(Service):
    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.port = free_port()
        with open(REDIS_CONF) as f:
            conf = f.read()
        for key, value in (('port', str(self.port)), ('dir', self.dir),
                           ('daemonize', 'no'), ('logfile', '""'),
                           ('pidfile', self.dir + '/r.pid')):
            conf = re.sub(rf'^{key} .*$', f'{key} {value}', conf,
                          flags=re.M)
        with open(self.dir + '/redis.conf', 'w') as f:
            f.write(conf)
        self.proc = subprocess.Popen(['redis-server',
                                      self.dir + '/redis.conf'],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        wait_until(lambda: self.cli('PING') == 'PONG', 20, 'no PING')
        self.count = 0
        assert self.cli('SET', 'probe', 'value-25') == 'OK'
        assert self.cli('SET', 'count', '0') == 'OK'

    def cli(self, *args):
        r = subprocess.run(['redis-cli', '-p', str(self.port)] +
                           list(args), capture_output=True, text=True,
                           timeout=30)
        return r.stdout.strip()

    def bench(self, n, loop=False):
        argv = ['redis-benchmark', '-p', str(self.port), '-q', '-c', '4',
                '-r', '10000', '-n', str(n), '-t', 'set,get,lpush,incr']
        return subprocess.Popen(argv + (['-l'] if loop else []),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def load(self):
        def run():
            b = self.bench(100000, loop=True)
            self.halt.wait()
            b.terminate()
            out, err = b.communicate(timeout=30)
            if 'error' in (out + err).lower():
                raise RuntimeError((out + err).strip()[-200:])
        self.driver(run)

    def check(self, when):
        self.alive(when)
        if self.cli('PING') != 'PONG' or \
           self.cli('GET', 'probe') != 'value-25':
            raise Bad('wrong', f'PING or GET {when}')
        self.count += 1
        if self.cli('INCR', 'count') != str(self.count):
            raise Bad('wrong', f'INCR {when}')
        b = self.bench(3000)
        out, err = b.communicate(timeout=60)
        done = re.findall(r'requests per second', out.replace('\r', '\n'))
        if b.returncode or len(done) != 4 or 'error' in \
                (out + err).lower():
            raise Bad('wrong', f'redis-benchmark {when}: {out[-200:]}')


class Nginx(Service):
    stop_sig = signal.SIGQUIT      # graceful

    def __init__(self, rng, held):
        super().__init__(rng, held)
        self.port = free_port()
        root = self.dir + '/www'
        os.mkdir(root, 0o755)
        r = random.Random(25)
        self.files = {
            'index.html': b'<html>proffs</html>\n',
            'small.txt': bytes(r.randrange(32, 127) for _ in range(3000)),
            'big.bin': r.randbytes(1 << 18),
        }
        for name, body in self.files.items():
            with open(f'{root}/{name}', 'wb') as f:
                f.write(body)
            os.chmod(f'{root}/{name}', 0o644)
        with open(NGINX_CONF) as f:
            conf = f.read()
        server = ('server { listen 127.0.0.1:%d; root %s; '
                  'location / { try_files $uri =404; } }' % (self.port, root))
        for pattern, repl in (
                (r'^worker_processes .*;$', 'worker_processes 1;'),
                (r'^pid .*;$', f'pid {self.dir}/nginx.pid;'),
                (r'^\s*error_log .*;$', 'error_log stderr;'),
                (r'^\s*access_log .*;$', 'access_log off;'),
                (r'^\s*include /etc/nginx/sites-enabled/\*;$', server)):
            conf = re.sub(pattern, lambda m: repl, conf, flags=re.M)
        with open(self.dir + '/nginx.conf', 'w') as f:
            f.write(conf)
        self.log = open(self.dir + '/nginx.log', 'w+')
        self.proc = subprocess.Popen(
            ['/usr/sbin/nginx', '-c', self.dir + '/nginx.conf', '-e',
             'stderr', '-g', 'daemon off;'], stdout=self.log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_until(lambda: self.get_all(1) and len(self.workers()) == 1,
                   20, 'nginx did not answer')
        self.pid = self.workers()[0]

    def workers(self):
        with open(f'/proc/{self.proc.pid}/task/{self.proc.pid}/'
                  'children') as f:
            return [int(p) for p in f.read().split()]

    def get_all(self, rounds, halt=None):
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=30)
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
        for _ in range(2):
            self.driver(lambda: self.get_all(0, self.halt))

    def check(self, when):
        self.alive(when)
        if self.workers() != [self.pid]:
            raise Bad('dead', f'worker {self.pid} replaced {when}')
        try:
            self.get_all(20)
        except (OSError, RuntimeError, http.client.HTTPException) as e:
            raise Bad('wrong', f'{when}: {e}')
        self.log.seek(0)
        if re.search(r'signal|alert|emerg|crit', self.log.read()):
            raise Bad('wrong', f'nginx log {when}')


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
            timeout=10).returncode == 0, 30, 'postgres did not start')
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
        self.log.seek(0)
        if re.search(r'terminated by signal|PANIC|server process .* '
                     r'exited', self.log.read()):
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
    """python3 or node on an allocating loop that checks its own work and
    prints a counter: progress per second of its CPU time."""
    TICK = os.sysconf('SC_CLK_TCK')

    def __init__(self, rng, held, argv, script, text):
        super().__init__(rng, held)
        with open(self.dir + '/' + script, 'w') as f:
            f.write(text)
        self.proc = subprocess.Popen(argv + [self.dir + '/' + script],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        if self.proc.stdout.readline().strip() != b'ready':
            raise Bad('dead', 'did not start')
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.base = None

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.count = int(line)
            except ValueError:
                pass

    def cpu(self):
        with open(f'/proc/{self.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.TICK

    def speed(self):
        n0, c0 = self.count, self.cpu()
        time.sleep(1.0)
        n1, c1 = self.count, self.cpu()
        return (n1 - n0) / max(c1 - c0, 1.0 / self.TICK), n1 - n0

    def load(self):
        self.base, _ = self.speed()

    def end_load(self):
        pass

    def check(self, when):
        self.alive(when)
        speed, steps = self.speed()
        self.alive(when)
        if steps == 0 or speed < 0.3 * self.base:
            raise Bad('stalled', f'{when}: {speed:.1f} steps per CPU s, '
                      f'{self.base:.1f} before')

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
