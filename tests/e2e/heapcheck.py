#!/usr/bin/env python3
"""An independent reader of kiln heap traces (docs/heap-trace.md), for the
tests of the in-process side: it checks the structure of a trace strictly
and prints what the tests compare with the workloads' known numbers.

Usage: heapcheck.py TRACE [EXE]

The trace is decompressed with the zstd CLI (frame by frame, so a trace
cut by SIGKILL reads up to its last whole frame).  Output, one per line:

  header pid=N ppid=N sample=N cmd=ARG0
  totals allocs=N frees=N bytes=N end=0|1 lost=N threads=N stacks=N
  thread TID NAME
  site FUNC allocs=N bytes=N live=N live_bytes=N est_allocs=N est_bytes=N

A site is the first frame of a stack inside EXE (symbolized with nm);
live blocks are those with no free by the end of the trace; est_* are
the sampling estimates (sum of 1/(1-exp(-size/R)) over the samples).  Any
violation of the format exits 1 with the byte offset in the stream.
"""
import bisect
import math
import subprocess
import sys


class Bad(Exception):
    pass


def frames(path):
    """The decompressed stream (the whole frames only) and a cut flag."""
    r = subprocess.run(["zstd", "-dcq", path], capture_output=True)
    if r.returncode == 0:
        return r.stdout, False
    # A cut trace: zstd still printed the frames before the cut.
    return r.stdout, True


class Rd:
    def __init__(self, b):
        self.b, self.i = b, 0

    def uv(self):
        v, s = 0, 0
        while True:
            if self.i >= len(self.b):
                raise Bad("varint past the end at byte %d" % self.i)
            c = self.b[self.i]
            self.i += 1
            v |= (c & 0x7F) << s
            s += 7
            if not c & 0x80:
                return v

    def s(self):
        n = self.uv()
        if self.i + n > len(self.b):
            raise Bad("string past the end at byte %d" % self.i)
        v = self.b[self.i:self.i + n]
        self.i += n
        return v


def symtab(exe):
    out = subprocess.run(["nm", "--defined-only", exe], capture_output=True,
                         text=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2]))
    syms.sort()
    return syms


def main():
    path = sys.argv[1]
    exe = sys.argv[2] if len(sys.argv) > 2 else None
    data, cut = frames(path)
    r = Rd(data)
    if data[:9] != b"HKILNHEAP":
        raise Bad("no header at byte 0")
    r.i = 9
    ver, pid, ppid, _t, sample = r.uv(), r.uv(), r.uv(), r.uv(), r.uv()
    cmd = r.s().split(b"\0")
    if ver != 2:
        raise Bad("version %d" % ver)
    maps, stacks, names = [], {}, {}
    live, sites_of = {}, {}
    allocs = frees = nbytes = lost = 0
    end = 0
    nblocks = 0
    tid, prev = 0, 0
    threads = set()
    while r.i < len(data):
        at = r.i
        tag = chr(data[r.i])
        r.i += 1
        if tag in "af":
            # the thread before the current one
            tid, prev = prev, tid
            tag = tag.upper()
        if tag == "P":
            maps = []
            for line in r.s().decode().splitlines():
                f = line.split()
                if len(f) >= 6 and "x" in f[1]:
                    lo, hi = (int(x, 16) for x in f[0].split("-"))
                    maps.append((lo, hi, int(f[2], 16), f[5]))
        elif tag == "S":
            sid, depth = r.uv(), r.uv()
            if sid != len(stacks) + 1:
                raise Bad("stack %d out of order at byte %d" % (sid, at))
            stacks[sid] = [(r.uv(), list(maps)) for _ in range(depth)]
        elif tag == "N":
            t, name = r.uv(), r.s().decode()
            names[t] = name
        elif tag == "T":
            r.uv()
        elif tag == "X":
            tid, prev = r.uv(), tid
            threads.add(tid)
        elif tag == "A":
            size, sid = r.uv(), r.uv()
            if sid not in stacks:
                raise Bad("stack %d used before defined at byte %d" % (sid, at))
            allocs += 1
            nbytes += size
            live[nblocks] = (size, sid)
            nblocks += 1
            sites_of.setdefault(sid, [0, 0, 0.0, 0.0])
            sites_of[sid][0] += 1
            sites_of[sid][1] += size
            # Sampling: the unbiased estimate of what this sample stands for.
            w = 1 / (1 - math.exp(-size / sample)) if sample and size else 1
            sites_of[sid][2] += w
            sites_of[sid][3] += w * size
        elif tag == "F":
            back = r.uv()
            num = nblocks - 1 - back
            if num < 0 or num not in live:
                raise Bad("free of block %d, not live, at byte %d" % (num, at))
            del live[num]
            frees += 1
        elif tag == "L":
            lost += r.uv()
        elif tag == "E":
            end = 1
        else:
            raise Bad("unknown record %r at byte %d" % (tag, at))
    print("header pid=%d ppid=%d sample=%d cmd=%s" %
          (pid, ppid, sample, cmd[0].decode(errors="replace")))
    print("totals allocs=%d frees=%d bytes=%d end=%d lost=%d threads=%d stacks=%d%s" %
          (allocs, frees, nbytes, end, lost, len(threads), len(stacks),
           " cut=1" if cut else ""))
    for tid in sorted(names):
        print("thread %d %s" % (tid, names[tid]))
    if not exe:
        return
    syms = symtab(exe)
    addrs = [a for a, _ in syms]
    cache = {}

    def site(sid):
        if sid in cache:
            return cache[sid]
        name = "?"
        for pc, mp in stacks[sid]:
            for lo, hi, off, path in mp:
                if lo <= pc < hi and path.endswith(exe.split("/")[-1]):
                    va = pc - 1 - lo + off
                    k = bisect.bisect_right(addrs, va) - 1
                    if k >= 0:
                        name = syms[k][1]
                    break
            if name != "?":
                break
        cache[sid] = name
        return name

    out = {}
    for sid, (n, b, en, eb) in sites_of.items():
        o = out.setdefault(site(sid), [0, 0, 0, 0, 0.0, 0.0])
        o[0] += n
        o[1] += b
        o[4] += en
        o[5] += eb
    for size, sid in live.values():
        o = out.setdefault(site(sid), [0, 0, 0, 0, 0.0, 0.0])
        o[2] += 1
        o[3] += size
    for name in sorted(out):
        print("site %s allocs=%d bytes=%d live=%d live_bytes=%d "
              "est_allocs=%.0f est_bytes=%.0f" % ((name,) + tuple(out[name])))


try:
    main()
except Bad as e:
    print("heapcheck: %s: %s" % (sys.argv[1], e), file=sys.stderr)
    sys.exit(1)
