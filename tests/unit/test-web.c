/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of kiln serve's API (web/api.c, web/model.c) without a
 * socket: zoom paths with escaped names, the pixel bound on flame nodes,
 * the sandwich of a recursive function, filtered selections leaving the
 * input whole, the selection cache under eviction, errors, the call
 * tree's levels and the summary's figures; the heap views of a kiln
 * heap trace (the fixture heapbasic.trace.zst). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "web/web.h"
#include "web/webint.h"

/* Adds a stack given root first, names separated by '|' (names may hold ';'). */
static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	uint32_t locs[64], n = 0, i;
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, tok),
							  0, 0, 0), 0 };

		locs[n] = kiln_prof_location(p, 0, 0x1000 + n, &l, 1);
		n++;
	}
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, &v, 0) >= 0);
}

static struct kiln_web_model *model(void)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();
	const char *name = "t", *fmt = "collapsed";
	struct kiln_web_model *m;

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	add(p, "main|a;b|rec|g|rec|leaf", 600);
	add(p, "main|a;b|rec", 200);
	add(p, "main|back\\slash|rec", 100);
	add(p, "main|tiny", 1);
	assert_int_equal(kiln_prof_error(p), 0);
	m = kiln_web_model_new(&p, &name, &fmt, 1);
	assert_non_null(m);
	assert_null(p);
	return m;
}

/* Query arguments as "k=v&k=v" (no decoding needed in tests). */
struct q { char buf[512]; };

static const char *qarg(void *ctx, const char *key)
{
	struct q *q = ctx;
	static char val[256];
	size_t kl = strlen(key);
	const char *s = q->buf;

	while (s && *s) {
		const char *e = strchr(s, '&');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len > kl && !strncmp(s, key, kl) && s[kl] == '=') {
			snprintf(val, sizeof(val), "%.*s", (int)(len - kl - 1), s + kl + 1);
			return val;
		}
		s = e ? e + 1 : NULL;
	}
	return NULL;
}

static int call(struct kiln_web_model *m, const char *path, const char *args,
		struct kiln_buf *out)
{
	struct q q;
	struct kiln_web_req r = { path, qarg, &q, NULL, "" };

	snprintf(q.buf, sizeof(q.buf), "%s", args);
	kiln_buf_reset(out);
	return kiln_web_api(m, &r, out);
}

static void test_root_path_escapes(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(call(m, "/api/flame", "root=main;a\\;b;rec", &out), 200);
	assert_non_null(strstr(out.data, "\"path\":[{\"name\":\"main\",\"total\":901},"
				  "{\"name\":\"a;b\",\"total\":800},{\"name\":\"rec\",\"total\":800}]"));
	assert_int_equal(call(m, "/api/flame", "root=main;back\\\\slash", &out), 200);
	assert_non_null(strstr(out.data, "{\"name\":\"back\\\\slash\",\"total\":100}"));
	/* Unescaped, "a;b" is two frames: a then b, and there is no "a". */
	assert_int_equal(call(m, "/api/flame", "root=main;a;b", &out), 404);
	assert_non_null(strstr(out.data, "no frame 'a'"));
	assert_int_equal(call(m, "/api/flame", "root=main;;rec", &out), 404);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_pixel_bound(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	/* tiny is 1 of 901: sent at 901 px, not at 900. */
	assert_int_equal(call(m, "/api/flame", "width=901", &out), 200);
	assert_non_null(strstr(out.data, "\"tiny\""));
	assert_non_null(strstr(out.data, "\"dropped\":0"));
	assert_int_equal(call(m, "/api/flame", "width=900", &out), 200);
	assert_null(strstr(out.data, "\"tiny\""));
	assert_non_null(strstr(out.data, "\"dropped\":1"));
	/* min=200 px at 901 px: only main (901), a;b (800), rec (800) and g
	 * (600), rec (600), leaf (600): back\slash (100 -> 100 px) is left. */
	assert_int_equal(call(m, "/api/flame", "width=901&min=200", &out), 200);
	assert_null(strstr(out.data, "back"));
	assert_non_null(strstr(out.data, "\"leaf\""));
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_sandwich_recursion(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	/* rec appears twice on the 600 stack: counted once (cum 900); it is the leaf of 200 + 100. */
	assert_int_equal(call(m, "/api/sandwich", "fn=rec", &out), 200);
	assert_non_null(strstr(out.data, "\"cum\":900,\"self\":300"));
	/* The same again comes from the kept sandwich. */
	assert_int_equal(call(m, "/api/sandwich", "fn=rec", &out), 200);
	assert_non_null(strstr(out.data, "\"cum\":900,\"self\":300"));
	assert_int_equal(call(m, "/api/sandwich", "fn=leaf", &out), 200);
	assert_non_null(strstr(out.data, "\"cum\":600,\"self\":600"));
	assert_int_equal(call(m, "/api/sandwich", "fn=nothing", &out), 404);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_selections(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;
	char args[64];
	int i;

	assert_int_equal(call(m, "/api/top", "focus=back", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":100,"));
	/* More selections than the cache holds, then the first again. */
	for (i = 0; i < 8; i++) {
		snprintf(args, sizeof(args), "ignore=tiny%d", i);
		assert_int_equal(call(m, "/api/flame", args, &out), 200);
	}
	assert_int_equal(call(m, "/api/top", "", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":901,"));
	assert_int_equal(call(m, "/api/top", "focus=back", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":100,"));
	assert_int_equal(call(m, "/api/top", "ignore=rec", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":1,"));
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

/*
 * The views kiln serve made before the first request (the first page of
 * each input, pinned) stay when the cache is over its budget: every
 * other view goes first, and the first page is never made again.
 */
static void test_pinned_stay(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;
	unsigned long made;
	char args[64];
	int i;

	assert_int_equal(kiln_web_model_warm(m), 0);
	kiln_web_model_set_cache(m, 1);		/* over it at once */
	for (i = 0; i < 8; i++) {
		snprintf(args, sizeof(args), "ignore=tiny%d", i);
		assert_int_equal(call(m, "/api/flame", args, &out), 200);
	}
	made = m->made;
	assert_int_equal(call(m, "/api/flame", "", &out), 200);
	assert_non_null(strstr(out.data, "\"leaf\""));
	assert_int_equal(m->made, made);	/* found, not made again */
	assert_int_equal(call(m, "/api/flame", "ignore=tiny0", &out), 200);
	assert_int_equal(m->made, made + 1);	/* the others went */
	kiln_buf_release(&out);
	kiln_web_model_free(m);
	(void)state;
}

/* Transforms (tf) are part of the selection: applied in every view,
 * keyed in the cache; the disassembler absent (never registered here, as
 * in libkiln.so): 404, not a crash. */
static void test_transforms(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(call(m, "/api/top", "tf=df:rec", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":1,"));
	assert_int_equal(call(m, "/api/top", "", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":901,"));
	/* A name holding ';' escaped; collapsing rec's recursion through g. */
	assert_int_equal(call(m, "/api/calltree", "tf=f:main/a\\;b;rec:rec", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":800,"));
	/* (One argument: this harness's qarg() keeps one value at a time.) */
	assert_int_equal(call(m, "/api/top", "tf=f:main/a\\;b;rec:rec", &out), 200);
	assert_non_null(strstr(out.data, "\"name\":\"leaf\""));
	assert_null(strstr(out.data, "\"name\":\"g\""));
	assert_null(strstr(out.data, "\"name\":\"main\""));
	assert_int_equal(call(m, "/api/flame", "tf=nope", &out), 400);
	assert_int_equal(call(m, "/api/disasm", "fn=leaf", &out), 404);
	assert_non_null(strstr(out.data, "no disassembler here"));
	assert_int_equal(call(m, "/api/disasm", "", &out), 400);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_errors(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(call(m, "/api/flame", "width=-3", &out), 400);
	assert_string_equal(out.data, "{\"error\":\"bad width '-3': want a whole number "
			    "from 1 to 100000\"}\n");
	assert_int_equal(call(m, "/api/flame", "reverse=2", &out), 400);
	assert_int_equal(call(m, "/api/flame", "p=1", &out), 400);
	assert_int_equal(call(m, "/api/top", "order=up", &out), 400);
	assert_int_equal(call(m, "/api/top", "filter=%5B", &out), 200);
	assert_int_equal(call(m, "/api/top", "filter=[", &out), 400);
	assert_int_equal(call(m, "/api/../etc/passwd", "", &out), 404);
	assert_int_equal(call(m, "/api/profiles", "", &out), 200);
	assert_non_null(strstr(out.data, "\"total\":901,"));
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

/* Source files for the source view: lines without their breaks (CRLF
 * too, the last line without one), and the refusals. */
static void test_source_read(void **state)
{
	char dir[] = "/tmp/kiln-test-web-XXXXXX", path[64];
	struct web_source src;
	const char *why, *l;
	size_t len;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.c", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("int a;\r\n\nint main(void)\n{ return a; }", f);
	fclose(f);
	assert_int_equal(kiln_web_source_read(path, &src, &why), 0);
	assert_null(why);
	assert_int_equal(src.n, 4);
	l = kiln_web_source_line(&src, 1, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(l, "int a;", 6);
	l = kiln_web_source_line(&src, 2, &len);
	assert_int_equal(len, 0);
	l = kiln_web_source_line(&src, 4, &len);
	assert_int_equal(len, 13);
	assert_memory_equal(l, "{ return a; }", 13);
	assert_null(kiln_web_source_line(&src, 5, &len));
	assert_null(kiln_web_source_line(&src, 0, &len));
	kiln_web_source_release(&src);
	/* A trailing line break adds no empty line. */
	f = fopen(path, "w");
	fputs("x\ny\n", f);
	fclose(f);
	assert_int_equal(kiln_web_source_read(path, &src, &why), 0);
	assert_int_equal(src.n, 2);
	l = kiln_web_source_line(&src, 2, &len);
	assert_int_equal(len, 1);
	assert_memory_equal(l, "y", 1);
	kiln_web_source_release(&src);
	/* Not text, not a regular file, missing: no text, why. */
	f = fopen(path, "w");
	fwrite("ab\0cd", 1, 5, f);
	fclose(f);
	assert_int_equal(kiln_web_source_read(path, &src, &why), 0);
	assert_null(src.text);
	assert_string_equal(why, "not text");
	assert_int_equal(kiln_web_source_read(dir, &src, &why), 0);
	assert_string_equal(why, "not a regular file");
	assert_int_equal(kiln_web_source_read("/dev/zero", &src, &why), 0);
	assert_string_equal(why, "not a regular file");
	assert_int_equal(kiln_web_source_read("/nonexistent/x.c", &src, &why), 0);
	assert_string_equal(why, "not readable on this machine");
	unlink(path);
	rmdir(dir);
	(void)state;
}

static void test_calltree(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	/* The hot path: main, a;b (escaped in the path), rec, g, rec; leaf
	 * has no children, so no level of its own. */
	assert_int_equal(call(m, "/api/calltree", "open=64", &out), 200);
	assert_non_null(strstr(out.data, "{\"path\":\"main;a\\\\;b;rec;g;rec\",\"children\":[[6,600,600,0,"));
	assert_null(strstr(out.data, "\"path\":\"main;a\\\\;b;rec;g;rec;leaf\""));
	/* main's children heaviest first (a;b 800, back\slash 100, tiny 1),
	 * cut at n=2: one more worth 1. */
	assert_int_equal(call(m, "/api/calltree", "path=main&n=2", &out), 200);
	assert_non_null(strstr(out.data, "\"children\":[[0,800,0,1,-1,0,"));
	assert_non_null(strstr(out.data, "\"more\":1,\"more_total\":1}"));
	assert_non_null(strstr(out.data, "\"names\":[\"a;b\",\"back\\\\slash\"]"));
	/* Only one level without open. */
	assert_null(strstr(out.data, "},{\"path\""));
	/* Inverted: leaf 600/600, rec 300/300 (its self), tiny 1; rec's
	 * callers have no self. */
	assert_int_equal(call(m, "/api/calltree", "reverse=1", &out), 200);
	assert_non_null(strstr(out.data, "\"children\":[[0,600,600,1,-1,0,3,-1],[1,300,300,2,"));
	assert_int_equal(call(m, "/api/calltree", "reverse=1&path=rec", &out), 200);
	assert_non_null(strstr(out.data, "\"children\":[[0,200,0,1,-1,0,3,-1],[1,100,0,1,"));
	/* A leaf's children: none (nothing to sort). */
	assert_int_equal(call(m, "/api/calltree", "path=main;tiny", &out), 200);
	assert_non_null(strstr(out.data, "\"children\":[],\"more\":0"));
	/* No labels at all. */
	assert_int_equal(call(m, "/api/labels", "", &out), 200);
	assert_non_null(strstr(out.data, "\"keys\":[]"));
	assert_int_equal(call(m, "/api/calltree", "path=main;nope", &out), 404);
	assert_int_equal(call(m, "/api/calltree", "n=0", &out), 400);
	assert_int_equal(call(m, "/api/calltree", "open=513", &out), 400);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_summary(void **state)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();
	const char *name = "s.pb.gz", *fmt = "pprof";
	struct kiln_buf out = KILN_BUF_INIT;
	struct kiln_web_model *m;
	uint32_t k_pid, k_thr;
	int i;

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	k_pid = kiln_prof_interns(p, "pid");
	k_thr = kiln_prof_interns(p, "thread");
	/* Two processes, three threads; two samples share a thread (and
	 * their labels: one record). */
	for (i = 0; i < 4; i++) {
		static const int64_t pid[] = { 10, 10, 20, 10 }, tid[] = { 10, 11, 20, 11 };
		struct kiln_label l[2] = { { k_pid, 0, pid[i], 0 }, { k_thr, 0, tid[i], 0 } };
		struct kiln_line ln = { kiln_prof_function(p, kiln_prof_interns(p, "f"), 0, 0, 0), 0 };
		uint32_t loc = kiln_prof_location(p, 0, 0x1000, &ln, 1);
		int64_t v = i + 1;

		assert_true(kiln_prof_add_sample(p, &loc, 1, &v, kiln_prof_labelset(p, l, 2)) >= 0);
	}
	/* Notes first: the command line is the first comment that is none. */
	assert_int_equal(kiln_prof_add_comment(p, "hostname: box, kernel 6.1"), 0);
	assert_int_equal(kiln_prof_add_comment(p, "perf lost 7 records"), 0);
	assert_int_equal(kiln_prof_add_comment(p, "./server --port 1"), 0);
	p->period = 1000;
	m = kiln_web_model_new(&p, &name, &fmt, 1);
	assert_non_null(m);
	assert_int_equal(call(m, "/api/summary", "", &out), 200);
	assert_non_null(strstr(out.data, "\"command\":\"./server --port 1\",\"host\":\"box, kernel 6.1\",\"event\":null,\"lost\":7,"));
	assert_non_null(strstr(out.data, "\"period\":1000,"));
	assert_non_null(strstr(out.data, "\"samples\":10,"));
	assert_non_null(strstr(out.data, "\"records\":3,\"processes\":2,\"threads\":3,\"time_span\":null"));
	assert_null(strstr(out.data, "\"heap\""));
	/* Kept: the same answer again. */
	{
		char *first = strdup(out.data);

		assert_int_equal(call(m, "/api/summary", "", &out), 200);
		assert_string_equal(out.data, first);
		free(first);
	}
	/* The selection: focus on nothing that matches leaves no samples. */
	assert_int_equal(call(m, "/api/summary", "ignore=f", &out), 200);
	assert_non_null(strstr(out.data, "\"selection\":{\"type\":\"samples\",\"unit\":\"count\",\"total\":0,"));
	assert_non_null(strstr(out.data, "\"records\":0,\"processes\":0,\"threads\":0"));
	assert_int_equal(call(m, "/api/summary", "p=3", &out), 400);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
}

static void test_assets(void **state)
{
	const struct kiln_web_asset *a = kiln_web_asset("/");

	assert_non_null(a);
	assert_non_null(strstr(a->type, "text/html"));
	assert_true(a->len > 100);
	assert_non_null(kiln_web_asset("/app.js"));
	assert_non_null(kiln_web_asset("/calltree.js"));
	assert_non_null(kiln_web_asset("/summary.js"));
	assert_null(kiln_web_asset("/index.html"));
	assert_null(kiln_web_asset("/../app.js"));
	assert_null(kiln_web_asset(""));
}

/* The heap views of a trace loaded as kiln serve loads it: the sites'
 * series, the allocation list's leaks (heapbasic leaks 20480 + 4096
 * bytes, its collapsed fixture says), filters, paging and errors. */
static void test_heap_views(void **state)
{
	const char *dir = getenv("KILN_FIXTURES"), *name = "heapbasic.trace.zst";
	struct kiln_buf trace = KILN_BUF_INIT, out = KILN_BUF_INIT;
	struct kiln_diag d = { "" };
	struct kiln_web_model *m = kiln_web_model_new_pending(&name, 1);
	char path[1024], buf[4096];
	FILE *f;
	size_t n;

	assert_non_null(m);
	snprintf(path, sizeof(path), "%s/heaptrace/%s", dir ? dir : "tests/fixtures", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		assert_int_equal(kiln_buf_add(&trace, buf, n), 0);
	fclose(f);
	assert_int_equal(kiln_web_model_set_input(m, 0, NULL, "heap-trace", &trace, &d), 0);
	kiln_web_model_ready(m, NULL);

	assert_int_equal(call(m, "/api/heap/sites", "n=3", &out), 200);
	assert_non_null(strstr(out.data, "\"sites\":[{\"stack\":"));
	assert_non_null(strstr(out.data, "\"calls\":["));
	assert_non_null(strstr(out.data, "\"sizes\":[["));
	assert_int_equal(call(m, "/api/heap/sites", "t0=5&t1=5", &out), 400);
	assert_int_equal(call(m, "/api/heap/allocs", "alive=end", &out), 200);
	assert_non_null(strstr(out.data, "\"bytes\":24576,"));
	assert_non_null(strstr(out.data, "\"to_end\":true,\"bytes_read\":0,"));
	assert_non_null(strstr(out.data, "\"sites\":{\""));
	/* Five of the six blocks come from one stack (13), the sixth is
	 * stdio's buffer. */
	assert_int_equal(call(m, "/api/heap/allocs", "alive=end&site=13", &out), 200);
	assert_non_null(strstr(out.data, "\"count\":5,\"bytes\":20480,"));
	assert_int_equal(call(m, "/api/heap/allocs", "alive=end&size_max=4095", &out), 200);
	assert_non_null(strstr(out.data, "\"count\":0,"));
	assert_int_equal(call(m, "/api/heap/allocs", "n=1&offset=1", &out), 200);
	assert_non_null(strstr(out.data, "\"offset\":1,"));
	assert_int_equal(call(m, "/api/heap/allocs", "life_min=2&life_max=1", &out), 400);
	assert_int_equal(call(m, "/api/heap/allocs", "alive=later", &out), 400);
	assert_int_equal(call(m, "/api/heap/allocs", "n=10001", &out), 400);
	kiln_buf_release(&out);
	kiln_buf_release(&trace);
	kiln_web_model_free(m);
	(void)state;
}

/* Not a heap trace: no heap views. */
static void test_heap_views_other(void **state)
{
	struct kiln_web_model *m = model();
	struct kiln_buf out = KILN_BUF_INIT;

	assert_int_equal(call(m, "/api/heap/sites", "", &out), 400);
	assert_non_null(strstr(out.data, "not a kiln heap trace"));
	assert_int_equal(call(m, "/api/heap/allocs", "", &out), 400);
	kiln_buf_release(&out);
	kiln_web_model_free(m);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_path_escapes),
		cmocka_unit_test(test_pixel_bound),
		cmocka_unit_test(test_sandwich_recursion),
		cmocka_unit_test(test_selections),
		cmocka_unit_test(test_pinned_stay),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_transforms),
		cmocka_unit_test(test_assets),
		cmocka_unit_test(test_calltree),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_source_read),
		cmocka_unit_test(test_heap_views),
		cmocka_unit_test(test_heap_views_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
