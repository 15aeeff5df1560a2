#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - build every tests/fuzz/fuzz-*.c with libFuzzer, ASan and UBSan,
# and run each for $FUZZ_SECONDS (20) seconds on a copy of its seed corpus
# (tests/fuzz/corpus-NAME, so new inputs never land in the tree), with
# tests/fuzz/fuzz-NAME.dict when there is one. Exits non-zero when a
# harness does not build or any run crashes; the crashing input and the
# log are kept under the work directory, which is printed.
#
# Needs clang with the libFuzzer runtime (Debian: clang libclang-rt-14-dev)
# and protoc-c. Usage: tests/fuzz/run.sh [NAME...]   (default: all)
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${FUZZ_SECONDS:-20}
cc=${CC_FUZZ:-clang}
work=$(mktemp -d "${TMPDIR:-/tmp}/proffs-fuzz.XXXXXX")
failed=()

if ! command -v "$cc" >/dev/null; then
	echo "run.sh: $cc not found (apt-get install clang libclang-rt-14-dev)" >&2
	exit 2
fi
mkdir -p "$work/gen/render"
if ! protoc-c --proto_path="$src/render" --c_out="$work/gen/render" \
		"$src/render/profile.proto"; then
	echo "run.sh: protoc-c failed" >&2
	exit 2
fi

# Per harness: the module sources, include directories and libraries it
# links with, and the largest input worth trying. A new harness must be
# added here, or the run fails rather than silently skip it.
# One include root, as in meson.build: includes name their folder.
sinc="-I."

harness_args()
{
	case "$1" in
	name)
		srcs="fs/core/name.c fs/core/kinds.c"
		incs="$sinc -DKINDS_NO_OPS"
		libs=""
		max_len=300 ;;
	http)
		# target.c's resolving half reads /proc: linked, never called
		srcs="fs/http/http_parse.c fs/core/name.c fs/core/kinds.c fs/core/target.c
		      fs/core/access.c sampler/proc.c"
		incs="$sinc -DKINDS_NO_OPS"
		libs=""
		max_len=2048 ;;
	pprof)
		srcs="render/pprof.c sampler/model/profile.c sampler/log.c"
		srcs+=" $work/gen/render/profile.pb-c.c"
		incs="$sinc -I$work/gen"
		libs="-lprotobuf-c -lz"
		max_len=65536 ;;
	dso)
		srcs="sampler/unwind/dso.c sampler/unwind/dso_dwarf.c
		      sampler/unwind/dso_inflate.c sampler/unwind/dso_debugcache.c
		      sampler/unwind/bootdir.c
		      sampler/unwind/dso_expire.c sampler/unwind/dso_mem.c
		      sampler/unwind/dso_rows.c
		      sampler/unwind/dso_sym.c sampler/unwind/demangle.c
		      sampler/unwind/cu_index.c sampler/unwind/gopclntab.c
		      sampler/log.c"
		incs="$sinc"
		libs="-ldw -lelf -liberty -lz"
		max_len=65536 ;;
	cfi)
		srcs="sampler/unwind/cfi.c sampler/unwind/dso.c
		      sampler/unwind/dso_dwarf.c sampler/unwind/dso_sym.c
		      sampler/unwind/dso_inflate.c sampler/unwind/dso_debugcache.c
		      sampler/unwind/bootdir.c
		      sampler/unwind/dso_expire.c sampler/unwind/dso_mem.c
		      sampler/unwind/dso_rows.c
		      sampler/unwind/demangle.c sampler/unwind/cu_index.c
		      sampler/unwind/gopclntab.c sampler/log.c"
		incs="$sinc"
		libs="-ldw -lelf -liberty -lz"
		max_len=65536 ;;
	heap-ring)
		srcs="sampler/heap/heap_ring.c sampler/heap/agent/ring.c sampler/log.c
		      sampler/proc.c"
		incs="$sinc"
		libs=""
		max_len=65536 ;;
	*)
		return 1 ;;
	esac
}

run_one()
{
	local name=$1 exe=$work/fuzz-$1 corpus=$work/corpus-$1
	local dict=$src/tests/fuzz/fuzz-$1.dict opts=()

	if ! harness_args "$name"; then
		echo "run.sh: fuzz-$name.c: not in harness_args()" >&2
		return 1
	fi
	echo "== fuzz-$name: build"
	# shellcheck disable=SC2086 # word splitting of the lists is wanted
	if ! (cd "$src" && "$cc" -g -O1 -fsanitize=fuzzer,address,undefined \
			-fno-sanitize-recover=undefined -std=gnu11 \
			-D_GNU_SOURCE $incs "tests/fuzz/fuzz-$name.c" $srcs \
			$libs -o "$exe"); then
		echo "run.sh: fuzz-$name: build failed" >&2
		return 1
	fi
	# Every harness has its seeds in the tree (corpus-dso, corpus-cfi:
	# made by corpus-*.sh): none may start from nothing unnoticed.
	if [ -z "$(ls -A "$src/tests/fuzz/corpus-$name" 2>/dev/null)" ]; then
		echo "run.sh: tests/fuzz/corpus-$name: no seeds" >&2
		return 1
	fi
	mkdir -p "$corpus"
	cp -r "$src/tests/fuzz/corpus-$name/." "$corpus/"
	[ -f "$dict" ] && opts+=("-dict=$dict")
	echo "== fuzz-$name: ${seconds} s on $(ls "$corpus" | wc -l) seeds"
	if ! (cd "$work" && "$exe" -max_total_time="$seconds" \
			-max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix="$work/crash-$name-" "${opts[@]}" \
			"$corpus" >"$work/fuzz-$name.log" 2>&1); then
		tail -n 40 "$work/fuzz-$name.log" >&2
		echo "run.sh: fuzz-$name: FAILED (log and input in $work)" >&2
		return 1
	fi
	grep -E '^#[0-9]+[[:space:]]+DONE' "$work/fuzz-$name.log" | tail -n 1
}

if [ $# -gt 0 ]; then
	names=("$@")
else
	names=()
	for f in "$src"/tests/fuzz/fuzz-*.c; do
		f=${f##*/fuzz-}
		names+=("${f%.c}")
	done
fi
for name in "${names[@]}"; do
	run_one "$name" || failed+=("$name")
done

if [ ${#failed[@]} -gt 0 ]; then
	echo "run.sh: failed: ${failed[*]} (see $work)" >&2
	exit 1
fi
echo "run.sh: all ${#names[@]} harnesses ran ${seconds} s without a crash"
rm -rf "$work"
