#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads call graph DOT text for the tests.

Usage: callgraph-dot.py list KILN.dot
         one line per node "node NAME TOTAL SELF" and per edge
         "edge CALLER CALLEE WEIGHT residual|direct" (self loops too)
       callgraph-dot.py reach KILN.dot
         checks that every node is reachable from a root (a node without
         callers other than itself); exit 1 listing those that are not
       callgraph-dot.py compare KILN.dot PPROF.dot
         compares kiln's DOT with `go tool pprof -dot` on the same profile
         at the same thresholds, as below.

compare:

Checked: the same set of kept nodes, each with the same total (pprof's
cum) and self (flat) values; the same "Dropped N nodes" and "top N nodes
out of M" counts; the same edges with the same weights, residual or not.
Allowed differences, by design:
  - kiln draws direct recursion (f calling f) as a self loop on f; pprof
    leaves those edges out.  Self loops are not compared.
  - the legends' wording, the colours and the sizes differ.
Values are compared as integers, so the profile must have a count unit
(collapsed stacks converted to pprof give samples/count).
Exit status 0 when they agree, 1 with the differences listed.
"""
import re
import sys


def unescape(s):
    return s.replace('\\"', '"').replace('\\\\', '\\')


def num(v):
    """An integer value, or the text as printed with its unit ("1.50s")."""
    return int(v) if re.fullmatch(r'-?\d+', v) else v


def parse(path, kind):
    text = open(path).read()
    nodes, edges, ids = {}, {}, {}
    legend = ''
    for m in re.finditer(r'^\s*(N\d+) \[(.*)\]$', text, re.M):
        nid, attrs = m.group(1), m.group(2)
        label = re.search(r'label="((?:[^"\\]|\\.)*)"', attrs).group(1)
        tip = unescape(re.search(r'tooltip="((?:[^"\\]|\\.)*)"', attrs).group(1))
        if kind == 'kiln':
            t = re.fullmatch(r'(.*) \(total (\S+), self (\S+)\)', tip, re.S)
            name, cum, flat = t.group(1), num(t.group(2)), num(t.group(3))
        else:
            t = re.fullmatch(r'(.*) \((\d+)\)', tip, re.S)
            name, cum = t.group(1), int(t.group(2))
            # "name\nFLAT (x%)\nof CUM (y%)", "name\nFLAT (x%)" when
            # flat is cum, "name\n0 of CUM (y%)" when flat is 0.
            f = re.search(r'\\n(\d+) \(\s*[^)]*%\)', label)
            flat = int(f.group(1)) if f else 0
        ids[nid] = name
        nodes[name] = (flat, cum)
    for m in re.finditer(r'^\s*(N\d+) -> (N\d+) \[(.*)\]$', text, re.M):
        a, b, attrs = m.groups()
        if a not in ids or b not in ids or (a == b and kind != 'kiln'):
            continue
        tip = unescape(re.search(r'tooltip="((?:[^"\\]|\\.)*)"', attrs).group(1))
        w = num(re.search(r'\(([^,)]+)[,)]', tip[tip.rfind('('):]).group(1))
        residual = ('dashed' if kind == 'kiln' else 'dotted') in attrs
        edges[(ids[a], ids[b])] = (w, residual)
    m = re.search(r'label="((?:[^"\\]|\\.)*Type:(?:[^"\\]|\\.)*)"', text)
    legend = m.group(1) if m else ''
    dropped = re.search(r'Dropped (\d+) nodes?', legend)
    top = re.search(r'top (\d+) nodes out of (\d+)', legend)
    return nodes, edges, (int(dropped.group(1)) if dropped else 0,
                          top.groups() if top else None)


def compare(kpath, ppath):
    kn, ke, kl = parse(kpath, 'kiln')
    pn, pe, pl = parse(ppath, 'pprof')
    ke = {e: v for e, v in ke.items() if e[0] != e[1]}   # self loops: kiln only
    bad = []
    for name in sorted(set(kn) | set(pn)):
        if name not in kn:
            bad.append('node %s kept by pprof only' % name)
        elif name not in pn:
            bad.append('node %s kept by kiln only' % name)
        elif kn[name] != pn[name]:
            bad.append('node %s: kiln self/total %s, pprof %s' % (name, kn[name], pn[name]))
    for e in sorted(set(ke) | set(pe)):
        if e not in ke:
            bad.append('edge %s -> %s %s in pprof only' % (e + (pe[e],)))
        elif e not in pe:
            bad.append('edge %s -> %s %s in kiln only' % (e + (ke[e],)))
        elif ke[e] != pe[e]:
            bad.append('edge %s -> %s: kiln %s, pprof %s' % (e + (ke[e], pe[e])))
    if kl != pl:
        bad.append('legend: kiln dropped/top %s, pprof %s' % (kl, pl))
    print('%d nodes, %d edges compared' % (len(kn), len(ke)))
    for b in bad[:40]:
        print('  ' + b)
    return 1 if bad else 0


def reach(path):
    nodes, edges, _ = parse(path, 'kiln')
    callers = {n: set() for n in nodes}
    out = {n: set() for n in nodes}
    for a, b in edges:
        if a != b:
            callers[b].add(a)
            out[a].add(b)
    roots = [n for n in nodes if not callers[n]]
    seen, todo = set(roots), list(roots)
    while todo:
        for m in out[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    lost = sorted(set(nodes) - seen)
    print('%d nodes, %d roots (%s), %d unreachable' %
          (len(nodes), len(roots), ' '.join(sorted(roots)[:5]), len(lost)))
    for n in lost:
        print('  unreachable: ' + n)
    return 1 if lost or not nodes else 0


def listing(path):
    nodes, edges, _ = parse(path, 'kiln')
    for n, (flat, cum) in nodes.items():
        print('node %s %s %s' % (n, cum, flat))
    for (a, b), (w, r) in edges.items():
        print('edge %s %s %s %s' % (a, b, w, 'residual' if r else 'direct'))
    return 0


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'compare':
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    if cmd == 'reach':
        sys.exit(reach(sys.argv[2]))
    if cmd == 'list':
        sys.exit(listing(sys.argv[2]))
    sys.exit(2)
