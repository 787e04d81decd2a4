#!/usr/bin/env python3
"""Count test cases in meson's testlog.json and print "N passed, N failed".

A TAP test counts each of its "ok"/"not ok" lines; any other test counts
once. Under CI=true a skip counts as failed, a whole test's and a single
case's alike: CI runs as root on Debian 12 with everything share/setup.sh
installs, where every case can run (those that want an unprivileged
user drop root's privileges themselves), so a skip there is a case that
did not run. A failed case's diagnostics (bats's "# " lines after its
"not ok") follow its line, cut to their first and last lines and each
line to its first characters, so that a CI log that keeps only this
output still says why. Exits 1 if anything failed."""
import json
import os
import re
import sys

ci = os.environ.get("CI") == "true"
HEAD, TAIL, WIDTH = 10, 30, 300


def diagnostics(stdout, case):
    """The "# " lines that follow the "not ok" line of case, cut."""
    lines = stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if l == "not ok" + case), None)
    if start is None:
        return []
    diag = []
    for l in lines[start + 1:]:
        if not l.startswith("#"):
            break
        diag.append(l if len(l) <= WIDTH else l[:WIDTH] + " ...")
    if len(diag) > HEAD + TAIL:
        cut = len(diag) - HEAD - TAIL
        diag = diag[:HEAD] + [f"# ... {cut} lines left out"] + diag[-TAIL:]
    return ["    " + l for l in diag]

passed = failed = skipped = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    cases = re.findall(r"^(not ok|ok)\b(.*)$", t.get("stdout") or "", re.M)
    if t["result"] == "SKIP" or not cases:
        if t["result"] == "SKIP":
            if ci:
                print(f"failed: {t['name']} was skipped, under CI=true")
                failed += 1
            else:
                skipped += 1
        elif t["result"] in ("OK", "EXPECTEDFAIL"):
            passed += 1
        else:
            print(f"failed: {t['name']} ({t['result']})")
            failed += 1
        continue
    for verdict, rest in cases:
        if re.search(r"#\s*skip", rest, re.I):
            if ci:
                print(f"failed: {t['name']}:{rest} (skipped, under CI=true)")
                failed += 1
            else:
                skipped += 1
        elif verdict == "ok":
            passed += 1
        else:
            print(f"failed: {t['name']}:{rest}")
            print("\n".join(diagnostics(t["stdout"], rest)) or "    (no diagnostics)")
            failed += 1
    if t["result"] not in ("OK", "EXPECTEDFAIL") and not any(v == "not ok" for v, _ in cases):
        print(f"failed: {t['name']} ({t['result']})")
        failed += 1
if skipped:
    print(f"({skipped} skipped)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
