#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# A program started as root that becomes nobody while it runs (privdrop:
# setgroups, setgid, setuid), its outputs in a root-only folder: the
# folder is closed to it by the end, yet every output is written whole
# under its name -- the CPU profile (CPU and wall modes; kiln interposes
# setuid() and kin and holds the file at PATH open before the drop; an
# earlier profile is copied to PATH.old then, itself left whole), and the
# heap trace (written in place through the descriptor held since its
# start).  No temporary is left.  The program's stdout and exit status
# are the same bare and under the agent in each mode.  (Before: the CPU
# profile was lost, left whole as PATH.tmp.* with "Permission denied".)
. "$(dirname "$0")/lib.sh"
need_agent
[ "$(id -u)" -eq 0 ] || skip "needs root to give privileges up"
getent passwd 65534 > /dev/null || skip "no user 65534 (nobody)"

chmod 755 "$T"
mkdir "$T/root"
chmod 700 "$T/root"
"$WL/privdrop" 0.3 > "$T/bare.out" || fail "privdrop failed bare"
has "$T/bare.out" "^running as uid 65534$"

# run NAME ENV...: privdrop under the agent with ENV; same stdout as bare.
run() {
    local name=$1
    shift
    env LD_PRELOAD="$(agent_lib "$@")" "$@" "$WL/privdrop" 0.3 > "$T/$name.out" 2> "$T/$name.err" ||
        { cat "$T/$name.err"; fail "privdrop failed under the agent ($name)"; }
    cmp -s "$T/bare.out" "$T/$name.out" || fail "stdout differs under the agent ($name)"
    grep -q 'Permission denied\|cannot' "$T/$name.err" && { cat "$T/$name.err"; fail "the agent failed ($name)"; }
    return 0
}
no_tmp() { ls "$T/root" | grep -q 'tmp' && { ls -l "$T/root"; fail "a temporary was left ($1)"; }; return 0; }

# CPU and wall modes, nothing at PATH before.
for mode in cpu wall; do
    run "$mode" KILN_CPU="$T/root/$mode.pb.gz" KILN_CPU_MODE=$mode
    "$KILN" top "$T/root/$mode.pb.gz" > "$T/$mode.top" || fail "the $mode profile does not read"
    has "$T/$mode.top" " before_drop_burn$"
    has "$T/$mode.top" " after_drop_burn$"
    [ ! -e "$T/root/$mode.pb.gz.old" ] || fail "a PATH.old appeared from nothing ($mode)"
    no_tmp "$mode"
done

# An earlier profile at PATH (a minute old: not an earlier image's): kept
# whole as PATH.old, the new one whole at PATH.
cp "$T/root/cpu.pb.gz" "$T/prev.pb.gz"
touch -d '1 minute ago' "$T/root/cpu.pb.gz"
run again KILN_CPU="$T/root/cpu.pb.gz"
cmp -s "$T/prev.pb.gz" "$T/root/cpu.pb.gz.old" || fail "PATH.old is not the earlier profile"
"$KILN" top "$T/root/cpu.pb.gz" > "$T/again.top" || fail "the new profile does not read"
has "$T/again.top" " after_drop_burn$"
cmp -s "$T/prev.pb.gz" "$T/root/cpu.pb.gz" && fail "PATH is still the earlier profile"
no_tmp again

# The heap trace: every allocation after the drop is in it.
run trace KILN_HEAP_TRACE="$T/root/h.trace"
"$KILN" top "$T/root/h.trace" > "$T/trace.top" || fail "the heap trace does not read"
has "$T/trace.top" " after_drop_alloc$"
no_tmp trace

# A program that is not root and calls setuid() with its own id: nothing
# changes for it (the preparation is harmless).
mkdir -m 1777 "$T/pub"
setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$KILN_LIB" \
    KILN_CPU="$T/pub/user.pb.gz" "$WL/privdrop" 0.2 > "$T/user.out" ||
    fail "privdrop failed as nobody"
has "$T/user.out" "^running as uid 65534$"
"$KILN" top "$T/pub/user.pb.gz" > "$T/user.top" || fail "nobody's profile does not read"
has "$T/user.top" " after_drop_burn$"
echo ok
