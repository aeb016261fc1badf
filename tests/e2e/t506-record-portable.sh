#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The profile carries its own symbols: moved away from the binaries (which
# are renamed away too), go tool pprof -top still shows every name; the
# mappings carry build IDs and the command line is in the comments.
. "$(dirname "$0")/lib.sh"
need_record
need go
export HOME=$T GOCACHE=$T/gocache PPROF_BINARY_PATH=$T/nowhere

cp "$WL/shares" "$T/prog"
expect_status 0 "$KILN" record -q -F 499 -o "$T/prog.pb.gz" -- "$T/prog" 1
mkdir "$T/elsewhere"
mv "$T/prog.pb.gz" "$T/elsewhere/"
mv "$T/prog" "$T/prog.gone"
(cd "$T/elsewhere" && go tool pprof -top prog.pb.gz) > "$T/top.txt" 2>"$T/err" || { cat "$T/err"; fail "go tool pprof"; }
for f in burn_a burn_b burn_c stage_a run main; do
    has "$T/top.txt" " $f\$"
done
hasnt "$T/top.txt" "^ .* 0x[0-9a-f]+$"
(cd "$T/elsewhere" && go tool pprof -raw prog.pb.gz) > "$T/raw.txt" 2>/dev/null
# The comment is the recorded command line itself.
has "$T/raw.txt" "^Comment: [^ ]*/prog 1$"
# Build IDs of the program and libc.
grep -Eq "prog +[0-9a-f]{40}|[0-9a-f]{40} +.*prog" "$T/raw.txt" || has "$T/raw.txt" "[0-9a-f]{40}"
echo ok
