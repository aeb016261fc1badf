#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make run`: profiles the bundled demo and leaves kiln-demo.pb.gz (pprof)
# and kiln-demo.svg (flame graph) in the working folder, then prints the
# top functions.  Uses `kiln record` when this kiln has it; otherwise
# `perf record` + kiln's perf script reader; otherwise (perf_event_open
# refused) the checked-in perf script sample of the same demo.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
kiln=$here/build/kiln
demo=$here/build/workloads/demo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if "$kiln" help record >/dev/null 2>&1; then
    echo "== kiln record -- demo 3"
    "$kiln" record -F 999 -o kiln-demo.pb.gz -- "$demo" 3
elif perf record -q -F 999 -g -o "$tmp/perf.data" -- "$demo" 3 2>"$tmp/err"; then
    echo "== perf record -g -- demo 3; perf script | kiln convert"
    perf script -i "$tmp/perf.data" > "$tmp/demo.perf" 2>/dev/null
    "$kiln" convert "$tmp/demo.perf" -o kiln-demo.pb.gz
else
    echo "== perf record is not allowed here ($(head -1 "$tmp/err")):"
    echo "   using the checked-in sample tests/fixtures/demo/demo.perf.gz"
    "$kiln" convert "$here/tests/fixtures/demo/demo.perf.gz" -o kiln-demo.pb.gz
fi
"$kiln" flame kiln-demo.pb.gz -o kiln-demo.svg --title "kiln demo"
echo
"$kiln" top -n 10 kiln-demo.pb.gz
echo
echo "wrote kiln-demo.pb.gz (pprof: go tool pprof -top kiln-demo.pb.gz)"
echo "wrote kiln-demo.svg   (open it in a browser: hover, click to zoom, search)"
