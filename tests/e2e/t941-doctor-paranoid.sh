#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ctest-labels: serial
# kiln doctor with kernel.perf_event_paranoid set to 3 and back (restored
# by a trap): as root, a warning with the exact sysctl; as user nobody, a
# problem (exit 1) where the kernel enforces level 3 (Debian's patch) and
# perf_event_open's refusal blamed on it, or, on a kernel without level 3
# (upstream treats it as 2), the doctor says so.  Whether the kernel
# enforces it is found independently (perf-open-probe.py).  Serial: it
# changes a setting other tests depend on.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to change kernel.perf_event_paranoid"
[ "$(uname -m)" = x86_64 ] || skip "the probe is x86-64's system call"
need setpriv
need python3
f=/proc/sys/kernel/perf_event_paranoid
[ -w "$f" ] || skip "$f is not writable here"
old=$(cat "$f")
trap 'echo "$old" > "$f"; rm -rf "$T"' EXIT
row() { python3 "$KILN_SRC/tests/e2e/doctor-row.py" "$@"; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
chmod 755 "$T"

if ! echo 3 > "$f" 2>/dev/null || [ "$(cat "$f")" != 3 ]; then
    echo "$old" > "$f"
    skip "kernel.perf_event_paranoid cannot be set to 3 here"
fi
# The system's python: root's PATH may name one nobody cannot run.
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for user nobody"
enforced=0
as_nobody /usr/bin/python3 "$KILN_SRC/tests/e2e/perf-open-probe.py" 2>/dev/null || enforced=$?
[ "$enforced" -le 1 ] || { echo "$old" > "$f"; skip "perf_event_open fails as nobody for another reason"; }

# Root: not affected; the row says who is, and the sysctl that undoes it.
"$KILN" doctor --json > "$T/root.json" || [ $? -eq 1 ] || fail "kiln doctor failed as root"
r=$(row "$T/root.json" perf_event_paranoid) || fail "no perf_event_paranoid row"
case $r in warn$'\t'3:*) ;; *) fail "as root: $r";; esac
printf '%s\n' "$r" | grep -q "sysctl -w kernel.perf_event_paranoid=2" || fail "no sysctl in: $r"
if [ "$enforced" -eq 1 ]; then
    printf '%s\n' "$r" | grep -q "refused to every user without CAP_PERFMON.*tried as user nobody.*kiln runs with the capability and is not affected" ||
        fail "as root, level 3 enforced: $r"
else
    printf '%s\n' "$r" | grep -q "this kernel has no level 3.*tried as user nobody" ||
        fail "as root, level 3 not enforced: $r"
fi
r=$(row "$T/root.json" perf_event_open) || fail "no perf_event_open row"
case $r in ok$'\t'works:*) ;; *) fail "as root, perf_event_open: $r";; esac

# User nobody.
rc=0
as_nobody "$KILN" doctor --json > "$T/nobody.json" || rc=$?
p=$(row "$T/nobody.json" perf_event_paranoid) || fail "no perf_event_paranoid row as nobody"
o=$(row "$T/nobody.json" perf_event_open) || fail "no perf_event_open row as nobody"
if [ "$enforced" -eq 1 ]; then
    [ "$rc" -eq 1 ] || fail "as nobody with level 3 enforced: exit $rc, expected 1"
    case $p in problem$'\t'"3: perf_event_open is refused to every user"*) ;; *) fail "as nobody: $p";; esac
    case $o in problem$'\t'*"kernel.perf_event_paranoid is 3"*) ;; *) fail "as nobody: $o";; esac
    printf '%s\n' "$o" | grep -q "sysctl -w kernel.perf_event_paranoid=2" || fail "no sysctl in: $o"
    as_nobody "$KILN" doctor > "$T/table" || true
    has "$T/table" "^problem +perf_event_paranoid +3: "
else
    case $p in warn$'\t'"3: this kernel has no level 3"*) ;; *) fail "as nobody: $p";; esac
    case $o in ok$'\t'works:*) ;; *) fail "as nobody, perf_event_open: $o";; esac
    printf '%s\n' "$p" | grep -q "sysctl -w kernel.perf_event_paranoid=2" || fail "no sysctl in: $p"
fi
# kallsyms hides kernel addresses from nobody at paranoid 3 with
# kptr_restrict 0: the fix is the paranoid setting, not kptr_restrict.
if [ "$(cat /proc/sys/kernel/kptr_restrict)" = 0 ]; then
    k=$(row "$T/nobody.json" kptr_restrict) || fail "no kptr_restrict row"
    case $k in warn$'\t'"0, but with kernel.perf_event_paranoid 3"*"sysctl -w kernel.perf_event_paranoid=1"*) ;;
        *) fail "as nobody, kptr_restrict: $k";; esac
fi

# Back: the old value, and the doctor sees it.
echo "$old" > "$f"
[ "$(cat "$f")" = "$old" ] || fail "perf_event_paranoid not restored"
"$KILN" doctor --json > "$T/back.json" || [ $? -eq 1 ] || fail "kiln doctor failed"
r=$(row "$T/back.json" perf_event_paranoid)
case $r in *$'\t'"$old:"*) ;; *) fail "after restoring $old: $r";; esac
echo ok
