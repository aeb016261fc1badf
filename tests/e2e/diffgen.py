#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes synthetic CPU profiles (gzipped pprof) for the kiln diff tests:
each a multinomial draw of N samples over functions of known shares, as a
sampling profiler would see a program that spends those shares of its time
in them.  Stacks are main;run;stage_X;burn_X (tiny_K directly under run).
Usage: diffgen.py OUT SEED N NAME=SHARE...
SHARE in percent (normalised to their sum); SHARE~J draws the share
uniformly from SHARE-J..SHARE+J for each profile (runs that vary more than
sampling alone would make them).  SEED may be FIRST+COUNT and
OUT then holds %d: COUNT files OUT % j for j = 1..COUNT, seeds FIRST + j
(one python start for many profiles).  Types samples/count and
cpu/nanoseconds (period 10 ms, as at 99 Hz).  The same SEED, the same file.
Only the standard library: the encoding is protobuf's wire format."""
import gzip
import random
import sys

PERIOD = 10101010


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


def packed(vals):
    return b"".join(varint(v) for v in vals)


def main():
    out, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    names, weights = [], []
    for spec in sys.argv[4:]:
        name, share = spec.split("=")
        names.append(name)
        weights.append(tuple(float(x) for x in share.split("~")) + (0,))
    if "+" in seed:
        first, count = (int(x) for x in seed.split("+"))
        for j in range(1, count + 1):
            write(out % j, first + j, n, names, weights)
    else:
        write(out, int(seed), n, names, weights)


def write(out, seed, n, names, weights):
    rng = random.Random(seed)
    weights = [w[0] + rng.uniform(-w[1], w[1]) for w in weights]
    counts = dict.fromkeys(names, 0)
    for name in rng.choices(names, weights, k=n):
        counts[name] += 1

    strings = [""]
    funcs = {}

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    def fid(x):
        if x not in funcs:
            funcs[x] = len(funcs) + 1
        return funcs[x]

    msg = field(1, 2, field(1, 0, s("samples")) + field(2, 0, s("count")))
    msg += field(1, 2, field(1, 0, s("cpu")) + field(2, 0, s("nanoseconds")))
    for name in names:
        if not counts[name]:
            continue
        if name.startswith("burn_"):
            stack = [name, "stage_" + name[5:], "run", "main"]
        else:
            stack = [name, "run", "main"]
        # Location ids = function ids: one frame per location.
        locs = [fid(f) for f in stack]
        msg += field(2, 2, field(1, 2, packed(locs)) +
                     field(2, 2, packed([counts[name],
                                         counts[name] * PERIOD])))
    for f, i in funcs.items():
        msg += field(4, 2, field(1, 0, i) + field(3, 0, 0x1000 * i) +
                     field(4, 2, field(1, 0, i) + field(2, 0, 10 + i)))
        msg += field(5, 2, field(1, 0, i) + field(2, 0, s(f)) +
                     field(3, 0, s(f)) + field(4, 0, s("synthetic.c")))
    msg += field(11, 2, field(1, 0, s("cpu")) + field(2, 0, s("nanoseconds")))
    msg += field(12, 0, PERIOD)
    for x in strings:
        msg += field(6, 2, x.encode())
    with open(out, "wb") as f:
        f.write(gzip.compress(msg, mtime=0))


main()
