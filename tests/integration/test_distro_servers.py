# SPDX-License-Identifier: GPL-2.0-or-later
"""The programs a Debian server runs, as apt installs them (issue 25):
the first heap read of each gives a profile, and the program goes on
answering correctly after the read and after the daemon has gone.

redis-server keeps its default configuration: jemalloc (Debian links the
system libjemalloc) with "jemalloc-bg-thread yes", whose background
thread lives asleep inside libjemalloc. It used to be refused by every
read (EAGAIN: "threads never all at a safe point ... an allocator library
in libjemalloc.so.2").

Each program's driver (start, load, checks, stop) is the stress suite's,
tests/stress/distro.py; the service fixture (conftest.py) starts it."""
import re
import time

import pytest

import distro
import util

# What redis's own code calls to allocate (src/zmalloc.c), by the names
# its .dynsym gives them.
REDIS_ALLOC = ('zmalloc', 'zcalloc', 'zrealloc', 'zmalloc_usable',
               'zcalloc_usable', 'zrealloc_usable', 'ztrymalloc_usable',
               'zstrdup')


@pytest.fixture
def redis(service):
    """Debian's redis-server, its default configuration (distro.Redis,
    the stress suite's driver): jemalloc and its background thread, a
    probe value and a counter set."""
    return service('redis')


def test_redis_default_config_first_read(proffs, redis):
    """The first heap read of Debian's redis-server, default settings,
    under redis-benchmark: a profile at once (the agent loaded, not the
    uprobe fallback), with redis's own allocation sites; redis answers
    correctly after the read and after the daemon has gone."""
    redis.load()
    time.sleep(0.3)     # the benchmark is running
    data = proffs.read(redis.pid, 'heap_2s.pb.gz')
    redis.end_load()    # the benchmark saw no error
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
    time.sleep(distro.LEASE_S)     # the agent disarms 3 s after the beat
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


@pytest.fixture
def nginx(service):
    """Debian's nginx, one worker (pid) serving known files (distro.Nginx,
    the stress suite's driver)."""
    return service('nginx')


def test_nginx_first_read(proffs, nginx):
    """The first heap read of Debian's nginx worker, under a load of
    keep-alive GETs: a profile with nginx's pool allocations; every body
    of the load and after it byte-identical to the file served, after the
    read and after the daemon has gone, by the same worker."""
    nginx.load()        # two clients of keep-alive GETs
    data = proffs.read(nginx.pid, 'heap_2s.pb.gz')
    nginx.end_load()    # every body byte for byte, or distro.Bad
    assert data is not None, 'the first read was refused (EAGAIN)'
    assert sum(nginx.done) > 0
    p = util.validate_pprof(util.save(data, f'nginx-heap-{nginx.pid}'
                                            '.pb.gz'))
    assert not [c for c in p.comments if 'uprobe' in c or 'refused' in c],\
        p.comments
    assert proffs.log_lines(r'heap: pid %d: agent loaded in \d+ ms' %
                            nginx.pid), proffs.log_text()
    a = util.validate_pprof(util.save(
        proffs.read(nginx.pid, 'allocs.pb.gz'),
        f'nginx-allocs-{nginx.pid}.pb.gz'))
    assert any('ngx_create_pool' in s.frames or 'ngx_alloc' in s.frames
               for s in a.samples), [s.frames for s in a.samples]
    nginx.check('after the read')
    proffs.unmount()
    time.sleep(distro.LEASE_S)
    nginx.check('after the daemon has gone')
