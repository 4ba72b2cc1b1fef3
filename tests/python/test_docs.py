"""Every example in README.md, docs/*.md, python/README.md and server/README.md runs as written, from the repository's root,
on the files the repository ships.

Each page gets a fresh copy of the repository's files (what a clone has) and its code
blocks run there in order, so that a block may use what an earlier one wrote:

- ```sh: a bash script (`set -eo pipefail`); it must exit 0. Processes it leaves running
  in the background (`soif serve … &`) live until the page's last block has run.
- ```console: each `$ COMMAND` line (continued by a trailing `\\`) runs in bash; its
  standard output must be exactly the lines that follow it, and its exit status 0 or 3.
- ```python: the page's Python blocks run in one interpreter, one namespace, in order.
- ```toml: parsed; a pipeline file (a `[source]` table) is run with `soif run`, and its
  test cases (`[[test]]`), if any, with `soif test`, which must pass; a `dc` mapping
  (`[[rule]]`) with `soif convert … -t dc:FILE`.

`soif` and `soif-gen` come first on PATH (the binaries the Rust suite built: $SOIF_BIN),
then this virtual environment (Python with the package, Polars, DuckDB, pyarrow and
PySpark). A block that cannot run here (systemd units are not, being ```ini; a cluster
submission, an install command) is preceded by the line
`<!-- docs-test: skip (WHY) -->`, with the reason, which the test requires. Relative links
between the pages, and their anchors, must resolve.
"""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "python" / "README.md",
         ROOT / "server" / "README.md"]
RUN = {"sh", "console", "python", "toml"}
SKIP = re.compile(r"^<!-- docs-test: skip \((.+)\) -->$")
FENCE = re.compile(r"^```(\S*)\s*$")
TIMEOUT = 600


def soif_bin():
    return pathlib.Path(os.environ.get("SOIF_BIN", ROOT / "target" / "debug" / "soif")).resolve()


class Block:
    def __init__(self, page, line, lang, text, skip):
        self.page, self.line, self.lang, self.text, self.skip = page, line, lang, text, skip

    def where(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page):
    """The page's fenced code blocks, with the skip reason that precedes each, if any."""
    out = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            assert not lines[i].startswith("<!-- docs-test") or SKIP.match(lines[i]), (
                f"{page.name}:{i + 1}: malformed marker {lines[i]!r}")
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        body = []
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{page.name}:{start + 1}: unclosed code block"
        prev = lines[start - 1] if start > 0 else ""
        skip = SKIP.match(prev)
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n", skip and skip.group(1)))
        i += 1
    return out


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The repository's files, as a fresh clone has them (tracked and new files, not
    ignored ones: no target/, no .venv)."""
    dest = tmp_path_factory.mktemp("clone") / "soif"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, check=True, capture_output=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        src = ROOT / os.fsdecode(f)
        if not src.is_file():
            continue  # deleted in the work tree
        dst = dest / os.fsdecode(f)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return dest


def environment():
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(soif_bin().parent), str(pathlib.Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env.pop("SOIF_TOKEN", None)
    return env


# Runs a page's Python blocks in one namespace: reads `PATH\tNAME\n` lines (a block's file
# and its name for tracebacks) on stdin, answers one JSON line per block on fd 3.
DRIVER = textwrap.dedent("""
    import json, os, sys, traceback
    ns = {"__name__": "__main__"}
    answer = os.fdopen(int(sys.argv[1]), "w")
    for line in sys.stdin:
        path, name = line.rstrip("\\n").split("\\t")
        try:
            exec(compile(open(path, encoding="utf-8").read(), name, "exec"), ns)
            result = {"ok": True}
        except BaseException:
            result = {"ok": False, "error": traceback.format_exc()}
        sys.stdout.flush(); sys.stderr.flush()
        answer.write(json.dumps(result) + "\\n"); answer.flush()
""")


class Page:
    """A page's run: its directory, its background process groups, its Python."""

    def __init__(self, workdir, env):
        self.dir, self.env, self.groups, self.python = workdir, env, [], None
        self.n = 0

    def tmp(self, suffix):
        self.n += 1
        return self.dir / f".docs-test-{self.n}{suffix}"

    def shell(self, script, block, ok=(0,)):
        """Runs a bash script in its own process group (kept until the page ends, for what
        it leaves in the background); returns (status, stdout, stderr)."""
        path, out, err = self.tmp(".sh"), self.tmp(".out"), self.tmp(".err")
        path.write_text("set -eo pipefail\n" + script, encoding="utf-8")
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen(["bash", str(path)], cwd=self.dir, env=self.env, stdout=o,
                                    stderr=e, stdin=subprocess.DEVNULL, start_new_session=True)
            self.groups.append(proc.pid)
            try:
                status = proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{block.where()}: still running after {TIMEOUT} s")
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        assert status in ok, (f"{block.where()}: exit status {status}\n--- script\n{script}"
                              f"--- stdout\n{stdout[-4000:]}--- stderr\n{stderr[-4000:]}")
        return status, stdout, stderr

    def run_python(self, block):
        if self.python is None:
            r, w = os.pipe()
            self.log = open(self.tmp(".python.log"), "wb")
            self.python = subprocess.Popen([sys.executable, "-c", DRIVER, str(w)], cwd=self.dir,
                                           env=self.env, stdin=subprocess.PIPE, stdout=self.log,
                                           stderr=subprocess.STDOUT, pass_fds=(w,), text=True,
                                           start_new_session=True)
            os.close(w)
            self.answers = os.fdopen(r)
            self.groups.append(self.python.pid)
        path = self.tmp(".py")
        path.write_text(block.text, encoding="utf-8")
        self.python.stdin.write(f"{path}\t{block.where()}\n")
        self.python.stdin.flush()
        line = self.answers.readline()
        assert line, f"{block.where()}: the Python interpreter exited\n{self.log_text()}"
        result = json.loads(line)
        assert result["ok"], f"{block.where()}:\n{block.text}{result['error']}\n{self.log_text()}"

    def log_text(self):
        self.log.flush()
        return pathlib.Path(self.log.name).read_text(errors="replace")[-4000:]

    def close(self):
        if self.python is not None:
            self.python.stdin.close()
            try:
                self.python.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            self.answers.close()
            self.log.close()
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(group, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)


SUMMARY = re.compile(r"[\d.]+ MB in [\d.]+ s \([\d.]+ MB/s\)")


def console(page, block):
    """`$ COMMAND` lines and what each prints: its standard output exactly, then (lines
    starting `soif: `) what it writes on stderr, in order, the summary line's size, time
    and rate aside. Blank lines before the next command separate."""
    lines = block.text.split("\n")[:-1]
    i, n = 0, 0
    while i < len(lines):
        assert lines[i].startswith("$ "), f"{block.where()}: expected `$ command`, got {lines[i]!r}"
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command += "\n" + lines[i]
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        while expected and expected[-1] == "":
            expected.pop()
        messages = [SUMMARY.sub("…", l) for l in expected if l.startswith("soif: ")]
        output = "".join(l + "\n" for l in expected if not l.startswith("soif: "))
        _, stdout, stderr = page.shell(command + "\n", block, ok=(0, 3))
        assert stdout == output, f"{block.where()}: {command}"
        actual = iter(SUMMARY.sub("…", l) for l in stderr.split("\n"))
        for message in messages:
            assert any(m == message for m in actual), (
                f"{block.where()}: {command}: {message!r} not on stderr, in order:\n{stderr}")
        n += 1
    assert n, f"{block.where()}: no command"


def toml(page, block):
    data = tomllib.loads(block.text)
    path = page.tmp(".toml")
    path.write_text(block.text, encoding="utf-8")
    if "source" in data:
        page.shell(f"soif run -q {path}\n", block, ok=(0, 3))
        if "test" in data:
            page.shell(f"soif test {path}\n", block)
    elif "rule" in data:
        page.shell(f"soif convert tests/fixtures/harvest/ecrc-93-10.soif -t dc:{path} --to jsonl -q\n", block)


def page_ids():
    return [str(p.relative_to(ROOT)) for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=page_ids())
def test_every_example_on_the_page_runs(page, clone, tmp_path):
    assert soif_bin().exists(), f"{soif_bin()}: build it first (cargo test builds it)"
    workdir = tmp_path / "soif"
    shutil.copytree(clone, workdir, symlinks=True)
    run = Page(workdir, environment())
    try:
        for block in blocks(page):
            if block.lang not in RUN:
                assert block.skip is None, f"{block.where()}: a skip marker on a block that never runs"
                continue
            if block.skip is not None:
                continue
            if block.lang == "sh":
                run.shell(block.text, block)
            elif block.lang == "console":
                console(run, block)
            elif block.lang == "python":
                run.run_python(block)
            elif block.lang == "toml":
                toml(run, block)
    finally:
        run.close()


ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page):
    """GitHub's anchors of a page's headings, and its explicit `<a id>`s."""
    found, seen = set(ANCHOR.findall(page.read_text(encoding="utf-8"))), {}
    in_code = False
    for line in page.read_text(encoding="utf-8").split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        found.add(slug if k == 0 else f"{slug}-{k}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=page_ids())
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(ROOT)}: broken link {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.relative_to(ROOT)}: no anchor #{anchor} in {path or page.name}"


def test_the_skip_markers_each_give_a_reason():
    for page in PAGES:
        for block in blocks(page):
            if block.skip is not None:
                assert len(block.skip.strip()) >= 10, f"{block.where()}: say why it cannot run"
