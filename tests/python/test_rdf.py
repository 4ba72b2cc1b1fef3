"""The RDF outputs (--to ntriples, turtle, jsonld, rdfxml) read by a third-party parser,
rdflib: the four graphs are isomorphic to each other and to the graph the documented
mapping (docs/linked-data.md#the-mapping) gives, built here in Python from the records
as `--to jsonl` and `-t dc --to jsonl` show them."""

import base64
import json
import pathlib
import re
import subprocess

import pytest
import rdflib
from rdflib import BNode, Literal, URIRef
from rdflib.compare import isomorphic, graph_diff, to_isomorphic
from rdflib.namespace import XSD

from conftest import ROOT, FIXTURES, soif_bin

SOIF = "urn:x-soif:record:1#"
DCTERMS = "http://purl.org/dc/terms/"
ELEMENTS = ["TITLE", "CREATOR", "SUBJECT", "DESCRIPTION", "PUBLISHER", "CONTRIBUTOR",
            "DATE", "TYPE", "FORMAT", "IDENTIFIER", "SOURCE", "LANGUAGE", "RELATION",
            "COVERAGE", "RIGHTS"]
RDFLIB_FORMAT = {"ntriples": "nt", "turtle": "turtle", "jsonld": "json-ld", "rdfxml": "xml"}


def convert(inputs, *args):
    out = subprocess.run([str(soif_bin()), "convert", *map(str, inputs), *args, "-q"],
                         check=True, capture_output=True)
    return out.stdout


def raw(value):
    """A JSON Lines value as bytes."""
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return value.encode()


def literal(value: bytes):
    """The documented literal rule: text XML can carry, else xsd:base64Binary."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not re.search("[\x00-\x08\x0b-\x1f\ufffe\uffff]", text):
        return Literal(text)
    return Literal(base64.b64encode(value).decode(), datatype=XSD.base64Binary)


def local_name(name: bytes) -> str:
    """The documented local name: bytes outside [A-Za-z0-9.-] (a first byte that is not
    a letter) as _HH."""
    if not name:
        return "_"
    out = []
    for i, b in enumerate(name):
        c = chr(b)
        plain = (c.isascii() and c.isalpha()) if i == 0 else (
            c.isascii() and (c.isalnum() or c in "-."))
        out.append(c if plain else "_%02X" % b)
    return "".join(out)


def values(v):
    """A JSON Lines attribute value: a list holds repeated attributes of one name."""
    return [raw(x) for x in v] if isinstance(v, list) else [raw(v)]


def expected_graph(inputs, actual):
    """The mapping of docs/linked-data.md, record by record. The subject IRI of a URL
    that had to be percent-encoded is looked up in `actual` by its soif:url (the IRI
    rules are checked in Rust); any other subject is the URL itself or a blank node."""
    g = rdflib.Graph()
    records = [json.loads(l) for l in convert(inputs, "--to", "jsonl").splitlines()]
    dc = [json.loads(l) for l in convert(inputs, "-t", "dc", "--to", "jsonl").splitlines()]
    assert len(records) == len(dc)
    for rec, dcrec in zip(records, dc):
        url = raw(rec["url"])
        if url == b"-" or not re.match(rb"^[A-Za-z][A-Za-z0-9+.-]*:", url.strip()):
            subject = BNode()
        elif re.fullmatch(rb"[A-Za-z0-9:/?#@!$&'()*+,;=._~%-]*", url) and url.count(b"#") <= 1:
            subject = URIRef(url.decode())
        else:
            found = list(actual.subjects(URIRef(SOIF + "url"), literal(url)))
            assert len(found) == 1, (url, found)
            subject = found[0]
        if str(subject) != url.decode("utf-8", "replace") and url != b"-":
            g.add((subject, URIRef(SOIF + "url"), literal(url)))
        g.add((subject, URIRef(SOIF + "template"), literal(raw(rec["template"]))))
        if "action" in rec:
            g.add((subject, URIRef(SOIF + "action"), Literal(rec["action"])))
        for name, v in dcrec["attributes"].items():
            base = re.sub(r"-[0-9]+$", "", name).upper()
            if base in ELEMENTS:
                for x in values(v):
                    g.add((subject, URIRef(DCTERMS + base.lower()), literal(x)))
        for name, v in rec["attributes"].items():
            for x in values(v):
                g.add((subject, URIRef(SOIF + local_name(name.encode())), literal(x)))
    return g


def graphs(inputs):
    return {fmt: rdflib.Graph().parse(data=convert(inputs, "--to", fmt), format=RDFLIB_FORMAT[fmt])
            for fmt in RDFLIB_FORMAT}


def explain(a, b):
    _, only_a, only_b = graph_diff(to_isomorphic(a), to_isomorphic(b))
    return "only in the first:\n%s\nonly in the second:\n%s" % (
        only_a.serialize(format="nt"), only_b.serialize(format="nt"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rdf")
    (d / "hostile.soif").write_bytes(
        b"@FILE { http://hostile.example/\x01a\"<>\xe9\n"
        b"Title{27}:\tctl \x01 <b>&amp;</b>\r\nline \xff\xfe\n"
        b"Thumbnail{4}:\t\x00\xff\xfe\x80\n}\n"
        b"@Odd<&>\xff { ftp://odd.example/x\nKeywords{3}:\tabc\n}\n"
        b"@FILE { -\nTitle{4}:\tnone\n}\n@FILE { relative/path\nTitle{4}:\trela\n}\n")
    # Control characters, a carriage return, Latin-1 bytes, an odd attribute name.
    (d / "quirky.soif").write_bytes(
        b"@DOCUMENT { http://quirky.example/a|b\n"
        b"Title{12}:\tbell\x07 cr\r\nlf\n"
        b"Author{10}:\tJos\xe9 Mart\xed\n"
        b"Embed<1>-Type{10}:\tPostScript\n"
        b"Weightlist-[IMAGE:Subject]{1}:\t3\n}\n")
    gen = d / "gen.soif"
    subprocess.run([str(soif_bin()) + "-gen", "--size", "300000", "--seed", "7",
                    "--summaries-only", "-o", gen], check=True)
    return {
        "seeds": [FIXTURES / "rfc2655" / "documents.soif", FIXTURES / "rfc2655" / "dublin-core.soif",
                  FIXTURES / "harvest" / "ecrc-93-10.soif"],
        "examples": [ROOT / "examples" / "data" / n for n in
                     ("edge.soif", "envelopes.soif", "latin.soif", "harvest-files.soif",
                      "dublin-core.soif")],
        "quirky": [d / "hostile.soif", d / "quirky.soif"],
        "generated": [gen],
    }


@pytest.mark.parametrize("name", ["seeds", "examples", "quirky", "generated"])
def test_every_serialisation_is_the_documented_graph(inputs, name):
    gs = graphs(inputs[name])
    nt = gs["ntriples"]
    assert len(nt) > 5
    for fmt, g in gs.items():
        assert len(g) == len(nt), fmt
        assert isomorphic(g, nt), f"--to {fmt} differs from --to ntriples\n" + explain(g, nt)
    expected = expected_graph(inputs[name], nt)
    assert isomorphic(expected, nt), explain(expected, nt)


def test_quirky_values_are_base64_of_their_bytes(inputs):
    g = graphs(inputs["quirky"])["rdfxml"]
    s = URIRef("http://quirky.example/a%7Cb")
    title = g.value(s, URIRef(SOIF + "Title"))
    assert title.datatype == XSD.base64Binary
    assert base64.b64decode(str(title)) == b"bell\x07 cr\r\nlf"
    assert str(g.value(s, URIRef(SOIF + "Embed_3C1_3E-Type"))) == "PostScript"
    assert str(g.value(s, URIRef(SOIF + "Weightlist-_5BIMAGE_3ASubject_5D"))) == "3"
    assert str(g.value(s, URIRef(SOIF + "url"))) == "http://quirky.example/a|b"
