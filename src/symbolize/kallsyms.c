/*
 * Kernel symbols from /proc/kallsyms (symbolize stage).
 */
#include "symbolize/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/file.h"

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in names */
};

struct kiln_kallsyms {
	struct ksym *syms;
	size_t n;
	char *names;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct kiln_kallsyms *kiln_kallsyms_parse(const char *text, size_t len)
{
	struct kiln_kallsyms *k = calloc(1, sizeof(*k));
	struct kiln_buf names = KILN_BUF_INIT;
	const char *p = text, *end = text + len;
	size_t alloc = 0;
	bool nonzero = false;

	if (!k)
		return NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *q;
		unsigned long long addr = 0;
		char type;
		size_t nlen;

		for (q = p; q < e && *q != ' '; q++) {
			int c = *q, v;

			v = c >= '0' && c <= '9' ? c - '0' :
			    c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
			if (v < 0)
				break;
			addr = addr * 16 + (unsigned)v;
		}
		if (q + 3 >= e || *q != ' ' || q[2] != ' ')
			goto next;
		type = q[1];
		q += 3;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			goto next;
		nlen = (size_t)(e - q);
		{
			/* "name\t[module]" -> "name [module]" */
			const char *tab = memchr(q, '\t', nlen);

			if (k->n == alloc) {
				size_t na = alloc ? alloc * 2 : 65536;
				struct ksym *s = realloc(k->syms, na * sizeof(*s));

				if (!s)
					goto out_free;
				k->syms = s;
				alloc = na;
			}
			k->syms[k->n].addr = addr;
			k->syms[k->n].name = (uint32_t)names.len;
			if (tab) {
				if (kiln_buf_add(&names, q, (size_t)(tab - q)) ||
				    kiln_buf_addc(&names, ' ') ||
				    kiln_buf_add(&names, tab + 1,
						 (size_t)(e - tab - 1)))
					goto out_free;
			} else if (kiln_buf_add(&names, q, nlen)) {
				goto out_free;
			}
			if (kiln_buf_addc(&names, '\0'))
				goto out_free;
			k->n++;
			nonzero |= addr != 0;
		}
next:
		p = e + 1;
	}
	if (!nonzero) {
		errno = EACCES;
		goto out_free_keep_errno;
	}
	k->names = kiln_buf_detach(&names, NULL);
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	return k;
out_free:
	errno = ENOMEM;
out_free_keep_errno:
	kiln_buf_release(&names);
	free(k->syms);
	free(k);
	return NULL;
}

struct kiln_kallsyms *kiln_kallsyms_load(void)
{
	struct kiln_map m;
	struct kiln_kallsyms *k;
	int err = kiln_map_open(&m, "/proc/kallsyms");

	if (err) {
		errno = -err;
		return NULL;
	}
	k = kiln_kallsyms_parse(m.data, m.len);
	kiln_map_release(&m);
	return k;
}

void kiln_kallsyms_free(struct kiln_kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *kiln_kallsyms_lookup(const struct kiln_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!k || !k->n || addr < k->syms[0].addr)
		return NULL;
	hi = k->n;
	/* The last symbol starting at or before addr. */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->names + k->syms[lo].name;
}
