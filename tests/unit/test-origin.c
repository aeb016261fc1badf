/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/origin.c: which Host values name a loopback server
 * (DNS rebinding) and which browser requests come from another site.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/origin.h"

static void test_host(void **state)
{
	char own[300], name[256];

	assert_true(kiln_origin_host_loopback("127.0.0.1:8080", 8080));
	assert_true(kiln_origin_host_loopback("127.1.2.3:8080", 8080));
	assert_true(kiln_origin_host_loopback("localhost:8080", 8080));
	assert_true(kiln_origin_host_loopback("LocalHost.:8080", 8080));
	assert_true(kiln_origin_host_loopback("app.localhost:8080", 8080));
	assert_true(kiln_origin_host_loopback("[::1]:8080", 8080));
	assert_true(kiln_origin_host_loopback("[::ffff:127.0.0.1]:8080", 8080));
	assert_true(kiln_origin_host_loopback("127.0.0.1", 80));
	/* Another port, another name, a name that only starts like one. */
	assert_false(kiln_origin_host_loopback("127.0.0.1:8081", 8080));
	assert_false(kiln_origin_host_loopback("127.0.0.1", 8080));
	assert_false(kiln_origin_host_loopback("evil.example:8080", 8080));
	assert_false(kiln_origin_host_loopback("127.0.0.1.evil.example:8080", 8080));
	assert_false(kiln_origin_host_loopback("localhost.evil.example:8080", 8080));
	assert_false(kiln_origin_host_loopback("evillocalhost:8080", 8080));
	assert_false(kiln_origin_host_loopback("10.0.0.1:8080", 8080));
	assert_false(kiln_origin_host_loopback("[::2]:8080", 8080));
	/* Forms a browser never writes, and broken ones. */
	assert_false(kiln_origin_host_loopback("0x7f.1:8080", 8080));
	assert_false(kiln_origin_host_loopback("127.1:8080", 8080));
	assert_false(kiln_origin_host_loopback("127.0.0.1:8080:1", 8080));
	assert_false(kiln_origin_host_loopback("127.0.0.1:", 8080));
	assert_false(kiln_origin_host_loopback("127.0.0.1:80a", 80));
	assert_false(kiln_origin_host_loopback("[::1", 8080));
	assert_false(kiln_origin_host_loopback("[::1]x", 8080));
	assert_false(kiln_origin_host_loopback("", 80));
	assert_false(kiln_origin_host_loopback(":8080", 8080));
	assert_false(kiln_origin_host_loopback(NULL, 80));
	/* This machine's own name. */
	if (!gethostname(name, sizeof(name)) && name[0]) {
		name[sizeof(name) - 1] = '\0';
		snprintf(own, sizeof(own), "%s:6060", name);
		assert_true(kiln_origin_host_loopback(own, 6060));
	}
}

static const char *refusal(const char *method, const char *host,
			   const char *origin, const char *site,
			   const char *mode, bool loopback)
{
	struct kiln_origin_req rq = { method, host, origin, site, mode };

	return kiln_origin_refusal(&rq, 8080, loopback);
}

static void test_refusal(void **state)
{
	/* Clients that are not browsers: no Origin, no Sec-Fetch-*. */
	assert_null(refusal("GET", "127.0.0.1:8080", NULL, NULL, NULL, true));
	assert_null(refusal("POST", "127.0.0.1:8080", NULL, NULL, NULL, true));
	assert_null(refusal("GET", NULL, NULL, NULL, NULL, true));
	/* DNS rebinding: the attacker's name in Host. */
	assert_non_null(refusal("GET", "evil.example:8080", NULL, "same-origin",
				"cors", true));
	assert_non_null(refusal("GET", "evil.example:8080", NULL, NULL, NULL, true));
	/* Listening beyond loopback: any name reaches it. */
	assert_null(refusal("GET", "myhost.lan:8080", NULL, NULL, NULL, false));
	/* The page's own requests, and the user typing the URL. */
	assert_null(refusal("GET", "127.0.0.1:8080", NULL, "same-origin", "cors", true));
	assert_null(refusal("GET", "127.0.0.1:8080", "http://127.0.0.1:8080",
			    "same-origin", "cors", true));
	assert_null(refusal("POST", "localhost:8080", "http://localhost:8080",
			    "same-origin", "cors", true));
	assert_null(refusal("GET", "127.0.0.1:8080", NULL, "none", "navigate", true));
	/* Another site's page: an <img>, a fetch, a form's POST. */
	assert_non_null(refusal("GET", "127.0.0.1:8080", NULL, "cross-site",
				"no-cors", true));
	assert_non_null(refusal("GET", "127.0.0.1:8080", "http://evil.example",
				"cross-site", "cors", true));
	assert_non_null(refusal("POST", "127.0.0.1:8080", "http://evil.example",
				"cross-site", "navigate", true));
	assert_non_null(refusal("GET", "myhost.lan:8080", NULL, "cross-site",
				"no-cors", false));
	assert_non_null(refusal("GET", "127.0.0.1:8080", NULL, "same-site",
				"no-cors", true));
	/* Browsers without Sec-Fetch-*: Origin alone. */
	assert_non_null(refusal("POST", "127.0.0.1:8080", "http://evil.example",
				NULL, NULL, true));
	assert_non_null(refusal("POST", "127.0.0.1:8080", "null", NULL, NULL, true));
	assert_non_null(refusal("POST", "127.0.0.1:8080", "http://127.0.0.1:9090",
				NULL, NULL, true));
	/* Following a link from another site to a view: a navigation. */
	assert_null(refusal("GET", "127.0.0.1:8080", NULL, "cross-site",
			    "navigate", true));
	/* A browser's request without a Host header. */
	assert_non_null(refusal("GET", NULL, "http://evil.example", NULL, NULL, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
