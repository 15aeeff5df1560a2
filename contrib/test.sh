#!/bin/bash
# contrib/test.sh - on a fresh Debian 12 machine, as root: install what the
# tests need, build, run every test (C unit tests, then the integration
# tests on real mounts, checked by go tool pprof and perf), and end with
# exactly one line: "N passed, N failed". Exit status 0 only if nothing
# failed and something ran.
#
# With CI=true a skipped test counts as failed: CI must prove everything.
# PROFFS_BUILD_DIR picks the build directory (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

build=${PROFFS_BUILD_DIR:-$PWD/build}
out=$build/test-results

summary_fail()
{
	echo "$1" >&2
	echo "0 passed, 1 failed"
	exit 1
}

# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS $PROFFS_TEST_PKGS ||
	summary_fail "proffs: missing packages"
build_proffs "$build" || summary_fail "proffs: build failed"

rm -rf "$out"
mkdir -p "$out"

echo "== unit tests"
rm -f "$build/meson-logs/testlog.json"
meson test -C "$build" --suite unit --print-errorlogs || true
cp "$build/meson-logs/testlog.json" "$out/unit.json" 2>/dev/null || true

echo "== integration tests"
PROFFS_BUILD_DIR=$build PROFFS_TEST_OUT=$out/integration \
	/usr/bin/python3 -m pytest -v -p no:cacheprovider -rfEs \
	tests/integration --junitxml="$out/integration.xml" || true

echo "== summary"
exec /usr/bin/python3 - "$out" <<'PY'
import json
import os
import sys
import xml.etree.ElementTree as ET

out = sys.argv[1]
ci = os.environ.get('CI') == 'true'
passed, failed, skipped = [], [], []

try:        # meson's testlog.json: one JSON object per test
    with open(os.path.join(out, 'unit.json')) as f:
        for line in f:
            r = json.loads(line)
            name = 'unit: ' + r['name']
            if r['result'] in ('OK', 'EXPECTEDFAIL'):
                passed.append(name)
            elif r['result'] == 'SKIP':
                skipped.append(name)
            else:
                failed.append(f"{name} ({r['result']})")
except (OSError, ValueError, KeyError) as e:
    failed.append(f'unit tests did not report: {e}')

try:        # one <testcase> per test, whatever failed in it
    root = ET.parse(os.path.join(out, 'integration.xml')).getroot()
    for tc in root.iter('testcase'):
        name = f"{tc.get('classname')}::{tc.get('name')}"
        tags = {c.tag for c in tc}
        if tags & {'failure', 'error'}:
            failed.append(name)
        elif 'skipped' in tags:
            skipped.append(name)
        else:
            passed.append(name)
except (OSError, ET.ParseError) as e:
    failed.append(f'integration tests did not report: {e}')

for name in skipped:
    print(f'SKIPPED{" (counts as failed: CI=true)" if ci else ""}: {name}')
for name in failed:
    print(f'FAILED: {name}')
if ci:
    failed += skipped
if not passed and not failed:
    failed.append('no test ran')
    print('FAILED: no test ran')
print(f'{len(passed)} passed, {len(failed)} failed')
sys.exit(1 if failed else 0)
PY
