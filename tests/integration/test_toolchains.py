# SPDX-License-Identifier: GPL-2.0-or-later
"""Programs as their users' toolchains build them (issue 17): burn.c
linked by LLD, mold, gold and GNU ld (PIE, non-PIE, a second code
segment) and compiled by clang; shapes.cc by g++ and clang++; shapes.rs
by Debian's rustc (legacy and v0 mangling, linked by LLD); burngo.go by
golang-go (compressed DWARF, no .debug_aranges); time spent in the vDSO;
JavaScript compiled by node, named through --perf-basic-prof.

Each program is built here with Debian's own toolchain, read through the
mount while `perf record --call-graph dwarf` samples the same process,
and held to perf: the same function names, cumulative shares within 5
points, at least 95% of the samples unwound to main (or to the Go
runtime's first frame of a stack). Shares are compared by the function
that holds the code (inlined frames left out on both sides: perf and
proffs may expand an inline chain differently)."""

import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

import util
from util import save, validate_pprof

SRC = util.TARGET_SRC
RUSTC = '/usr/bin/rustc'       # Debian's, not a rustup toolchain on PATH
HZ = 999
# samples wanted from each profiler: two honest estimates of a 75% share
# from 3,000 samples each differ by more than 5 points (4.5 sigma) about
# one time in 100,000
WANT = 3000
C_FLAGS = ['-O2', '-g', '-fomit-frame-pointer', '-fno-optimize-sibling-calls']
# hot() and level2() in far_text, loaded as a second code segment
FAR = ['-DFAR_TEXT', '-Wl,--section-start=far_text=0x200000']


def c_build(*flags, cc='gcc', src='burn.c'):
    return [cc] + C_FLAGS + list(flags) + ['-o', '{out}', '{src}/' + src]


def rust_build(*flags):
    return [RUSTC, '-O', '-g'] + list(flags) + ['-o', '{out}',
                                                 '{src}/shapes.rs']


# name: the command that builds it ({out}, {src}: output, tests/targets)
BUILDS = {
    'burn-lld': c_build('-fuse-ld=lld'),
    'burn-lld-nopie': c_build('-fuse-ld=lld', '-no-pie'),
    'burn-mold': c_build('-fuse-ld=mold'),
    'burn-mold-far': c_build('-fuse-ld=mold', *FAR),
    'burn-gold': c_build('-fuse-ld=gold'),
    'burn-bfd-nopie': c_build('-no-pie'),
    'burn-bfd-far': c_build(*FAR),
    'burn-clang-lld': c_build('-fuse-ld=lld', cc='clang'),
    'shapes-gxx': c_build(cc='g++', src='shapes.cc'),
    'shapes-clangxx-lld': c_build('-fuse-ld=lld', cc='clang++',
                                  src='shapes.cc'),
    'shapes-rust': rust_build(),
    'shapes-rust-v0': rust_build('-C', 'symbol-mangling-version=v0'),
    'shapes-rust-lld': rust_build('-C', 'link-arg=-fuse-ld=lld'),
    'burngo': ['go', 'build', '-o', '{out}', '{src}/go/burngo.go'],
}


@pytest.fixture(scope='module')
def build(tmp_path_factory):
    """build(name): the program BUILDS names, built once per module."""
    out_dir = tmp_path_factory.mktemp('toolchains')
    done = {}

    def make(name):
        if name not in done:
            out = str(out_dir / name)
            cmd = [a.format(out=out, src=SRC) for a in BUILDS[name]]
            r = subprocess.run(cmd, capture_output=True, text=True,
                               env=util.go_env(), cwd=str(out_dir),
                               timeout=600)
            assert r.returncode == 0, f'{cmd} failed:\n{r.stderr}'
            done[name] = out
        return done[name]
    return make


def real_frames(sample):
    """The functions holding each location's code, leaf first: the last
    line of a location (its inlined callees before it left out). The
    kernel's frames ([k] name, as root) are left out: these tests hold the
    user's to perf."""
    return [loc.lines[-1][0] for loc in sample.locations
            if loc.lines and not loc.lines[-1][0].startswith('[k] ')]


def window_for(pid):
    """Seconds of window for about WANT samples from each profiler: the
    CPU the target gets now (a second of its own CPU time against the
    clock: on a busy machine it gets a fraction of a CPU), 5 to 20 s."""
    t0, c0 = time.monotonic(), util.cpu_seconds(pid)
    time.sleep(1)
    rate = (util.cpu_seconds(pid) - c0) / (time.monotonic() - t0)
    return max(5, min(20, math.ceil(WANT / (max(rate, 0.01) * HZ))))


def read_with_perf(proffs, pid, keep, tmp, call_graph='dwarf'):
    """cpu_<N>s?hz=HZ read through the mount while perf records the same
    pid for the same N seconds (window_for): (Profile, perf's stacks
    without inlined frames)."""
    seconds = window_for(pid)
    result = {}

    def ours():
        try:
            data = proffs.read(pid, f'cpu_{seconds}s?hz={HZ}.pb.gz')
            result['p'] = validate_pprof(save(data, keep + '.pb.gz'))
        except BaseException as e:     # re-raised in the test's thread
            result['err'] = e
    th = threading.Thread(target=ours)
    th.start()
    theirs = util.perf_record(pid, seconds, str(tmp), hz=HZ, inlined=False,
                              call_graph=call_graph)
    th.join(timeout=120)
    if 'err' in result:
        raise result['err']
    return result['p'], [(v, f) for v, _, f in theirs]


def cum_share(stacks, func):
    total = sum(v for v, _ in stacks)
    return sum(v for v, f in stacks if func in f) / total if total else 0.0


def held_to_perf(p, theirs, funcs, chain, reached):
    """funcs: perf names each (in at least a tenth of its samples) and
    proffs gives each a share within 5 points of perf's; chain: the real
    frames, leaf first, of the samples whose leaf is chain[0], in 95% of
    them, names perf uses too; reached(frames): whether a stack got to
    its entry, in 95% of proffs's samples."""
    ours = [(s.values[0], real_frames(s)) for s in p.samples]
    total = sum(v for v, _ in ours)
    assert total >= 200 and len(theirs) >= 200, (total, len(theirs))
    for func in funcs:
        o, t = cum_share(ours, func), cum_share(theirs, func)
        assert t >= 0.1, f'perf has {func} in {t:.3f} of its samples'
        assert abs(o - t) <= 0.05, \
            f'{func}: proffs {o:.3f} of {total}, perf {t:.3f} of {len(theirs)}'
    for name in chain:
        assert any(name in f for _, f in theirs), f'perf has no {name}'
    leaf = [(v, f) for v, f in ours if f[:1] == chain[:1]]
    good = sum(v for v, f in leaf if f[:len(chain)] == chain)
    assert leaf and good >= 0.95 * sum(v for v, _ in leaf), \
        [f for _, f in leaf if f[:len(chain)] != chain][:3]
    done = sum(v for v, f in ours if reached(f))
    perf_done = sum(v for v, f in theirs if reached(f))
    assert done >= 0.95 * total, \
        (f'{done} of {total} samples reach the entry (perf: {perf_done} '
         f'of {len(theirs)}); e.g. '
         f'{[f for _, f in ours if not reached(f)][:3]}')


def to_main(frames):
    return 'main' in frames


BURN = dict(funcs=['hot', 'sibling'],
            chain=['hot', 'level2', 'level1', 'main'], reached=to_main)
CXX = dict(funcs=['geometry::Square::area', 'geometry::leaf_work'],
           chain=['geometry::leaf_work', 'geometry::Circ::area',
                  'geometry::Holder<geometry::Circ>::run', 'main'],
           reached=to_main)
RUST_AREA = '<shapes::geometry::Square as shapes::geometry::Shape>::area'
RUST_CIRC = '<shapes::geometry::Circ as shapes::geometry::Shape>::area'
RUST_LEAF = 'shapes::geometry::leaf_work'


def rust(run):
    return dict(funcs=[RUST_AREA, RUST_LEAF],
                chain=[RUST_LEAF, RUST_CIRC, run, 'shapes::main'],
                reached=to_main)


# Where Go's runtime starts a stack (a goroutine's, a thread's) or leaves
# it for another one (g0's, to call the vDSO among others): what Go's own
# traceback ends at.
GO_TOPS = {'runtime.goexit', 'runtime.mstart', 'runtime.rt0_go',
           'runtime.mcall', 'runtime.systemstack', 'runtime.morestack',
           'runtime.sigreturn', 'runtime.asmcgocall', 'runtime.nanotime1',
           'runtime.walltime', 'time.now'}


def go_reached(frames):
    return bool(frames) and frames[-1].replace('.abi0', '') in GO_TOPS


# perf's DWARF unwinder reads .eh_frame, which Go does not write (its CFI
# is in .debug_frame): perf stops at the leaf. Go keeps frame pointers,
# which perf follows with --call-graph fp.
GO = dict(funcs=['main.hot', 'main.sibling'],
          chain=['main.hot', 'main.main', 'runtime.main'],
          reached=go_reached, call_graph='fp')

CASES = {
    # linkers: LLD's text at offset 0x710, vaddr 0x1710; mold alike;
    # gold; non-PIE; a second code segment
    'burn-lld': BURN, 'burn-lld-nopie': BURN, 'burn-mold': BURN,
    'burn-mold-far': BURN, 'burn-gold': BURN, 'burn-bfd-nopie': BURN,
    'burn-bfd-far': BURN, 'burn-clang-lld': BURN,
    # C++ names, as perf prints them: no parameter lists
    'shapes-gxx': CXX, 'shapes-clangxx-lld': CXX,
    # Rust's legacy names (hash dropped, $LT$ decoded) and v0 names
    'shapes-rust': rust('shapes::geometry::Holder<T>::run'),
    'shapes-rust-lld': rust('shapes::geometry::Holder<T>::run'),
    'shapes-rust-v0': rust(
        '<shapes::geometry::Holder<shapes::geometry::Circ>>::run'),
    'burngo': GO,
}


@pytest.mark.parametrize('name', CASES)
def test_toolchain_matches_perf(proffs, build, tmp_path, name):
    case = dict(CASES[name])
    call_graph = case.pop('call_graph', 'dwarf')
    t = util.Target(name, path=build(name))
    try:
        p, theirs = read_with_perf(proffs, t.pid, name, tmp_path,
                                   call_graph=call_graph)
    finally:
        t.kill()
    held_to_perf(p, theirs, **case)
    # every name demangled, every pc named
    for s in p.samples:
        for fn in s.frames:
            assert not re.match(r'_Z|_R[A-Z]|\[unknown', fn), s.frames
            assert not re.search(r'::h[0-9a-f]{16}$|\$LT\$|\$u20\$', fn), fn


def test_rust_mangled_names_kept_as_system_names(proffs, build):
    """pprof's Function.system_name keeps the mangled name of what
    Function.name shows demangled: go tool pprof -symbolize=none
    -raw prints names only, so this reads the protobuf's string table:
    the mangled names of the hot functions are in it."""
    exe = build('shapes-rust')
    nm = subprocess.run(['nm', exe], capture_output=True, text=True,
                        check=True).stdout
    mangled = [m for m in re.findall(r' [tT] (\S+)$', nm, re.M)
               if 'leaf_work' in m or ('Square' in m and 'area' in m)]
    assert len(mangled) == 2, mangled
    t = util.Target('shapes-rust', path=exe)
    try:
        data = proffs.read(t.pid, 'cpu_2s.pb')
    finally:
        t.kill()
    p = validate_pprof(save(data, 'shapes-rust-names.pb'))
    names = {fn for s in p.samples for fn in s.frames}
    assert {RUST_AREA, RUST_LEAF} <= names, names
    for m in mangled:
        assert m.encode() in data, f'{m} is not in the profile'


def source_line(path, text):
    """The 1-based number of the line of path holding text."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(f'{text!r} not in {path}')


def test_go_file_and_line_in_profiles_and_thread_dumps(proffs, build):
    """golang-go compresses its DWARF (SHF_COMPRESSED) and writes no
    .debug_aranges: file:line come out in the CPU profile (main.hot's
    loop at its line), the goroutine profile and every frame of ten
    goroutine.txt?debug=2 dumps taken while the garbage collector and
    scheduler run (which may hold the main goroutine off its thread in
    all ten), and no frame is unknown (where addr2line names them all)."""
    exe = build('burngo')
    src = os.path.join(SRC, 'go', 'burngo.go')
    r = subprocess.run(['readelf', '-SW', exe], capture_output=True,
                       text=True, check=True)
    assert re.search(r' \.debug_line .* [A-Z]*C', r.stdout), r.stdout
    assert '.debug_aranges' not in r.stdout
    loop = source_line(src, 'x = x*6364136223846793005')
    t = util.Target('burngo', path=exe)
    try:
        cpu = validate_pprof(save(proffs.read(t.pid, 'cpu_2s.pb.gz'),
                                  'burngo-lines.pb.gz'))
        dumps = [proffs.read(t.pid, 'goroutine.txt?debug=2').decode()
                 for _ in range(10)]
        gor = validate_pprof(save(proffs.read(t.pid, 'goroutine.pb.gz'),
                                  'burngo-goroutine.pb.gz'))
    finally:
        t.kill()
    # the kernel has no lines, nor has the vDSO's image (the Go runtime's
    # nanotime lands in __vdso_clock_gettime now and then)
    lines = [ln for loc in cpu.locations.values() for ln in loc.lines
             if not ln[0].startswith('[k] ') and
             not (loc.mapping and loc.mapping.file == '[vdso]')]
    leaf = [ln for ln in lines if ln[0] == 'main.hot']
    assert any(f == src and abs(n - loop) <= 1 for _, f, n in leaf), leaf
    runtime = [ln for ln in lines if ln[0].startswith('runtime.')]
    assert runtime and all(f.endswith('.go') or f.endswith('.s')
                           for _, f, _ in runtime), runtime[:5]
    assert all(ln[1] and ln[2] > 0 for ln in lines), \
        [ln for ln in lines if not (ln[1] and ln[2] > 0)][:5]
    glines = [ln for loc in gor.locations.values() for ln in loc.lines
              if not ln[0].startswith('[k] ') and
              not (loc.mapping and loc.mapping.file == '[vdso]')]
    assert glines and all(ln[1] and ln[2] > 0 for ln in glines)
    for i, text in enumerate(dumps):
        save(text.encode(), f'burngo-goroutine-debug2-{i}.txt')
        assert 'unknown' not in text, text
        # "func(...)" then "\t<file>:<line>" for every frame
        frames = re.findall(r'^(\S+)\(\.\.\.\)\n\t(\S+)$', text, re.M)
        assert len(frames) >= 10, text
        bad = [f for f in frames if not re.search(r'\.(go|s):\d+$', f[1])]
        assert not bad, bad


def test_go_signal_handler_frames_end_at_sigreturn(proffs, build):
    """A Go program's signal handler returns into the restorer the kernel
    put as runtime.sigtramp's return address: runtime.sigreturn's first
    byte, not after a call, so that frame is named at that byte (as Go's
    own traceback names it, and where the stack ends, GO_TOPS), not one
    byte earlier in the padding of the function before it (cgoSigtramp,
    without a line); past it, the interrupted frames, not stale ones. burngo is sent SIGURG (Go's preemption signal, which
    it takes and ignores when no preemption was asked) as fast as a
    thread can, so many samples land in the handler."""
    exe = build('burngo')
    t = util.Target('burngo', path=exe)
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            try:
                os.kill(t.pid, signal.SIGURG)
            except ProcessLookupError:
                return
    sender = threading.Thread(target=flood)
    sender.start()
    handler = ('runtime.sigtramp', 'runtime.cgoSigtramp')
    tramp, lines = [], []
    try:
        # windows until ten samples are in the handler (a busy machine
        # lets the sender run less)
        for i in range(5):
            cpu = validate_pprof(save(
                proffs.read(t.pid, 'cpu_2s?hz=999.pb.gz'),
                f'burngo-signals-{i}.pb.gz'))
            tramp += [[f.replace('.abi0', '') for f in s.frames]
                      for s in cpu.samples
                      if any(f.replace('.abi0', '') in handler
                             for f in s.frames)]
            lines += [ln for loc in cpu.locations.values()
                      for ln in loc.lines if ln[0].startswith('runtime.')]
            if len(tramp) >= 10:
                break
    finally:
        stop.set()
        sender.join()
        t.kill()
    assert len(tramp) >= 10, len(tramp)
    for fr in tramp:
        i = next(i for i, f in enumerate(fr) if f in handler)
        assert i + 1 < len(fr) and fr[i + 1] in (
            'runtime.sigreturn', 'runtime.sigreturn__sigaction'), fr
    # Past the restorer, an idle M's scheduler frames (notesleep ... mcall
    # on g0) lead to the goroutine it parked. mcall and schedule never
    # nest, so a stack holding either twice went on from a stale frame
    # pointer: Go's CFI has no rule for RBP (gostack_fp_rule). Without
    # the rule 45% of these samples did; a goroutine stack that changes
    # while it is read still may, rarely (1-2%).
    stale = [fr for fr in tramp if fr.count('runtime.mcall') > 1 or
             fr.count('runtime.schedule') > 1]
    assert len(stale) <= max(2, 0.1 * len(tramp)), (len(stale), len(tramp),
                                                    stale[:3])
    assert all(f.endswith(('.go', '.s')) and n > 0 for _, f, n in lines), \
        [ln for ln in lines if not (ln[1].endswith(('.go', '.s')) and ln[2] > 0)]


def test_vdso_named_and_unwound_from_the_process(proffs, target, tmp_path):
    """vdso spends its time in clock_gettime() and gettimeofday(), which
    run in the vDSO: named as perf names them (__vdso_clock_gettime,
    __vdso_gettimeofday, from the .dynsym of the image in the process),
    and unwound past it (its .eh_frame) to main in 95% of the samples that
    pass through it, with clocks() and tod() at perf's shares."""
    t = target('vdso')
    p, theirs = read_with_perf(proffs, t.pid, 'vdso', tmp_path)
    held_to_perf(p, theirs, funcs=['clocks', 'tod'],
                 chain=['__vdso_gettimeofday', 'tod', 'main'],
                 reached=to_main)
    ours = [(s.values[0], real_frames(s)) for s in p.samples]
    for name in ('__vdso_clock_gettime', '__vdso_gettimeofday'):
        o, t_ = cum_share(ours, name), cum_share(theirs, name)
        assert t_ >= 0.1 and abs(o - t_) <= 0.05, (name, o, t_)
    vdso = [s for s in p.samples
            if any(loc.mapping and loc.mapping.file == '[vdso]'
                   for loc in s.locations)]
    n = sum(s.values[0] for s in vdso)
    good = sum(s.values[0] for s in vdso
               if re.match(r'(\[vdso\]\+0x[0-9a-f]+ )?__vdso_(clock_gettime '
                           r'__clock_gettime clocks|gettimeofday tod) main',
                           ' '.join(real_frames(s))))
    assert n >= 0.5 * p.total() and good >= 0.95 * n, \
        [real_frames(s) for s in vdso][:3]


def node_hot(proffs, tmp_path, keep, wrap=()):
    """node --perf-basic-prof hot.js, read through the mount (with perf
    beside it unless wrapped in namespaces): (Profile, perf stacks or
    None)."""
    node = shutil.which('node')
    assert node, 'node is not installed (nodejs)'
    # V8 logs to isolate-*.log in the working directory beside the map
    t = util.Target('node', '--perf-basic-prof', '--logfile=/dev/null',
                    os.path.join(SRC, 'hot.js'), path=node, wrap=wrap)
    try:
        if wrap:
            data = proffs.read(t.pid, f'cpu_5s?hz={HZ}.pb.gz')
            return validate_pprof(save(data, keep + '.pb.gz')), None
        return read_with_perf(proffs, t.pid, keep, tmp_path)
    finally:
        t.kill()
        if not wrap:    # a perf map outlives its process, for perf report
            os.unlink(f'/tmp/perf-{t.pid}.map')


def jit_named(p):
    """Samples whose leaf is in memory of no file (JIT code): how many,
    and how many a name covers, and those names with their shares."""
    jit = [s for s in p.samples if s.locations and
           s.locations[0].mapping and s.locations[0].mapping.file == '']
    n = sum(s.values[0] for s in jit)
    named = [s for s in jit if not s.frames[0].startswith('[unknown')]
    return n, sum(s.values[0] for s in named)


def test_node_jit_named_from_perf_map(proffs, tmp_path):
    """V8's machine code lives in anonymous memory; node --perf-basic-prof
    names it in /tmp/perf-PID.map. hotLoop and coldLoop, both compiled,
    are named in at least 90% of the samples in JIT code, with the names
    and shares perf gives them."""
    p, theirs = node_hot(proffs, tmp_path, 'node-jit')
    n, named = jit_named(p)
    assert n >= 0.5 * p.total() and named >= 0.9 * n, (n, named)
    names = {f[0] for _, f in theirs if f and 'hotLoop' in f[0]} | \
        {f[0] for _, f in theirs if f and 'coldLoop' in f[0]}
    assert any('hotLoop' in x for x in names) and \
        any('coldLoop' in x for x in names), names
    ours = [(s.values[0], s.frames) for s in p.samples]
    total = sum(v for v, _ in ours)
    for name in names:
        o = sum(v for v, f in ours if f[:1] == [name]) / total
        t = sum(v for v, f in theirs if f[:1] == [name]) / len(theirs)
        assert abs(o - t) <= 0.05, f'{name}: proffs {o:.3f}, perf {t:.3f}'
    hot = sum(v for v, f in ours if 'hotLoop' in f[0]) / total
    cold = sum(v for v, f in ours if 'coldLoop' in f[0]) / total
    assert cold > 0 and 2.0 <= hot / cold <= 4.5, (hot, cold)


def test_jit_code_named_once_its_line_is_written(proffs, target):
    """latejit runs code in memory of no file from its start and writes
    its line in /tmp/perf-PID.map only 0.5 s later, as a runtime that
    names code after running it. The samples after that are named: the
    map is read again at most every 100 ms, and a pc sampled before its
    line was read used to keep no name for the whole read (every pc of
    a hot loop is, at 999 Hz: none of these samples was named)."""
    t = target('latejit', '500')
    p = validate_pprof(save(proffs.read(t.pid, 'cpu_3s?hz=999.pb.gz'),
                            'latejit.pb.gz'))
    n, named = jit_named(p)
    assert n >= 0.8 * p.total(), (n, p.total())
    assert named >= 0.6 * n, (n, named)
    leaves = {s.frames[0] for s in p.samples if s.locations and
              s.locations[0].mapping and s.locations[0].mapping.file == ''
              and not s.frames[0].startswith('[unknown')}
    assert leaves == {'jit_spin'}, leaves


def test_node_jit_in_a_container_named(proffs, tmp_path):
    """The same node in its own pid and mount namespaces, with a /tmp of
    its own: it writes /tmp/perf-1.map there (its pid in its namespace),
    which proffs finds through /proc/PID/root by the NSpid."""
    wrap = ['unshare', '--pid', '--fork', '--kill-child', '--mount',
            '--mount-proc', 'sh', '-c',
            'mount -t tmpfs proffs-test /tmp && exec "$0" "$@"']
    p, _ = node_hot(proffs, tmp_path, 'node-jit-ns', wrap=wrap)
    n, named = jit_named(p)
    assert n >= 0.5 * p.total() and named >= 0.9 * n, (n, named)
    assert any('hotLoop' in fn for s in p.samples for fn in s.frames[:1])
