#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks that every citation "docs/<name>.md §N[.M]" in the tree names a
document under docs/ and a section that document has.

Usage: check-doc-citations.py [ROOT]   (ROOT defaults to the repository root;
files are those `git ls-files` lists, or every file when ROOT is no git tree).

A citation is the path followed by one or more section numbers joined by
",", "and", "–" or "-": "docs/kubelet.md §1.6", "docs/kubelet.md §1–§4",
"docs/hardware-gpu.md §3.1–3.5, §8.1", "`docs/hardware-fpga.md` §1, §2 and §7".
Both ends of a range must exist. A path that ends its line may have its
numbers open the next line (after the comment's "*", "#" or "//"). Sections are the numbered headings of the
document ("## 1. Registration", "### 1.6 Same resource registered twice").
In plugins/sriov/ a bare "§N" means docs/hardware-sriov.md §N (sriov.h says so)
and is checked too. Exit 0 when all hold, 1 with one line per broken citation otherwise."""
import os
import re
import subprocess
import sys

NUM = r"\d+(?:\.\d+)*"
# Directories whose files cite one document by bare section numbers ("§12"), as the
# directory's main header says.
DEFAULT_DOC = {"plugins/sriov/": "hardware-sriov"}
BARE = re.compile(r"§(" + NUM + r")")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s")
CITE = re.compile(r"docs/([A-Za-z0-9_-]+)\.md`?")
# one section or range, after the citation or after a separator
ITEM = re.compile(r"§(" + NUM + r")(?:\s*[–-]\s*§?(" + NUM + r"))?")
SEP = re.compile(r"(?:\s*(?:,|and|&)\s*|\s+)")


def sections(path):
    found = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = HEADING.match(line)
            if m:
                found.add(m.group(1))
    return found


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, _, names in os.walk(root):
            if "/.git" in d:
                continue
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def cited(text, start):
    """Section numbers cited right after position start."""
    nums, pos = [], start
    while True:
        m = SEP.match(text, pos)
        p = m.end() if m else pos
        it = ITEM.match(text, p)
        if not it:
            return nums
        nums += [g.rstrip(".") for g in it.groups() if g]
        pos = it.end()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    docs, bad, count = {}, [], 0
    for rel in sorted(tree_files(root)):
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        default = next((d for p, d in DEFAULT_DOC.items() if rel.startswith(p)), None)
        for no, line in enumerate(lines, 1):
            if default and "docs/" not in line:
                if default not in docs:
                    doc = os.path.join(root, "docs", default + ".md")
                    docs[default] = sections(doc) if os.path.isfile(doc) else set()
                for b in BARE.finditer(line):
                    count += 1
                    if b.group(1).rstrip(".") not in docs[default]:
                        bad.append(f"{rel}:{no}: docs/{default}.md (cited bare) has no §{b.group(1)}")
            for m in CITE.finditer(line):
                name = m.group(1)
                doc = os.path.join(root, "docs", name + ".md")
                if name not in docs:
                    docs[name] = sections(doc) if os.path.isfile(doc) else None
                if docs[name] is None:
                    bad.append(f"{rel}:{no}: docs/{name}.md does not exist")
                    continue
                nums = cited(line, m.end())
                if not nums and not line[m.end():].strip() and no < len(lines):
                    nxt = lines[no]         # cited at the end of a line: the numbers open the next
                    nums = cited(nxt, len(nxt) - len(nxt.lstrip(" \t*#/")))
                for n in nums:
                    count += 1
                    if n not in docs[name]:
                        bad.append(f"{rel}:{no}: docs/{name}.md has no §{n}")
    for b in bad:
        print(b)
    if bad:
        print(f"doc-citations: {len(bad)} broken citation(s)", file=sys.stderr)
        return 1
    print(f"doc-citations: {count} section citations, all present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
