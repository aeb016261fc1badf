#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Who kiln serve answers.  On loopback: only Host values naming loopback
# at its port (DNS rebinding gives the attacker's name), no request from
# another site's page (Sec-Fetch-Site, Origin) but a navigation; pprof's
# any-port form --http=: is loopback.  A bad address is refused before the
# inputs are read.  Beyond loopback (0.0.0.0): a token, made and put in the
# printed URL (or --token), demanded as ?token= (answered with a cookie),
# the cookie or a bearer header; every address listed, a warning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-serve.sh"
need curl

printf 'main;run;burn_a 60\nmain;run;burn_b 40\n' > "$T/p.collapsed"
# code [CURL ARGS...] URL: the HTTP status.
code() { curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@"; }
want() {
    local w=$1 got
    shift
    got=$(code "$@")
    [ "$got" = "$w" ] || { cat "$T/body" >&2; fail "curl $* answered $got, expected $w"; }
}

# A bad address: said at once, before the (missing) input is looked at.
expect_status 2 "$KILN" serve --http 'no:such:addr' "$T/missing.pb.gz"
has "$T/err" "bad address 'no:such:addr'"
hasnt "$T/err" "missing.pb.gz"

serve_start --http 127.0.0.1:0 "$T/p.collapsed"
port=${URL##*:}
port=${port%/}
want 200 "$URL"
want 200 "${URL}api/profiles"
want 200 -H "Host: localhost:$port" "${URL}api/profiles"
want 200 -H "Host: [::1]:$port" "${URL}api/profiles"
# DNS rebinding: the page's own name in Host.
want 403 -H "Host: evil.example:$port" "${URL}api/profiles"
has "$T/body" "Host header"
want 403 -H "Host: 127.0.0.1:1" "${URL}api/profiles"
# Another site's page: an <img>, a fetch; its Origin without Sec-Fetch-*.
want 403 -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: no-cors" "${URL}api/profiles"
want 403 -H "Origin: http://evil.example" "${URL}api/profiles"
want 403 -H "Origin: null" "${URL}api/profiles"
# The page's own requests and a link followed from elsewhere.
want 200 -H "Sec-Fetch-Site: same-origin" -H "Sec-Fetch-Mode: cors" \
    -H "Origin: http://127.0.0.1:$port" "${URL}api/profiles"
want 200 -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: navigate" "$URL"
want 405 -X POST "${URL}api/profiles"
serve_stop

# pprof's -http=: is loopback, any free port.
serve_start --http=: "$T/p.collapsed"
case $URL in http://127.0.0.1:[1-9]*/) ;; *) fail "--http=: gave $URL";; esac
want 200 "${URL}api/profiles"
serve_stop

# Every address: a token in the printed URL.
serve_start --http 0.0.0.0:0 "$T/p.collapsed"
case $URL in *'/?token='????????????????????????????????) ;; *) fail "no token in $URL";; esac
base=${URL%%\?*}
tok=${URL##*token=}
has "$T/serve.err" "warning: '0.0.0.0:0' is not loopback"
has "$T/serve.err" "listening on:"
grep -q "^  http://127.0.0.1:[0-9]*/?token=$tok\$" "$T/serve.err" || { cat "$T/serve.err"; fail "loopback not listed"; }
want 401 "${base}api/profiles"
want 401 "${base}api/profiles?token=wrong"
want 401 -H "Authorization: Bearer wrong" "${base}api/profiles"
want 200 "$URL"
grep -qi "^set-cookie: kiln_token=$tok; Path=/; HttpOnly; SameSite=Strict" "$T/headers" ||
    { cat "$T/headers"; fail "no cookie for the token"; }
want 200 -b "kiln_token=$tok" "${base}api/profiles"
want 200 -H "Authorization: Bearer $tok" "${base}api/profiles"
# Any Host: the token guards it.
want 200 -H "Host: myhost.lan:1" -H "Authorization: Bearer $tok" "${base}api/profiles"
# Still no other site's page, token or not.
want 403 -b "kiln_token=$tok" -H "Sec-Fetch-Site: cross-site" -H "Sec-Fetch-Mode: no-cors" "${base}api/profiles"
serve_stop

# A token asked for on loopback.
serve_start --http 127.0.0.1:0 --token s3cret "$T/p.collapsed"
case $URL in *'/?token=s3cret') ;; *) fail "given token not in $URL";; esac
want 401 "${URL%%\?*}api/profiles"
want 200 -H "Authorization: Bearer s3cret" "${URL%%\?*}api/profiles"
serve_stop
expect_status 2 "$KILN" serve --http 127.0.0.1:0 --token 'a b' "$T/p.collapsed"
has "$T/err" "bad token"
echo ok
