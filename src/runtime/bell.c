/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Doorbells from signal handlers to kiln's threads (runtime stage): see
 * bell.h.  Async-signal-safe throughout.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/bell.h"

void kiln_bell_ring(struct kiln_bell *b, uint32_t bits)
{
	int saved = errno;

	atomic_fetch_or(&b->bits, bits);
	syscall(SYS_futex, &b->bits, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = saved;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint32_t kiln_bell_take(struct kiln_bell *b, int timeout_ms)
{
	int saved = errno;
	int64_t end = timeout_ms >= 0 ? now_ns() + (int64_t)timeout_ms * 1000000 : 0;
	uint32_t v;

	while (!(v = atomic_exchange(&b->bits, 0))) {
		struct timespec ts, *tp = NULL;

		if (timeout_ms >= 0) {
			int64_t left = end - now_ns();

			if (left <= 0)
				break;
			ts.tv_sec = (time_t)(left / 1000000000);
			ts.tv_nsec = (long)(left % 1000000000);
			tp = &ts;
		}
		/* Sleeps only while the word is still 0. */
		syscall(SYS_futex, &b->bits, FUTEX_WAIT_PRIVATE, 0, tp, NULL, 0);
	}
	errno = saved;
	return v;
}

bool kiln_bell_wait_bit(struct kiln_bell *b, uint32_t bit, int timeout_ms)
{
	int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		int64_t left = end - now_ns();

		if (left <= 0)
			return false;
		/* Rounded up: a wait of 0 ms would not wait. */
		if (kiln_bell_take(b, (int)((left + 999999) / 1000000)) & bit)
			return true;
	}
}
