#!/usr/bin/env python3
"""The walls between worldrun's parts, checked on the source tree (TAP).

Each part may include its own headers, those of the parts below it, and
system headers, nothing else (DESIGN.md, Layout):

- cmd/worldrun/agent/: itself, runtime/core and world_errors.h: never a
  launcher header (cmd/worldrun/*.h), the registry's or libworld's;
- cmd/worldrun/registry/: itself, runtime/core and world_errors.h;
- transport/: itself and world_errors.h only;
- runtime/core/: itself and world_errors.h.

A header in quotes is looked up first beside the file that includes it
(as the compiler does), then among the headers the part may use; found
in neither, it is a breach, named by file and line. A header in angle
brackets and without a folder (<sys/wait.h> is the system's) is a
breach when it is one of the project's own that the part may not use:
the include paths are wider than the walls. Beside the walls:
no function outside tests/ longer than 80 lines unless it is a switch
table (a switch that holds most of its body), and no source file over
1000 lines. Usage: walls.py SOURCE_ROOT."""
import os
import re
import sys

MAX_FUNCTION = 80
MAX_FILE = 1000
SWITCH_SHARE = 0.75

# part -> the directories (besides its own) whose headers it may include,
# and single headers it may include from elsewhere.
RULES = {
    "cmd/worldrun/agent": (["runtime/core"], ["world_errors.h"]),
    "cmd/worldrun/registry": (["runtime/core"], ["world_errors.h"]),
    "transport": ([], ["world_errors.h"]),
    "runtime/core": ([], ["world_errors.h"]),
}
SOURCE_DIRS = ["cmd", "runtime", "transport"]
INCLUDE = re.compile(r'^\s*#\s*include\s+(["<])([^">]+)[">]')


def headers_in(root, d):
    p = os.path.join(root, d)
    return {f for f in os.listdir(p) if f.endswith(".h")} if os.path.isdir(p) else set()


def sources(root, d):
    p = os.path.join(root, d)
    return sorted(f for f in os.listdir(p) if f.endswith((".c", ".h")))


def project_headers(root):
    names = set()
    for top in SOURCE_DIRS:
        for _, _, files in os.walk(os.path.join(root, top)):
            names |= {f for f in files if f.endswith(".h")}
    return names


def breaches(root, part, dirs, singles):
    allowed = set(singles)
    for d in dirs:
        allowed |= headers_in(root, d)
    own = headers_in(root, part)
    ours = project_headers(root)
    found = []
    for f in sources(root, part):
        with open(os.path.join(root, part, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name, base = m.group(2), os.path.basename(m.group(2))
                quoted = m.group(1) == '"'
                if base in allowed or (quoted and name in own) or \
                   (not quoted and ("/" in name or base not in ours or base in own)):
                    continue
                close = '"' if quoted else ">"
                found.append(f"{part}/{f}:{n}: includes {m.group(1)}{name}{close}")
    return found


def all_c_files(root):
    for top in SOURCE_DIRS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.join(d, f)


def closing(lines, start):
    """The index of the line with the brace that closes the one opened on
    lines[start] (braces in strings, characters and comments left out)."""
    depth = 0
    for i in range(start, len(lines)):
        text = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*|/\*.*?\*/', "", lines[i])
        depth += text.count("{") - text.count("}")
        if depth <= 0:
            return i
    return len(lines) - 1


def switch_table(body):
    """Whether a switch holds most of @body's lines."""
    for i, line in enumerate(body):
        if re.match(r"\s*switch\s*\(", line) and "{" in line:
            end = closing(body, i)
            if end - i + 1 >= SWITCH_SHARE * len(body):
                return True
    return False


def long_functions(path):
    """(name, first line, body lines) of every function over MAX_FUNCTION:
    house style puts the name at column 0 and the braces alone at column 0."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    out = []
    name, at = None, 0
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_]\w*)\s*\(", line)
        if m:
            name, at = m.group(1), i + 1
        if (line == "{" or (m and line.rstrip().endswith("{"))) and name is not None:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == "}"), len(lines))
            body = lines[i + 1:end]
            if len(body) > MAX_FUNCTION and not switch_table(body):
                out.append((name, at, len(body)))
            name = None
    return out


def main():
    root = sys.argv[1]
    results = []
    for part, (dirs, singles) in RULES.items():
        found = breaches(root, part, dirs, singles)
        results.append((not found, f"{part} includes only its own headers, "
                        f"{', '.join(dirs + singles)}", found))
    long_ones = []
    big = []
    nfiles = 0
    for path in all_c_files(root):
        rel = os.path.relpath(path, root)
        nfiles += 1
        with open(path, encoding="utf-8", errors="replace") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_FILE:
            big.append(f"{rel}: {n} lines")
        if path.endswith(".c"):
            long_ones += [f"{rel}:{at}: {fn} has {k} lines"
                          for fn, at, k in long_functions(path)]
    results.append((not long_ones, f"no function is over {MAX_FUNCTION} lines "
                    f"but a switch table ({nfiles} files)", long_ones))
    results.append((not big, f"no source file is over {MAX_FILE} lines", big))
    print(f"1..{len(results)}")
    for i, (good, what, why) in enumerate(results, 1):
        print(f"{'' if good else 'not '}ok {i} - {what}")
        for w in why:
            print(f"#   {w}")
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
