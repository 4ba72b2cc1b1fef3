"""`.option("transforms", …)` on both Spark readers: the rows equal `soif convert --to
parquet -t …` of the same input and chain, whatever the split size; a transform's
rejection follows the mode (PERMISSIVE's corrupt-record column holds the record's bytes
as read); the files a spec names are read on the driver; whole-stream transforms are
refused (docs/spark.md#transforms)."""

import glob
import json
import shutil

import pyarrow as pa
import pytest
from conftest import FIXTURES, layout_rows, load, spark_rows

TRANSFORMS = FIXTURES / "transforms"
SCHEMA = TRANSFORMS / "typed.schema.soif"
INVALID = TRANSFORMS / "invalid.soif"

CHAINS = [
    ["collapse"],
    ["collapse", "select:URL,Title,Author,Embed,Keywords"],
    ["dc"],
    ["match:Title=the", "since:1990-01-01"],
    ["collapse", "expand"],
]


@pytest.mark.parametrize("chain", CHAINS, ids=" ".join)
@pytest.mark.parametrize("split_size", ["64KiB", None])
def test_rows_equal_the_cli_s_parquet(spark, convert, archive, chain, split_size):
    files = sorted(glob.glob(str(archive / "dump-*")))
    want = layout_rows(convert(*files, transforms=chain))
    assert want
    df = load(spark, files, splitSize=split_size, transforms=json.dumps(chain), mode="FAILFAST")
    assert spark_rows(df) == want


def test_one_spec_alone_and_a_dc_mapping_file(spark, convert, tmp_path):
    path = str(FIXTURES / "harvest" / "ecrc-93-10.soif")
    mapping = tmp_path / "mapping.toml"
    shutil.copy(TRANSFORMS / "mapping.toml", mapping)
    spec = f"dc:{mapping}"
    want = layout_rows(convert(path, transforms=[spec]))
    assert spark_rows(load(spark, path, transforms=spec)) == want
    assert spark_rows(load(spark, path, transforms=json.dumps([spec]))) == want


def test_a_transform_s_rejection_follows_the_mode(spark, convert):
    chain = json.dumps([f"validate:{SCHEMA}"])
    path = str(INVALID)
    data = INVALID.read_bytes()
    bad = data[data.index(b"@DOCUMENT { http://example.org/big") :]
    permissive = load(spark, path, transforms=chain, splitSize="1").toArrow()
    want = layout_rows(convert(path, transforms=[f"validate:{SCHEMA}"]))
    good = permissive.filter(permissive.column("_corrupt_record").is_null())
    assert layout_rows(good) == want and len(want) == 1
    [c] = [x for x in permissive.column("_corrupt_record").to_pylist() if x is not None]
    assert c["bytes"] == bad and c["record"] == 2
    assert "Content-Length" in c["error"] and "(http://example.org/big)" in c["error"]
    dropped = load(spark, path, transforms=chain, mode="DROPMALFORMED")
    assert layout_rows(dropped.toArrow()) == want
    with pytest.raises(Exception, match="Content-Length"):
        load(spark, path, transforms=chain, mode="FAILFAST").collect()


@pytest.mark.parametrize("spec", ["order:-Title", "hits:10", "dedupe"])
def test_whole_stream_transforms_are_refused(spark, spec):
    with pytest.raises(Exception, match="needs the whole stream"):
        load(spark, str(INVALID), transforms=json.dumps(["collapse", spec])).collect()


def test_a_bad_spec_fails_before_any_task(spark):
    with pytest.raises(Exception, match="unknown transform `frobnicate`"):
        load(spark, str(INVALID), transforms="frobnicate").collect()
    with pytest.raises(Exception, match="expected a JSON array of transform specs"):
        load(spark, str(INVALID), transforms='["collapse", 3]').collect()
    with pytest.raises(Exception, match="nonexistent"):
        load(spark, str(INVALID), transforms="dc:/nonexistent/mapping.toml").collect()


def test_the_schema_is_the_layout_with_or_without_transforms(spark):
    plain = load(spark, str(INVALID))
    chained = load(spark, str(INVALID), transforms='["collapse"]')
    assert chained.schema == plain.schema
    assert isinstance(chained.toArrow(), pa.Table)


REMAP = TRANSFORMS / "remap"


def test_remap_with_a_table_equals_the_cli(spark, soif_bin, tmp_path):
    """A VRL program and a lookup table, read on the driver and shipped to the tasks."""
    import subprocess

    import pyarrow.parquet as pq

    path = str(FIXTURES / "harvest" / "ecrc-93-10.soif")
    program, table = tmp_path / "mime.vrl", tmp_path / "types.csv"
    shutil.copy(REMAP / "mime.vrl", program)
    shutil.copy(REMAP / "types.csv", table)
    chain = ["collapse", f"remap:{program}"]
    out = tmp_path / "cli.parquet"
    args = [soif_bin, "convert", path, "--to", "parquet", "-o", str(out), "-q", "--table", f"types={table}"]
    for spec in chain:
        args += ["-t", spec]
    subprocess.run(args, check=True, capture_output=True)
    want = layout_rows(pq.read_table(out))
    df = load(spark, path, transforms=json.dumps(chain), tables=json.dumps({"types": str(table)}))
    assert spark_rows(df) == want
    assert any(a["name"] == "mime" for a in want[0]["attributes"])


def test_remap_outcomes_follow_the_mode(spark, convert):
    records = str(REMAP / "records.soif")
    chain = [f"remap:{REMAP / 'outcomes.vrl'}"]
    want = layout_rows(convert(records, transforms=chain))
    assert len(want) == 3  # the draft filtered, the untitled rejected, the bundle split in two
    got = load(spark, records, transforms=json.dumps(chain), splitSize="1").toArrow()
    good = got.filter(got.column("_corrupt_record").is_null())
    assert layout_rows(good) == want
    [c] = [x for x in got.column("_corrupt_record").to_pylist() if x is not None]
    assert c["bytes"].startswith(b"@FILE { ftp://ftp.example.org/pub/untitled.ps") and c["record"] == 3
    assert "no Title" in c["error"]


def test_the_worked_crosswalk_is_the_same_from_every_front_end(spark, soif_bin, tmp_path):
    """docs/remap.md's crosswalk, as configs/crosswalk.toml ships it (collapse, then a VRL
    program with a lookup table; a record without a title rejected): `soif convert`, the
    pipeline file (with a Parquet sink), Python's `soif.read` and this Spark reader give
    the same rows, and the untitled record is left out of each."""
    import subprocess
    import tomllib

    import pyarrow.parquet as pq

    import soif
    from conftest import ROOT

    config = tomllib.loads((ROOT / "configs" / "crosswalk.toml").read_text())
    absolute = lambda p: str(ROOT / p)  # noqa: E731 (the config's paths are relative to the root)
    chain = [f"remap:{absolute(s[6:])}" if s.startswith("remap:") else s for s in config["transforms"]]
    tables = {name: absolute(path) for name, path in config["tables"].items()}
    inputs = [absolute(p) for p in config["source"]["inputs"]]
    inputs.append(absolute("examples/data/harvest-untitled.soif"))

    cli = tmp_path / "cli.parquet"
    args = [soif_bin, "convert", *inputs, "--to", "parquet", "-o", str(cli), "--on-error", "skip"]
    for name, path in tables.items():
        args += ["--table", f"{name}={path}"]
    for spec in chain:
        args += ["-t", spec]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr  # 3: some records rejected (docs/contract.md#exit-status)
    assert "no Title" in done.stderr
    want = layout_rows(pq.read_table(cli))
    assert len(want) == 3, "three titled records; the untitled one is rejected"
    assert all(any(a["name"] == "collection" for a in row["attributes"]) for row in want)

    pipeline = tmp_path / "crosswalk.toml"
    run_out = tmp_path / "run.parquet"
    pipeline.write_text(
        f"transforms = {json.dumps(chain)}\n"
        "[tables]\n" + "".join(f"{n} = {json.dumps(p)}\n" for n, p in tables.items()) + "[source]\n"
        f"inputs = {json.dumps(inputs)}\n"
        '[errors]\non_error = "skip"\n'
        f'[[sink]]\nformat = "parquet"\noutput = {json.dumps(str(run_out))}\n'
    )
    done = subprocess.run([soif_bin, "run", str(pipeline), "-q"], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert layout_rows(pq.read_table(run_out)) == want

    got = pa.table(soif.read(inputs, transforms=chain, tables=tables, on_error="skip"))
    assert layout_rows(got) == want

    df = load(spark, inputs, transforms=json.dumps(chain), tables=json.dumps(tables), mode="DROPMALFORMED")
    assert spark_rows(df) == want
