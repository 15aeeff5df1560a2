# SPDX-License-Identifier: GPL-2.0-or-later
"""goroutine.txt and goroutine.pb.gz of a Go program carry its
goroutines' pprof labels (runtime/pprof.Do), as Go's own goroutine
profile does (issue 26), read from outside with nothing stopped.

labels.go parks goroutines under known label sets (one nested, one of
27 labels: a map still growing, one with values Go must quote, one with
none) and burns CPU in main under role=main; on SIGUSR1 it writes
pprof.Lookup("goroutine").WriteTo(f, 1) and WriteTo(f, 0), which ours
must agree with. Built twice: with DWARF (the map's layout from it) and
with -ldflags='-s -w' (proffs' table for Go 1.19)."""

import collections
import os
import re
import subprocess

import pytest

import util
from util import save

SRC = os.path.join(util.TARGET_SRC, 'go', 'labels.go')
QUOTED = r'"(?:[^"\\]|\\.)*"'
PAIR = re.compile(f'({QUOTED}):({QUOTED})')
# labels proffs sets itself (threads_text.h): not pprof labels
OWN = {'thread', 'thread_name', 'state', 'syscall', 'goroutine',
       'wait_minutes', 'created_by', 'created_at', 'locked_to_thread'}
# what labels.go puts on its goroutines, as Go prints them
MANY = '{' + ', '.join(f'"k{i:02d}":"{i}"' for i in range(27)) + '}'
WANT = {
    '{"worker":"a"}': 2,
    '{"shard":"7", "worker":"b"}': 1,
    '{"stage":"inner", "worker":"c"}': 1,
    MANY: 1,
    r'{"quote":"say \"hi\"\tand\\ é\u00a0\x01", "z":""}': 1,
    '{"role":"main"}': 1,
}


@pytest.fixture(scope='module')
def builds(tmp_path_factory):
    d = tmp_path_factory.mktemp('golabels')
    out = {}
    for name, flags in (('labels', []), ('labels-s', ['-ldflags=-s -w'])):
        out[name] = str(d / name)
        r = subprocess.run(['go', 'build'] + flags + ['-o', out[name], SRC],
                           capture_output=True, text=True,
                           env=util.go_env(), cwd=str(d), timeout=300)
        assert r.returncode == 0, r.stderr
    return out


def without_own(line):
    """A "# labels: {...}" set less the labels proffs sets itself, in
    Go's text (None: none left, as Go prints no line then)."""
    pairs = [(k, v) for k, v in PAIR.findall(line)
             if k[1:-1] not in OWN]
    return '{' + ', '.join(f'{k}:{v}' for k, v in pairs) + '}' \
        if pairs else None


def label_counts(text, ours):
    """{label set text: goroutines} of a debug=1 text, ours or Go's."""
    out = collections.Counter()
    for block in text.split('\n\n'):
        lines = block.strip('\n').split('\n')
        # the first block begins with the header and comments
        while lines and not re.match(r'^\d+ @', lines[0]):
            lines.pop(0)
        if not lines:
            continue
        m = re.match(r'^(\d+) @', lines[0])
        for ln in lines[1:]:
            lm = re.match(r'^# labels: (\{.*\})(?: \((\d+) \w+\))?$', ln)
            if not lm:
                continue
            labels = without_own(lm[1]) if ours else lm[1]
            # Go's sets are its text as is: ours must be the same text
            if ours:
                assert labels is None or lm[1].startswith('{') and \
                    all(p in lm[1] for p in labels[1:-1].split(', ')), ln
            if labels:
                out[labels] += int(lm[2] or m[1])
    return out


def pb_counts(path):
    """{frozenset of pprof labels: count} of a goroutine pprof, ours or
    Go's, of the plain labels (the quoted set left out: -raw prints a
    label's values space-separated)."""
    out = collections.Counter()
    for s in util.raw(path).samples:
        kv = frozenset((k, v) for k, v in s.labels.items()
                       if k not in OWN)
        if kv and all(re.fullmatch(r'\w+', k + v) for k, v in kv):
            out[kv] += s.values[0]
    return out


@pytest.mark.parametrize('name', ['labels', 'labels-s'])
def test_goroutine_labels_like_go(proffs, builds, tmp_path, name):
    dump = str(tmp_path / 'go.txt')
    t = util.Target(name, dump, path=builds[name])
    try:
        text = proffs.read(t.pid, 'goroutine.txt').decode()
        pb = proffs.read(t.pid, 'goroutine.pb.gz')
        theirs = util.go_own_dump(t.pid, dump)
    finally:
        t.kill()
    print(text)
    print(theirs)
    ours_path = save(pb, f'golabels-{name}.pb.gz')
    with open(dump + '.pb.gz', 'rb') as f:
        go_path = save(f.read(), f'golabels-{name}-go.pb.gz')
    assert not re.search(r'labels of \d+ not read', text), text

    # the label sets Go's own debug=1 prints, the same text (each pair
    # quoted as Go quotes it, the pairs sorted as Go sorts them), on
    # as many goroutines; proffs' state among them
    mine, go = label_counts(text, True), label_counts(theirs, False)
    assert go == WANT, (go, theirs)
    assert mine == go, (text, theirs)
    assert re.search(r'^# labels: \{"state":"chan receive", '
                     r'"worker":"a"\} \(2 goroutines\)$', text, re.M), text
    # each labelled goroutine parked where labels.go parks it
    for block in text.split('\n\n'):
        if '"worker":' in block or '"k00":' in block:
            assert '\tmain.waitLabeled\t' in block, block

    # the pprof: the same labels on as many goroutines as Go's
    ours, gos = pb_counts(ours_path), pb_counts(go_path)
    assert gos == ours and len(gos) == 5, (ours, gos)
