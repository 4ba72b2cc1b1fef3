#!/usr/bin/env python3
"""Checks the import structure of the workspace: the crate graph runs one way, down the
layers declared below, and no source file imports a file that imports it back.

- Crates: every `Cargo.toml` of the repository (outside `target/`) that depends on a
  crate of the workspace. Its `soif*` dependencies (normal, dev and build) must be in the
  same layer or a lower one than the crate itself; a crate missing from `LAYERS` is an
  error (declare it), and so is a `soif-*` dependency that no source file of the crate
  uses.
- Files: in each crate, the files under `src/` and the `mod` tree that joins them. A file
  imports another when it names one of its items: `use crate::…`, `use super::…`,
  `use self::…`, a path such as `crate::a::f(…)` or `child::f(…)` in code, a glob of a
  module, or a `pub use` re-export. A path that ends at an item re-exported elsewhere
  counts for the file that defines it (`crate::Error` re-exported by `lib.rs` from
  `error.rs` is an import of `error.rs`). A `mod` line alone is not an import. Any cycle
  of imports between files is an error, except those listed in the allowlist
  (`scripts/import_cycles_allowed.txt`: one line per group of files that import each
  other in a circle, the group's files joined by ` -> ` in any order), which may only
  shrink: a listed cycle that no longer exists is an
  error too, so that the list is kept up to date.

Usage: scripts/check_imports.py [--graph | --self-test]
  --graph      prints the crate graph and exits
  --self-test  checks the checker on a made-up workspace with known faults
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "scripts" / "import_cycles_allowed.txt"

# The declared layering, bottom first. A crate may depend on crates of its own layer or of
# lower ones, never on a higher one.
LAYERS: list[tuple[str, list[str]]] = [
    ("codecs and record rules", ["soif-codecs"]),
    ("options and the columnar layout", ["soif-options", "soif-arrow"]),
    ("engine", ["soif-pipeline"]),
    ("sources, sinks, store, state", ["soif-sources", "soif-sinks", "soif-store", "soif-state"]),
    ("reader", ["soif-reader"]),
    ("verification", ["soif-verify"]),
    (
        "server, CLI, bindings",
        ["soif-server", "soif", "soif-python", "soif-spark-native", "soif-fuzz"],
    ),
]


def layer_of(name: str) -> int | None:
    for i, (_, names) in enumerate(LAYERS):
        if name in names:
            return i
    return None


# ---------------------------------------------------------------------------------------
# Crates


def manifests() -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [
            d for d in dirnames if d not in ("target", ".git", ".venv", "node_modules") and not d.startswith(".")
        ]
        if "Cargo.toml" in filenames:
            out.append(Path(dirpath) / "Cargo.toml")
    return sorted(out)


def soif_deps(manifest: dict) -> dict[str, str]:
    """The soif crates a manifest depends on, by package name, with the kind of dependency."""
    deps: dict[str, str] = {}
    tables = [("", manifest)]
    for cfg, t in manifest.get("target", {}).items():
        tables.append((f"target {cfg} ", t))
    for prefix, t in tables:
        for kind in ("dependencies", "dev-dependencies", "build-dependencies"):
            for name, spec in t.get(kind, {}).items():
                package = spec.get("package", name) if isinstance(spec, dict) else name
                if package == "soif" or package.startswith("soif-"):
                    deps.setdefault(package, prefix + kind)
    return deps


def check_crates(errors: list[str], graph_only: bool) -> list[tuple[str, Path]]:
    crates = []
    for path in manifests():
        data = tomllib.loads(path.read_text())
        package = data.get("package", {}).get("name")
        if package is None:
            continue
        deps = soif_deps(data)
        if not (package == "soif" or package.startswith("soif-")) and not deps:
            continue
        crates.append((package, path.parent, deps))
    if graph_only:
        for package, _, deps in sorted(crates, key=lambda c: (layer_of(c[0]) or 0, c[0])):
            print(f"{package} -> {', '.join(sorted(deps)) or '(none)'}")
        return []
    for package, directory, deps in crates:
        rel = directory.relative_to(ROOT)
        mine = layer_of(package)
        if mine is None:
            errors.append(
                f"{rel}/Cargo.toml: crate {package} has no layer: add it to LAYERS in scripts/check_imports.py"
            )
            continue
        used = crate_names_used(directory)
        for dep, kind in sorted(deps.items()):
            theirs = layer_of(dep)
            if theirs is None:
                continue  # reported for its own manifest
            if theirs > mine:
                errors.append(
                    f"{rel}/Cargo.toml: {package} ({LAYERS[mine][0]}) depends on {dep} "
                    f"({LAYERS[theirs][0]}), a higher layer ({kind})"
                )
            if kind.endswith("dependencies") and "dev" not in kind and "build" not in kind:
                if dep.replace("-", "_") not in used:
                    errors.append(f"{rel}/Cargo.toml: {package} depends on {dep} but no file of it uses `{dep.replace('-', '_')}`")
    return [(p, d) for p, d, _ in crates]


def crate_names_used(directory: Path) -> set[str]:
    """The `soif…` crate names that the files of the crate's library and binaries name
    (`use soif_x::…`, `soif_x::f(…)`, `extern crate soif_x`)."""
    used: set[str] = set()
    for root in crate_roots(directory):
        for f in Crate("", root).files:
            code = strip(f.read_text())
            used.update(re.findall(r"\b(soif(?:_[a-z]+)*)\s*::", code))
            used.update(re.findall(r"\bextern\s+crate\s+(soif(?:_[a-z]+)*)", code))
    return used


# ---------------------------------------------------------------------------------------
# Source text


def strip(text: str) -> str:
    """The code without comments, string and char literals (kept as empty literals)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F}') or a lifetime ('a): keep lifetimes.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


class Module:
    def __init__(self, path: tuple[str, ...], file: Path, inline: bool = False):
        self.path = path
        self.file = file
        self.inline = inline
        self.children: dict[str, Module] = {}
        self.reexports: dict[str, list[str] | None] = {}  # name -> its path (None: another crate's)
        self.globs: list[list[str]] = []  # `pub use x::*`
        self.defines: set[str] = set()
        self.uses: list[list[str]] = []  # absolute paths named in this module
        self.aliases: dict[str, list[str] | None] = {}  # `use a::b as c;` / `use a::b;` names


def use_trees(code: str):
    """(is_pub, tree text) of every `use …;` in the code."""
    for m in re.finditer(r"(\bpub(?:\s*\([^)]*\))?\s+)?\buse\s+([^;]+);", code):
        yield bool(m.group(1)), m.group(2)


def expand_tree(tree: str) -> list[tuple[list[str], str | None]]:
    """A use tree as a list of (path segments, alias); `*` stays a segment."""
    tree = re.sub(r"\s+", "", tree)

    def parse(s: str, prefix: list[str]) -> list[tuple[list[str], str | None]]:
        items = []
        depth, start = 0, 0
        parts = []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for p in parts:
            if not p:
                continue
            brace = p.find("{")
            if brace >= 0:
                head = [x for x in p[:brace].split("::") if x]
                items += parse(p[brace + 1:p.rfind("}")], prefix + head)
            else:
                alias = None
                if "as" in p and re.search(r"[A-Za-z0-9_*]as[A-Za-z_]", p):
                    m = re.match(r"(.*?)as(" + IDENT + ")$", p)
                    if m and not m.group(1).endswith(":"):
                        p, alias = m.group(1), m.group(2)
                items.append((prefix + [x for x in p.split("::") if x], alias))
        return items

    return parse(tree, [])


class Crate:
    def __init__(self, name: str, root_file: Path):
        self.name = name
        self.root = Module((), root_file)
        self.files: dict[Path, list[Module]] = {}
        self.load(self.root)

    def load(self, module: Module) -> None:
        code = strip(module.file.read_text())
        self.files.setdefault(module.file, []).append(module)
        self.parse(module, code)

    def child_file(self, module: Module, name: str, attr_path: str | None) -> Path | None:
        f = module.file
        if module.inline:
            # Files of an inline module's children live in a folder named after it.
            base = self.dir_of(module)
        else:
            base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") or module.path == () else f.parent / f.stem
        if attr_path:
            p = (f.parent if not module.inline else base) / attr_path
            return p if p.exists() else None
        for p in (base / f"{name}.rs", base / name / "mod.rs"):
            if p.exists():
                return p
        return None

    def dir_of(self, module: Module) -> Path:
        # The folder of an inline module: its parent's folder plus its name.
        parent = self.find(list(module.path[:-1]))
        if parent is None:
            return module.file.parent
        f = parent.file
        base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") or parent.path == () else f.parent / f.stem
        return base / module.path[-1]

    def parse(self, module: Module, code: str) -> None:
        # Inline modules (`mod x { … }`) are parsed as modules of their own, in the same file.
        pos = 0
        body = []
        for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*([;{])", code):
            if m.start() < pos:
                continue
            attrs, name, kind = m.group(1), m.group(2), m.group(3)
            body.append(code[pos:m.start()])
            if re.search(r"#\[cfg\(test\)\]", attrs):
                # Tests are not part of the structure: a test of a low file may well use
                # a high one to set things up.
                pos = m.end() if kind == ";" else matching_brace(code, m.end() - 1) + 1
                continue
            if kind == ";":
                raw = re.search(r'#\[path\s*=\s*"([^"]*)"\]', self_raw(module.file, name) or "")
                f = self.child_file(module, name, raw.group(1) if raw else None)
                pos = m.end()
                if f is None:
                    continue
                child = Module(module.path + (name,), f)
                module.children[name] = child
                self.load(child)
            else:
                end = matching_brace(code, m.end() - 1)
                child = Module(module.path + (name,), module.file, inline=True)
                module.children[name] = child
                self.files.setdefault(module.file, []).append(child)
                self.parse(child, code[m.end():end])
                pos = end + 1
        body.append(code[pos:])
        own = "".join(body)
        for name in re.findall(
            r"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+(" + IDENT + ")", own
        ):
            module.defines.add(name)
        for is_pub, tree in use_trees(own):
            for segs, alias in expand_tree(tree):
                absolute = self.absolute(module, segs)
                if absolute is None:
                    # Another crate's item: no file of this crate.
                    if segs[-1] not in ("*", "self"):
                        name = alias or segs[-1]
                        module.aliases[name] = None
                        if is_pub:
                            module.reexports[name] = None
                    continue
                if segs[-1] == "*":
                    if is_pub:
                        module.globs.append(absolute[:-1])
                    module.uses.append(absolute[:-1] + ["*"])
                    continue
                name = alias or (segs[-1] if segs[-1] != "self" else segs[-2])
                if absolute[-1] == "self":
                    absolute = absolute[:-1]
                module.aliases[name] = absolute
                if is_pub:
                    module.reexports[name] = absolute
                module.uses.append(absolute)
        without_uses = re.sub(r"\buse\s+[^;]+;", "", own)
        for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:" + IDENT + r"\s*::\s*)+" + IDENT + ")", without_uses):
            segs = [s.strip() for s in m.group(1).split("::")]
            first = segs[0]
            if first in ("crate", "super", "self") or first in module.children or first in module.aliases:
                absolute = self.absolute(module, segs)
                if absolute is not None:
                    module.uses.append(absolute)

    def absolute(self, module: Module, segs: list[str]) -> list[str] | None:
        """A path as segments from the crate root, or None when it leaves the crate."""
        if not segs:
            return None
        first = segs[0]
        if first == "crate":
            return segs[1:]
        if first == "self":
            return list(module.path) + segs[1:]
        if first == "super":
            base = list(module.path)
            rest = segs
            while rest and rest[0] == "super":
                base = base[:-1]
                rest = rest[1:]
            return base + rest
        if first in module.children:
            return list(module.path) + segs
        if first in module.aliases:
            target = module.aliases[first]
            return None if target is None else target + segs[1:]
        return None

    def find(self, segs: list[str]) -> Module | None:
        m = self.root
        for s in segs:
            if s not in m.children:
                return None
            m = m.children[s]
        return m

    def target(self, segs: list[str], seen: frozenset = frozenset()) -> set[Path]:
        """The files that define what the path names (following re-exports)."""
        m = self.root
        i = 0
        while i < len(segs) and segs[i] in m.children:
            m = m.children[segs[i]]
            i += 1
        rest = segs[i:]
        if not rest or rest == ["*"]:
            return {m.file}
        name = rest[0]
        key = (m.path, name)
        if key in seen:
            return set()
        seen = seen | {key}
        if name in m.aliases:
            # A re-export, or a private `use` (which modules below may import too).
            target = m.aliases[name]
            return set() if target is None else self.target(target + rest[1:], seen)
        if name in m.defines:
            return {m.file}
        for g in m.globs:
            found = self.target(g + rest, seen)
            if found:
                return found
        return {m.file}

    def edges(self) -> dict[Path, set[Path]]:
        out: dict[Path, set[Path]] = {f: set() for f in self.files}
        for f, modules in self.files.items():
            for module in modules:
                for segs in module.uses:
                    for t in self.target(segs):
                        if t != f:
                            out[f].add(t)
        return out


def self_raw(file: Path, name: str) -> str | None:
    """The attributes written right before `mod name;` in the file's raw text."""
    text = file.read_text()
    m = re.search(r"((?:#\[[^\]]*\]\s*)+)(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+" + re.escape(name) + r"\s*;", text)
    return m.group(1) if m else None


def matching_brace(code: str, i: int) -> int:
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """The strongly connected components with more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(edges: dict[Path, set[Path]], comp: list[Path]) -> list[Path]:
    """One shortest cycle through the component's first file, to show."""
    start = comp[0]
    members = set(comp)
    prev: dict[Path, Path] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return list(reversed(path))
                if w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def crate_roots(directory: Path) -> list[Path]:
    """The library's and the binaries' root files."""
    manifest = tomllib.loads((directory / "Cargo.toml").read_text())
    roots = []
    lib = manifest.get("lib", {}).get("path", "src/lib.rs")
    candidates = [lib, "src/main.rs"] + [b["path"] for b in manifest.get("bin", []) if "path" in b]
    bins = directory / "src" / "bin"
    if bins.is_dir():
        candidates += [str(p.relative_to(directory)) for p in sorted(bins.glob("*.rs"))]
    for c in candidates:
        p = (directory / c).resolve()
        if p.exists() and p not in roots:
            roots.append(p)
    return roots


def check_files(crates: list[tuple[str, Path]], errors: list[str]) -> None:
    allowed = set()
    if ALLOWLIST.exists():
        for line in ALLOWLIST.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                allowed.add(frozenset(x.strip() for x in line.split("->")))
    found = set()
    for package, directory in crates:
        for root in crate_roots(directory):
            crate = Crate(package, root)
            edges = crate.edges()
            for comp in cycles(edges):
                key = frozenset(str(f.relative_to(ROOT)) for f in comp)
                found.add(key)
                if key in allowed:
                    continue
                shown = " -> ".join(str(f.relative_to(ROOT)) for f in shortest_cycle(edges, comp))
                members = ", ".join(sorted(key))
                errors.append(f"{package}: files import each other in a circle: {shown} -> (back); all of: {members}")
    for key in sorted(allowed - found, key=sorted):
        errors.append(
            f"{ALLOWLIST.relative_to(ROOT)}: the cycle {' -> '.join(sorted(key))} is gone: remove it from the list"
        )


def self_test() -> int:
    """Runs the checks on a small workspace made up for the purpose, with one circle of
    files, one through `pub use`, one only in tests, and one crate edge pointing up: the
    first two and the edge must be reported, the test-only circle must not."""
    import tempfile

    global ROOT, ALLOWLIST
    files = {
        "codecs/Cargo.toml": '[package]\nname = "soif-codecs"\n[dependencies]\nsoif-pipeline = { path = "../pipeline" }\n',
        "codecs/src/lib.rs": "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\npub use e::E;\n#[cfg(test)]\nmod tests;\nfn f() { soif_pipeline::run(); }\n",
        "codecs/src/a.rs": "use crate::b::B;\npub struct A;\n",
        "codecs/src/b.rs": "pub struct B;\nfn f() { super::a::A; }\n",
        "codecs/src/c.rs": "pub struct C;\n#[cfg(test)]\nmod tests {\n    use crate::d::D;\n}\n",
        "codecs/src/d.rs": "use crate::c::C;\npub struct D;\n",
        "codecs/src/e.rs": "use crate::f;\npub struct E;\n",
        "codecs/src/tests.rs": "use crate::a::A;\n",
        "pipeline/Cargo.toml": '[package]\nname = "soif-pipeline"\n',
        "pipeline/src/lib.rs": "// \"use crate::x;\" in a comment is no import\npub fn run() {}\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        ROOT = Path(tmp)
        ALLOWLIST = ROOT / "allowed.txt"
        for name, text in files.items():
            (ROOT / name).parent.mkdir(parents=True, exist_ok=True)
            (ROOT / name).write_text(text)
        errors: list[str] = []
        check_files(check_crates(errors, False), errors)
    expected = [
        "soif-codecs (codecs and record rules) depends on soif-pipeline (engine), a higher layer",
        "circle: codecs/src/a.rs -> codecs/src/b.rs -> (back)",
        "circle: codecs/src/e.rs -> codecs/src/lib.rs -> (back)",
    ]
    missing = [e for e in expected if not any(e in x for x in errors)]
    if missing or len(errors) != len(expected):
        print("check_imports self-test failed; expected:", *expected, "got:", *errors, sep="\n  ", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    if "--self-test" in sys.argv:
        return self_test()
    errors: list[str] = []
    crates = check_crates(errors, "--graph" in sys.argv)
    if "--graph" in sys.argv:
        return 0
    check_files(crates, errors)
    for e in errors:
        print(f"check_imports: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
