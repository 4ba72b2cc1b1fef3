"""What the web follows, checked by the tools the web uses: the record pages' schema.org
JSON-LD expanded to triples by a JSON-LD processor (pyld), the sitemaps validated with
lxml against the sitemaps protocol's schemas (tests/fixtures/sitemaps), and ResourceSync
followed by its stock client (`resync-sync`): a baseline copy of a catalog, then the
catalog changed through `soif convert --to sqlite` (records added, changed, deleted),
then an incremental sync, the copy equal to the catalog after each."""

import json
import pathlib
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from conftest import FIXTURES, run, serve, soif_bin

etree = pytest.importorskip("lxml.etree")
lxml_html = pytest.importorskip("lxml.html")
jsonld = pytest.importorskip("pyld.jsonld")

SCHEMAS = FIXTURES / "sitemaps"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
RS = "{http://www.openarchives.org/rs/terms/}"
DC = "{http://purl.org/dc/terms/}"
SCHEMA = "https://schema.org/"
# The mapping of docs/server.md#schemaorg-json-ld, stated again here.
MAPPING = {
    "title": "name", "creator": "creator", "subject": "keywords", "description": "description",
    "publisher": "publisher", "contributor": "contributor", "date": "dateCreated", "type": "genre",
    "format": "encodingFormat", "identifier": "identifier", "source": "isBasedOn",
    "language": "inLanguage", "relation": "citation", "coverage": "spatialCoverage",
    "rights": "license",
}
SIZE = 2


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def enc(b):
    return urllib.parse.quote(b, safe="")


def live_records(db):
    """{(template, url): datestamp} of the catalog's live records, from its tables."""
    con = sqlite3.connect(db)
    out = {}
    for tmpl, table in con.execute("SELECT template, table_name FROM soif_tables"):
        q = 'SELECT url, soif_datestamp FROM "%s"' % table.replace('"', '""')
        for url, ds in con.execute(q):
            t = tmpl if isinstance(tmpl, bytes) else tmpl.encode()
            out[(t, url if isinstance(url, bytes) else url.encode())] = ds
    con.close()
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("discovery")
    db = d / "web.db"
    run(soif_bin(), "convert", FIXTURES / "rfc2655" / "documents.soif", FIXTURES / "rfc2655" / "dublin-core.soif",
        FIXTURES / "harvest" / "ecrc-93-10.soif", "--lenient", "--on-error", "skip", "--to", "sqlite", "-o", db, "-q")
    for base in serve("--db", f"web={db}", "--sitemap-size", SIZE):
        yield base, db


def schema(name):
    return etree.XMLSchema(etree.parse(str(SCHEMAS / name)))


def test_robots_names_the_sitemap_and_the_sitemaps_are_valid(site):
    base, db = site
    robots = get(base + "/robots.txt").decode()
    assert f"Sitemap: {base}/web/sitemap.xml" in robots.splitlines()
    records = live_records(db)
    assert len(records) > SIZE
    index = etree.fromstring(get(base + "/web/sitemap.xml"))
    schema("siteindex.xsd").assertValid(index)
    parts = [loc.text for loc in index.iter(SM + "loc")]
    assert len(parts) == -(-len(records) // SIZE)
    urlset = schema("sitemap.xsd")
    seen = {}
    for part in parts:
        doc = etree.fromstring(get(part))
        urlset.assertValid(doc)
        for url in doc.iter(SM + "url"):
            seen[url.find(SM + "loc").text] = url.find(SM + "lastmod").text
    want = {f"{base}/web/{enc(t)}/record?url={enc(u)}": ds for (t, u), ds in records.items()}
    assert seen == want



def test_a_catalog_without_records_has_a_valid_sitemap(tmp_path):
    """Every record deleted: the sitemap lists the catalog's own page (the schema wants
    a <url> at least), the resource list is empty and the change list holds the
    deletions."""
    db = tmp_path / "none.db"
    records = [(b"FILE", b"http://example.org/%d" % i, b"File %d" % i) for i in range(2)]
    run(soif_bin(), "convert", soif_file(tmp_path / "two.soif", records), "--to", "sqlite", "-o", db, "-q")
    gone = tmp_path / "gone.soif"
    gone.write_bytes(b"@DELETE {\n@FILE { http://example.org/0\n}\n@FILE { http://example.org/1\n}\n}\n")
    run(soif_bin(), "convert", gone, "--to", "sqlite", "-o", db, "-q")
    assert live_records(db) == {}
    for base in serve("--db", f"none={db}"):
        doc = etree.fromstring(get(base + "/none/sitemap.xml"))
        schema("sitemap.xsd").assertValid(doc)
        locs = [loc.text for loc in doc.iter(SM + "loc")]
        assert locs == [f"{base}/none"]
        assert b"<html" in get(locs[0])
        resources = etree.fromstring(get(base + "/none/resourcelist.xml"))
        assert list(resources.iter(SM + "url")) == []
        changes = etree.fromstring(get(base + "/none/changelist.xml"))
        md = [url.find(RS + "md").get("change") for url in changes.iter(SM + "url")]
        assert md == ["deleted", "deleted"]

def triples(page_html, subject):
    """The (predicate, object) pairs of `subject` in the page's JSON-LD, by pyld."""
    scripts = lxml_html.fromstring(page_html).xpath('//script[@type="application/ld+json"]')
    assert len(scripts) == 1
    doc = json.loads(scripts[0].text)
    dataset = jsonld.to_rdf(jsonld.expand(doc))
    out = []
    for t in dataset["@default"]:
        assert t["subject"]["value"] == subject, t
        out.append((t["predicate"]["value"], t["object"]["value"]))
    return sorted(out)


def test_record_pages_carry_their_dublin_core_as_schema_org(site):
    base, db = site
    checked = 0
    for (t, u) in sorted(live_records(db)):
        href = f"{base}/web/{enc(t)}/record?url={enc(u)}"
        rdf = etree.fromstring(get(href.replace("/record?", "/record.rdf?")))
        (desc,) = rdf
        subject = desc.get("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about")
        want = [("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", SCHEMA + "CreativeWork"),
                (SCHEMA + "url", subject)]
        for el in desc:
            if not el.tag.startswith(DC):
                continue  # the record's own attributes, soif:
            want.append((SCHEMA + MAPPING[el.tag[len(DC):]], el.text or ""))
        assert triples(get(href), subject) == sorted(want), href
        checked += 1
    assert checked > SIZE


def resync(mode, base, copy, cwd):
    cmd = [str(pathlib.Path(sys.executable).with_name("resync-sync")), mode, "--delete", f"{base}/cat={copy}"]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    # The client says FatalError yet exits 0.
    assert p.returncode == 0 and "Error" not in out, out
    return out


def assert_copy_equals(base, db, copy):
    files = {str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()}
    records = live_records(db)
    want = {f"{enc(t)}/record.soif?url={enc(u)}" for (t, u) in records}
    assert files == want
    for f in files:
        assert (copy / f).read_bytes() == get(f"{base}/cat/{f}"), f


def soif_file(path, records):
    path.write_bytes(b"".join(b"@%s { %s\nTitle{%d}:\t%s\n}\n" % (t, u, len(title), title)
                              for t, u, title in records))
    return path


def test_resync_baseline_then_incremental(tmp_path):
    db = tmp_path / "cat.db"
    first = [(b"FILE", b"http://example.org/%d" % i, b"File %d" % i) for i in range(9)]
    first += [(b"DOCUMENT", b"http://example.org/doc?a=1&b=%d" % i, b"Doc %d" % i) for i in range(3)]
    run(soif_bin(), "convert", soif_file(tmp_path / "first.soif", first), "--to", "sqlite", "-o", db, "-q")
    copy = tmp_path / "copy"
    for base in serve("--db", f"cat={db}", "--sitemap-size", 5):
        # The client finds the capability list through the catalog's source description.
        out = resync("--baseline", base, copy, tmp_path)
        assert_copy_equals(base, db, copy)
        assert "created=12" in out.replace(" ", ""), out
        # Datestamps are in seconds: the changes come in a later second than the baseline's.
        time.sleep(1.1)
        # A nightly load: one record changed, one added, two deleted (an @DELETE envelope).
        changes = [(b"FILE", b"http://example.org/3", b"File 3, changed"),
                   (b"FILE", b"http://example.org/new", b"New")]
        run(soif_bin(), "convert", soif_file(tmp_path / "changes.soif", changes), "--to", "sqlite", "-o", db, "-q")
        gone = tmp_path / "gone.soif"
        gone.write_bytes(b"@DELETE {\n@FILE { http://example.org/5\n}\n"
                         b"@DOCUMENT { http://example.org/doc?a=1&b=0\n}\n}\n")
        run(soif_bin(), "convert", gone, "--to", "sqlite", "-o", db, "-q")
        # The change list: every record's latest change and every deletion, oldest first;
        # the load's changes are the newest: the new record `created` (its row's
        # soif_created is its datestamp), the changed one `updated`, the others `deleted`.
        changes = etree.fromstring(get(f"{base}/cat/changelist.xml"))
        listed = [(url.find(SM + "loc").text, url.find(RS + "md").get("change"),
                   url.find(RS + "md").get("datetime")) for url in changes.iter(SM + "url")]
        assert [d for _, _, d in listed] == sorted(d for _, _, d in listed)
        newest = {loc.rsplit("?url=", 1)[1]: change for loc, change, _ in listed[-4:]}
        assert newest == {enc(b"http://example.org/3"): "updated", enc(b"http://example.org/new"): "created",
                          enc(b"http://example.org/5"): "deleted",
                          enc(b"http://example.org/doc?a=1&b=0"): "deleted"}, listed
        out = resync("--incremental", base, copy, tmp_path)
        assert "created=1" in out.replace(" ", "") and "deleted=2" in out.replace(" ", ""), out
        assert_copy_equals(base, db, copy)
        changed = copy / "FILE" / f"record.soif?url={enc(b'http://example.org/3')}"
        assert b"File 3, changed" in changed.read_bytes()
        assert not (copy / "FILE" / f"record.soif?url={enc(b'http://example.org/5')}").exists()
        # Nothing more changed: the next incremental sync leaves the copy as it is.
        resync("--incremental", base, copy, tmp_path)
        assert_copy_equals(base, db, copy)
