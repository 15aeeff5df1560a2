#!/bin/bash
# contrib/fresh-root.sh COMMAND... - run COMMAND (from the top of a copy of
# this tree) as root inside a fresh minimal Debian 12 root, as a newcomer's
# machine has it: debootstrap --variant=minbase bookworm, nothing else.
# Whatever COMMAND needs it must install itself, so a missing install step
# in contrib/run.sh or contrib/test.sh fails here (issue 19: run.sh once
# failed on such a root because only the tests installed g++).
#
# The root is made under $PROFFS_FRESH_DIR (default build/fresh-root), in
# a mount namespace of its own: the root is bound onto itself (a mount
# point, as a container's is), /proc, /dev and /sys are bound in, /etc/hosts
# is Debian's stock one. The bootstrapped base is kept as a tarball beside
# it and reused. Everything mounted and started inside is gone when the
# command ends. Exit status: COMMAND's.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${PROFFS_FRESH_DIR:-$PWD/build/fresh-root}
mirror=${PROFFS_MIRROR:-http://deb.debian.org/debian}
root=$dir/root
base=$dir/base.tar

# Under CI, a root that cannot be made still ends with the summary line.
trap 'echo "fresh-root: setting up the root failed" >&2;
      [ "${CI:-}" != true ] || echo "0 passed, 1 failed"' ERR

if [ ! -f "$base" ]; then
	command -v debootstrap >/dev/null || {
		apt-get update -qq && apt-get install -y -qq debootstrap
	} >&2
	rm -rf "$dir" && mkdir -p "$dir"
	debootstrap --variant=minbase bookworm "$dir/base" "$mirror" >&2
	tar -C "$dir/base" -cf "$base" .
	rm -rf "$dir/base"
fi
rm -rf "$root" && mkdir -p "$root"
tar -C "$root" -xf "$base"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	>"$root/etc/hosts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's network as the root's, like resolv.conf: certificate
# authorities added locally (a network that inspects TLS has one) go in
# before ca-certificates is installed, whose postinst takes them in; npm
# uses its own bundled list unless told of the system's (the speedscope
# test's npm install hung without it).
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt \
		"$root/usr/local/share/ca-certificates/"
	echo 'cafile=/etc/ssl/certs/ca-certificates.crt' >"$root/etc/npmrc"
fi
# The tree as a fresh clone has it (committed files only), not the build.
mkdir -p "$root/src/proffs"
git ls-files -z | tar --null -T - -cf - | tar -C "$root/src/proffs" -xf -

trap - ERR
# shellcheck disable=SC2016 # expanded inside the namespace
exec unshare --mount --propagation private --fork /bin/bash -c '
	set -e
	root=$1; shift
	mount --bind "$root" "$root"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --rbind /sys "$root/sys"
	mount -t tmpfs tmpfs "$root/tmp"
	rc=0
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
		PROFFS_TEST_LOAD="${PROFFS_TEST_LOAD:-}" \
		/bin/bash -c "cd /src/proffs && $*" || rc=$?
	# what the command left running in the root (a daemon run.sh
	# mounted) holds the namespace: end it
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] &&
			kill -9 "${p#/proc/}" 2>/dev/null
	done
	exit $rc
' fresh-root "$root" "$@"
