#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# zsh completion (completion/_kiln): it loads under compinit and registers
# for kiln; its candidates, from kiln help --complete as in bash, for
# commands, --to formats, options, --mode values, a file's sample types
# and event names (kiln list); and the _kiln widget's compadd calls.
. "$(dirname "$0")/lib.sh"
need zsh
bin=$(dirname "$KILN")
[ "$(basename "$KILN")" = kiln ] || skip "the binary is not named kiln"

cat > "$T/run.zsh" <<'EOS'
fpath=($COMPDIR $fpath)
autoload -U compinit && compinit -u -d $TMPD/zcompdump
print -r -- "== reg ${_comps[kiln]}"
autoload -U +X _kiln
source $COMPDIR/_kiln
print -r -- "== re"; _kiln_candidates kiln re
print -r -- "== to"; _kiln_candidates kiln convert --to ''
print -r -- "== opts"; _kiln_candidates kiln record --fr
print -r -- "== mode"; _kiln_candidates kiln record --mode ''
print -r -- "== st"; _kiln_candidates kiln top $FIXTURE --sample-type ''
print -r -- "== ev"; _kiln_candidates kiln stat -e ''
# The widget itself, with compadd and _files stood in for (functions
# come before builtins): an empty word being typed stays a word.
compadd() { print -r -- "compadd $*" }
_files() { print -r -- "_files" }
print -r -- "== w-to"; words=(kiln convert x -o y --to ''); CURRENT=7; _kiln
print -r -- "== w-list"; words=(kiln stat -e task-clock,cs); CURRENT=4; _kiln
print -r -- "== w-file"; words=(kiln top ''); CURRENT=3; _kiln
print -r -- "== end"
EOS
PATH=$bin:$PATH COMPDIR=$KILN_SRC/completion TMPD=$T FIXTURE=$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz \
    zsh -f "$T/run.zsh" > "$T/c" 2> "$T/c.err" || { cat "$T/c.err" >&2; fail "the script failed"; }
[ -s "$T/c.err" ] && { cat "$T/c.err" >&2; fail "zsh said something"; }
section() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$T/c" > "$T/$1"; }
has "$T/c" "^== reg _kiln$"
section re;   has "$T/re" "^record$"; has "$T/re" "^help$"
section to;   has "$T/to" "^pprof$"; has "$T/to" "^speedscope$"
section opts; has "$T/opts" "^--freq$"; has "$T/opts" "^--call-graph$"
section mode; has "$T/mode" "^perf$"; has "$T/mode" "^inject$"
section st;   has "$T/st" "^samples$"; has "$T/st" "^cpu$"
section ev;   has "$T/ev" "^task-clock$"; has "$T/ev" "^cs$"
section w-to;   has "$T/w-to" "^compadd -Q -- pprof collapsed speedscope perf-script( [a-z-]+)*$"
section w-list; has "$T/w-list" "^compadd -S  -Q -U -- .*task-clock,cs( |$)"
section w-file; has "$T/w-file" "^_files$"
echo ok
