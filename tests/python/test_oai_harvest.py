"""OAI-PMH harvest of `soif serve`: every response validated offline against the official
schemas (and the project's soif.xsd); full harvests with stock clients — sickle (GET)
and oaipmh 4.x (POST) — compared with the catalog record for record."""

import base64
import datetime
import re
import sqlite3
import urllib.parse
import urllib.request

import pytest
from conftest import GEN_REPO, catalog_entries

NS = {"o": "http://www.openarchives.org/OAI/2.0/"}


def fetch(url, post=None):
    data = urllib.parse.urlencode(post).encode() if post is not None else None
    with urllib.request.urlopen(url, data=data, timeout=60) as r:
        assert r.headers["Content-Type"] == "text/xml; charset=utf-8"
        return r.read()


def check(schema, xml):
    errors = list(schema.iter_errors(xml.decode("utf-8")))
    assert not errors, f"{errors[0]}\n{xml[:3000]!r}"


def code(xml):
    m = re.search(rb'<error code="(\w+)"', xml)
    return m and m.group(1).decode()


QUERIES = [
    ("verb=Identify", None),
    ("verb=ListMetadataFormats", None),
    ("verb=ListSets", None),
    ("verb=ListIdentifiers&metadataPrefix=oai_dc", None),
    ("verb=ListRecords&metadataPrefix=oai_dc", None),
    ("verb=ListRecords&metadataPrefix=soif", None),
    ("verb=ListRecords&metadataPrefix=soif&set=FILE", None),
    ("verb=ListRecords&metadataPrefix=oai_dc&from=2000-01-01&until=2999-01-01", None),
    ("verb=ListRecords&metadataPrefix=oai_dc&from=2000-01-01T00:00:00Z", None),
    ("", "badVerb"),
    ("verb=Nope", "badVerb"),
    ("verb=Identify&verb=ListSets", "badVerb"),
    ("verb=Identify&x=1", "badArgument"),
    ("verb=ListRecords", "badArgument"),
    ("verb=ListRecords&metadataPrefix=oai_dc&from=2002-01-01&until=2001-01-01", "badArgument"),
    ("verb=ListRecords&metadataPrefix=oai_dc&from=2001-01-01&until=2002-01-01T00:00:00Z", "badArgument"),
    ("verb=ListRecords&metadataPrefix=oai_dc&resumptionToken=x", "badArgument"),
    ("verb=ListRecords&metadataPrefix=bad%20prefix", "badArgument"),
    ("verb=GetRecord&identifier=oai:x.y:FILE/z", "badArgument"),
    ("verb=ListRecords&metadataPrefix=marc21", "cannotDisseminateFormat"),
    ("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:soif.example.org:FILE/nowhere", "idDoesNotExist"),
    ("verb=ListMetadataFormats&identifier=oai:other.example.org:FILE/x", "idDoesNotExist"),
    ("verb=ListRecords&metadataPrefix=oai_dc&until=1980-01-01", "noRecordsMatch"),
    ("verb=ListRecords&metadataPrefix=oai_dc&set=NOSUCH", "noRecordsMatch"),
    ("verb=ListIdentifiers&resumptionToken=v1.AAAA.BBBB", "badResumptionToken"),
    ("verb=ListSets&resumptionToken=x", "badResumptionToken"),
]


@pytest.mark.parametrize("query,expected", QUERIES)
@pytest.mark.parametrize("path", ["/oai", "/oai/gen"])
def test_every_response_is_valid(server, schema, path, query, expected):
    xml = fetch(f"{server}{path}?{query}")
    check(schema, xml)
    assert code(xml) == expected
    # The same request by POST.
    post = fetch(f"{server}{path}", post=urllib.parse.parse_qsl(query))
    check(schema, post)
    assert code(post) == expected


def test_hostile_values_and_every_record_validate(server, schema, catalogs):
    """The seeds catalog holds control characters, invalid UTF-8, binary values and a
    template XML cannot name: each record, in both formats, by GetRecord too."""
    for prefix in ["oai_dc", "soif"]:
        xml = fetch(f"{server}/oai?verb=ListRecords&metadataPrefix={prefix}")
        check(schema, xml)
        for ident in re.findall(rb"<identifier>([^<]+)</identifier>", xml):
            one = fetch(f"{server}/oai?" + urllib.parse.urlencode(
                {"verb": "GetRecord", "metadataPrefix": prefix, "identifier": ident.decode().replace("&amp;", "&")}))
            check(schema, one)
            assert code(one) is None, one
    soif = fetch(f"{server}/oai?verb=ListRecords&metadataPrefix=soif")
    assert base64.b64encode(b"\x00\xff\xfe\x80") in soif
    assert b"template-base64=" in soif


def test_every_page_of_a_resumed_list_validates(server, schema):
    url = f"{server}/oai/gen?verb=ListIdentifiers&metadataPrefix=oai_dc&set=DOCUMENT"
    pages = 0
    while True:
        xml = fetch(url)
        check(schema, xml)
        pages += 1
        m = re.search(rb"<resumptionToken[^>]*>([^<]*)</resumptionToken>", xml)
        if not m:
            assert re.search(rb"<resumptionToken[^>]*/>", xml), "the last page has an empty token"
            break
        url = f"{server}/oai/gen?verb=ListIdentifiers&resumptionToken={m.group(1).decode()}"
    assert pages > 5


def test_sickle_get_harvest_matches_the_catalog(server, catalogs):
    from sickle import Sickle
    entries = catalog_entries(catalogs["gen"])
    assert len(entries) >= 10_000
    assert sum(d for _, d in entries.values()) > 100
    harvested = {}
    for rec in Sickle(f"{server}/oai/gen").ListRecords(metadataPrefix="soif", ignore_deleted=False):
        h = rec.header
        assert h.identifier not in harvested, "each record once"
        harvested[h.identifier] = (h.datestamp, h.deleted)
        if not h.deleted:
            assert rec.metadata, h.identifier
    assert harvested == entries
    # The records themselves: every attribute in order, as the catalog holds it.
    con = sqlite3.connect(catalogs["gen"])
    cols = [r[0] for r in con.execute(
        "SELECT attribute FROM soif_columns WHERE table_name = 'FILE' ORDER BY position")]
    row = con.execute('SELECT * FROM "FILE" WHERE url = (SELECT min(url) FROM "FILE")').fetchone()
    names = [d[0] for d in con.execute('SELECT * FROM "FILE" LIMIT 0').description]
    want = [(c, row[names.index(c)]) for c in cols if row[names.index(c)] is not None]
    ident = f"oai:{GEN_REPO}:FILE/" + "".join(
        ch if (ch.isascii() and (ch.isalnum() or ch in "-_.!~*'();/?:@&=+$,")) else "%%%02X" % ord(ch)
        for ch in row[0])
    xml = fetch(f"{server}/oai/gen?" + urllib.parse.urlencode(
        {"verb": "GetRecord", "metadataPrefix": "soif", "identifier": ident}))
    got = re.findall(rb'<soif:attribute name="([^"]+)">([^<]*)</soif:attribute>', xml)
    unescape = lambda b: b.decode().replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&#13;", "\r").replace("&amp;", "&")
    assert [(unescape(n), unescape(v)) for n, v in got] == want


def test_oaipmh_post_harvest_with_sets_and_dates(server, catalogs):
    from oaipmh.client import Client
    from oaipmh.metadata import MetadataRegistry, oai_dc_reader
    registry = MetadataRegistry()
    registry.registerReader("oai_dc", oai_dc_reader)
    client = Client(f"{server}/oai/gen", registry)  # POST by default
    ident = client.identify()
    assert ident.deletedRecord() == "persistent"
    sets = sorted(s[0] for s in client.listSets())
    assert sets == ["DOCUMENT", "FILE"]
    for template in ["FILE", "DOCUMENT"]:
        want = catalog_entries(catalogs["gen"], template.encode())
        got = {}
        for h in client.listIdentifiers(metadataPrefix="oai_dc", set=template):
            got[h.identifier()] = (h.datestamp().strftime("%Y-%m-%dT%H:%M:%SZ"), h.isDeleted())
        assert got == want
    # from/until: a window around one datestamp of the catalog (inclusive both ends).
    con = sqlite3.connect(catalogs["gen"])
    stamp = con.execute('SELECT deleted FROM soif_deletions LIMIT 1').fetchone()[0]
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    want = {k: v for k, v in catalog_entries(catalogs["gen"]).items() if v[0] == stamp}
    got = {}
    for h in client.listIdentifiers(metadataPrefix="oai_dc", from_=t, until=t):
        got[h.identifier()] = (h.datestamp().strftime("%Y-%m-%dT%H:%M:%SZ"), h.isDeleted())
    assert got == want and got
    records = list(client.listRecords(metadataPrefix="oai_dc", set="FILE"))
    live = [r for r in records if not r[0].isDeleted()]
    assert live and all(r[1].getField("identifier") for r in live)
