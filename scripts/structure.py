#!/usr/bin/env python3
"""The house's shape, measured from the Rust sources (tests left out):

  circles between files     files that import each other, directly or round a loop
  circles between modules   a crate's top-level modules (src/x.rs or src/x/) that do;
                            one module importing another that imports it back is an
                            arrow back up, whatever the files
  files over 500 lines      counting out inline `#[cfg(test)]` modules
  unexplained drops         a `let _ =` with no comment on its line or the line
                            before saying why its result may be dropped

Functions over 100 lines are clippy's `too_many_lines` (clippy.toml), which
`scripts/test.sh` runs with -D warnings.

Imports are read as text: `use` trees and `crate::`/`super::`/`self::` paths. A path
names the file of its longest prefix that is a module. A folder module's `mod x;` and
its re-exports of its own children (`pub use x::Y`) are how it presents itself, not
imports. Exits 1 when anything is over.

  python3 scripts/structure.py            the figures, and every offender
  python3 scripts/structure.py --quiet    only the offenders
"""

import re
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 500


def crates():
    """Every package's src/ folder of the workspace (fuzz has its own workspace)."""
    for manifest in sorted(ROOT.glob("**/Cargo.toml")):
        rel = manifest.relative_to(ROOT)
        if rel.parts[0] in ("target", "fuzz", ".cache", "node_modules") or rel == Path("Cargo.toml"):
            continue
        src = manifest.parent / "src"
        if src.is_dir():
            yield src


def strip_tests(text):
    """`text` without comments, string contents and `#[cfg(test)]` items."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    # `#[cfg(test)] mod tests;` (a file of its own) and test-only imports
    return re.sub(r"#\[cfg\(test\)\]\s*[^;{]*;", "", "".join(out))


def code_lines(path):
    """Lines of `path` outside its inline test modules."""
    lines = path.read_text().split("\n")
    skip_from = None
    depth = 0
    count = 0
    for line in lines:
        stripped = line.strip()
        if skip_from is None and stripped == "#[cfg(test)]":
            skip_from = "pending"
            continue
        if skip_from == "pending":
            if re.match(r"(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", stripped):
                skip_from = "in"
                depth = stripped.count("{") - stripped.count("}")
                continue
            skip_from = None
        if skip_from == "in":
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                skip_from = None
            continue
        count += 1
    return count


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src)
            if f.name == "tests.rs" or "tests" in rel.parts[:-1] or f.name == "build.rs":
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            self.files[tuple(parts)] = f

    def module_of(self, f):
        for m, g in self.files.items():
            if g == f:
                return m
        raise KeyError(f)

    def resolve(self, here, path):
        """The file a path (a list of segments) from module `here` names, if any."""
        if not path:
            return None
        if path[0] == "crate":
            base, rest = (), path[1:]
        elif path[0] in ("super", "self"):
            base, rest = tuple(here), list(path)
            while rest and rest[0] in ("super", "self"):
                if rest.pop(0) == "super":
                    base = base[:-1]
        else:
            return None
        best = None
        for n in range(len(rest) + 1):
            m = base + tuple(rest[:n])
            if m in self.files:
                best = self.files[m]
        return best


def use_paths(tree, prefix):
    """Every path of a `use` tree: `a::{b, c::{d, e}}` → a::b, a::c::d, a::c::e."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                head = [s for s in tree[:i].split("::") if s.strip()]
                inner = tree[i + 1 : tree.rindex("}")]
                parts, d, start = [], 0, 0
                for j, c in enumerate(inner):
                    d += {"{": 1, "}": -1}.get(c, 0)
                    if c == "," and d == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                for part in parts:
                    if part.strip():
                        yield from use_paths(part, prefix + [h.strip() for h in head])
                return
            depth += 1
    name = re.split(r"\s+as\s+", tree)[0]
    yield prefix + [s.strip() for s in name.split("::") if s.strip()]


def imports(crate, f):
    here = crate.module_of(f)
    text = strip_tests(f.read_text())
    targets = set()
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for path in use_paths(m.group(1), []):
            # `self` inside braces names the module itself
            if path and path[-1] == "self":
                path = path[:-1]
            target = crate.resolve(here, path)
            if target:
                targets.add(target)
    for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
        target = crate.resolve(here, m.group(1).split("::"))
        if target:
            targets.add(target)
    # a folder module's own file is not an import of its child; a child may read its parent
    targets.discard(f)
    return targets


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def unexplained_drops(path):
    """Lines `let _ = …` (outside test code) with no comment on them or just before."""
    if path.name == "tests.rs":
        return []
    out = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", line):
            break
        if "let _ =" not in line or "//" in line:
            continue
        if n > 0 and lines[n - 1].strip().startswith("//"):
            continue
        out.append((path, n + 1))
    return out


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    quiet = "--quiet" in sys.argv
    file_circles, module_circles, long_files, drops = [], [], [], []
    n_files = 0
    for src in crates():
        crate = Crate(src)
        graph = {}
        for f in crate.files.values():
            n_files += 1
            graph[f] = imports(crate, f)
            lines = code_lines(f)
            if lines > MAX_FILE_LINES:
                long_files.append((lines, f))
            drops += unexplained_drops(f)
        file_circles += circles(graph)
        top = {}
        for f, targets in graph.items():
            m = crate.module_of(f)
            if not m:
                continue
            for t in targets:
                tm = crate.module_of(t)
                if tm and tm[0] != m[0]:
                    top.setdefault(m[0], set()).add(tm[0])
        for c in circles(top):
            module_circles.append((src.parent.relative_to(ROOT), c))
    rel = lambda f: str(f.relative_to(ROOT))
    if not quiet:
        print(f"{n_files} source files read")
    print(f"circles between files: {len(file_circles)}")
    for c in file_circles:
        print("  " + " <-> ".join(rel(f) for f in c))
    print(f"circles between a crate's top-level modules: {len(module_circles)}")
    for crate, c in module_circles:
        print(f"  {crate}: " + " <-> ".join(c))
    print(f"files over {MAX_FILE_LINES} lines (tests counted out): {len(long_files)}")
    for lines, f in sorted(long_files, reverse=True):
        print(f"  {lines:5}  {rel(f)}")
    print(f"unexplained drops (`let _ =` without a reason): {len(drops)}")
    for f, n in drops:
        print(f"  {rel(f)}:{n}")
    return 1 if file_circles or module_circles or long_files or drops else 0


if __name__ == "__main__":
    sys.exit(main())
