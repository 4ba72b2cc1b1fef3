"""Fixtures of the OAI-PMH harvest suite: two catalogs built with the `soif` binary
($SOIF_BIN, default target/debug/soif) and a `soif serve` on 127.0.0.1 (port chosen at
run time) serving both, and the official schemas for offline validation."""

import os
import pathlib
import re
import sqlite3
import subprocess

import pytest
import xmlschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
XSD = FIXTURES / "oai" / "xsd"
SOIF_XSD = ROOT / "codecs" / "src" / "oai" / "soif.xsd"
REPO = "soif.example.org"
# The second catalog (`gen`) is a repository of its own.
GEN_REPO = "gen." + REPO


def soif_bin():
    return pathlib.Path(os.environ.get("SOIF_BIN", ROOT / "target" / "debug" / "soif"))


def run(*args, **kw):
    subprocess.run([str(a) for a in args], check=True, **kw)


@pytest.fixture(scope="session")
def schema():
    """OAI-PMH.xsd with oai_dc, oai-identifier and the project's soif schema; the two
    schemas imported by absolute URL are mapped to local copies, the network refused."""
    return xmlschema.XMLSchema(
        [XSD / "OAI-PMH.xsd", XSD / "oai_dc.xsd", XSD / "oai-identifier.xsd", SOIF_XSD],
        uri_mapper={
            "http://dublincore.org/schemas/xmls/simpledc20021212.xsd": (XSD / "simpledc20021212.xsd").resolve().as_uri(),
            "http://www.w3.org/2001/03/xml.xsd": (XSD / "xml.xsd").resolve().as_uri(),
        },
        allow="local",
    )


def hostile_soif():
    """Records whose bytes XML cannot carry as they are."""
    value = b"ctl \x01 bell \x07 <b>&amp;</b>\r\nline \xff\xfe"
    out = b"@FILE { http://hostile.example/\x01a b\"<>\xe9\n"
    out += b"Title{%d}:\t" % len(value) + value + b"\n"
    out += b"Thumbnail{4}:\t\x00\xff\xfe\x80\n}\n"
    out += b"@Odd<&>\xff { ftp://odd.example/x\nKeywords{3}:\tabc\n}\n"
    return out


@pytest.fixture(scope="session")
def catalogs(tmp_path_factory):
    """`seeds.db`: the seed documents' examples plus hostile values; `gen.db`: over
    10,000 generated records in two templates (FILE, DOCUMENT), some deleted."""
    d = tmp_path_factory.mktemp("catalogs")
    soif = soif_bin()
    gen = soif.with_name("soif-gen")
    hostile = d / "hostile.soif"
    hostile.write_bytes(hostile_soif())
    seeds = d / "seeds.db"
    run(soif, "convert", FIXTURES / "rfc2655" / "documents.soif", FIXTURES / "rfc2655" / "dublin-core.soif",
        FIXTURES / "harvest" / "ecrc-93-10.soif", hostile, "--lenient", "--on-error", "skip",
        "--to", "sqlite", "-o", seeds, "-q")
    files = d / "files.soif"
    run(gen, "--size", "7MB", "--summaries-only", "--seed", "1", "-o", files)
    docs = d / "docs.soif"
    run(gen, "--size", "7MB", "--summaries-only", "--seed", "2", "-o", d / "raw2.soif")
    docs.write_bytes((d / "raw2.soif").read_bytes().replace(b"@FILE {", b"@DOCUMENT {"))
    db = d / "gen.db"
    run(soif, "convert", files, docs, "--to", "sqlite", "-o", db, "-q")
    urls = re.findall(rb"^@FILE \{ (\S+)\n", files.read_bytes(), re.M)
    gone = d / "gone.soif"
    gone.write_bytes(b"@DELETE {\n" + b"".join(b"@FILE { %s\n}\n" % u for u in urls[::25]) + b"}\n")
    run(soif, "convert", gone, "--to", "sqlite", "-o", db, "-q")
    return {"seeds": seeds, "gen": db}


@pytest.fixture(scope="session")
def server(catalogs):
    """`soif serve` on both catalogs: /oai is `seeds`, /oai/gen the generated one."""
    yield from serve("--db", catalogs["seeds"], "--db", f"gen={catalogs['gen']}",
                     "--oai-page-size", "500", "--oai-repository-id", REPO,
                     "--admin-email", "librarian@example.org")


def serve(*args):
    """Runs `soif serve ARGS` on a loopback port chosen at run time: yields its base URL
    (read from the line it prints on start), then stops it. For fixtures: `yield from`."""
    proc = subprocess.Popen([str(soif_bin()), "serve", *map(str, args), "--listen", "127.0.0.1:0"],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    assert m, line
    yield f"http://{m.group(1)}"
    proc.terminate()
    proc.wait(timeout=10)


def catalog_entries(db, template=None, repo=GEN_REPO):
    """{identifier: (datestamp, deleted)} straight from the catalog's tables."""
    from oai_ids import identifier
    con = sqlite3.connect(db)
    out = {}
    for tmpl, table in con.execute("SELECT template, table_name FROM soif_tables"):
        tb = tmpl if isinstance(tmpl, bytes) else tmpl.encode()
        if template and tb != template:
            continue
        q = 'SELECT url, soif_datestamp FROM "%s"' % table.replace('"', '""')
        for url, ds in con.execute(q):
            out[identifier(repo, tb, url if isinstance(url, bytes) else url.encode())] = (ds, False)
    for tmpl, url, ds in con.execute("SELECT template, url, deleted FROM soif_deletions"):
        tb = tmpl if isinstance(tmpl, bytes) else tmpl.encode()
        if template and tb != template:
            continue
        out[identifier(repo, tb, url if isinstance(url, bytes) else url.encode())] = (ds, True)
    return out
