/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the HTTP server parses itself (http stage; src/http/parse.c).
 */
#ifndef KILN_HTTP_PARSE_H
#define KILN_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether an Accept header (NULL: none) prefers text/html to a binary
 * answer, by the q-values of the most specific matching media ranges.
 */
bool kiln_http_prefers_html(const char *accept);

/*
 * Splits "HOST:PORT", "[V6]:PORT", ":PORT" (host "") or "PORT" (loopback)
 * into host (without brackets, hostsz bytes at most) and port.
 * 0 or -EINVAL.
 */
int kiln_http_parse_addr(const char *addr, char *host, size_t hostsz,
			 unsigned *port);

#endif
