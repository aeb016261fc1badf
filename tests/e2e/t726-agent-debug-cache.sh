#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The debug file cache (docs/symbols.md) between kiln and the agent: the
# agent never writes it; kiln record writes libc's decompressed debug file
# there and gives libc's file:line; the agent reads it and gives the same
# file:line for libc's frames (before: the symbol table's name alone,
# while kiln record had the line).  Skipped without libc6-dbg's compressed debug
# file for this libc.
. "$(dirname "$0")/lib.sh"
need_agent
need_record
libc=$(awk '$NF ~ /\/libc\.so\.6$/ { print $NF; exit }' /proc/self/maps)
id=$(LC_ALL=C readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$id" ] || skip "no build ID for libc ($libc)"
entry=${id:0:2}/${id:2}.debug
LC_ALL=C readelf -SW "/usr/lib/debug/.build-id/$entry" 2>/dev/null |
    grep -q ' \.debug_info .* C ' ||
    skip "no compressed separate debug file for libc (Debian: apt install libc6-dbg)"

agent() {	# output, then environment
    local out=$1; shift
    env "$@" LD_PRELOAD="$KILN_LIB" CPUPROFILE="$out" CPUPROFILE_FREQUENCY=250 \
        "$WL/syswrite" 1.5 > /dev/null || fail "syswrite failed under the agent"
}

cache=$T/cache
mkdir "$cache"
# An empty cache: the agent finds no DWARF for libc and writes nothing.
agent "$T/ag0.prof" KILN_CACHE_DIR="$cache"
"$KILN" top --lines -n 0 "$T/ag0.prof" > "$T/ag0.lines"
has "$T/ag0.lines" ' write( \?:0)?$'
hasnt "$T/ag0.lines" ' write .*:[1-9][0-9]*$'
[ -z "$(ls -A "$cache")" ] || fail "the agent wrote into the cache: $(find "$cache")"

# kiln record fills it; its own profile has libc's lines.
KILN_CACHE_DIR=$cache expect_status 0 "$KILN" record -q -F 499 -o "$T/rec.pb.gz" -- "$WL/syswrite" 1.5
[ -s "$cache/$entry" ] || fail "kiln record did not write $cache/$entry"
LC_ALL=C readelf -SW "$cache/$entry" 2>/dev/null | grep -q ' \.debug_info ' ||
    fail "$cache/$entry has no .debug_info"
! LC_ALL=C readelf -SW "$cache/$entry" 2>/dev/null | grep -Eq ' \.debug_[a-z_]+ .* C ' ||
    fail "$cache/$entry still has compressed sections"
"$KILN" top --lines -n 0 "$T/rec.pb.gz" > "$T/rec.lines"
has "$T/rec.lines" ' write .*/write\.c:[0-9]+$'

# The agent does not write it when it is there either, and reads it:
# libc's write has its file:line, as in kiln record's profile.
find "$cache" | sort > "$T/before"
agent "$T/ag1.prof" KILN_CACHE_DIR="$cache"
find "$cache" | sort | diff -u "$T/before" - >&2 || fail "the agent wrote into the cache"
"$KILN" top --lines -n 0 "$T/ag1.prof" > "$T/ag1.lines"
has "$T/ag1.lines" ' write .*/write\.c:[0-9]+$'
hasnt "$T/ag1.lines" '__libc_write'

# Light while the program runs, and so at its exit: the collector reads
# libc's lines from the copy on a thread of its own and ends that libdw
# session there (docs/agent.md).  Once it has, the copy's mapping holds
# only what the symbol table needed (a session kept open: about 6.6 of
# its 8 MB touched by libdw's walk of the compile units), and the
# process's anonymous memory is within 1 MB of a run with an empty cache
# (libdw's tables kept, or left as holes in the collector's malloc arena:
# 2.4-3.2 MB more), memory the kernel would free at the exit.
mem_after_fill() {	# cache folder, log line to wait for; prints "ANON COPY" (kB)
    local log=$T/mem.log pid anon copy
    KILN_CACHE_DIR=$1 KILN_LOG=debug LD_PRELOAD="$KILN_LIB" CPUPROFILE="$T/mem.prof" \
        "$WL/syswrite" 4 > /dev/null 2> "$log" &
    pid=$!
    wait_for "'$2' from the agent" grep -q "$2" "$log"
    anon=$(awk '/^Anonymous:/ { print $2 }' "/proc/$pid/smaps_rollup")
    copy=$(awk -v f="$cache/$entry" '/^[0-9a-f]+-/ { name = $6 }
        /^Rss:/ && name == f { s += $2 } END { print s + 0 }' "/proc/$pid/smaps")
    wait "$pid" || fail "syswrite failed under the agent: $(cat "$log")"
    [ -n "$anon" ] || fail "no Anonymous line in /proc/$pid/smaps_rollup"
    echo "$anon $copy"
}
read -r anon_filled copy_rss <<< "$(mem_after_fill "$cache" 'addresses given lines')"
mkdir "$T/empty"
read -r anon_empty _ <<< "$(mem_after_fill "$T/empty" 'no address waits for lines')"
echo "anonymous: $anon_filled kB after reading libc's lines, $anon_empty kB without the cache; copy mapped: $copy_rss kB" >&2
[ "$copy_rss" -le 3072 ] ||
    fail "$copy_rss kB of libc's copy still resident once its lines were read (a libdw session kept?)"
[ "$anon_filled" -le $((anon_empty + 1024)) ] ||
    fail "anonymous memory $anon_filled kB once libc's lines were read, $anon_empty kB without the cache: libdw's memory not given back"
echo ok
