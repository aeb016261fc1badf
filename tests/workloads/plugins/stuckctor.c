/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A library whose constructor never returns (tests/workloads/sigdlopen.c):
 * it tells the program it started, through the fd in STUCK_FD, then
 * waits for ever with the dynamic loader's lock held by dlopen().
 */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void stuck(void)
{
	const char *fd = getenv("STUCK_FD");

	if (fd && write(atoi(fd), "s", 1) < 0)
		_exit(3);
	for (;;)
		pause();
}
