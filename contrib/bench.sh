#!/bin/bash
# contrib/bench.sh - proffs against perf record --call-graph dwarf + perf
# script on the same targets, at 99 and 999 Hz, in one run, into
# tests/bench/results.md and results.png; a fresh daemon's cold read
# against perf, into cold-results.md; then what heap profiling costs a
# malloc-heavy program - unprofiled, the agent armed and disarmed,
# heaptrack -p, the uprobe fallback - into tests/bench/heap-results.md;
# an HTTP read against a mount read, into http-results.md; then what the
# off-CPU kinds cost a 100-thread program, into offcpu-results.md.
# Both tables are also put into docs/performance.md. About 35 minutes.
# Run it on a quiet machine: the figures are ratios within one run.
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS linux-perf python3 python3-matplotlib heaptrack
build_proffs build
/usr/bin/python3 tests/bench/bench.py --build build --out tests/bench --readme "$@"
/usr/bin/python3 tests/bench/cold.py --build build --out tests/bench --both --readme
/usr/bin/python3 tests/bench/http_read.py --build build --out tests/bench
/usr/bin/python3 tests/bench/heap.py --build build --out tests/bench --readme
exec /usr/bin/python3 tests/bench/offcpu.py --build build --out tests/bench --readme
