#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One regular expression dialect: a saved page searches and filters in the
# browser, the server with regcomp (POSIX ERE, GNU escapes, the C locale);
# the page's translation (app.js's ereToJs) must match the same names as
# the server on patterns where the two dialects differ -- POSIX classes,
# ']' first in a bracket, a backslash in a bracket, \d (a "d" to regcomp),
# GNU's \< \> word boundaries, (?i), and "(?" groups regcomp refuses.
# (Before: the page used JavaScript's RegExp as is.)
. "$(dirname "$0")/lib.sh"
need node

cat > "$T/input" <<'IN'
^burn_[[:alpha:]]$
burn_[[:digit:]]
stage_[]a]
[\]
a\d
\d
\<run
run\>
[[:upper:]]
(?i)BURN_A
(?:burn)
^std::vector<[[:alnum:]_]+>::push_back$
[[:space:]]
\.
[^]a]$
x{2}
--
burn_a
burn_b
burn_9
stage_a
stage_]
a\
ad
a7
d
run
rerun
runner
Main
std::vector<int>::push_back
operator new[]
foo bar
a.b
stage_b
xx
IN
"$WL/eregrep" < "$T/input" > "$T/want" || fail "eregrep"
node "$KILN_SRC/tests/browser/ere.test.mjs" "$KILN_SRC/src/web/page/app.js" "$T/input" "$T/want" ||
    fail "the saved page's regular expressions differ from the server's"
echo ok
