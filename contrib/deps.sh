# shellcheck shell=bash
# contrib/deps.sh - sourced by run.sh and test.sh: installs the Debian
# packages proffs needs and builds it. Idempotent.

PROFFS_BUILD_PKGS="meson ninja-build pkg-config gcc libc6-dev
	libfuse3-dev fuse3 libunwind-dev libprotobuf-c-dev protobuf-c-compiler
	zlib1g-dev libelf-dev libdw-dev binutils elfutils golang-go linux-perf"
PROFFS_TEST_PKGS="python3 python3-pytest systemd man-db util-linux"

# install_deps PACKAGES...: apt-get only what is missing.
install_deps()
{
	local missing=()

	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "proffs: need root to install: ${missing[*]}" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null
}

# build_proffs DIR [MESON OPTIONS...]
build_proffs()
{
	local dir=$1

	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	meson compile -C "$dir" >/dev/null
}
