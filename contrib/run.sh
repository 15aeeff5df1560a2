#!/bin/bash
# contrib/run.sh [MOUNTPOINT] - on a fresh Debian 12 machine, as root:
# install what proffs needs, build it, mount it on MOUNTPOINT (default
# /prof) for every user, profile a small bundled demo program through the
# mount for 5 s and show its top functions. Run it again at will: a
# previous mount is replaced.
#
# PROFFS_BUILD_DIR picks the build directory (default: build),
# PROFFS_DEMO_OUT where the profile goes (default: /tmp/proffs-demo).
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

mnt=${1:-/prof}
build=${PROFFS_BUILD_DIR:-$PWD/build}
out=${PROFFS_DEMO_OUT:-/tmp/proffs-demo}

# One line per step, as it starts: the slow ones (packages, a first
# build: about 2 minutes) say so.
n=0
step() { n=$((n + 1)); echo "run.sh [$n/6] $*"; }

step "packages: installing what is missing (apt-get; nothing if all there)"
# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS
step "building proffs in $build (a first build takes about 2 minutes)"
build_proffs "$build"

step "mounting proffs on $mnt for every user (-o allow_other)"
# A mount left by an earlier run, dead or alive, is replaced.
if findmnt --mountpoint "$mnt" >/dev/null 2>&1; then
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
fi
mkdir -p "$mnt" "$out"
"$build/fs/proffs" -o allow_other "$mnt"
for _ in $(seq 300); do
	mountpoint -q "$mnt" && break
	sleep 0.1
done
mountpoint -q "$mnt" || { echo "proffs: $mnt was not mounted" >&2; exit 1; }
sed -n 's/^# log: /         the daemon logs to /p' "$mnt/status"

step "starting the demo program (tests/targets/demo)"

ready=$out/demo.out
rm -f "$ready"
"$build/tests/targets/demo" >"$ready" &
demo=$!
trap 'kill $demo 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	grep -q ready "$ready" 2>/dev/null && break
	sleep 0.05
done

profile=$out/cpu_5s.pb.gz
step "profiling the demo for 5 s through the mount"
echo "proffs mounted on $mnt; profiling the demo (pid $demo) for 5 s:"
echo "  cat $mnt/$demo/cpu_5s.pb.gz > $profile"
cat "$mnt/$demo/cpu_5s.pb.gz" >"$profile"
[ -s "$profile" ] || { echo "proffs: empty profile" >&2; exit 1; }
echo

step "its top functions (go tool pprof -top)"
# go tool pprof wants a writable HOME and build cache.
export HOME=${HOME:-$out} GOCACHE=${GOCACHE:-$out/gocache}
go tool pprof -top "$profile" 2>/dev/null | sed -n '1,12p'

cat <<MSG

Wrote:   $profile
Explore: go tool pprof -http=:8080 $profile
         ls $mnt; go tool pprof -top $mnt/<pid>/cpu_10s.pb.gz
Refused: cat $mnt/<pid>/errors.txt, $mnt/errors.txt say why
Status:  cat $mnt/status (sessions in flight, where the log goes)
Unmount: fusermount3 -u $mnt
MSG
