#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares two recordings of one process, given as `perf script` text
(perf's own, with -F pid,ip,sym, and kiln's, from kiln convert --to
perf-script), kernel frames left out: the samples of PID in each, their leaf functions' shares,
the share of unnamed leaves and the share of stacks that hold ROOT (a
function every complete stack of the program passes through).

usage: stackcmp.py PID PERF.txt KILN.txt ROOT [MARGIN [NAME1 NAME2]]

(NAME1 and NAME2 name the two sides in the output: perf and kiln by
default; the agent's test compares it with kiln record.)

Prints both sides' figures, then one line per failed check and exits 1
if any failed:
- each side has at least 100 samples of PID;
- each of perf's ten hottest leaves with 2% or more has kiln's share
  within MARGIN points (default 3), or within 4 standard deviations of
  the difference of two samplings where that is more (two samplers of
  one process sample different instants: at 1,000 samples each a 65%
  share's difference has a standard deviation of 2.1 points);
- kiln's unnamed leaves at most perf's + 1 point + MARGIN / 3;
- kiln's stacks reach ROOT as often as perf's, less 5 points, and in
  95% of samples where perf's do in 95%.
"""
import collections
import math
import re
import sys


def strip_params(name):
    """f(int) const -> f, as perf script prints demangled names."""
    s = name[:-6] if name.endswith(') const') else name
    if not s.endswith(')') or name.startswith('JS:'):
        return name
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {')': 1, '(': -1}.get(s[i], 0)
        if depth == 0:
            return s[:i] if i > 0 else name
    return name


def read(path, pid):
    """The stacks (leaf first, names only) of PID's samples in path, but
    those of libkiln.so's own work (its threads, named kiln-*, and its
    code on the host's threads), which the agent leaves out of the
    profiles it writes by design: kiln record of a program running the
    agent counts them, a few points of its samples."""
    out, cur, own = [], None, False
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line.strip():
                if cur is not None and not own:
                    out.append(cur)
                cur = None
                continue
            if not line[0].isspace() or re.match(r'^ *\d+ *$', line):
                if cur is not None and not own:
                    out.append(cur)
                m = re.match(r'^\s*(?:\S.*?\s)?(\d+)(?:/\d+)?\s', line + ' ')
                cur = [] if m and m.group(1) == pid else None
                own = line.startswith('kiln-')
                continue
            if cur is None:
                continue
            f = line.split(None, 1)
            if len(f[0]) == 16 and f[0] >= 'ffff8':
                continue    # a kernel frame: kiln counts that time on the user stack
            if re.search(r'/libkiln(-malloc)?\.so\)$', line):
                own = True
            name = f[1] if len(f) > 1 else '[unknown]'
            name = re.sub(r' \([^()]*\)$', '', name)     # " (DSO)"
            name = re.sub(r'\+0x[0-9a-f]+$', '', name)   # "sym+0x12"
            cur.append(strip_params(name))
    if cur is not None and not own:
        out.append(cur)
    return out


def unnamed(name):
    return (name.startswith('[') or name.startswith('//anon') or
            re.match(r'^(0x)?[0-9a-f]+$', name) is not None)


def figures(stacks, root):
    n = len(stacks)
    leaves = collections.Counter(s[0] for s in stacks if s)
    return {
        'n': n,
        'leaf': {k: 100.0 * v / n for k, v in leaves.items()} if n else {},
        'unnamed': 100.0 * sum(1 for s in stacks if not s or unnamed(s[0])) / max(n, 1),
        'root': 100.0 * sum(1 for s in stacks if root in s) / max(n, 1),
        'depth': sum(len(s) for s in stacks) / max(n, 1),
    }


def main():
    pid, perf_txt, kiln_txt, root = sys.argv[1:5]
    margin = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0
    pn, kn = sys.argv[6:8] if len(sys.argv) > 7 else ('perf', 'kiln')
    p = figures(read(perf_txt, pid), root)
    k = figures(read(kiln_txt, pid), root)
    for name, x in ((pn, p), (kn, k)):
        print('%s: %d samples, %.1f%% reach %s, %.1f%% unnamed leaves, '
              'mean depth %.1f' % (name, x['n'], x['root'], root,
                                   x['unnamed'], x['depth']))
    bad = []
    for name, x in ((pn, p), (kn, k)):
        if x['n'] < 100:
            bad.append('%s has %d samples of %s (100 needed)' % (name, x['n'], pid))
    if bad:
        print('\n'.join(bad))
        return 1
    print("%s's ten hottest leaves (%s%%, %s%%):" % (pn, pn, kn))
    for f, v in sorted(p['leaf'].items(), key=lambda kv: -kv[1])[:10]:
        got = k['leaf'].get(f, 0.0)
        # Two samplers' shares of one process differ by chance: the
        # bound grows to 4 standard deviations of that difference where
        # the samples are few (a loaded machine).
        q = (v + got) / 200.0
        tol = max(margin, 400.0 * math.sqrt(q * (1 - q) * (1.0 / p['n'] + 1.0 / k['n'])))
        print('  %5.1f %5.1f  %s' % (v, got, f))
        if v >= 2.0 and abs(got - v) > tol:
            bad.append('%s: %s %.1f%%, %s %.1f%% (more than %.1f points apart)'
                       % (f, kn, got, pn, v, tol))
    if k['unnamed'] > p['unnamed'] + 1 + margin / 3:
        bad.append('unnamed leaves: %s %.1f%%, %s %.1f%%' % (kn, k['unnamed'], pn, p['unnamed']))
    if k['root'] < p['root'] - 5 or (p['root'] >= 95 and k['root'] < 95):
        bad.append('stacks reaching %s: %s %.1f%%, %s %.1f%%' % (root, kn, k['root'], pn, p['root']))
    if bad:
        print('\n'.join(bad))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
