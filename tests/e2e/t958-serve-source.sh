#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Which files kiln serve's source view reads.  A crafted profile naming
# /etc/shadow, a file outside every root, or a link from the working
# directory to /etc gets no text and a sentence saying why; files under
# the working directory or --source-path are found, a relative path under
# the roots, a build path through --trim-path or its tail (pprof's
# -source_path search).  (Files named by the debug info of the programs a
# profile maps: t952.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl
need jq
need python3

mk() { python3 "$KILN_SRC/tests/e2e/mkpprof.py" "$@" || fail "mkpprof $*"; }
# source FN: the first file entry of /api/source for FN, as "TEXT|WHY".
source_of() {
    get "api/source?p=0&fn=$1"
    [ "$STATUS" = 200 ] || { cat "$T/body"; fail "/api/source?fn=$1: $STATUS"; }
    jq -r '.files[0] | "\(.text)|\(.why)"' "$T/body"
}
mkdir -p "$T/work/src" "$T/secret" "$T/proj/src"
printf 'int main(void)\n{\n\treturn 0;\n}\n' > "$T/work/src/main.c"
printf 'secret notes\nline 2\nline 3\n' > "$T/secret/notes.c"
printf 'void run(void)\n{\n\tfor (;;)\n\t\t;\n}\n' > "$T/proj/src/run.c"
ln -s /etc/passwd "$T/work/link.c"
mk "$T/p.pb.gz" shadow=/etc/shadow:1 passwd=/etc/passwd:1 notes="$T/secret/notes.c":2 \
    rel=src/main.c:3 link="$T/work/link.c":1 build=/build/proj/src/run.c:4 \
    proc=/proc/self/environ:1 gone=/nonexistent/x.c:1

cd "$T/work"
serve_start --http 127.0.0.1:0 "$T/p.pb.gz"
for fn in shadow passwd proc link; do
    r=$(source_of $fn)
    case $r in "false|a system folder"*) ;; *) fail "$fn: $r";; esac
    hasnt "$T/body" "root:"
done
r=$(source_of notes)
case $r in "false|neither under the working directory"*"--source-path"*) ;; *) fail "notes: $r";; esac
hasnt "$T/body" "secret notes"
r=$(source_of gone)
case $r in "false|not found on this machine"*) ;; *) fail "gone: $r";; esac
# Under the working directory: the relative path.
r=$(source_of rel)
case $r in "true|null") ;; *) fail "rel: $r";; esac
has "$T/body" '"text":"\\u0009return 0;"'
serve_stop

# --source-path: the folder given, and a build path's tail under it.
serve_start --http 127.0.0.1:0 --source-path "$T/secret:$T/proj" "$T/p.pb.gz"
r=$(source_of notes)
case $r in "true|null") ;; *) fail "notes with --source-path: $r";; esac
has "$T/body" '"text":"line 2"'
r=$(source_of build)
case $r in "true|null") ;; *) fail "build path's tail: $r";; esac
has "$T/body" '"text":"\\u0009for \(;;\)"'
r=$(source_of shadow)
case $r in "false|a system folder"*) ;; *) fail "shadow with --source-path: $r";; esac
serve_stop

# --trim-path: the build prefix dropped, then looked for under the roots.
cd "$T"
serve_start --http 127.0.0.1:0 --trim-path /build/proj --source-path "$T/proj" "$T/p.pb.gz"
r=$(source_of build)
case $r in "true|null") ;; *) fail "--trim-path: $r";; esac
serve_stop
echo ok
