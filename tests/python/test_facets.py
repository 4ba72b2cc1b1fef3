"""Facets of `soif serve` (docs/server.md#facets) checked against SQL run directly on the
catalog's SQLite file: a generated Harvest corpus (one FILE table, Unix-second dates) plus
the Dublin Core seed is loaded with `soif convert --to sqlite`; every facet is requested as
JSON and as CSV and compared with counts computed by sqlite3 from the record tables, and
so are the counts and the records of a page narrowed by a facet value (its JSON and CSV
forms, every page)."""

import collections
import csv
import io
import json
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import FIXTURES, run, serve, soif_bin

NONE = None  # a facet's "no value"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    d = tmp_path_factory.mktemp("facets")
    corpus = d / "gen.soif"
    run(soif_bin().parent / "soif-gen", "--size", "1MB", "--summaries-only", "--seed", "7", "-o", corpus)
    db = d / "facets.db"
    run(soif_bin(), "convert", corpus, FIXTURES / "rfc2655" / "dublin-core.soif", "--to", "sqlite", "-o", db, "-q")
    return db


def wait_for_facets(catalog_url):
    """The server builds a loaded catalog's facet tables in the background at start; until
    they are built the facets page answers 503."""
    for _ in range(600):
        try:
            with urllib.request.urlopen(catalog_url + "/-/facets.json", timeout=60):
                return
        except urllib.error.HTTPError as e:
            assert e.code == 503 and e.headers["Retry-After"], e
            time.sleep(0.1)
    pytest.fail("the facet tables were never built")


@pytest.fixture(scope="module")
def site(catalog):
    for url in serve("--db", f"cat={catalog}"):
        wait_for_facets(url + "/cat")
        yield url


def get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.headers.get("Content-Type"), r.read()


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def facet_sql(db):
    """Per table: (template, table, SQL expressions for type, year and host). Computed
    only from the record tables and soif_tables/soif_columns, as a user's SQL would."""
    con = sqlite3.connect(db)
    out = []
    for template, table in con.execute("SELECT template, table_name FROM soif_tables"):
        cols = {a.lower(): c for a, c in con.execute(
            "SELECT attribute, column_name FROM soif_columns WHERE table_name = ?", (table,))}
        assert not any(a.startswith("type-") for a in cols), "one Type column per table here"
        ty = f"nullif({ident(cols['type'])}, '')" if "type" in cols else "NULL"
        dates = [ident(cols[a]) for a in ("last-modification-time", "last-modified", "update-time") if a in cols]
        for c in dates:
            # The generated corpus writes Unix seconds: SQLite can read those.
            bad = con.execute(f"SELECT count(*) FROM {ident(table)} WHERE {c} NOT GLOB '[0-9]*'").fetchone()[0]
            assert bad == 0, (table, c)
        if dates:
            latest = "max(" + ", ".join(f"coalesce(CAST({c} AS INTEGER), -1e18)" for c in dates) + ")"
            if len(dates) == 1:
                latest = f"coalesce(CAST({dates[0]} AS INTEGER), -1e18)"
            year = f"CASE WHEN {latest} > -1e18 THEN strftime('%Y', {latest}, 'unixepoch') END"
        else:
            year = "NULL"
        # host: between '://' and the next '/', without port, lower case.
        rest = "substr(url, instr(url, '://') + 3)"
        hostport = f"CASE WHEN instr({rest}, '/') > 0 THEN substr({rest}, 1, instr({rest}, '/') - 1) ELSE {rest} END"
        host = (f"CASE WHEN instr(url, '://') = 0 THEN NULL ELSE lower(CASE WHEN instr({hostport}, ':') > 0 "
                f"THEN substr({hostport}, 1, instr({hostport}, ':') - 1) ELSE {hostport} END) END")
        out.append((template, table, {"type": ty, "year": year, "host": host}))
    return con, out


def sql_counts(db, where=None):
    """{facet: Counter(value -> records)} by SQL; `where`: (facet, value) narrowing."""
    con, tables = facet_sql(db)
    counts = {f: collections.Counter() for f in ("template", "type", "year", "host")}
    for template, table, exprs in tables:
        exprs = dict(exprs, template="'" + template.replace("'", "''") + "'")
        cond = ""
        if where:
            f, v = where
            cond = f" WHERE ({exprs[f]}) IS ?"
        for f in counts:
            sql = f"SELECT {exprs[f]} AS v, count(*) FROM {ident(table)}{cond} GROUP BY v"
            for v, n in con.execute(sql, (where[1],) if where else ()):
                counts[f][v] += n
    return counts


def sql_urls(db, where):
    con, tables = facet_sql(db)
    f, v = where
    urls = []
    for template, table, exprs in sorted(tables):
        urls += [(template, u) for (u,) in con.execute(
            f"SELECT url FROM {ident(table)} WHERE ({exprs[f]}) IS ? ORDER BY url", (v,))]
    return urls


def json_counts(site, path):
    _, body = get(site + path)
    page = json.loads(body)
    out = {}
    for f in page["facets"]:
        assert f["other_values"] == 0, "_size=1000 shows every value"
        out[f["name"]] = collections.Counter({v["value"]: v["count"] for v in f["results"]})
    return page, out


def csv_counts(site, path):
    ctype, body = get(site + path)
    assert ctype.startswith("text/csv")
    out = collections.defaultdict(collections.Counter)
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert rows and list(rows[0]) == ["facet", "value", "count", "kind"]
    for r in rows:
        assert r["kind"] in ("value", "none")
        out[r["facet"]][r["value"] if r["kind"] == "value" else NONE] += int(r["count"])
    return out


def test_every_facet_as_json_and_csv_matches_sql(site, catalog):
    expected = sql_counts(catalog)
    assert len(expected["type"]) > 10 and len(expected["year"]) > 3 and len(expected["host"]) > 3
    assert sum(expected["template"].values()) > 500
    _, got = json_counts(site, "/cat/-/facets.json?_size=1000")
    assert got == expected
    assert csv_counts(site, "/cat/-/facets.csv?_size=1000") == expected
    assert csv_counts(site, "/cat/-/facets?_size=1000&_format=csv") == expected
    # Top N: the largest values, the rest summed as "other".
    _, body = get(site + "/cat/-/facets.json?_facet=type&_size=3")
    (ty,) = json.loads(body)["facets"]
    shown = [(v["value"], v["count"]) for v in ty["results"]]
    ranked = sorted(expected["type"].items(), key=lambda kv: (-kv[1], kv[0] or ""))
    assert shown == ranked[:3]
    assert ty["other_values"] == len(ranked) - 3
    assert ty["other_count"] == sum(n for _, n in ranked[3:])


@pytest.mark.parametrize("facet", ["type", "year", "host"])
def test_narrowing_by_a_value_matches_sql(site, catalog, facet):
    # The second most common value of the facet (not the biggest: a real narrowing).
    value = sql_counts(catalog)[facet].most_common(2)[1][0]
    assert value is not None
    q = urllib.parse.urlencode({facet: value, "_size": 1000})
    page, got = json_counts(site, f"/cat/-/facets.json?{q}")
    assert page["narrowing"] == {facet: value}
    assert got == sql_counts(catalog, (facet, value))
    assert csv_counts(site, f"/cat/-/facets.csv?{q}") == got
    # The narrowed list: the same records, in (template, url) order, page by page.
    urls, url = [], f"{site}/cat/-/search.json?{urllib.parse.urlencode({facet: value})}"
    while url:
        _, body = get(url)
        p = json.loads(body)
        urls += [(r["template"], r["url"]) for r in p["rows"]]
        url = p["next"] and site + p["next"]
    assert urls == sql_urls(catalog, (facet, value))
    # And as CSV, page by page through the `Link: <…>; rel="next"` headers.
    assert csv_list(f"{site}/cat/-/search.csv?{urllib.parse.urlencode({facet: value})}") == urls
    # The template's list narrowed the same way: its first page.
    _, body = get(f"{site}/cat/FILE.json?{urllib.parse.urlencode({facet: value})}")
    rows = [r["url"] for r in json.loads(body)["rows"]]
    file_urls = [(t, u) for t, u in sql_urls(catalog, (facet, value)) if t == "FILE"]
    assert rows == [u for _, u in file_urls][:25]
    # Every page of it, as CSV (`_format=csv` as well as the suffix).
    q = urllib.parse.urlencode({facet: value, "_format": "csv"})
    assert csv_list(f"{site}/cat/FILE?{q}") == file_urls
    assert len(file_urls) > 25


def csv_list(url):
    """The (template, url) rows of a list's CSV form and of each page after it."""
    out, first = [], url
    while url:
        with urllib.request.urlopen(url, timeout=60) as r:
            assert r.headers["Content-Type"].startswith("text/csv")
            links = r.headers.get("Link") or ""
            body = r.read()
        rows = list(csv.reader(io.StringIO(body.decode(), newline="")))
        assert rows[0] == ["n", "template", "url", "title", "score", "href"], rows[0]
        n0 = len(out)
        out += [(row[1], row[2]) for row in rows[1:]]
        assert [int(row[0]) for row in rows[1:]] == list(range(n0 + 1, len(out) + 1))
        nxt = [part.split(">")[0].strip().lstrip("<") for part in links.split(",") if 'rel="next"' in part]
        url = nxt and urllib.parse.urljoin(first, nxt[0])
    return out
