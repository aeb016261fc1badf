#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Outputs never replace what is not a regular file, and never lose one:
# a character device is written in place (/dev/null stays a device,
# /dev/full reports "No space left on device", exit 1); a FIFO is written
# in place when someone reads it and refused, without waiting, when nobody
# does; a block device and a folder are refused; an existing output is
# kept as FILE.old, as perf keeps perf.data.old; a symbolic link to the
# output keeps pointing at the new content.
. "$(dirname "$0")/lib.sh"

IN=$KILN_SRC/tests/fixtures/demo/demo.perf.gz
is_chr() { [ -c "$1" ] || fail "$1 is no longer a character device"; }

# Character devices, in place.  (As root, a rename over /dev/null would
# succeed and replace the device: the reason for this test.)
expect_status 0 "$KILN" convert "$IN" -o /dev/null --to collapsed
is_chr /dev/null
expect_status 1 "$KILN" flame "$IN" -o /dev/full
is_chr /dev/full
has "$T/err" "cannot write '/dev/full': No space left on device"
# /dev/stdout is a link to the terminal or pipe kiln writes to.
"$KILN" convert "$IN" -o /dev/stdout --to collapsed > "$T/stdout.txt" ||
    fail "writing to /dev/stdout failed"
has "$T/stdout.txt" "^[^ ]+;[^ ]+ [0-9]+$"

# A FIFO with a reader gets the data; one without a reader is refused at
# once (no hang waiting for a reader).
mkfifo "$T/fifo"
# (Its stderr away from ctest's pipe: a reader left blocked in open() by
# a failure must not keep ctest waiting for the test's end.)
cat "$T/fifo" > "$T/from-fifo.txt" 2>/dev/null &
reader=$!
# The reader is there once cat sleeps in openat() (257) for a writer: a
# non-blocking open for writing succeeds from then on.  On a loaded
# machine cat may not have got that far when kiln opens the FIFO.
in_open() { [ "$(cut -d' ' -f1 /proc/$reader/syscall 2>/dev/null)" = 257 ] &&
    grep -q '^State:.*sleeping' /proc/$reader/status; }
wait_for "the FIFO's reader" in_open
expect_status 0 "$KILN" convert "$IN" -o "$T/fifo" --to collapsed
wait $reader
[ -p "$T/fifo" ] || fail "the FIFO was replaced"
has "$T/from-fifo.txt" "^[^ ]+;[^ ]+ [0-9]+$"
expect_status 1 timeout 60 "$KILN" convert "$IN" -o "$T/fifo" --to collapsed
has "$T/err" "nobody reads this FIFO"

# Folders and block devices are refused, with exit 2.
mkdir "$T/dir"
expect_status 2 "$KILN" convert "$IN" -o "$T/dir" --to collapsed
has "$T/err" "it is a folder"
blk=$(find /dev -maxdepth 1 -type b 2>/dev/null | head -1)
if [ -n "$blk" ]; then
    before=$(stat -c %t:%T "$blk")
    expect_status 2 "$KILN" convert "$IN" -o "$blk" --to collapsed
    has "$T/err" "not a regular file"
    [ -b "$blk" ] && [ "$(stat -c %t:%T "$blk")" = "$before" ] || fail "$blk changed"
fi

# An existing output is kept as FILE.old; nothing else is left behind.
echo "previous output" > "$T/out.txt"
expect_status 0 "$KILN" convert "$IN" -o "$T/out.txt" --to collapsed
has "$T/out.txt.old" "^previous output$"
has "$T/out.txt" "^[^ ]+;[^ ]+ [0-9]+$"
ls "$T" | grep -q '\.tmp\.' && fail "a temporary file was left: $(ls "$T")"

# A link to the output: the target gets the new content, the link stays.
echo "old target" > "$T/target.txt"
ln -s target.txt "$T/link.txt"
expect_status 0 "$KILN" convert "$IN" -o "$T/link.txt" --to collapsed
[ -L "$T/link.txt" ] || fail "the link was replaced by a file"
has "$T/target.txt" "^[^ ]+;[^ ]+ [0-9]+$"
has "$T/target.txt.old" "^old target$"

# A folder that does not exist: a clear error, exit 1, nothing created.
expect_status 1 "$KILN" convert "$IN" -o "$T/no/such/out.txt" --to collapsed
has "$T/err" "cannot write '$T/no/such/out.txt': No such file or directory"
echo ok
