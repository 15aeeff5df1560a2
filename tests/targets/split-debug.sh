#!/bin/sh
# split-debug.sh IN STRIPPED DEBUG: what a distribution does to a binary:
# debug info moved to a separate file, found later by build-id.
set -e
objcopy --only-keep-debug "$1" "$3"
strip --strip-all -o "$2" "$1"
