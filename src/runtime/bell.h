/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A doorbell from signal handlers to one of kiln's threads (runtime stage):
 * a word of request bits in memory and a futex.  It replaces the pipes
 * the handlers used to write to: a pipe is two fd numbers that the host
 * can close and reuse for its own files (a daemon closing 3..1023), and a
 * handler writing a byte to the number would write it into the host's
 * file; memory cannot be taken that way, and survives fork as it is.
 */
#ifndef KILN_RUNTIME_BELL_H
#define KILN_RUNTIME_BELL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct kiln_bell {
	_Atomic uint32_t bits;	/* requests not taken yet; the futex word */
};
#define KILN_BELL_INIT { 0 }

/* Sets bits and wakes the waiter.  Async-signal-safe. */
void kiln_bell_ring(struct kiln_bell *b, uint32_t bits);

/*
 * Waits until a bit is set, at most timeout_ms (< 0: for ever), and takes
 * every bit set.  Returns them, 0 on timeout.  Async-signal-safe (only
 * futex and clock_gettime), so a handler may wait for an answer with it.
 */
uint32_t kiln_bell_take(struct kiln_bell *b, int timeout_ms);

/*
 * Waits until bit is set, at most timeout_ms from now (>= 0), taking
 * every bit set meanwhile (other bits are dropped: for a bell only one
 * waiter uses).  Whether bit came.  Async-signal-safe.
 */
bool kiln_bell_wait_bit(struct kiln_bell *b, uint32_t bit, int timeout_ms);

#endif
