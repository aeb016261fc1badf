#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The manual pages are the help text rendered a second time: for every
# command of the table (kiln help --complete commands) `kiln help --man
# COMMAND` renders with man -l, without groff warnings, with the NAME,
# SYNOPSIS, OPTIONS and EXAMPLES the usage text has, and every option
# `kiln help COMMAND` lists is on the page; the build made one page per
# command (build/man); kiln(1) lists every command; libkiln(7) has the
# agent's variables and the HTTP endpoints from docs/agent.md and
# docs/http.md.  kiln --version names the commit of the checkout.
. "$(dirname "$0")/lib.sh"
need man
need col

render() { MANWIDTH=200 man --warnings -l "$1" 2> "$1.err" | col -b > "$2" || fail "man -l $1"
           [ -s "$1.err" ] && { cat "$1.err" >&2; fail "man -l $1 warns"; }; true; }

"$KILN" help --complete commands > "$T/cmds" || fail "kiln help --complete commands"
has "$T/cmds" "^record$"
has "$T/cmds" "^convert$"
# The main page: every command of the table, and its options.
"$KILN" help --man > "$T/kiln.1" || fail "kiln help --man"
render "$T/kiln.1" "$T/kiln.txt"
has "$T/kiln.txt" "^NAME"
has "$T/kiln.txt" "--version"
for c in $(cat "$T/cmds"); do
    [ "$c" = help ] && continue
    has "$T/kiln.txt" "kiln-$c\(1\)"
    [ -s "$KILN_BUILD/man/man1/kiln-$c.1.gz" ] || fail "the build made no kiln-$c.1.gz"
    "$KILN" help --man "$c" > "$T/$c.1" || fail "kiln help --man $c"
    head -3 "$T/$c.1" | grep -q "^\.TH KILN-${c^^} 1 " || fail "kiln-$c.1 has no .TH"
    render "$T/$c.1" "$T/$c.txt"
    for s in NAME SYNOPSIS DESCRIPTION OPTIONS "SEE ALSO"; do
        has "$T/$c.txt" "^$s\$"
    done
    has "$T/$c.txt" "^ +kiln-$c - "
    # Every option of the help text, on the page.
    "$KILN" help --complete options "$c" | cut -f1 > "$T/$c.opts"
    while read -r o; do
        case $o in -h|--help) continue ;; esac
        grep -qF -- "$o" "$T/$c.txt" || fail "kiln-$c(1) lacks $o"
    done < "$T/$c.opts"
    # The synopsis is the help's usage line.
    u=$("$KILN" help "$c" | head -1 | sed 's/^usage: //')
    grep -qF -- "$u" "$T/$c.txt" || fail "kiln-$c(1) lacks its usage '$u'"
    if "$KILN" help "$c" | grep -q "^Examples\?:"; then has "$T/$c.txt" "^EXAMPLES$"; fi
done
# Options are bold, their arguments italic; minus signs escaped.
has "$T/record.1" '^\\fB\\-F\\fR, \\fB\\-\\-freq\\fR \\fIHZ\\fR$'
# The list of formats convert writes is in its page too.
has "$T/convert.txt" "perf-script"
has "$T/top.txt" "^ENVIRONMENT$"
has "$T/top.txt" "KILN_MAX_INPUT=SIZE"
# Every list item of the help has its description on the page.
for c in $(cat "$T/cmds"); do
    [ "$c" = help ] && continue
    awk '/^\.TP$/ { tp = NR } tp && NR == tp + 2 && /^\.(TP|SH|PP)/ { print FILENAME ": item without text at line " NR - 1 }' "$T/$c.1"
done > "$T/bare"
[ -s "$T/bare" ] && { cat "$T/bare" >&2; fail "list items without a description"; }
# Errors.
expect_status 2 "$KILN" help --man nosuch
has "$T/err" "no command 'nosuch'"
expect_status 2 "$KILN" help --bogus
expect_status 2 "$KILN" help --complete

# libkiln(7), made at build time from the docs.
p7=$KILN_BUILD/man/man7/libkiln.7.gz
[ -s "$p7" ] || fail "no libkiln.7.gz in the build"
render "$p7" "$T/libkiln.txt"
has "$T/libkiln.txt" "^ENVIRONMENT$"
for v in KILN_CPU=PATH KILN_HEAP=PREFIX KILN_HTTP=ADDR KILN_LOG=LEVEL CPUPROFILE \
         /debug/pprof/profile /debug/pprof/heap /debug/pprof/symbol; do
    grep -qF -- "$v" "$T/libkiln.txt" || fail "libkiln(7) lacks $v"
done

"$KILN" --version > "$T/v"
if git -C "$KILN_SRC" rev-parse HEAD > /dev/null 2>&1; then
    # The commit built from (HEAD may have moved on since the build).
    has "$T/v" "^kiln [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{12}(-dirty)?\)$"
    c=$(sed 's/.*commit \([0-9a-f]*\).*/\1/' "$T/v")
    git -C "$KILN_SRC" cat-file -e "$c^{commit}" || fail "kiln --version names $c, not a commit here"
else
    has "$T/v" "^kiln [0-9]+\.[0-9]+\.[0-9]+ \(commit unknown\)$"
fi
echo ok
