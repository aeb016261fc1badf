#!/usr/bin/env python3
"""Compares kiln's call graph DOT with `go tool pprof -dot` on the same
profile at the same thresholds.

Usage: callgraph-compare.py KILN.dot PPROF.dot

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


def parse(path, kind):
    text = open(path).read()
    nodes, edges, ids = {}, {}, {}
    legend = ''
    for m in re.finditer(r'^\s*(N\d+) \[(.*)\]$', text, re.M):
        nid, attrs = m.group(1), m.group(2)
        label = re.search(r'label="((?:[^"\\]|\\.)*)"', attrs).group(1)
        tip = unescape(re.search(r'tooltip="((?:[^"\\]|\\.)*)"', attrs).group(1))
        if kind == 'kiln':
            t = re.fullmatch(r'(.*) \(total (\d+), self (\d+)\)', tip, re.S)
            name, cum, flat = t.group(1), int(t.group(2)), int(t.group(3))
        else:
            t = re.fullmatch(r'(.*) \((\d+)\)', tip, re.S)
            name, cum = t.group(1), int(t.group(2))
            f = re.search(r'\\n(\d+) \(\s*[^)]*%\)\\nof ', label)
            flat = int(f.group(1)) if f else 0
        ids[nid] = name
        nodes[name] = (flat, cum)
    for m in re.finditer(r'^\s*(N\d+) -> (N\d+) \[(.*)\]$', text, re.M):
        a, b, attrs = m.groups()
        if a not in ids or b not in ids or a == b:
            continue
        tip = unescape(re.search(r'tooltip="((?:[^"\\]|\\.)*)"', attrs).group(1))
        w = int(re.search(r'\((\d+)[,)]', tip[tip.rfind('('):]).group(1))
        residual = ('dashed' if kind == 'kiln' else 'dotted') in attrs
        edges[(ids[a], ids[b])] = (w, residual)
    m = re.search(r'label="((?:[^"\\]|\\.)*Type:(?:[^"\\]|\\.)*)"', text)
    legend = m.group(1) if m else ''
    dropped = re.search(r'Dropped (\d+) nodes', legend)
    top = re.search(r'top (\d+) nodes out of (\d+)', legend)
    return nodes, edges, (int(dropped.group(1)) if dropped else 0,
                          top.groups() if top else None)


kn, ke, kl = parse(sys.argv[1], 'kiln')
pn, pe, pl = parse(sys.argv[2], 'pprof')
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
sys.exit(1 if bad else 0)
