#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad input to kiln record: clear errors and exit status 2 (usage) or 1.
. "$(dirname "$0")/lib.sh"
# In a folder of its own, where the default output kiln.cpu.pb.gz would
# appear: none of these runs may write it.
mkdir "$T/cwd" && cd "$T/cwd" || fail "no folder"

expect_status 2 "$KILN" record -e no-such-event -- true
has "$T/err" "unknown event 'no-such-event'"
expect_status 2 "$KILN" record -F 0 -- true
has "$T/err" "bad -F '0'"
expect_status 2 "$KILN" record -F abc -- true
expect_status 2 "$KILN" record --call-graph bogus -- true
has "$T/err" "bad --call-graph"
expect_status 2 "$KILN" record
has "$T/err" "nothing to record"
expect_status 2 "$KILN" record -p 999999999 --duration 1
expect_status 2 "$KILN" record -p 4194000 --duration 1
has "$T/err" "no process with PID 4194000"
expect_status 2 "$KILN" record -- /no/such/command
has "$T/err" "cannot run '/no/such/command'"
expect_status 2 "$KILN" record -- no-such-command-kiln
has "$T/err" "command not found"
# A program that is found but cannot be executed (its interpreter is
# missing: execve fails with ENOENT after the rings are being read).
printf '#!/no/such/interpreter\n' > "$T/badinterp"
chmod +x "$T/badinterp"
expect_status 2 "$KILN" record -q -F 499 -- "$T/badinterp" 1.5
has "$T/err" "cannot run '$T/badinterp': No such file or directory"
rm -f "$T/badinterp"
expect_status 2 "$KILN" record --duration -1 -- true
[ -z "$(ls -A "$T/cwd")" ] || fail "a failed record left files: $(ls -A "$T/cwd")"
echo ok
