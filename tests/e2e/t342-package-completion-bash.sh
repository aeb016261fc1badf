#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bash completion (completion/kiln.bash, from kiln help --complete): after
# sourcing, complete -p kiln names _kiln; "kiln re<TAB>" gives record,
# "kiln convert --to <TAB>" the formats kiln writes (and --to=pe<TAB>),
# "kiln stat -e sched:<TAB>" the sched tracepoints of kiln list (with the
# part before ':' left to bash, as it splits words there), options from
# the usage text, values written in it (--mode), a file's sample types,
# PIDs for -p, and after "--" the command to run.
. "$(dirname "$0")/lib.sh"
need bash
bin=$(dirname "$KILN")
comp=$KILN_SRC/completion/kiln.bash
[ "$(basename "$KILN")" = kiln ] || skip "the binary is not named kiln"

cat > "$T/run.bash" <<'EOS'
[ -f /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion
. "$COMP"
complete -p kiln
# t LINE: the completions of LINE (cursor at its end), one per line.
t() { COMP_LINE=$1; COMP_POINT=${#1}; COMPREPLY=(); _kiln kiln; printf '%s\n' "${COMPREPLY[@]}"; }
echo "== re"; t "kiln re"
echo "== to"; t "kiln convert in.pb.gz -o out --to "
echo "== to="; t "kiln convert --to=pe"
echo "== sched"; t "kiln stat -e sched:"
echo "== list"; t "kiln record -e task-clock,sched:sched_sw"
echo "== opts"; t "kiln record --fr"
echo "== mode"; t "kiln record --mode "
echo "== st"; t "kiln top $FIXTURE --sample-type "
echo "== pid"; t "kiln record -p $$"
echo "== help"; t "kiln help fl"
echo "== cmd"; t "kiln record -- bas"
echo "== end"
EOS
PATH=$bin:$PATH COMP=$comp FIXTURE=$KILN_SRC/tests/fixtures/pprof/go-cpu.pb.gz \
    bash --norc --noprofile "$T/run.bash" > "$T/c" 2> "$T/c.err" || { cat "$T/c.err" >&2; fail "the script failed"; }
section() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$T/c" > "$T/$1"; }

has "$T/c" "^complete .*-F _kiln kiln$"
section re;    has "$T/re" "^record$";   hasnt "$T/re" "^heap$"
section to;    has "$T/to" "^pprof$";    has "$T/to" "^collapsed$"; has "$T/to" "^perf-script$"
[ "$(wc -l < "$T/to")" -eq "$("$KILN" help convert | awk '/Output formats:/ { on = 1; next } on && /^  [a-z]/ { n++ } on && /^$/ { exit } END { print n }')" ] ||
    fail "--to offers other than the formats kiln convert lists"
section to=;   [ "$(cat "$T/to=")" = perf-script ] || fail "--to=pe gives '$(cat "$T/to=")'"
# Tracepoints need tracefs; kiln list says whether there are any.
if "$KILN" list sched 2>/dev/null | grep -q "sched:sched_switch"; then
    section sched; has "$T/sched" "^sched_switch$"; hasnt "$T/sched" "^sched:"; hasnt "$T/sched" "^task-clock$"
    section list;  has "$T/list" "^sched_switch$"
else
    echo "no sched tracepoints here: sched: not checked" >&2
fi
section opts;  has "$T/opts" "^--freq$"
section mode;  has "$T/mode" "^perf$";   has "$T/mode" "^inject$"
section st;    has "$T/st" "^samples$";  has "$T/st" "^cpu$"
section pid;   [ -s "$T/pid" ] && ! grep -qv "^[0-9]*$" "$T/pid" || fail "-p offers '$(head -3 "$T/pid")'"
section help;  has "$T/help" "^flame$"
section cmd;   has "$T/cmd" "^bash$"
echo ok
