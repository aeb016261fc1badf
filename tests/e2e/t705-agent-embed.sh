#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: noasan
# The embedding API: a program linked with -lkiln starts and stops a CPU
# profile itself; the pkg-config file builds a user's program.
. "$(dirname "$0")/lib.sh"
need_agent
server=$KILN_BUILD/examples/server
[ -x "$server" ] || skip "the example was not built"

cd "$T"
"$server" 0 1.5 > out.txt & pid=$!
for _ in $(seq 100); do grep -q "wrote example.cpu.pb.gz" out.txt 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid; wait $pid
has out.txt "wrote example.cpu.pb.gz: ok"
"$KILN" top example.cpu.pb.gz > top.txt
has top.txt " handle_request$"
# pkg-config: compile the example the way a user would.
need pkg-config
need cc
PKG_CONFIG_PATH=$KILN_BUILD cc -O2 -g -I"$KILN_SRC/include" "$KILN_SRC/examples/server.c" \
    -L"$KILN_BUILD" -lkiln -lpthread -o user-server || fail "cannot build against libkiln"
grep -q "^Libs: .*-lkiln" "$KILN_BUILD/kiln.pc" || fail "kiln.pc lacks -lkiln"
echo ok
