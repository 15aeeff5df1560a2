#!/bin/bash
# contrib/run.sh [MOUNTPOINT] - on a fresh Debian machine, as root:
# install what proffs needs, build it, mount it (default /prof), profile a
# small bundled demo program through the mount and show its top functions.
set -euo pipefail
cd "$(dirname "$0")/.."
. contrib/deps.sh

mnt=${1:-/prof}
out=${PROFFS_DEMO_OUT:-/tmp/proffs-demo}

# shellcheck disable=SC2086
install_deps $PROFFS_BUILD_PKGS
build_proffs build

mkdir -p "$mnt" "$out"
if mountpoint -q "$mnt"; then
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
fi
build/fs/proffs -o allow_other "$mnt"
for _ in $(seq 100); do
	mountpoint -q "$mnt" && break
	sleep 0.1
done
mountpoint -q "$mnt" || { echo "proffs did not mount $mnt" >&2; exit 1; }

build/tests/targets/demo >/dev/null &
demo=$!
trap 'kill $demo 2>/dev/null' EXIT
sleep 0.2

echo "proffs mounted on $mnt; profiling the demo (pid $demo) for 5 s..."
cat "$mnt/$demo/cpu_5s.pb.gz" > "$out/cpu.pb.gz"
echo
HOME=${HOME:-/tmp} go tool pprof -top "$out/cpu.pb.gz" 2>/dev/null | head -14
cat <<MSG

Wrote $out/cpu.pb.gz (pprof: go tool pprof -http=:8080 $out/cpu.pb.gz)
Try:  ls $mnt/\$\$ ; go tool pprof -top $mnt/<pid>/cpu_10s.pb.gz
Unmount with:  fusermount3 -u $mnt
MSG
