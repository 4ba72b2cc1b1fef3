"""soif.read(…, transforms=[…]) and soif.records(…, transforms=[…]): the CLI's transform
chain in the Python package, with the rows `soif convert --to parquet -t …` writes and
the rejections under the reader's error policy (docs/python.md#transforms)."""

import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, soif_bin

import soif

TRANSFORMS = FIXTURES / "transforms"
HARVEST = FIXTURES / "harvest" / "ecrc-93-10.soif"
DOCUMENTS = FIXTURES / "rfc2655" / "documents.soif"
SCHEMA = TRANSFORMS / "typed.schema.soif"
INVALID = TRANSFORMS / "invalid.soif"

CHAINS = [
    ["collapse"],
    ["collapse", "select:URL,Title,Author,Embed"],
    ["dc"],
    [f"dc:{TRANSFORMS / 'mapping.toml'}"],
    ["collapse", "expand"],
    ["match:Title=the", "dedupe:Title"],
    ["order:-Title", "hits:2..4"],
    ["since:1990-01-01"],
]


def cli():
    exe = soif_bin()
    if exe is None:
        pytest.skip("the soif CLI is not built (cargo build), SOIF_BIN not set")
    return exe


def convert(tmp_path, paths, chain, *extra):
    """`soif convert PATHS --to parquet -t …`, read back with pyarrow."""
    out = tmp_path / "cli.parquet"
    args = [cli(), "convert", *map(str, paths), "--to", "parquet", "-o", str(out), "-q"]
    for spec in chain:
        args += ["-t", spec]
    done = subprocess.run(args + list(extra), capture_output=True)
    assert done.returncode in (0, 3), done.stderr.decode()
    return pq.read_table(out)


def rows(table):
    return table.cast(soif.schema()).to_pylist()


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: " ".join(c).replace(str(TRANSFORMS), ""))
def test_rows_equal_the_cli_s_parquet(tmp_path, chain):
    paths = [str(HARVEST), str(DOCUMENTS)]
    want = convert(tmp_path, paths, chain)
    reader = soif.read(paths, transforms=chain)
    got = pa.table(reader)
    assert got.schema.remove_metadata() == want.schema.remove_metadata()
    assert rows(got) == rows(want)
    assert reader.records_out == want.num_rows
    # soif.records hands out the same records, attributes as the layout holds them.
    recs = list(soif.records(paths, transforms=chain))
    assert [r.url for r in recs] == [r["url"] for r in rows(want)]
    for r, row in zip(recs, rows(want)):
        want_attrs = [
            (a["name"], a["value"].encode() if a["value"] is not None else a["bytes"]) for a in row["attributes"]
        ]
        assert r.attributes == want_attrs


def test_collapse_is_a_list_of_values_under_one_name():
    data = b"@FILE { http://a/\nAuthor-1{3}:\tAnn\nAuthor-2{3}:\tBob\nEmbed<1>-Type{2}:\tPS\n}\n"
    got = pa.table(soif.read(data, transforms="collapse"))  # one spec alone: a string
    [row] = rows(got)
    pairs = [(a["name"], a["value"]) for a in row["attributes"]]
    # A list is repeated entries of its collapsed name, parts keep their SOIF names.
    assert pairs == [("Author", "Ann"), ("Author", "Bob"), ("Embed<1>-Type", "PS")]
    [r] = soif.records(data, transforms=["collapse"])
    assert r.values("Author") == ["Ann", "Bob"] and r["Embed<1>-Type"] == "PS"


def test_filtered_counts_what_the_transforms_dropped():
    r = soif.read(str(DOCUMENTS), transforms=["match:Title=nothing-matches-this"])
    assert pa.table(r).num_rows == 0
    assert r.records_in > 0 and r.filtered == r.records_in and r.rejected == 0


@pytest.mark.parametrize("on_error", ["skip", "quarantine", "column", "fail"])
def test_a_transform_s_rejection_follows_on_error(tmp_path, on_error):
    chain = [f"validate:{SCHEMA}"]
    kw = dict(on_error=on_error, transforms=chain)
    q = tmp_path / "q.soif"
    if on_error == "quarantine":
        kw["quarantine"] = q
    reader = soif.read(str(INVALID), **kw)
    if on_error == "fail":
        with pytest.raises(soif.DecodeError) as e:
            list(reader)
        assert e.value.record == 2 and e.value.url == "http://example.org/big"
        assert "Content-Length" in str(e.value)
        return
    t = pa.table(reader)
    good = t.filter(t.column("_corrupt_record").is_null()) if on_error == "column" else t
    assert [r["url"] for r in rows(good.select(soif.schema().names))] == ["http://mirror.example.org/"]
    assert reader.rejected == 1
    [err] = reader.errors
    assert err.record == 2 and err.url == "http://example.org/big" and err.input == str(INVALID)
    data = INVALID.read_bytes()
    bad = data[data.index(b"@DOCUMENT { http://example.org/big") :]
    if on_error == "column":
        c = [x for x in t.column("_corrupt_record").to_pylist() if x is not None]
        assert len(c) == 1 and c[0]["bytes"] == bad and c[0]["record"] == 2
    if on_error == "quarantine":
        # Byte for byte what the CLI quarantines for the same rejection.
        cq = tmp_path / "cli-q.soif"
        convert(tmp_path, [INVALID], chain, "--on-error", "quarantine", "--quarantine", str(cq))
        assert q.read_bytes() == cq.read_bytes() == bad
        assert reader.quarantined == 1


def test_bad_specs_are_value_errors_before_reading():
    with pytest.raises(ValueError, match="unknown transform `frobnicate`"):
        soif.read(str(DOCUMENTS), transforms=["frobnicate"])
    with pytest.raises(ValueError, match="mapping"):
        soif.read(str(DOCUMENTS), transforms=["dc:/nonexistent/mapping.toml"])
    with pytest.raises(ValueError, match="transform `collapse` takes no arguments"):
        soif.records(str(DOCUMENTS), transforms=["collapse:x"])
    with pytest.raises(TypeError):
        soif.read(str(DOCUMENTS), transforms=3)


def test_dc_warnings_are_kept():
    data = b"@FILE { http://a/\nTitle{1}:\tA\nLast-Modification-Time{5}:\tnever\n}\n"
    r = soif.read(data, transforms=["dc"])
    assert pa.table(r).num_rows == 1
    assert any("could not be converted" in w for w in r.warnings), r.warnings


# -- remap: a VRL program, its lookup tables, its outcomes ----------------------------------

REMAP = TRANSFORMS / "remap"


def test_a_remap_program_with_a_lookup_table_equals_the_cli(tmp_path):
    chain = ["collapse", f"remap:{REMAP / 'mime.vrl'}"]
    tables = {"types": REMAP / "types.csv"}
    want = convert(tmp_path, [HARVEST], chain, "--table", f"types={REMAP / 'types.csv'}")
    got = pa.table(soif.read(str(HARVEST), transforms=chain, tables=tables))
    assert rows(got) == rows(want)
    [row] = rows(got)
    pairs = [(a["name"], a["value"]) for a in row["attributes"]]
    assert ("mime", "application/x-compress") in pairs  # Type Compressed, from the table
    assert ("Embed<1>-mime", "application/postscript") in pairs
    [r] = soif.records(str(HARVEST), transforms=chain, tables={"types": str(REMAP / "types.csv")})
    assert r["mime"] == "application/x-compress"


def test_remap_outcomes_under_quarantine_equal_the_cli(tmp_path):
    """Filtered (abort), rejected by assert! (quarantined byte for byte), fan-out."""
    records = REMAP / "records.soif"
    chain = [f"remap:{REMAP / 'outcomes.vrl'}"]
    q, cq = tmp_path / "q.soif", tmp_path / "cli-q.soif"
    want = convert(tmp_path, [records], chain, "--on-error", "quarantine", "--quarantine", str(cq))
    reader = soif.read(str(records), transforms=chain, on_error="quarantine", quarantine=q)
    got = pa.table(reader)
    assert rows(got) == rows(want)
    assert [r["url"] for r in rows(got)] == [
        "ftp://ftp.example.org/pub/report-1.ps",
        "ftp://ftp.example.org/pub/bundle.tar#a.ps",
        "ftp://ftp.example.org/pub/bundle.tar#b.ps",
    ]
    assert (reader.records_in, reader.records_out, reader.rejected, reader.filtered, reader.added) == (4, 3, 1, 1, 1)
    data = records.read_bytes()
    untitled = data[data.index(b"@FILE { ftp://ftp.example.org/pub/untitled.ps") : data.index(b"@FILE { ftp://ftp.example.org/pub/bundle")]
    assert q.read_bytes() == cq.read_bytes() == untitled
    [err] = reader.errors
    assert "no Title" in str(err) and err.record == 3 and err.url == "ftp://ftp.example.org/pub/untitled.ps"
    # Binary values pass through the program untouched.
    thumb = [a for a in rows(got)[0]["attributes"] if a["name"] == "Thumbnail"]
    assert thumb and thumb[0]["bytes"] is not None and thumb[0]["value"] is None


def test_a_remap_compile_error_and_a_bad_table_fail_before_reading(tmp_path):
    bad = tmp_path / "bad.vrl"
    bad.write_text(".attributes.x = upcase(.attributes.Title)\n")  # fallible, not handled
    with pytest.raises(ValueError, match="bad.vrl"):
        soif.read(str(DOCUMENTS), transforms=[f"remap:{bad}"])
    with pytest.raises(ValueError, match="types"):
        soif.read(str(DOCUMENTS), transforms=["collapse"], tables={"types": tmp_path / "missing.csv"})
