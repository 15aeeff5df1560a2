#!/bin/bash
# contrib/stress.sh [LOADS] - on a Debian 12 machine, as root: install what
# the stress suite needs, build, and load the heap agent into LOADS
# (default 1000) fresh processes at random moments, across every
# allocation pattern of tests/stress (issue 16). Prints a table of
# verdicts per pattern; exit status 0 only if no load aborted, crashed,
# corrupted a block, hung or left a thread stopped, and at most 1% were
# refused. About 20 minutes for 1,000 loads on 2 cores.
#
# PROFFS_BUILD_DIR picks the build directory (default: build);
# STRESS_SEED the seed (default 1001); STRESS_JOBS loads at once (2).
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

build=${PROFFS_BUILD_DIR:-$PWD/build}
# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS libgoogle-perftools-dev libjemalloc-dev
build_proffs "$build"
exec /usr/bin/python3 tests/stress/stress.py --build "$build" \
	--loads "${1:-1000}" --jobs "${STRESS_JOBS:-2}" \
	--seed "${STRESS_SEED:-1001}"
