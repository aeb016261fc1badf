/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnostics (util stage). */
#include "util/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int kiln_diag(struct kiln_diag *d, const char *fmt, ...)
{
	va_list ap;

	if (d) {
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void kiln_diag_warn(struct kiln_diag *d, const char *fmt, ...)
{
	va_list ap;

	if (d) {
		va_start(ap, fmt);
		vsnprintf(d->warn, sizeof(d->warn), fmt, ap);
		va_end(ap);
	}
}
