#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a deterministic synthetic profile as collapsed stacks, for the
call graph tests: a few thousand stacks over a few hundred functions with
direct recursion (f;f), mutual recursion (a;b;a), functions reached from
many callers, and heavy-tailed weights so that pruning by --node-fraction,
--edge-fraction and --nodes all have work to do.

Usage: callgraph-gen.py SEED NSTACKS NFUNCS > out.collapsed
"""
import random
import sys

seed, nstacks, nfuncs = (int(a) for a in sys.argv[1:4])
rng = random.Random(seed)
names = ['fn_%03d' % i for i in range(nfuncs)]
# Each function calls a few preferred callees, so that the graph has
# structure and shared callees rather than noise.
callees = [[(i * 7 + k * 13 + 1) % nfuncs for k in range(3)]
           for i in range(nfuncs)]
counts = {}
for _ in range(nstacks):
    stack = ['main']
    cur = rng.randrange(nfuncs)
    stack.append(names[cur])
    depth = 2 + int(rng.random() * 14)
    for _ in range(depth):
        r = rng.random()
        if r < 0.08:
            nxt = cur                        # direct recursion
        elif r < 0.12 and len(stack) > 3:
            nxt = names.index(stack[-2])     # back to the caller: a cycle
        else:
            nxt = callees[cur][int(rng.random() * 3)]
        stack.append(names[nxt])
        cur = nxt
    key = ';'.join(stack)
    counts[key] = counts.get(key, 0) + max(1, int(10 * rng.paretovariate(1.1)))
for k in sorted(counts):
    print(k, counts[k])
