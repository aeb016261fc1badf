#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a small pprof profile (gzipped protobuf) by hand, for tests that
need a profile of a given shape, such as a crafted one naming any file.
Usage: mkpprof.py OUT NAME=FILE:LINE[=COUNT] ...
Each argument is one function, in one sample of COUNT (default 10)
samples/count with a one-frame stack at FILE:LINE (MKPPROF_TYPE=TYPE/UNIT,
e.g. inuse_space/bytes, names another sample type).  Only the standard
library: the encoding is protobuf's wire format, written here."""
import gzip
import os
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

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    vtype, unit = os.environ.get("MKPPROF_TYPE", "samples/count").split("/")
    msg = field(1, 2, field(1, 0, s(vtype)) + field(2, 0, s(unit)))
    for i, spec in enumerate(specs, 1):
        name, rest = spec.split("=", 1)
        count = 10
        if "=" in rest:
            rest, count = rest.split("=")
            count = int(count)
        path, line = rest.rsplit(":", 1)
        # Sample: location_id (packed), value (packed).
        msg += field(2, 2, field(1, 2, varint(i)) + field(2, 2, varint(count)))
        # Location: id, address, line { function_id, line }.
        msg += field(4, 2, field(1, 0, i) + field(3, 0, 0x1000 * i) +
                     field(4, 2, field(1, 0, i) + field(2, 0, int(line))))
        # Function: id, name, system_name, filename, start_line.
        msg += field(5, 2, field(1, 0, i) + field(2, 0, s(name)) +
                     field(3, 0, s(name)) + field(4, 0, s(path)) +
                     field(5, 0, int(line)))
    for x in strings:
        msg += field(6, 2, x.encode())
    with open(out, "wb") as f:
        f.write(gzip.compress(msg))


main()
