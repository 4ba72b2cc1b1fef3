"""soif's OAI-PMH source against a third-party provider: the `oaipmh` package's server
(oaipmh_provider.py, on 127.0.0.1). A mirror kept in SQLite by `soif convert
oai+http://…` stays identical to the repository across additions, changes and deletions
over three runs, and the later runs fetch only what changed (the provider logs every
request)."""

import datetime
import json
import pathlib
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import soif_bin

HERE = pathlib.Path(__file__).resolve().parent
ELEMENTS = ["title", "creator", "subject", "description", "publisher", "contributor", "date", "type",
            "format", "identifier", "source", "language", "relation", "coverage", "rights"]


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_second():
    """Waits for the next second: `from` is inclusive, so a change made in the second a
    harvest starts comes again next time (harmless; the counts below are exact)."""
    start = now()
    while now() == start:
        time.sleep(0.05)


def item(n, edition, stamp="2020-01-01T00:00:00Z"):
    return {"datestamp": stamp, "deleted": False, "dc": {
        "title": [f"Item {n} ({edition}) <&>"],
        "creator": ["A. Author", f"B. Writer {n}"],
        "subject": ["oai; soif"],
        "date": ["2020-01-01"],
        "identifier": [f"http://example.org/item/{n}"],
    }}


@pytest.fixture()
def provider(tmp_path):
    store = tmp_path / "store.json"
    log = tmp_path / "requests.log"
    store.write_text(json.dumps({f"oai:example.org:{n}": item(n, "first") for n in range(1, 11)}))
    log.write_text("")
    proc = subprocess.Popen([sys.executable, str(HERE / "oaipmh_provider.py"), str(store), str(log)],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    yield {"url": f"oai+http://127.0.0.1:{port}/oai", "store": store, "log": log}
    proc.terminate()
    proc.wait(timeout=10)


def change(store, update):
    items = json.loads(store.read_text())
    update(items)
    store.write_text(json.dumps(items))


def requests(log):
    """The ListRecords requests logged so far, and forgets them."""
    lines = [l for l in log.read_text().splitlines() if "ListRecords" in l]
    log.write_text("")
    return lines


def harvest(url, mirror, *extra):
    out = subprocess.run([str(soif_bin()), "convert", url, "--to", "sqlite", "-o", str(mirror), *extra],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    summary = [l for l in out.stderr.splitlines() if " records in, " in l]
    return int(summary[-1].split("soif: ")[1].split(" records in")[0]) if summary else 0


def expected(store):
    """The live items as the mirror must hold them: Dublin-Core records named by their
    identifiers, RFC 2655 Appendix C names, repeated elements numbered."""
    out = {}
    for ident, it in json.loads(store.read_text()).items():
        if it["deleted"]:
            continue
        attrs = {}
        for name in ELEMENTS:
            values = it["dc"].get(name, [])
            if len(values) == 1:
                attrs[name.upper()] = values[0]
            else:
                for i, v in enumerate(values, 1):
                    attrs[f"{name.upper()}-{i}"] = v
        out[ident] = attrs
    return out


def mirrored(db):
    con = sqlite3.connect(db)
    tables = dict(con.execute("SELECT template, table_name FROM soif_tables"))
    table = tables["Dublin-Core"]
    columns = dict(con.execute("SELECT column_name, attribute FROM soif_columns WHERE table_name = ?", (table,)))
    cur = con.execute(f'SELECT * FROM "{table}"')
    names = [d[0] for d in cur.description]
    out = {}
    for row in cur:
        rec = dict(zip(names, row))
        url = rec.pop("url")
        out[url] = {columns[k]: v for k, v in rec.items() if v is not None and k in columns}
    return out


def run2(items):
    """Two new items, one changed, two deleted."""
    stamp = now()
    for n in (11, 12):
        items[f"oai:example.org:{n}"] = item(n, "first", stamp)
    items["oai:example.org:4"] = item(4, "second", stamp)
    for n in (2, 7):
        items[f"oai:example.org:{n}"].update(deleted=True, datestamp=stamp)


def run3(items):
    """An item added in run 2 deleted, a deleted one back."""
    stamp = now()
    items["oai:example.org:12"].update(deleted=True, datestamp=stamp)
    items["oai:example.org:7"] = item(7, "back", stamp)


def test_a_state_mirror_of_a_third_party_provider_stays_identical_over_three_runs(provider, tmp_path):
    url, store, log = provider["url"], provider["store"], provider["log"]
    mirror, state = tmp_path / "mirror.db", tmp_path / "mirror.state"
    src = f"{url}?metadataPrefix=oai_dc"
    next_second()

    # Run 1: ten items, three a page: four ListRecords requests (and one Identify).
    assert harvest(src, mirror, "--state", str(state)) == 10
    assert len(requests(log)) == 4
    assert mirrored(mirror) == expected(store)

    # Run 2: five items, two pages, asked `from` run 1's responseDate.
    change(store, run2)
    next_second()
    assert harvest(src, mirror, "--state", str(state)) == 5
    asked = requests(log)
    assert len(asked) == 2 and "from=" in asked[0], asked
    assert mirrored(mirror) == expected(store)
    assert "oai:example.org:2" not in mirrored(mirror)

    # Run 3: two items, one page.
    change(store, run3)
    next_second()
    assert harvest(src, mirror, "--state", str(state)) == 2
    assert len(requests(log)) == 1
    assert mirrored(mirror) == expected(store)

    # Nothing changed: one request (noRecordsMatch), nothing read.
    next_second()
    assert harvest(src, mirror, "--state", str(state)) == 0
    assert len(requests(log)) == 1
    assert mirrored(mirror) == expected(store)


def test_explicit_from_without_state(provider, tmp_path):
    """Without a state file the resume point is the user's: `&from=` in the URL."""
    url, store, log = provider["url"], provider["store"], provider["log"]
    mirror = tmp_path / "mirror.db"
    next_second()
    from1 = now()
    assert harvest(url, mirror) == 10
    assert len(requests(log)) == 4
    change(store, run2)
    next_second()
    assert harvest(f"{url}?metadataPrefix=oai_dc&from={from1}", mirror) == 5
    asked = requests(log)
    assert len(asked) == 2 and f"from={from1}".replace(":", "%3A") in asked[0], asked
    assert mirrored(mirror) == expected(store)
