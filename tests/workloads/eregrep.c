/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helper of t960 (not a workload): how kiln serve's server matches names.
 * Reads lines "PATTERN" then names from stdin, separated by a line "--":
 * for each pattern prints one line of 0/1/E per name (E: the pattern does
 * not compile), matching as src/web/api-tree.c does (regcomp with
 * REG_EXTENDED | REG_NOSUB, REG_ICASE for a leading "(?i)"), in the C
 * locale.
 * Usage: eregrep < INPUT
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char line[4096];
	char **pats = NULL, **names = NULL;
	size_t np = 0, nn = 0, i, j;
	int names_now = 0;

	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!names_now && !strcmp(line, "--")) {
			names_now = 1;
			continue;
		}
		if (names_now) {
			names = realloc(names, (nn + 1) * sizeof(*names));
			names[nn++] = strdup(line);
		} else {
			pats = realloc(pats, (np + 1) * sizeof(*pats));
			pats[np++] = strdup(line);
		}
	}
	for (i = 0; i < np; i++) {
		const char *src = pats[i];
		int flags = REG_EXTENDED | REG_NOSUB;
		regex_t re;

		if (!strncmp(src, "(?i)", 4)) {
			flags |= REG_ICASE;
			src += 4;
		}
		if (regcomp(&re, src, flags)) {
			for (j = 0; j < nn; j++)
				putchar('E');
		} else {
			for (j = 0; j < nn; j++)
				putchar(regexec(&re, names[j], 0, NULL, 0) ? '0' : '1');
			regfree(&re);
		}
		putchar('\n');
	}
	for (i = 0; i < np; i++)
		free(pats[i]);
	for (j = 0; j < nn; j++)
		free(names[j]);
	free(pats);
	free(names);
	return 0;
}
