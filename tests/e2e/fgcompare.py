#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares kiln's collapsed output of a perf script file with FlameGraph's.

    fgcompare.py EXPECTED KILN INPUT

EXPECTED is stackcollapse-perf.pl --kernel's output (a golden file from
FlameGraph's test/results/), KILN is `kiln convert INPUT -o X.collapsed`.
Both are brought to one form: FlameGraph's root frame (the command name)
is dropped, as kiln's collapsed output has none; "_[k]" marks go (kiln marks
[kernel.kallsyms] frames, FlameGraph also vmlinux ones).  FlameGraph also
tidies names for display, which kiln does not (it keeps perf's names, as
perf report shows them): the same tidying is applied to both sides, so
that the comparison is of what was read, not of how names are shortened:
a name is cut at its first '(' (not in "(anonymous namespace)" nor a Go
method "pkg.(*T).m"), quotes go, and a Java "Lpkg/Class;" loses its 'L'.
A frame perf printed without a symbol ("ADDR  (DSO)") FlameGraph names " ",
kiln "[DSO]": where the input has such frames of one module only, FlameGraph's
" " is read as that "[DSO]".

Prints the weight of stacks the two agree on (min of both per stack) as a
share of FlameGraph's total, and both totals; exit status 1 when the share
is below 99% or the totals differ other than by the last sample of an
input that does not end with a blank line (FlameGraph drops it).
"""
import re
import sys


def tidy(name):
    name = name.replace('_[k]', '')
    if not re.search(r'\.\(.*\)\.', name):
        name = re.sub(r'\((?!anonymous namespace\)).*', '', name)
    name = name.replace('"', '').replace("'", '')
    if '/' in name and name.startswith('L'):
        name = name[1:]
    return name


def load(path, drop_root, blank=None):
    out = {}
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            stack, _, count = line.rpartition(' ')
            frames = stack.split(';')
            if drop_root:
                frames = frames[1:]
            if blank:
                frames = [blank if x == ' ' else x for x in frames]
            key = ';'.join(tidy(x) for x in frames)
            out[key] = out.get(key, 0) + int(count)
    return out


def last_sample_weight(path):
    """The period of the last sample when the file does not end with a
    blank line (stackcollapse-perf.pl only counts a sample at one)."""
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()             # the final line break
    if not lines or not lines[-1].strip():
        return 0                # ends with a blank line: nothing dropped
    for line in reversed(lines):
        if line and not line[0].isspace() and re.search(r':\s*$', line):
            m = re.search(r':\s*(\d+)\s+\S+:\s*$', line)
            return int(m.group(1)) if m else 1
    return 0


def blank_symbol_modules(path):
    """Modules of the frames the input prints without a symbol
    ("ADDR  (DSO)").  FlameGraph names such a frame " " (its pattern takes
    the blank for the name), kiln by its module as for [unknown]."""
    mods = set()
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            m = re.match(r'^\s*[0-9a-f]+\s{2,}\((.*)\)\s*$', line)
            if m:
                mods.add('[%s]' % m.group(1).rsplit('/', 1)[-1])
    return mods


def main():
    mods = blank_symbol_modules(sys.argv[3])
    exp = load(sys.argv[1], True, mods.pop() if len(mods) == 1 else None)
    got = load(sys.argv[2], False)
    te, tg = sum(exp.values()), sum(got.values())
    same = sum(min(v, got.get(k, 0)) for k, v in exp.items())
    share = same / te if te else 0.0
    print('%s: %.2f%% of %d identical, totals %d (FlameGraph) %d (kiln)'
          % (sys.argv[3], 100 * share, te, te, tg))
    ok = share >= 0.99
    if tg != te and tg - te != last_sample_weight(sys.argv[3]):
        print('  totals differ by %d' % (tg - te))
        ok = False
    if not ok:
        worst = sorted(((v - got.get(k, 0), k) for k, v in exp.items()),
                       reverse=True)[:5]
        for d, k in worst:
            if d > 0:
                print('  missing %d: %s' % (d, k))
        extra = sorted(((v - exp.get(k, 0), k) for k, v in got.items()),
                       reverse=True)[:5]
        for d, k in extra:
            if d > 0:
                print('  extra %d: %s' % (d, k))
    return 0 if ok else 1


sys.exit(main())
