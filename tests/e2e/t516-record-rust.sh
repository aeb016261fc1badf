#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Rust binaries, whose default linker on x86-64 Linux is LLD since rustc
# 1.90 (rustup's rustc here), built three ways: the rustc on PATH with its
# default linker, Debian's rustc (GNU ld through cc), and Debian's rustc
# with -C link-arg=-fuse-ld=lld.  In each: kiln record's split of
# shares::burn_a/b/c (cumulative: rustc inlines wrapping_add into them)
# within 3 points with whole chains, and kiln's reading of perf's
# perf.data of the same program equal to perf report --children within a
# point; the LLD builds through --call-graph dwarf and the agent too.
. "$(dirname "$0")/lib.sh"
# rustup's rustc finds its toolchains under the caller's home, which
# perfdatalib.sh moves to $T (perf's build-id cache).
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
. "$(dirname "$0")/perfdatalib.sh"
need_record
need_perf
need rustc

src=$KILN_SRC/tests/workloads/rust/shares.rs
# perf report's cumulative share of function $2 in perf.data $1.
perf_cum() {
    perf report -i "$1" --stdio --children --sort sym -g none 2>/dev/null |
        awk -v f="$2" '$1 ~ /%$/ && $3 == "[.]" { p = $1; $1 = $2 = $3 = ""; sub("^ +", "");
             if ($0 == f) { sub("%", "", p); print p; exit } }'
}
# is_lld BIN: BIN's code segment starts inside a page (LLD's layout).
is_lld() {
    readelf -lW "$1" | awk '$1 == "LOAD" && / R E / && $2 !~ /000$/ { ok = 1 } END { exit !ok }'
}
# cell NAME: the checks above on program $T/NAME.
cell() {
    local name=$1 f want got
    expect_status 0 "$KILN" record -q -F 999 -o "$T/$name.pb.gz" -- "$T/$name" 1
    check_split "$T/$name.pb.gz" 5 3 shares::burn_a=60 shares::burn_b=30 shares::burn_c=10
    hasnt "$T/split.txt" "\\[$name\\]"
    expect_status 0 "$KILN" convert "$T/$name.pb.gz" -o "$T/$name.collapsed"
    for x in a b c; do
        has "$T/$name.collapsed" "(^|;)shares::run;shares::stage_$x;shares::burn_$x(;|\$| )"
    done
    perf_record -q -F 999 -g -o "$T/$name.data" -- "$T/$name" 1 >/dev/null 2>&1 ||
        fail "perf record of $name failed"
    "$KILN" top --cum -n 0 "$T/$name.data" > "$T/$name.data.top" || fail "kiln top of perf's $name.data"
    for f in shares::burn_a shares::burn_b shares::burn_c; do
        want=$(perf_cum "$T/$name.data" "$f")
        got=$(cum_pct "$T/$name.data.top" "$f")
        [ -n "$want" ] || fail "$name: perf report has no $f"
        within "${got:-0}" "$want" 1 ||
            { cat "$T/$name.data.top" >&2; fail "$name: $f kiln ${got:-none}%, perf report $want%"; }
    done
    echo "$name: ok"
}

rustc -O -g -C force-frame-pointers=yes -o "$T/rs-default" "$src" ||
    fail "rustc cannot build the Rust workload"
names="rs-default"
if [ -x /usr/bin/rustc ] && [ "$(command -v rustc)" != /usr/bin/rustc ]; then
    /usr/bin/rustc -O -g -C force-frame-pointers=yes -o "$T/rs-debian" "$src" ||
        fail "Debian's rustc cannot build the Rust workload"
    names="$names rs-debian"
fi
rustc=$(command -v rustc)
[ -x /usr/bin/rustc ] && rustc=/usr/bin/rustc
if command -v ld.lld >/dev/null; then
    "$rustc" -O -g -C force-frame-pointers=yes -C link-arg=-fuse-ld=lld \
        -o "$T/rs-lld" "$src" || fail "$rustc cannot link the Rust workload with lld"
    names="$names rs-lld"
fi
lld=
for n in $names; do
    cell "$n"
    is_lld "$T/$n" && lld="$lld $n"
done
[ -n "$lld" ] || skip "no Rust build here has LLD's layout (install lld: scripts/deps.sh)"

for n in $lld; do
    expect_status 0 "$KILN" record -q -F 999 --call-graph dwarf -o "$T/$n.dw.pb.gz" -- "$T/$n" 1
    check_split "$T/$n.dw.pb.gz" 5 3 shares::burn_a=60 shares::burn_b=30 shares::burn_c=10
    if [ "${KILN_SANITIZE:-OFF}" != ON ] && [ -e "$KILN_LIB" ]; then
        LD_PRELOAD=$KILN_LIB CPUPROFILE=$T/$n.agent.pb.gz "$T/$n" 1 ||
            fail "$n failed under the agent"
        "$KILN" convert "$T/$n.agent.pb.gz" -o "$T/$n.agent.collapsed" || fail "kiln convert"
        for x in a b c; do
            has "$T/$n.agent.collapsed" "(^|;)shares::run;shares::stage_$x;shares::burn_$x(;|\$| )"
        done
        hasnt "$T/$n.agent.collapsed" "\\[$n\\]"
    fi
done
echo ok
