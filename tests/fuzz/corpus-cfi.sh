#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# corpus-cfi.sh - (re)make tests/fuzz/corpus-cfi, the seeds of fuzz-cfi:
# small ELF files whose CFI sampler/unwind/cfi.c reads - .eh_frame through
# .eh_frame_hdr (clang, gcc), .debug_frame only for the program's own code
# from gcc (CIE version 1) and clang (CIE version 4), the separate debug
# file holding a .debug_frame - and bare .debug_frame sections, each after
# the 8-byte address of its first function (fuzz-cfi's other input kind).
# Each under fuzz-cfi's 64 KiB max_len. Needs gcc, clang, objcopy, nm and
# perl. The seeds are committed: rerun this only to change them.
set -euo pipefail

out=$(cd "$(dirname "$0")" && pwd)/corpus-cfi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/seed.c" <<'C'
static volatile int sink;

__attribute__((noinline)) int leaf(int x)
{
	volatile int buf[4];

	for (int i = 0; i < x; i++)
		buf[i & 3] = i;
	return buf[x & 3];
}

__attribute__((noinline)) int middle(int x)
{
	int r = leaf(x);

	sink = r;
	return r + x;
}

int main(int argc, char **argv)
{
	(void)argv;
	return middle(argc);
}
C

# section NAME ELF: the .debug_frame of ELF after the address of leaf().
section()
{
	objcopy --dump-section .debug_frame="$work/$1.bin" "$2"
	perl -e 'print pack("Q<", hex(shift))' \
		"$(nm "$2" | awk '$3 == "leaf" { print $1 }')" >"$out/$1"
	cat "$work/$1.bin" >>"$out/$1"
}

rm -rf "$out"
mkdir -p "$out"
cd "$work"
noeh=(-fno-asynchronous-unwind-tables -fno-unwind-tables)
clang -g -O1 -fno-ident seed.c -o "$out/eh-frame-clang"
gcc -O2 -fno-ident -fomit-frame-pointer seed.c -o "$out/eh-frame-gcc"
gcc -g -O2 -fno-ident "${noeh[@]}" seed.c -o "$out/debug-frame-gcc"
clang -g -O1 -fno-ident "${noeh[@]}" seed.c -o "$out/debug-frame-clang"
objcopy --only-keep-debug "$out/debug-frame-gcc" \
	"$out/debug-frame-gcc.debug"
section section-gcc "$out/debug-frame-gcc"
section section-clang "$out/debug-frame-clang"
for f in "$out"/*; do
	size=$(stat -c %s "$f")
	if [ "$size" -gt 65536 ]; then
		echo "corpus-cfi.sh: $f is $size bytes, over max_len" >&2
		exit 1
	fi
done
chmod a-x "$out"/*
ls -l "$out"
