#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A heap trace on a disk that fills up (a 256 KiB tmpfs, nearly full):
# the agent says it cannot write, kiln heap reads what the trace holds and
# says why it ends early -- the disk, not a killed process -- and fails
# (exit 1) naming the output it could not write.  The program itself is
# unharmed.
. "$(dirname "$0")/lib.sh"
need_agent
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs needs root"
mkdir -p "$T/small"
mount -t tmpfs -o size=256k tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs here"
trap 'umount "$T/small" 2>/dev/null; rm -rf "$T"' EXIT
dd if=/dev/zero of="$T/small/fill" bs=1k count=250 2>/dev/null

expect_status 1 "$KILN" heap -o "$T/small/k" -- "$WL/heapmany"
has "$T/out" "^heapmany: done"
has "$T/err" "cannot write the heap trace '.*/small/k\.trace\.zst': No space left on device"
has "$T/err" "^warning: the trace was cut after byte [0-9]+ \(its file system has [0-9]+ KiB free: the disk filled up\): read up to there"
has "$T/err" "^kiln: cannot write '.*/small/k\.heap\.pb\.gz': No space left on device"
# What it holds reads, elsewhere.
cp "$T/small/k.trace.zst" "$T/cut.zst"
expect_status 0 "$KILN" top "$T/cut.zst"
has "$T/err" "cut after byte"
echo ok
