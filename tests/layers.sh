#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# layers.sh - the layering the design draws (SPEC §7, issue 30), checked on
# the sources: data flows fs -> sampler -> model -> render, and each front
# end keeps its protocol to itself. Prints each break and exits 1.
#
#   FUSE headers:    included in fs/fuse/ only
#   HTTP parsing:    http_parse.h and http_i.h included in fs/http/ only
#   fs/core/:        includes no front end (fs/fuse, fs/http, fs/top)
#   front ends:      only main() (fs/fuse/main.c) reaches across them
#   sampler/:        includes nothing of fs/ or render/
#   render/:         includes of sampler/ only the model and the small
#                    utilities (log, clock, grow); no perf header, no fs/
#   size:            no .c file over 1,000 lines
#   cycles:          no module includes a module above it: the includes
#                    between modules (x.c, x.h and x_i.h are module x)
#                    form no cycle
#
# Usage: tests/layers.sh [SOURCE_ROOT]
set -u
cd "${1:-$(dirname "$0")/..}" || exit 2
bad=0

# break RULE GREP-OUTPUT: print the offending lines under the rule
report()
{
	if [ -n "$2" ]; then
		printf 'layers: %s:\n%s\n' "$1" "$2"
		bad=1
	fi
}

src()
{
	find "$@" -name '*.[ch]' 2>/dev/null
}

report "a FUSE header outside fs/fuse/" \
	"$(src fs sampler render | grep -v '^fs/fuse/' |
	   xargs grep -n '#include <fuse' /dev/null)"
report "HTTP parsing outside fs/http/" \
	"$(src fs sampler render | grep -v '^fs/http/' |
	   xargs grep -nE '#include "fs/http/(http_parse|http_i)\.h"' /dev/null)"
report "the session core includes a front end" \
	"$(src fs/core | xargs grep -nE '#include "fs/(fuse|http|top)/' /dev/null)"
report "a front end reaches into another (only main() may)" \
	"$(src fs/fuse fs/http fs/top | grep -v '^fs/fuse/main\.c$' |
	   xargs grep -nE '#include "fs/(fuse|http|top)/' /dev/null |
	   awk -F: '{ split($1, a, "/"); split($3, b, "/");
		      if (a[2] != b[2]) print }')"
report "sampler/ includes fs/ or render/" \
	"$(src sampler | xargs grep -nE '#include "(fs|render)/' /dev/null)"
report "render/ includes more of sampler/ than the model" \
	"$(src render | xargs grep -nE '#include "(fs/|sampler/)' /dev/null |
	   grep -vE '"sampler/(model/[a-z_]+|log|clock|grow)\.h"')"
report "render/ includes a perf header" \
	"$(src render | xargs grep -nE '#include <linux/perf_event\.h>|"sampler/perf/' /dev/null)"
report "a .c file over 1,000 lines" \
	"$(src fs sampler render | grep '\.c$' | xargs wc -l |
	   awk '$2 != "total" && $1 > 1000')"

report "modules that include each other (a cycle)" \
	"$(/usr/bin/python3 - <<'PY'
import os, re
edges = {}


def module(path):
    m = os.path.splitext(path)[0]
    return m[:-2] if m.endswith('_i') else m


for top in ('fs', 'sampler', 'render'):
    for d, _, names in os.walk(top):
        for n in names:
            if not n.endswith(('.c', '.h')):
                continue
            p = os.path.join(d, n)
            with open(p) as f:
                incs = re.findall(r'^#include "([^"]+)"', f.read(), re.M)
            for inc in incs:
                if os.path.exists(inc) and module(inc) != module(p):
                    edges.setdefault(module(p), set()).add(module(inc))
# Tarjan's strongly connected components: each of more than one
# module is a cycle
index, low, stack, on, n = {}, {}, [], set(), [0]


def visit(v):
    index[v] = low[v] = n[0]
    n[0] += 1
    stack.append(v)
    on.add(v)
    for w in edges.get(v, ()):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while not comp or comp[-1] != v:
            comp.append(stack.pop())
            on.discard(comp[-1])
        if len(comp) > 1:
            print(' <-> '.join(sorted(comp)))


for v in sorted(edges):
    if v not in index:
        visit(v)
PY
)"

[ $bad = 0 ] && echo "layers: every rule holds"
exit $bad
