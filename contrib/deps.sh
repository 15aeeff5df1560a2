# shellcheck shell=bash
# contrib/deps.sh - sourced by run.sh and test.sh: the Debian 12 packages
# proffs needs, and how to build it. Every function is idempotent.

# To build and run the daemon and the demo. g++ too: the build compiles the
# C++ test targets (issue 19: run.sh stopped at "Unknown compiler c++" on a
# minimal Debian, where only the test packages had it). libbpf-dev and
# clang: the eBPF program that reads Python frames at each sample
# (sampler/runtime/pybpf.bpf.c), compiled by clang, loaded by libbpf.
# shellcheck disable=SC2034  # used by the scripts that source this file
PROFFS_BUILD_PKGS="meson ninja-build pkg-config gcc g++ libc6-dev binutils
	libfuse3-dev fuse3 libunwind-dev libprotobuf-c-dev protobuf-c-compiler
	zlib1g-dev libdeflate-dev libelf-dev libdw-dev libiberty-dev elfutils golang-go
	util-linux libbpf-dev clang"
# The integration tests and their external validators (go tool pprof is
# in golang-go; perf is the reference profiler; setpriv, findmnt and
# mount are in util-linux and mount; prometheus scrapes /metrics, curl is
# a client of another user or namespace, iproute2 makes the namespaces;
# tmux is the terminal proffs top is tested in; redis-server, nginx-light,
# sqlite3 and postgresql are the servers the stress suite loads into).
# The toolchains the tests build their programs with (docs/toolchains.md):
# clang, lld and mold, rustc, golang-go (above), nodejs, and javac of
# openjdk-17-jdk-headless (the JVM of test_java.py).
# shellcheck disable=SC2034
PROFFS_TEST_PKGS="python3 python3-pytest linux-perf mount systemd man-db
	prometheus curl iproute2
	chromium chromium-driver python3-selenium libxml2-utils
	clang libclang-rt-14-dev lld mold rustc nodejs npm strace valgrind
	libgoogle-perftools-dev libjemalloc-dev bpftrace tmux
	redis-server redis-tools nginx-light sqlite3 postgresql
	openjdk-17-jdk-headless"

# Packages a command on PATH stands for, as package:command. Node.js from
# NodeSource brings its own npm, and its nodejs package conflicts with
# Debian's npm: asking apt for npm there fails the whole install.
PROFFS_PKG_CMDS="npm:npm"

# pkg_present PACKAGE: installed, or its command is there.
pkg_present()
{
	local pc

	dpkg-query -W -f='${Status}' "$1" 2>/dev/null |
		grep -q 'install ok installed' && return 0
	for pc in $PROFFS_PKG_CMDS; do
		[ "${pc%%:*}" = "$1" ] && command -v "${pc#*:}" >/dev/null &&
			return 0
	done
	return 1
}

# install_deps PACKAGE...: apt-get update and install what is missing;
# nothing (and no network) when everything is installed.
install_deps()
{
	local missing=() p

	for p in "$@"; do
		pkg_present "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "proffs: run as root to install: ${missing[*]}" >&2
		return 1
	fi
	echo "proffs: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null
}

# build_proffs DIR [MESON OPTIONS...]: meson setup (or --reconfigure) and
# compile; quiet
# unless it fails, then the tail of the log.
build_proffs()
{
	local dir=$1 log rc=0

	shift	# the rest: meson options, e.g. -Db_sanitize=address
	log=$(mktemp)
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >"$log" 2>&1 || rc=$?
	else
		meson setup "$dir" "$@" >"$log" 2>&1 || rc=$?
	fi
	[ $rc -eq 0 ] && { meson compile -C "$dir" >>"$log" 2>&1 || rc=$?; }
	if [ $rc -ne 0 ]; then
		tail -n 40 "$log" >&2
		echo "proffs: build failed in $dir" >&2
	fi
	rm -f "$log"
	return $rc
}
