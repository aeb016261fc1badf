/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what kiln's HTTP server parses itself
 * (src/http/parse.c; the query string and header lines are libmicrohttpd's):
 * the Accept header (content negotiation) and the listening address of
 * KILN_HTTP.  The first byte picks which (even: Accept, odd: address);
 * the rest is the string, cut at its first NUL as a C string would be.
 * Checked: no crash or overread; an address accepted has a host that fits
 * and a port up to 65535; a digits-only address is the loopback.
 */
#include <string.h>

#include "fuzz.h"
#include "http/parse.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, host[64];
	unsigned port = 70000;
	size_t n;

	if (!size)
		return 0;
	n = size - 1;
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, data + 1, n);
	s[n] = '\0';
	if (!(data[0] & 1)) {
		bool a = kiln_http_prefers_html(s);

		fuzz_check(a == kiln_http_prefers_html(s), "fuzz-http",
			   "the Accept verdict changed between two calls");
	} else if (!kiln_http_parse_addr(s, host, sizeof(host), &port)) {
		size_t i;

		fuzz_check(memchr(host, '\0', sizeof(host)) != NULL, "fuzz-http",
			   "host not terminated");
		fuzz_check(port <= 65535, "fuzz-http", "port past 65535");
		for (i = 0; s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (!s[i])
			fuzz_check(!strcmp(host, "127.0.0.1"), "fuzz-http",
				   "a bare port is not the loopback");
	}
	free(s);
	return 0;
}
