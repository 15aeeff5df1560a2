#!/bin/bash
# contrib/stress.sh [LOADS] - on a Debian 12 machine, as root: install what
# the stress suite needs, build, and load the heap agent into LOADS
# (default 1000) fresh processes at random moments, across every
# allocation pattern of tests/stress (issue 16), and 35% of them into
# Debian's redis-server (default config), nginx, sqlite3, python3 and
# node under a real load (issue 25). Prints a table of
# verdicts per pattern; exit status 0 only if no load aborted, crashed,
# corrupted a block, hung or left a thread stopped, no program answered
# wrong, stalled or died, and at most 1% were refused. About 30 minutes
# for 1,000 loads on 2 cores.
#
# PROFFS_BUILD_DIR picks the build directory (default: build);
# STRESS_SEED the seed (default 1001); STRESS_JOBS loads at once (3:
# the distro loads spend most of their time waiting).
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

build=${PROFFS_BUILD_DIR:-$PWD/build}
# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS libgoogle-perftools-dev libjemalloc-dev \
	redis-server redis-tools nginx-light sqlite3 nodejs
build_proffs "$build"
exec /usr/bin/python3 tests/stress/stress.py --build "$build" \
	--loads "${1:-1000}" --jobs "${STRESS_JOBS:-3}" \
	--seed "${STRESS_SEED:-1001}"
