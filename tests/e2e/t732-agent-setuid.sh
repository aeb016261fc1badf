#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# Secure execution: a set-user-ID-root program linked with libkiln.so, run
# by nobody, takes no output path from the caller's environment.
# CPUPROFILE and HEAPPROFILE pointed into a root-only folder create
# nothing there, pointed at a root file leave it whole (no .old either),
# KILN_LOG=info says why once; the program's own kiln_cpu_start() and
# kiln_cpu_stop_write() still write its profile.  The same program
# without the set-user-ID bit obeys the variables (the control).
. "$(dirname "$0")/lib.sh"
need_agent
[ "$(id -u)" -eq 0 ] || skip "needs root to make a set-user-ID-root program"
need setpriv
need cc
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

chmod 755 "$T"
mkdir "$T/lib" "$T/bin" "$T/rootonly" "$T/pub"
chmod 700 "$T/rootonly"
chmod 1777 "$T/pub"
cp "$KILN_LIB" "$T/lib/libkiln.so"
chmod 755 "$T/lib" "$T/bin" "$T/lib/libkiln.so"
# An absolute run path: the loader keeps it in secure execution.
cc -O1 -g -I"$KILN_SRC/include" "$KILN_SRC/tests/workloads/embed/suidhost.c" \
    -L"$T/lib" -Wl,--no-as-needed -lkiln -Wl,-rpath,"$T/lib" -o "$T/bin/suidhost" ||
    fail "cannot build the host against libkiln.so"
echo keep > "$T/rootfile"
chmod 644 "$T/rootfile"

# The control: not set-user-ID, the variable is obeyed.
expect_status 0 as_nobody env CPUPROFILE="$T/pub/own.pb.gz" "$T/bin/suidhost"
has "$T/out" "uid=65534 euid=65534 done"
[ -s "$T/pub/own.pb.gz" ] || fail "the control wrote no profile: the agent does not run in the host"

chmod 4755 "$T/bin/suidhost"
expect_status 0 as_nobody env CPUPROFILE="$T/rootonly/cpu.pb.gz" \
    HEAPPROFILE="$T/rootonly/heap" KILN_LOG=info "$T/bin/suidhost"
grep -q "euid=0 done" "$T/out" ||
    skip "the set-user-ID bit has no effect in $T (a nosuid mount?): $(cat "$T/out")"
[ -z "$(ls -A "$T/rootonly")" ] || { ls -la "$T/rootonly"; fail "files created in a root-only folder"; }
has "$T/err" "secure-execution mode"
[ "$(grep -c "secure-execution" "$T/err")" = 1 ] || fail "said more than once"

expect_status 0 as_nobody env CPUPROFILE="$T/rootfile" "$T/bin/suidhost"
[ "$(cat "$T/rootfile")" = keep ] || fail "a root file was replaced"
[ ! -e "$T/rootfile.old" ] || fail "a root file was moved to .old"
[ -z "$(ls "$T" | grep -v "^\(lib\|bin\|rootonly\|pub\|rootfile\|out\|err\)$")" ] ||
    { ls -la "$T"; fail "files left beside the root file"; }
# Without KILN_LOG, nothing on stderr.
[ ! -s "$T/err" ] || { cat "$T/err"; fail "stderr without KILN_LOG"; }

# The program's own calls still work.
expect_status 0 as_nobody "$T/bin/suidhost" "$T/pub/emb.pb.gz"
[ -s "$T/pub/emb.pb.gz" ] || fail "the embedding API wrote nothing in secure execution"
"$KILN" top "$T/pub/emb.pb.gz" > "$T/emb.top" || fail "kiln top of the embedded profile"
has "$T/emb.top" " burn$"
echo ok
