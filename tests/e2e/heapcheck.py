#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An independent reader of kiln heap traces (docs/heap-trace.md), for the
tests of the in-process side: it checks the structure of a trace strictly
and prints what the tests compare with the workloads' known numbers.

Usage: heapcheck.py [--times] TRACE [EXE]

The trace is decompressed with the zstd CLI (frame by frame, so a trace
cut by SIGKILL reads up to its last whole frame).  Output, one per line:

  header pid=N ppid=N sample=N cmd=ARG0
  totals allocs=N frees=N bytes=N end=0|1 lost=N threads=N stacks=N
  thread TID NAME
  site FUNC allocs=N bytes=N live=N live_bytes=N est_allocs=N est_bytes=N

A site is the first frame of a stack inside EXE (symbolized with nm);
live blocks are those with no free by the end of the trace; est_* are
the sampling estimates (sum of 1/(1-exp(-size/R)) over the samples).
With --times, each allocation and free also prints a line
"event A|F TID SIZE NS", NS the time of the last T record before it
(CLOCK_MONOTONIC), SIZE the block's.  Any
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

    def take(self, n):
        if self.i + n > len(self.b):
            raise Bad("column ends early at byte %d" % self.i)
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
    args = sys.argv[1:]
    times = args[:1] == ["--times"]
    if times:
        args = args[1:]
    path = args[0]
    exe = args[1] if len(args) > 1 else None
    data, cut = frames(path)
    if data[:8] != b"KILNHEAP":
        raise Bad("no magic at byte 0")
    r = Rd(data)
    r.i = 8
    ver = r.uv()
    if ver != 2:
        raise Bad("version %d" % ver)
    # Frames: a column table, then the columns back to back; the
    # decompressed frames are concatenated, so each table says where the
    # next frame starts.
    recs = []           # (tag, fields column, ..., per frame)
    while r.i < len(data):
        ncol = r.uv()
        if ncol < 7:
            raise Bad("%d columns at byte %d" % (ncol, r.i))
        lens = [r.uv() for _ in range(ncol)]
        if r.i + sum(lens) > len(data):
            if cut:
                break   # the partial output of the frame that was cut
            raise Bad("frame at byte %d runs past the end" % r.i)
        cols = []
        for n in lens:
            cols.append(Rd(data[r.i:r.i + n]))
            r.i += n
        recs.append(cols)
    stacks, names, maps = {}, {}, []
    live, sites_of = {}, {}
    allocs = frees = nbytes = lost = 0
    end = 0
    counts = {}
    tid, prev = 0, 0
    now = 0
    events = []
    threads = set()
    header = None
    for cols in recs:
        tags, misc, slo, shi, stk, blo, bhi = cols[:7]
        for k, t in enumerate(tags.b):
            tag = chr(t)
            at = k + 1
            if header is None:
                if tag != "H":
                    raise Bad("first record %r is not the header" % tag)
                header = (misc.uv(), misc.uv(), misc.uv(), misc.uv(), misc.s())
                sample = header[3]
                continue
            if tag in "afr":
                # the thread before the current one
                tid, prev = prev, tid
                tag = tag.upper()
            if tag == "P":
                maps = []
                for line in misc.s().decode().splitlines():
                    f = line.split()
                    if len(f) >= 6 and "x" in f[1]:
                        lo, hi = (int(x, 16) for x in f[0].split("-"))
                        maps.append((lo, hi, int(f[2], 16), f[5]))
            elif tag == "S":
                sid, depth = misc.uv(), misc.uv()
                if sid != len(stacks) + 1:
                    raise Bad("stack %d out of order at record %d" % (sid, at))
                stacks[sid] = [(misc.uv(), list(maps)) for _ in range(depth)]
            elif tag == "N":
                t_, name = misc.uv(), misc.s().decode()
                names[t_] = name
            elif tag == "T":
                now += misc.uv()
            elif tag == "X":
                tid, prev = misc.uv(), tid
                threads.add(tid)
            elif tag == "A":
                size = slo.take(1)[0] | shi.uv() << 8
                sid = stk.uv()
                if sid not in stacks:
                    raise Bad("stack %d used before defined at record %d" % (sid, at))
                n = counts.get(tid, 0)
                counts[tid] = n + 1
                allocs += 1
                nbytes += size
                live[(tid, n)] = (size, sid)
                if times:
                    events.append("event A %d %d %d" % (tid, size, now))
                sites_of.setdefault(sid, [0, 0, 0.0, 0.0])
                sites_of[sid][0] += 1
                sites_of[sid][1] += size
                # Sampling: the unbiased estimate of what this sample stands for.
                w = 1 / (1 - math.exp(-size / sample)) if sample and size else 1
                sites_of[sid][2] += w
                sites_of[sid][3] += w * size
            elif tag in "FR":
                owner = misc.uv() if tag == "R" else tid
                back = blo.take(1)[0] | bhi.uv() << 8
                key = (owner, counts.get(owner, 0) - 1 - back)
                if key not in live:
                    raise Bad("free of block %r, not live, at record %d" % (key, at))
                if times:
                    events.append("event F %d %d %d" % (tid, live[key][0], now))
                del live[key]
                frees += 1
            elif tag == "L":
                lost += misc.uv()
            elif tag == "E":
                end = 1
            elif tag == "H":
                raise Bad("a second header at record %d" % at)
            else:
                raise Bad("unknown record %r at record %d" % (tag, at))
        for c in cols[1:7]:
            if c.i != len(c.b):
                raise Bad("%d bytes left over in a column" % (len(c.b) - c.i))
    if header is None:
        raise Bad("no header")
    pid, ppid, _t, sample, cmdb = header
    cmd = cmdb.split(b"\0")
    print("header pid=%d ppid=%d sample=%d cmd=%s" %
          (pid, ppid, sample, cmd[0].decode(errors="replace")))
    print("totals allocs=%d frees=%d bytes=%d end=%d lost=%d threads=%d stacks=%d%s" %
          (allocs, frees, nbytes, end, lost, len(threads), len(stacks),
           " cut=1" if cut else ""))
    for tid in sorted(names):
        print("thread %d %s" % (tid, names[tid]))
    for line in events:
        print(line)
    if not exe:
        return
    syms = symtab(exe)
    addrs = [a for a, _ in syms]
    cache = {}
    # A program built without PIE (ELF type ET_EXEC) is mapped at its
    # link-time addresses: nm's values are the addresses themselves.
    with open(exe, "rb") as f:
        fixed = int.from_bytes(f.read(18)[16:18], "little") == 2

    def site(sid):
        if sid in cache:
            return cache[sid]
        name = "?"
        for pc, mp in stacks[sid]:
            for lo, hi, off, path in mp:
                if lo <= pc < hi and path.endswith(exe.split("/")[-1]):
                    va = pc - 1 if fixed else pc - 1 - lo + off
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
