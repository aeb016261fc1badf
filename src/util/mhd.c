/* SPDX-License-Identifier: Apache-2.0 */
/* libmicrohttpd loaded on first use: see mhd.h. */
#define KILN_MHD_TABLE
#include <microhttpd.h>

#include "util/mhd.h"

union kiln_mhd_fns kiln_mhd_fns;
static const char *const names[] = { KILN_MHD_FNS(KILN_LAZY_NAME_) };
static struct kiln_lazylib mhd = {
	KILN_SONAME_MHD, KILN_PKG_MHD, names, kiln_mhd_fns.slot,
	sizeof(names) / sizeof(*names), PTHREAD_MUTEX_INITIALIZER, 0, ""
};

int kiln_mhd_open(struct kiln_diag *d)
{
	return kiln_lazylib_open(&mhd, d);
}
