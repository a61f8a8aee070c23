#!/usr/bin/env python3
"""The workspace's structure, per crate: lines of library code, `pub` items, longest function.

Usage: scripts/structure.py [CRATES_DIR ...]   (default: crates)

With two directories (an old checkout's `crates` and this one's), prints both side by side:
    git worktree add /tmp/before <commit> && scripts/structure.py /tmp/before/crates crates

Counts only `src/` of each crate, skipping `*_tests.rs` files and `#[cfg(test)]` modules;
blank lines and comment-only lines are not counted. A function's length is from its `fn` line
to its closing brace (brace matching that skips strings, chars and comments). The figures are
for comparing one tree with another, not an exact parse of Rust.
"""

import os
import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")
PUB = re.compile(r"^\s*pub\s+(?:async\s+)?(?:unsafe\s+)?(fn|struct|enum|trait|type|const|static|mod|use|union|macro)\b")


def strip_code(line, state):
    """The line with strings, chars and comments blanked; `state` carries a block comment or a
    string (ordinary or raw) that goes on past the end of the line."""
    out = []
    i, n = 0, len(line)
    while i < n:
        if state["block"]:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out)
            state["block"] = False
            i = end + 2
            continue
        if state["close"] is not None:
            close = state["close"]
            if close == '"':
                j = i
                while j < n and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                if j >= n:
                    return "".join(out)
                i = j + 1
            else:
                end = line.find(close, i)
                if end < 0:
                    return "".join(out)
                i = end + len(close)
            state["close"] = None
            out.append('""')
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        m = re.match(r'b?r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["close"] = '"' + m.group(1)
            i += len(m.group(0))
            continue
        if c == '"':
            state["close"] = '"'
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'", line[i:]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                out.append("' '")
                continue
        out.append(c)
        i += 1
    return "".join(out)


def library_lines(path):
    """The file's lines, with `#[cfg(test)]` modules removed, as (original, code) pairs."""
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read().split("\n")
    state = {"block": False, "close": None}
    code = [strip_code(line, state) for line in raw]
    keep = []
    i = 0
    while i < len(raw):
        if code[i].strip().startswith("#[cfg(test)]"):
            # Skip the attribute and the item after it (a `mod x;` line or a braced block).
            j = i + 1
            while j < len(raw) and code[j].strip().startswith("#["):
                j += 1
            if j < len(raw) and code[j].strip().endswith(";"):
                i = j + 1
                continue
            depth, seen = 0, False
            while j < len(raw):
                depth += code[j].count("{") - code[j].count("}")
                seen = seen or "{" in code[j]
                j += 1
                if seen and depth <= 0:
                    break
            i = j
            continue
        keep.append((raw[i], code[i]))
        i += 1
    return keep


def measure(crate_dir):
    src = os.path.join(crate_dir, "src")
    lines = pubs = 0
    longest = (0, "")
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs") or name.endswith("_tests.rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            kept = library_lines(path)
            for _, code in kept:
                if code.strip():
                    lines += 1
                if PUB.match(code):
                    pubs += 1
            for k, (_, code) in enumerate(kept):
                m = FN.match(code)
                if not m:
                    continue
                depth, seen, end = 0, False, k
                for end in range(k, len(kept)):
                    c = kept[end][1]
                    if not seen and c.rstrip().endswith(";") and "{" not in c:
                        break  # a declaration without a body
                    depth += c.count("{") - c.count("}")
                    seen = seen or "{" in c
                    if seen and depth <= 0:
                        break
                if seen:
                    length = end - k + 1
                    if length > longest[0]:
                        longest = (length, f"{rel} {m.group(1)}")
    return lines, pubs, longest


def crates(root):
    return {
        name: measure(os.path.join(root, name))
        for name in sorted(os.listdir(root))
        if os.path.isdir(os.path.join(root, name, "src"))
    }


def main(argv):
    roots = argv[1:] or ["crates"]
    if len(roots) == 1:
        print("| crate | lines | `pub` items | longest function |")
        print("|---|---|---|---|")
        total = 0
        for name, (lines, pubs, (n, where)) in crates(roots[0]).items():
            total += lines
            print(f"| {name} | {lines:,} | {pubs} | {n} ({where}) |")
        print(f"| total | {total:,} | | |")
        return
    before, after = crates(roots[0]), crates(roots[1])
    print("| crate | lines before / after | `pub` items before / after | longest function before / after |")
    print("|---|---|---|---|")
    for name in sorted(set(before) | set(after)):
        b = before.get(name, (0, 0, (0, "")))
        a = after.get(name, (0, 0, (0, "")))
        print(f"| {name} | {b[0]:,} / {a[0]:,} | {b[1]} / {a[1]} | {b[2][0]} ({b[2][1]}) / {a[2][0]} ({a[2][1]}) |")


if __name__ == "__main__":
    main(sys.argv)
