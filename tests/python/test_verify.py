"""`soif verify` against targets damaged with the tools users have: a Parquet file
rewritten with pyarrow and a SQLite catalog edited with Python's sqlite3 — a row deleted,
a value changed, a row added, a deletion not applied, the file cut short — and the
`--report` JSON must name exactly those records (docs/verify.md)."""

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOIF = os.environ.get("SOIF_BIN", str(ROOT / "target" / "debug" / "soif"))

# Five records, then a Harvest @DELETE of the fifth.
RECORDS = (b"@FILE { http://x/1\nTitle{3}:\tOne\n}\n"
           b"@FILE { http://x/2\nTitle{3}:\tTwo\nAuthor{3}:\tAnn\n}\n"
           b"@FILE { http://x/3\nTitle{5}:\tThree\n}\n"
           b"@DOCUMENT { http://x/4\nTitle{4}:\tFour\n}\n"
           b"@FILE { http://x/5\nTitle{4}:\tFive\n}\n")
DELETIONS = b"@DELETE {\n@FILE { http://x/5\n}\n}\n"

# What every damage below does, as the report's classes should name it.
DAMAGE = {
    "missing": [("FILE", "http://x/1")],
    "changed": [("FILE", "http://x/2")],
    "extra": [("DOCUMENT", "http://x/9")],
    "deletion_not_applied": [("FILE", "http://x/5")],
}


@pytest.fixture
def sources(tmp_path):
    a, b = tmp_path / "a.soif", tmp_path / "b.soif"
    a.write_bytes(RECORDS)
    b.write_bytes(DELETIONS)
    return [a, b]


def convert(sources, to, out):
    p = subprocess.run([SOIF, "convert", *map(str, sources), "--to", to, "-o", str(out), "-q"],
                       capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    return out


def verify(sources, target, report):
    return subprocess.run([SOIF, "verify", *map(str, sources), "--against", str(target),
                           "--report", str(report)], capture_output=True)


def named(report):
    """The records each class of the report names, with the counts."""
    t = json.loads(report.read_text())["targets"][0]
    classes = {c: sorted((e["template"], e["url"]) for e in t["examples"].get(c, []))
               for c in DAMAGE}
    return t, classes


def check_damage(p, report, matched):
    assert p.returncode == 3, p.stderr.decode()
    t, classes = named(report)
    assert json.loads(report.read_text())["verdict"] == "mismatch"
    assert classes == DAMAGE
    assert t["counts"]["matched"] == matched
    for c, keys in DAMAGE.items():
        assert t["counts"][c] == len(keys), c
    change = t["examples"]["changed"][0]["change"]
    assert (change["attribute"], change["source"], change["target"]) == ("Title", "Two", "Deux")


def test_parquet_damaged_with_pyarrow(sources, tmp_path):
    target = convert(sources, "parquet", tmp_path / "c.parquet")
    report = tmp_path / "report.json"
    p = verify(sources, target, report)
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(report.read_text())["targets"][0]["counts"]["matched"] == 6

    table = pq.read_table(target)
    rows = table.to_pylist()
    rows = [r for r in rows if r["url"] != "http://x/1" and r["action"] != "delete"]
    for r in rows:
        for a in r["attributes"]:
            if r["url"] == "http://x/2" and a["name"] == "Title":
                a["value"] = "Deux"
    rows.append({"template": "DOCUMENT", "url": "http://x/9", "action": None,
                 "attributes": [{"name": "Title", "value": "Nine", "bytes": None,
                                 "name_bytes": None}],
                 "template_bytes": None, "url_bytes": None})
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), target)
    check_damage(verify(sources, target, report), report, matched=3)


def test_a_parquet_file_written_short_or_cut_short(sources, tmp_path):
    target = convert(sources, "parquet", tmp_path / "c.parquet")
    report = tmp_path / "report.json"
    # A writer that stopped after three records but closed its file: the rest is missing.
    table = pq.read_table(target)
    pq.write_table(table.slice(0, 3), target)
    p = verify(sources, target, report)
    assert p.returncode == 3, p.stderr.decode()
    t, classes = named(report)
    assert classes == {"missing": [("DOCUMENT", "http://x/4"), ("FILE", "http://x/5")],
                       "changed": [], "extra": [],
                       "deletion_not_applied": [("FILE", "http://x/5")]}
    assert t["counts"]["matched"] == 3
    # A file cut short (no footer): an error that names the file, no verdict.
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    report.unlink()
    p = verify(sources, target, report)
    assert p.returncode == 1, p.stderr.decode()
    assert "c.parquet" in p.stderr.decode()
    assert not report.exists()


def test_sqlite_damaged_with_sqlite3(sources, tmp_path):
    target = convert(sources, "sqlite", tmp_path / "c.db")
    report = tmp_path / "report.json"
    p = verify(sources, target, report)
    assert p.returncode == 0, p.stderr.decode()

    with sqlite3.connect(target) as db:
        db.execute('DELETE FROM "FILE" WHERE url = ?', ("http://x/1",))
        db.execute('UPDATE "FILE" SET "Title" = ? WHERE url = ?', ("Deux", "http://x/2"))
        db.execute('INSERT INTO "DOCUMENT"(url, soif_datestamp, "Title") VALUES (?, ?, ?)',
                   ("http://x/9", "2026-11-26T00:00:00Z", "Nine"))
        db.execute('INSERT INTO "FILE"(url, soif_datestamp, "Title") VALUES (?, ?, ?)',
                   ("http://x/5", "2026-11-26T00:00:00Z", "Five"))
    db.close()
    check_damage(verify(sources, target, report), report, matched=2)

    # The catalog cut short: an error that names it.
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    report.unlink()
    p = verify(sources, target, report)
    assert p.returncode not in (0, 3), p.stderr.decode()
    assert "c.db" in p.stderr.decode()
    assert not report.exists()


def test_the_comparison_shows_progress_on_a_terminal_only(sources, tmp_path):
    import pty

    target = convert(sources, "sqlite", tmp_path / "c.db")
    args = [SOIF, "verify", *map(str, sources), "--against", str(target)]
    piped = subprocess.run(args, capture_output=True)
    assert piped.returncode == 0, piped.stderr.decode()
    assert b"partitions compared" not in piped.stderr
    # stderr a terminal, as a user running it by hand has it.
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert p.wait() == 0, shown.decode(errors="replace")
    assert b"partitions compared" in shown, shown
    assert b"/64" in shown, shown
    assert b"soif verify: match" in shown
