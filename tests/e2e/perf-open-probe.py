#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whether this process may open a perf event: a user-space cpu-clock
counter on itself, through the perf_event_open system call (x86-64).

Exit 0 when it opens, 1 when refused (EACCES or EPERM), 2 otherwise.
An independent check for the tests of kiln doctor (no kiln code).
"""
import ctypes
import errno
import os
import struct
import sys

SYS_perf_event_open = 298  # x86-64
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK = 1, 0
DISABLED, EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6

attr = bytearray(128)
struct.pack_into("<IIQ", attr, 0, PERF_TYPE_SOFTWARE, len(attr), PERF_COUNT_SW_CPU_CLOCK)
struct.pack_into("<Q", attr, 40, DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = (ctypes.c_char * len(attr)).from_buffer(attr)
fd = libc.syscall(ctypes.c_long(SYS_perf_event_open), buf, ctypes.c_int(0),
                  ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0))
if fd >= 0:
    os.close(fd)
    sys.exit(0)
err = ctypes.get_errno()
print("perf_event_open: %s" % os.strerror(err), file=sys.stderr)
sys.exit(1 if err in (errno.EACCES, errno.EPERM) else 2)
