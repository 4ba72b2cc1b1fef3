"""The reader in pyarrow, Polars and DuckDB through the Arrow PyCapsule interface."""

import threading

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import soif

DOCS_GZ = "pipeline/documents.soif.gz"


def test_polars_dataframe(fixtures):
    r = soif.read(fixtures / DOCS_GZ)
    df = pl.DataFrame(r)
    assert df.shape == (3, 6)
    assert df.columns == ["template", "url", "action", "attributes", "template_bytes", "url_bytes"]
    titles = df.select(
        pl.col("attributes").list.eval(pl.element().filter(pl.element().struct.field("name") == "Title"))
        .list.first().struct.field("value").alias("title")
    )["title"].to_list()
    assert titles == ["Welcome to Netscape", "SSL Protocol V. 3.0", None]
    authors = df.select(
        pl.col("attributes").list.eval(
            pl.element().filter(pl.element().struct.field("name").str.contains(r"^Author(-\d+)?$"))
            .struct.field("value")
        ).alias("authors")
    )["authors"].to_list()
    assert authors[1] == ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]
    assert r.records_out == 3


def test_duckdb_sql_with_lambda_syntax(fixtures):
    r = soif.read(fixtures / DOCS_GZ)
    rows = duckdb.sql(
        "SELECT url, list_filter(attributes, lambda a: a.name = 'Title')[1].value AS title "
        "FROM r ORDER BY url"
    ).fetchall()
    assert rows[0] == ("http://home.netscape.com/eng/ssl3/ssl-toc.html", "SSL Protocol V. 3.0")
    r2 = soif.read(fixtures / DOCS_GZ)
    authors = duckdb.sql(
        "SELECT [a.value FOR a IN attributes IF regexp_matches(a.name, '^Author(-\\d+)?$')] AS authors "
        "FROM r2 WHERE url LIKE '%ssl%'"
    ).fetchall()[0][0]
    assert authors == ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]


def test_duckdb_asks_for_the_stream_once(fixtures):
    calls = []

    class Counting:
        def __init__(self, reader):
            self.reader = reader

        def __arrow_c_schema__(self):
            return self.reader.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema=None):
            calls.append(1)
            return self.reader.__arrow_c_stream__(requested_schema)

    c = Counting(soif.read(fixtures / DOCS_GZ))
    assert duckdb.sql("SELECT count(*), count(DISTINCT url) FROM c").fetchall()[0] == (3, 3)
    assert len(calls) == 1


def test_duckdb_one_query_reads_a_once_only_stream(fixtures):
    r = soif.read(fixtures / DOCS_GZ)
    assert duckdb.sql("SELECT template, count(*) FROM r GROUP BY ALL").fetchall() == [("DOCUMENT", 3)]
    assert r.records_out == 3


def test_pyarrow_compute_on_the_table(fixtures):
    t = pa.table(soif.read(fixtures / DOCS_GZ))
    flat = pc.list_flatten(t.column("attributes"))
    names = pc.struct_field(flat, "name")
    assert pc.sum(pc.equal(names, "Title")).as_py() == 2


def test_the_decoder_releases_the_gil():
    """Another Python thread runs while the native call decodes. With a long switch
    interval a thread that held the GIL would keep it for the whole call."""
    import sys

    rec = b"@FILE { http://x/\nBody{200}:\t" + b"y" * 200 + b"\n}\n"
    r = soif.read(rec * 100_000, batch_size=1_000_000)  # ~21 MB: batches of 8 MiB
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.5)
    t = threading.Thread(target=spin)
    t.start()
    try:
        before = len(ticks)
        batch = r._native._next_batch()  # one native call decodes all of it
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    assert pa.record_batch(batch).num_rows > 0
    assert during > 0


def test_file_object_sources_in_duckdb_and_polars(fixtures):
    """A file object is read with the GIL taken per read, from whichever thread pulls."""
    import gzip

    with open(fixtures / DOCS_GZ, "rb") as f:
        r = soif.read(f)
        assert duckdb.sql("SELECT count(*) FROM r").fetchall() == [(3,)]
    with gzip.open(fixtures / DOCS_GZ, "rb") as f:
        assert pl.DataFrame(soif.read(f)).shape == (3, 6)


def test_readme_three_lines_gzip_archive_into_polars_then_duckdb(fixtures):
    """The README's three lines ("Python and Spark"), as written
    there (DuckDB queries the Polars DataFrame by its variable name)."""
    df = pl.DataFrame(soif.read(fixtures / DOCS_GZ))
    rows = duckdb.sql(
        "SELECT url, list_filter(attributes, lambda a: a.name = 'Title')[1].value AS title FROM df"
    ).fetchall()
    assert sorted(rows, key=lambda r: r[0])[0] == (
        "http://home.netscape.com/eng/ssl3/ssl-toc.html",
        "SSL Protocol V. 3.0",
    )
    assert len(rows) == 3
