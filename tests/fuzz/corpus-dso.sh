#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# corpus-dso.sh - (re)make tests/fuzz/corpus-dso, the seeds of fuzz-dso:
# small ELF files covering what sampler/unwind/dso.c reads - a relocatable object,
# a PIE with .symtab, .dynsym, DWARF (inlined frames), .eh_frame, one with
# .debug_frame only, DWARF 4, a stripped one with .gnu_debuglink and a
# build id, its separate debug file, linked by LLD, compressed DWARF,
# mangled names, and truncated copies. Each under
# fuzz-dso's 64 KiB max_len. Needs clang, strip and objcopy (binutils).
# The seeds are committed: rerun this only to change them.
set -euo pipefail

out=$(cd "$(dirname "$0")" && pwd)/corpus-dso
cc=${CC_FUZZ:-clang}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/seed.c" <<'C'
static int twice(int x)
{
	return 2 * x;
}

__attribute__((noinline)) int leaf(int x)
{
	return twice(x) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return leaf(argc);
}
C

rm -rf "$out"
mkdir -p "$out"
cd "$work"
flags=(-O1 -fno-ident -Wl,--build-id=sha1)
"$cc" -g -O1 -c seed.c -o "$out/object.o"
"$cc" -g "${flags[@]}" seed.c -o "$out/pie-dwarf5"
"$cc" -gdwarf-4 "${flags[@]}" seed.c -o "$out/pie-dwarf4"
"$cc" -g -fno-asynchronous-unwind-tables -fno-unwind-tables \
	"${flags[@]}" seed.c -o "$out/debug-frame-only"
objcopy --only-keep-debug "$out/pie-dwarf5" "$out/separate.debug"
strip --strip-all -o "$out/stripped-debuglink" "$out/pie-dwarf5"
objcopy --add-gnu-debuglink="$out/separate.debug" \
	"$out/stripped-debuglink"
# issue 17: LLD's layout (text in the headers' page), compressed DWARF,
# and names to demangle (C++, Rust legacy and v0)
"$cc" -g "${flags[@]}" -fuse-ld=lld seed.c -o "$out/pie-lld"
"$cc" -g -gz=zlib "${flags[@]}" seed.c -o "$out/pie-zlib"
"$cc" -g "${flags[@]}" -fuse-ld=lld seed.c -o "$out/pie-mangled" \
	-Wl,--defsym=_ZN6shapes8geometry9leaf_work17hfe9795345b84324fE=leaf \
	-Wl,--defsym=_RNvNtCshMl02qSqLVO_6shapes8geometry4main=main \
	-Wl,--defsym=_ZNSt6vectorIiSaIiEE9push_backERKi=leaf
head -c 64 "$out/pie-dwarf5" >"$out/truncated-ehdr"
head -c 4096 "$out/pie-dwarf5" >"$out/truncated-4k"
for f in "$out"/*; do
	size=$(stat -c %s "$f")
	if [ "$size" -gt 65536 ]; then
		echo "corpus-dso.sh: $f is $size bytes, over max_len" >&2
		exit 1
	fi
done
ls -l "$out"
