#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/serve-load.py: the load client of bench/serve-load.sh.

CLIENTS threads each send requests one after another for SECONDS to a
running `kiln serve` (URL), chosen from a mix of views with focus, ignore
and time-range selections (seeded, so runs ask the same), and the server's
RSS (/proc/PID/status VmRSS) is read every second.  Prints one line a
request class and the memory figures as "key value" lines on stdout.
Python's standard library only.
"""
import json
import re
import random
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(url, timeout):
    t = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:  # a refused or cut connection, a timeout
        status = "error:" + type(e).__name__
    return status, time.monotonic() - t


def ere(name):
    """name as a POSIX extended regex matching it literally."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", name)


def pct(sorted_list, p):
    if not sorted_list:
        return 0.0
    i = min(len(sorted_list) - 1, max(0, int(round(p / 100.0 * len(sorted_list) + 0.5)) - 1))
    return sorted_list[i]


def main():
    base, pid, clients, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 120.0
    q = urllib.parse.quote
    # What the profile holds: function names for the filters, its time span.
    with urllib.request.urlopen(base + "api/top?n=200", timeout=600) as r:
        names = [row["name"] for row in json.load(r)["rows"]]
    with urllib.request.urlopen(base + "api/profiles", timeout=600) as r:
        times = json.load(r)["profiles"][0].get("times", False)
    end = 0
    if times:
        with urllib.request.urlopen(base + "api/timeline?buckets=10&threads=1", timeout=600) as r:
            end = json.load(r).get("end", 0)
    idle = rss_kb(pid)

    def request(rnd):
        fn = rnd.choice(names)
        f = ere(fn)
        g = ere(rnd.choice(names))
        sel = rnd.choice(["", "focus=" + q(f), "ignore=" + q(g),
                          "focus=" + q(f) + "&ignore=" + q(g)])
        if end and rnd.random() < 0.3:
            a = rnd.randrange(0, end // 2)
            sel += ("&" if sel else "") + "t0=%d&t1=%d" % (a, a + end // 4)
        kind = rnd.choice(["flame", "flame", "top", "profiles", "sandwich", "calltree"])
        if kind == "profiles":
            return kind, "api/profiles"
        if kind == "flame":
            return kind, "api/flame?width=1200&" + sel
        if kind == "top":
            return kind, "api/top?n=100&" + sel
        if kind == "sandwich":
            # The focused function (a 404 where the range holds none of it
            # is an answer: the selection has no such function).
            return kind, "api/sandwich?width=1200&fn=" + q(fn) + "&" + sel
        return kind, "api/calltree?" + sel

    results = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(i):
        rnd = random.Random(i)
        mine = []
        while time.monotonic() < deadline:
            kind, path = request(rnd)
            status, dt = get(base + path, timeout)
            mine.append((kind, status, dt, path))
        with lock:
            results.extend(mine)

    peak = idle
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_kb(pid))
        time.sleep(1)
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    # Memory after: read every second for up to 30 s, until back within 10%.
    after, settle = rss_kb(pid), 0
    while after > idle * 1.1 and settle < 30:
        time.sleep(1)
        settle += 1
        after = rss_kb(pid)

    errors = [r for r in results
              if r[1] != 200 and not (r[0] == "sandwich" and r[1] == 404)]
    print("requests %d" % len(results))
    print("wall %.1f" % wall)
    print("errors %d" % len(errors))
    for e in errors[:5]:
        print("error_example %s %s" % (e[1], e[3]))
    for kind in ["all", "profiles", "flame", "top", "sandwich", "calltree"]:
        lat = sorted(r[2] for r in results if kind == "all" or r[0] == kind)
        if lat:
            print("lat %s %d %.3f %.3f %.3f" % (kind, len(lat), pct(lat, 50), pct(lat, 99), lat[-1]))
    print("rss_idle_kb %d" % idle)
    print("rss_peak_kb %d" % peak)
    print("rss_after_kb %d" % after)
    print("settle_s %d" % settle)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
