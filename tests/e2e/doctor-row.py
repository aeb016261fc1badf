#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints one row of `kiln doctor --json` output as STATUS<TAB>FINDING<TAB>FIX.

usage: doctor-row.py FILE CHECK [SUBJECT]
SUBJECT is matched as a suffix of the row's subject (a path's end); the
first matching row is printed; exit 1 when there is none, 2 when FILE is
not the JSON kiln doctor writes (problems, warnings and rows, each row
with check, applies_to, subject, status, finding, fix).
"""
import json
import sys


def main():
    path, check = sys.argv[1], sys.argv[2]
    subject = sys.argv[3] if len(sys.argv) > 3 else None
    try:
        with open(path) as f:
            doc = json.load(f)
        rows = doc["rows"]
        for key in ("problems", "warnings"):
            if not isinstance(doc[key], int):
                raise ValueError(key)
        for r in rows:
            if set(r) != {"check", "applies_to", "subject", "status", "finding", "fix"}:
                raise ValueError("row keys %s" % sorted(r))
            if r["status"] not in ("ok", "warn", "problem", "skip"):
                raise ValueError("status %s" % r["status"])
            if r["applies_to"] not in ("machine", "binary", "process"):
                raise ValueError("applies_to %s" % r["applies_to"])
        if doc["problems"] != sum(r["status"] == "problem" for r in rows):
            raise ValueError("problems count")
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("doctor-row: bad kiln doctor JSON in %s: %s" % (path, e), file=sys.stderr)
        return 2
    for r in rows:
        if r["check"] != check:
            continue
        if subject and not r["subject"].endswith(subject):
            continue
        print("%s\t%s\t%s" % (r["status"], r["finding"], r["fix"] or ""))
        return 0
    return 1


sys.exit(main())
