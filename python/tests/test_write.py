"""soif.write: canonical SOIF from records, Arrow streams, Polars and DuckDB; round trips."""

import io

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import soif

ALL_FIXTURES = [
    "harvest/ecrc-93-10.soif",
    "rfc2655/documents.soif",
    "rfc2655/dublin-core.soif",
    "rfc2655/cip-hint.soif",
    "pipeline/documents.soif.gz",
    "pipeline/documents.soif.xz",
    "compressed/two.soif.zst",
    "rdm/schema.soif",
    "rdm/taxonomy.soif",
    "transforms/garcia.soif",
    "transforms/dates.soif",
]


def written(data):
    out = io.BytesIO()
    soif.write(data, out)
    return out.getvalue()


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_write_read_is_the_canonical_soif(fixtures, canonical, name):
    path = fixtures / name
    want = canonical(path)
    assert written(soif.read(path)) == want  # the Arrow stream
    assert written(soif.records(path)) == want  # plain records
    assert written(pa.table(soif.read(path))) == want  # a pyarrow table


def test_round_trip_keeps_bytes_envelopes_and_repeated_names():
    data = (
        b"@DELETE {\n@FILE { http://gone/\n}\n}\n"
        b"@FILE { http://a/\xe9\nN\xe9{1}:\t\xff\nEmpty{0}:\t\nK{1}:\t1\nK{1}:\t2\n"
        b"V{7}:\tx}\n@Y {\n}\n"
        b"@UPDATE {\n@FILE { -\nT{1}:\tz\n}\n}\n"
    )
    once = written(soif.read(data))
    assert once == data
    assert written(soif.records(data)) == data
    assert written(pl.DataFrame(soif.read(data))) == data


def test_write_records_to_a_path(tmp_path):
    recs = [
        soif.Record("FILE", "http://a/", [("Title", b"Hi"), ("Author-1", "Ann")]),
        soif.Record("FILE", "http://b/", [], action="delete"),
    ]
    p = tmp_path / "out.soif"
    assert soif.write(recs, p) == 2
    assert p.read_bytes() == (
        b"@FILE { http://a/\nTitle{2}:\tHi\nAuthor-1{3}:\tAnn\n}\n"
        b"@DELETE {\n@FILE { http://b/\n}\n}\n"
    )
    assert list(soif.records(p)) == recs
    assert soif.write(recs[0], str(p)) == 1


def test_write_polars_and_duckdb(fixtures, canonical):
    path = fixtures / "pipeline" / "documents.soif.gz"
    want = canonical(path)
    df = pl.DataFrame(soif.read(path))
    assert written(df) == want
    assert written(df.to_arrow()) == want  # large_string / large_list
    rel = duckdb.sql("SELECT * FROM df")
    assert written(rel) == want
    # Filtered rows in any engine write back as SOIF.
    ssl = duckdb.sql("SELECT * FROM df WHERE url LIKE '%ssl%'")
    assert written(ssl).startswith(b"@DOCUMENT { http://home.netscape.com/eng/ssl3/ssl-toc.html\n")


def test_write_streams_a_reader_without_holding_it():
    data = b"@FILE { http://a/\nBody{100}:\t" + b"z" * 100 + b"\n}\n"
    out = io.BytesIO()
    assert soif.write(soif.read(data * 30_000, batch_size=1000), out) == 30_000
    assert out.getvalue() == data * 30_000


def test_another_layout_is_refused():
    with pytest.raises(soif.LayoutError, match="column `url` is missing"):
        written(pa.table({"template": ["FILE"], "x": [1]}))
    t = pa.table(soif.read(b"@FILE { -\n}\n"))
    other = t.replace_schema_metadata({b"soif:layout": b"records", b"soif:layout_version": b"9"})
    with pytest.raises(soif.LayoutError, match="version 9"):
        written(other)
    with pytest.raises(soif.LayoutError, match="unknown action"):
        written(pa.table({"template": ["FILE"], "url": ["-"], "action": ["purge"], "attributes": [[]]},
                         schema=pa.schema([("template", pa.string()), ("url", pa.string()), ("action", pa.string()),
                                           ("attributes", soif.schema().field("attributes").type)])))


def test_write_refuses_other_things():
    with pytest.raises(TypeError):
        written("@FILE { - }")
    with pytest.raises(TypeError):
        written([{"template": "FILE"}])
    with pytest.raises(ValueError, match="action"):
        written(soif.Record("FILE", "-", action="purge"))
