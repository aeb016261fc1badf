#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a pprof profile (gzipped protobuf) with two sample types,
samples/count and cpu/nanoseconds, and stacks of several frames, for tests
that need known numbers in more than one type.
Usage: mkpprof-stacks.py OUT STACK=COUNT,NANOSECONDS ...
STACK is FRAME;FRAME;... outermost first, each FRAME NAME@FILE:LINE (one
location per distinct frame).  Only the standard library."""
import gzip
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    strings = [""]
    funcs, locs = {}, {}

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    msg = field(1, 2, field(1, 0, s("samples")) + field(2, 0, s("count")))
    msg += field(1, 2, field(1, 0, s("cpu")) + field(2, 0, s("nanoseconds")))
    tail = b""
    for spec in specs:
        stack, values = spec.rsplit("=", 1)
        ids = []
        for frame in stack.split(";"):
            name, where = frame.split("@")
            path, line = where.rsplit(":", 1)
            if name not in funcs:
                funcs[name] = len(funcs) + 1
                tail += field(5, 2, field(1, 0, funcs[name]) + field(2, 0, s(name)) +
                              field(3, 0, s(name)) + field(4, 0, s(path)))
            if frame not in locs:
                locs[frame] = len(locs) + 1
                tail += field(4, 2, field(1, 0, locs[frame]) +
                              field(3, 0, 0x1000 * locs[frame]) +
                              field(4, 2, field(1, 0, funcs[name]) +
                                    field(2, 0, int(line))))
            ids.append(locs[frame])
        # Sample: location ids leaf first (packed), values (packed).
        vals = [int(v) for v in values.split(",")]
        msg += field(2, 2, field(1, 2, b"".join(varint(i) for i in reversed(ids))) +
                     field(2, 2, b"".join(varint(v) for v in vals)))
    msg += tail
    for x in strings:
        msg += field(6, 2, x.encode())
    with open(out, "wb") as f:
        f.write(gzip.compress(msg))


main()
