"""soif's Parquet and Arrow outputs as users read them: the bundled fixtures converted with
the `soif` binary ($SOIF_BIN), then queried with DuckDB, Polars and pyarrow, including the
one-line expressions docs/formats.md shows."""

import os
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
SOIF = os.environ.get("SOIF_BIN", str(ROOT / "target" / "debug" / "soif"))
DOCS = FIX / "rfc2655" / "documents.soif"
ECRC = FIX / "harvest" / "ecrc-93-10.soif"
SSL = "http://home.netscape.com/eng/ssl3/ssl-toc.html"
AUTHORS = ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]


def soif(*args, stdin=None):
    out = subprocess.run([SOIF, "convert", *map(str, args), "-q"], input=stdin,
                         capture_output=True, check=False)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("columnar")
    f = {
        "records": d / "docs.parquet",
        "collapsed": d / "collapsed.parquet",
        "wide": d / "wide.parquet",
        "arrow": d / "docs.arrows",
    }
    soif(DOCS, ECRC, "--to", "parquet", "-o", f["records"])
    soif(DOCS, ECRC, "-t", "collapse", "--to", "parquet", "-o", f["collapsed"])
    soif(DOCS, "-t", "collapse", "--to", "parquet", "--parquet-layout", "wide",
         "--schema", FIX / "transforms" / "typed.schema.soif", "-o", f["wide"])
    soif(DOCS, ECRC, "--to", "arrow", "-o", f["arrow"])
    return f


def test_pyarrow_schema_and_metadata(files):
    t = pq.read_table(files["records"])
    assert t.num_rows == 4
    assert t.column_names == ["template", "url", "action", "attributes",
                              "template_bytes", "url_bytes"]
    assert t.schema.field("url").type == pa.string()  # not large_string: Spark takes it
    assert all(f.nullable for f in t.schema)
    assert t.schema.metadata[b"soif:layout"] == b"records"
    assert t.schema.metadata[b"soif:layout_version"] == b"1"
    kv = pq.ParquetFile(files["records"]).metadata.metadata
    assert kv[b"soif:version"]
    assert b"documents.soif" in kv[b"soif:inputs"]
    assert pq.ParquetFile(files["records"]).metadata.row_group(0).column(0).compression == "ZSTD"
    assert t.column("action").to_pylist() == [None, None, None, "update"]


def test_duckdb_one_liners(files):
    p = str(files["records"])
    # One attribute (docs/formats.md): Title.
    rows = duckdb.sql(
        f"SELECT url, list_filter(attributes, lambda a: a.name = 'Title')[1].value AS title "
        f"FROM '{p}'").fetchall()
    assert (SSL, "SSL Protocol V. 3.0") in rows
    # All values of a multi-valued one after -t collapse (docs/formats.md): Author.
    c = str(files["collapsed"])
    rows = duckdb.sql(
        f"SELECT url, list_transform(list_filter(attributes, lambda a: a.name = 'Author'), "
        f"lambda a: a.value) AS authors FROM '{c}'").fetchall()
    assert dict(rows)[SSL] == AUTHORS
    # The same by unnesting, as SQL users write it.
    n = duckdb.sql(f"SELECT count(*) FROM (SELECT unnest(attributes) AS a FROM '{c}') "
                   "WHERE a.name = 'Author'").fetchall()[0][0]
    assert n == 3


def test_polars_one_liners(files):
    df = pl.read_parquet(files["records"])
    title = df.select("url", pl.col("attributes").list.eval(
        pl.element().filter(pl.element().struct.field("name") == "Title")
        .struct.field("value")).list.first().alias("Title"))
    assert dict(title.iter_rows())[SSL] == "SSL Protocol V. 3.0"
    dfc = pl.read_parquet(files["collapsed"])
    authors = dfc.select("url", pl.col("attributes").list.eval(
        pl.element().filter(pl.element().struct.field("name") == "Author")
        .struct.field("value")).alias("Author"))
    assert dict(authors.iter_rows())[SSL] == AUTHORS


def test_pyarrow_one_liners(files):
    t = pq.read_table(files["collapsed"])
    titles = {r["url"]: next((a["value"] for a in r["attributes"] if a["name"] == "Title"), None)
              for r in t.to_pylist()}
    assert titles[SSL] == "SSL Protocol V. 3.0"
    authors = {r["url"]: [a["value"] for a in r["attributes"] if a["name"] == "Author"]
               for r in t.to_pylist()}
    assert authors[SSL] == AUTHORS
    # Flattened with compute functions only.
    import pyarrow.compute as pc
    flat = pc.list_flatten(t["attributes"])
    assert pc.sum(pc.equal(pc.struct_field(flat, "name"), "Author")).as_py() == 3


def test_wide_layout_in_all_three(files):
    p = str(files["wide"])
    t = pq.read_table(p)
    assert t.schema.field("Author").type == pa.list_(pa.string())
    assert t.schema.field("Content-Length").type == pa.int64()
    assert t.schema.field("Last-Modified").type == pa.timestamp("ms", tz="UTC")
    assert t.schema.metadata[b"soif:layout"] == b"wide"
    rows = duckdb.sql(f"SELECT url, Title, Author, \"Content-Length\" FROM '{p}' ORDER BY url").fetchall()
    ssl = [r for r in rows if r[0] == SSL][0]
    assert ssl[1:] == ("SSL Protocol V. 3.0", AUTHORS, 5870)
    df = pl.read_parquet(p)
    assert df.filter(pl.col("url") == SSL)["Author"].to_list() == [AUTHORS]
    assert df["Last-Modified"].drop_nulls().dt.year().to_list() == [1996]


def test_arrow_stream_in_all_three(files):
    with pa.ipc.open_stream(files["arrow"]) as r:
        t = r.read_all()
    assert t.num_rows == 4 and t.schema.metadata[b"soif:layout"] == b"records"
    df = pl.read_ipc_stream(files["arrow"])
    assert df.height == 4
    n = duckdb.sql("SELECT count(*) FROM t").fetchall()[0][0]
    assert n == 4


def test_non_utf8_bytes_are_kept(tmp_path):
    src = b"@FILE { http://x/caf\xe9\nTitle{4}:\tcaf\xe9\nOk{2}:\tok\n}\n"
    out = tmp_path / "latin.parquet"
    soif("--to", "parquet", "-o", out, stdin=src)
    attrs = pq.read_table(out).to_pylist()[0]
    assert attrs["url"] is None and attrs["url_bytes"] == b"http://x/caf\xe9"
    assert attrs["attributes"][0] == {"name": "Title", "value": None, "bytes": b"caf\xe9",
                                      "name_bytes": None}
    assert attrs["attributes"][1]["value"] == "ok"
    # And back to the same SOIF.
    assert soif(out, "--to", "soif") == src
