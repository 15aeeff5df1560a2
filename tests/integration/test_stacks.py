# SPDX-License-Identifier: GPL-2.0-or-later
"""Stacks deeper than a sample's stack copy (issue 17, item 5): callers
with 24 and 32 KiB frames between main and the code that runs, for CPU
and heap profiles, through the mount. perf's default copy (8 KiB) ends
every one of these stacks at the big frame; proffs reads the rest from
the live thread and keeps only the frames that continue the copied ones
(sampler/unwind/livestack.h)."""
import pytest

import util

HZ = 499


def read_cpu(proffs, t, seconds, keep):
    data = proffs.read(t.pid, f'cpu_{seconds}s?hz={HZ}.pb.gz')
    return util.validate_pprof(util.save(data, keep))


def user_samples(p):
    """(value, labels, frames) of p's samples, without the kernel frames
    a sample taken in the kernel has on top (test_kernel.py): a busy
    machine preempts the target, and some samples fall in the kernel."""
    return [(s.values[0], s.labels,
             [f for f in s.frames if not f.startswith('[k] ')])
            for s in p.samples]


def weight(samples, pred):
    """Samples (value, labels, frames) whose frames pred accepts."""
    return sum(v for v, _, f in samples if pred(f))


def follows(frames, *names):
    """names are on the stack in this order, each the caller of the one
    before it."""
    i = frames.index(names[0]) if names[0] in frames else -1
    return i >= 0 and frames[i:i + len(names)] == list(names)


@pytest.mark.parametrize('frame', ['frame24', 'frame32'])
def test_big_frame_unwinds_to_main(proffs, target, tmp_path, frame):
    """main -> frameNN (24 or 32 KiB of locals) -> hot. frame24 writes
    its array, so the kernel's 8 KiB copy is full; frame32 leaves its
    pages untouched, and the kernel's copy stops at the first of them,
    a few bytes up. Either way at least 95% of hot's samples unwind to
    main, where perf on the same process at the same time (its default
    copy) reaches main in almost none; both see hot as the leaf of
    nearly every sample."""
    t = target('bigframe', 'cpu', frame[-2:])
    p, theirs = util.alongside_perf(
        lambda: read_cpu(proffs, t, 4, f'{frame}.pb.gz'), t.pid, 4,
        str(tmp_path), hz=HZ)
    samples = user_samples(p)
    in_hot = weight(samples, lambda f: f[:1] == ['hot'])
    assert in_hot >= 0.8 * p.total() and in_hot >= 50, \
        f'{in_hot} of {p.total()} samples in hot'
    to_main = weight(samples, lambda f: f[:3] == ['hot', frame, 'main'])
    assert to_main >= 0.95 * in_hot, \
        f'{to_main} of {in_hot} samples of hot reach main: ' + \
        str([f for _, _, f in samples][:5])
    # Nothing past main but libc's start.
    for _, _, f in samples:
        if 'main' in f:
            assert f[f.index('main') + 1:] in (
                ['__libc_start_call_main', '__libc_start_main', '_start'],
                ['__libc_start_call_main', '__libc_start_main_impl',
                 '_start']), f
    perf_hot = util.flat_shares(theirs).get('hot', 0)
    assert abs(p.share('hot') - perf_hot) <= 0.05, \
        f'hot: proffs {p.share("hot"):.3f}, perf {perf_hot:.3f}'
    assert len(theirs) >= 50, f'perf took {len(theirs)} samples'
    perf_main = weight(theirs, lambda f: 'main' in f)
    assert perf_main <= 0.05 * len(theirs), \
        f'perf reached main in {perf_main} of {len(theirs)}: ' \
        'the target no longer needs more than 8 KiB'


def test_returned_frames_are_not_taken(proffs, target):
    """main -> via_a -> deep_a -> hot, then main -> via_b -> deep_b ->
    hot, alternating every millisecond or so, with frames of equal
    sizes: by the time a sample is unwound, the return address of deep_a
    that its copy lacks may have been overwritten with deep_b's, into
    via_b. Every frame read from the live stack is checked to return into
    a call of the function below it: no sample may go deep_a -> via_b or
    deep_b -> via_a (without the check, half of them did), and those
    read while their path still stood reach main."""
    t = target('bigframe', 'alternate')
    p = read_cpu(proffs, t, 4, 'alternate.pb.gz')
    samples = user_samples(p)
    wrong = [f for _, _, f in samples
             if follows(f, 'deep_a', 'via_b') or
             follows(f, 'deep_b', 'via_a')]
    assert not wrong, wrong[:5]
    deep = weight(samples, lambda f: 'deep_a' in f or 'deep_b' in f)
    assert deep >= 0.8 * p.total() and deep >= 50, (deep, p.total())
    right = weight(samples, lambda f: follows(f, 'deep_a', 'via_a', 'main')
                   or follows(f, 'deep_b', 'via_b', 'main'))
    assert right >= 0.2 * deep, f'{right} of {deep} reached main'


def test_big_frame_heap_site_unwinds_to_main(proffs, target):
    """main -> site8000 (an 8000-byte local array) -> malloc: the heap
    agent's copy reaches main in at least 95% of the sampled
    allocations (a copy of 8 KiB, the agent's before, stopped at
    site8000 in all of them)."""
    t = target('bigframe', 'heap')
    data = proffs.read(t.pid, 'allocs?rate=65536&seconds=2.pb.gz')
    p = util.validate_pprof(util.save(data, 'bigframe-allocs.pb.gz'))
    i = p.index('alloc_objects/count')
    samples = [(s.values[i], s.labels, s.frames) for s in p.samples]
    at_site = weight(samples, lambda f: 'site8000' in f)
    assert at_site >= 0.9 * sum(v for v, _, _ in samples) and \
        len([1 for _, _, f in samples if 'site8000' in f]) >= 10, \
        [f for _, _, f in samples][:5]
    to_main = weight(samples, lambda f: follows(f, 'site8000', 'main'))
    assert to_main >= 0.95 * at_site, \
        f'{to_main} of {at_site} reach main: ' + \
        str([f for _, _, f in samples][:5])
