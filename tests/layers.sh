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

[ $bad = 0 ] && echo "layers: every rule holds"
exit $bad
