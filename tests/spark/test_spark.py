"""The soif data source on Spark (soif.spark): reads equal `soif convert --to parquet`
whatever the split size, bad-record modes, Spark SQL, and the SOIF writer's commit,
append, overwrite and abort."""

import glob
import gzip
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, LAYOUT, batches, canonical, layout_rows, load, spark_rows, write_failing_in_task_1

import soif
import soif.spark
from soif.spark import SoifCommitMessage, SoifWriter, expand_paths, plan_partitions

FIXTURE_FILES = sorted(
    str(p)
    for d in ("rfc2655", "harvest", "compressed", "pipeline", "transforms")
    for p in (FIXTURES / d).iterdir()
    if p.suffix != ".toml"
)
SEEDS = sorted(str(p) for p in (FIXTURES / "seeds").glob("*.txt"))
SPLIT_SIZES = ["1", "7", "100", "4096", None]


def sequential(path, lenient=False):
    """One sequential decode of a file with every row kept (on_error="column")."""
    return pa.table(soif.read(path, on_error="column", lenient=lenient))


def test_schema_is_the_layout(spark):
    from pyspark.sql.pandas.types import from_arrow_schema

    df = load(spark, str(FIXTURES / "rfc2655" / "documents.soif"))
    layout = from_arrow_schema(LAYOUT)
    assert df.schema.fields[: len(layout.fields)] == layout.fields
    assert df.columns == LAYOUT.names + ["_corrupt_record"]
    assert df.schema["_corrupt_record"].dataType.simpleString() == (
        "struct<bytes:binary,text:string,error:string,offset:bigint,record:bigint>"
    )
    assert all(f.nullable for f in df.schema.fields)
    assert load(spark, str(FIXTURES / "rfc2655"), mode="DROPMALFORMED").columns == LAYOUT.names
    renamed = load(spark, str(FIXTURES / "rfc2655"), columnNameOfCorruptRecord="bad", includeSource="true")
    assert renamed.columns == LAYOUT.names + ["bad", "_source"]
    assert renamed.schema["_source"].dataType.simpleString() == "struct<file:string,offset:bigint>"


@pytest.mark.parametrize("split_size", SPLIT_SIZES)
def test_fixtures_equal_convert(spark, convert, split_size):
    """Every fixture (plain files split, compressed ones whole), in one load of a list."""
    df = load(spark, FIXTURE_FILES, splitSize=split_size)
    assert spark_rows(df) == layout_rows(convert(*FIXTURE_FILES))
    bad = df.where("_corrupt_record IS NOT NULL").select("_corrupt_record.*").toArrow()
    want = pa.concat_tables(sequential(p) for p in FIXTURE_FILES).column("_corrupt_record")
    want = [e for e in want.to_pylist() if e is not None]
    assert bad.to_pylist() == want
    assert len(want) >= 2  # bad.soif's and invalid.soif's rejections are there


@pytest.mark.parametrize("split_size", ["1", "50", None])
def test_seeds_lenient_equal_convert(spark, convert, split_size):
    """The seed documents: SOIF examples printed inside prose, read with lenient repairs."""
    df = load(spark, SEEDS, splitSize=split_size, lenient="true")
    rows = spark_rows(df)
    assert rows == layout_rows(convert(*SEEDS, lenient=True))
    assert len(rows) > 5


@pytest.mark.parametrize(
    "split_size,lenient",
    [("1", False), ("1", True), ("13", False), ("100", True), ("1000", False), (None, True)],
)
def test_adversarial_splits_equal_one_decode(spark, convert, adversarial, split_size, lenient):
    """Values holding fake objects and envelopes, damaged objects, repairs: the union of
    the splits' rows is one sequential decode, corrupt records, offsets and record numbers
    included."""
    opts = dict(splitSize=split_size, lenient="true" if lenient else None)
    parts = plan_partitions([str(adversarial)], int(split_size or soif.spark.DEFAULT_SPLIT_SIZE), lenient)
    if split_size == "1":
        assert len(parts) > 20
    df = load(spark, str(adversarial), **opts)
    got = df.toArrow()
    want = sequential(adversarial, lenient=lenient)
    assert got.num_rows == want.num_rows
    assert layout_rows(got) == layout_rows(want)
    assert got.column("_corrupt_record").to_pylist() == want.column("_corrupt_record").to_pylist()
    good = got.filter(got.column("_corrupt_record").is_null())
    assert layout_rows(good) == layout_rows(convert(adversarial, lenient=lenient))
    assert got.num_rows > good.num_rows > 20
    if not lenient:
        # (Lenient mode never lets a value span an object boundary, so there the quoted
        # objects are read as objects, by every split and by the sequential decode alike.)
        assert not any("fake" in (r["url"] or "") for r in layout_rows(got))


@pytest.mark.parametrize("split_size", ["64KiB", None])
def test_archive_directory_glob_and_list(spark, convert, archive, split_size):
    files = sorted(glob.glob(str(archive / "dump-*")))
    want = layout_rows(convert(*files))
    assert len(want) > 50
    for given in (str(archive), str(archive / "dump-*.soif*"), files, "file://" + str(archive)):
        df = load(spark, given, splitSize=split_size, mode="FAILFAST")
        assert spark_rows(df) == want, given
    parts = plan_partitions(files, 64 << 10)
    whole = [p for p in parts if p.split is None]
    assert [p.path for p in whole] == files[3:]  # the gzip'd files, one partition each
    assert len(parts) > 10


def test_parquet_written_by_spark_equals_convert(spark, convert, archive, tmp_path):
    out = tmp_path / "out.parquet"
    load(spark, str(archive), splitSize="100KB").drop("_corrupt_record").write.parquet(str(out))
    parts = sorted(glob.glob(str(out / "part-*.parquet")))
    got = layout_rows(pa.concat_tables(pq.read_table(p) for p in parts))
    assert got == layout_rows(convert(*sorted(glob.glob(str(archive / "dump-*")))))


def test_permissive_keeps_bad_records_byte_for_byte(spark):
    path = FIXTURES / "pipeline" / "bad.soif"
    data = path.read_bytes()
    bad = load(spark, str(path), splitSize="1").where("_corrupt_record IS NOT NULL").collect()
    assert len(bad) == 2
    for row in bad:
        c = row["_corrupt_record"]
        assert row["url"] is None and row["attributes"] is None and row["template"] is None
        start = data.index(c["bytes"])  # the object's bytes; offset is where it went wrong
        assert start <= c["offset"] < start + len(c["bytes"])
        assert c["text"] == c["bytes"].decode()
        assert str(path) in c["error"] and f"byte {c['offset']}" in c["error"]
        assert f"record {c['record']}" in c["error"]
    assert [r["_corrupt_record"]["record"] for r in bad] == [2, 4]


def test_dropmalformed_drops_bad_records(spark, convert):
    path = str(FIXTURES / "pipeline" / "bad.soif")
    df = load(spark, path, mode="dropmalformed", splitSize="1")
    assert df.columns == LAYOUT.names
    assert layout_rows(df.toArrow()) == layout_rows(convert(path))
    assert df.count() == 3


def test_failfast_names_file_offset_and_record(spark):
    from pyspark.errors import PySparkException

    from py4j.protocol import Py4JJavaError

    path = str(FIXTURES / "pipeline" / "bad.soif")
    # PySpark turns the Python reader's error into a PySparkException, and leaves a task's
    # Java exception (the JVM reader's) a Py4JJavaError.
    with pytest.raises((PySparkException, Py4JJavaError)) as e:
        load(spark, path, mode="FAILFAST").collect()
    msg = str(e.value)
    # soif.DecodeError from the Python reader, org.soif.spark.SoifDecodeException from the JVM one.
    assert "DecodeError" in msg or "SoifDecodeException" in msg
    assert f"{path}: byte 65, record 2" in msg


def test_bad_options_and_paths_are_clear_errors(spark, tmp_path):
    from pyspark.errors import PySparkException

    cases = [
        (dict(mode="LENIENTLY"), str(FIXTURES / "rfc2655"), "expected PERMISSIVE, DROPMALFORMED or FAILFAST"),
        (dict(splitSize="big"), str(FIXTURES / "rfc2655"), "expected a size in bytes"),
        ({}, str(tmp_path / "nothing-*.soif"), "no file matches the pattern"),
        ({}, str(tmp_path / "missing.soif"), "no such file or directory"),
        ({}, "nosuchfs://host/data", "pyarrow.fs cannot open it"),
    ]
    for opts, path, text in cases:
        with pytest.raises(PySparkException, match=text):
            load(spark, path, **opts).collect()


def test_expand_paths_skips_hidden_and_recurses_on_request(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("b.soif", "a.soif", ".tmp.soif", "_SUCCESS", "sub/c.soif"):
        (tmp_path / name).write_bytes(b"")
    assert expand_paths([str(tmp_path)]) == [str(tmp_path / "a.soif"), str(tmp_path / "b.soif")]
    assert expand_paths([str(tmp_path)], recursive=True)[-1] == str(tmp_path / "sub" / "c.soif")
    assert expand_paths([str(tmp_path / "**" / "*.soif")]) == [
        str(tmp_path / "a.soif"),
        str(tmp_path / "b.soif"),
        str(tmp_path / "sub" / "c.soif"),
    ]
    assert plan_partitions([str(tmp_path / "a.soif")]) == []


def test_source_column_points_at_each_record(spark, archive):
    df = load(spark, str(archive), includeSource="true", splitSize="64KiB")
    rows = df.select("url", "_source.file", "_source.offset").collect()
    assert len(rows) > 50
    plain = {f: open(f, "rb").read() for f in glob.glob(str(archive / "dump-*.soif"))}
    for url, file, offset in rows:
        if file in plain:
            head = plain[file][offset : offset + 200]
            assert head.startswith(b"@FILE { " + url.encode() + b"\n"), (file, offset)
    assert {f for _, f, _ in rows} == set(glob.glob(str(archive / "dump-*")))


def test_spark_sql(spark, archive):
    files = sorted(glob.glob(str(archive / "dump-*")))
    load(spark, str(archive), splitSize="100KB").createOrReplaceTempView("soif_archive")
    got = spark.sql(
        """
        SELECT url, a.value AS title
        FROM soif_archive LATERAL VIEW explode(attributes) t AS a
        WHERE lower(a.name) = 'title'
        ORDER BY url, title
        """
    ).collect()
    want = sorted(
        (r.url, r.get("Title"))
        for r in soif.records(files)
        if r.get("Title") is not None
    )
    assert [(r.url, r.title) for r in got] == want
    counts = spark.sql("SELECT template, count(*) AS n FROM soif_archive GROUP BY template").collect()
    assert sum(r.n for r in counts) == sum(1 for _ in soif.records(files))


def part_files(d):
    return sorted(glob.glob(os.path.join(d, "part-*.soif")))


def test_write_round_trip_is_canonical_soif(spark, soif_bin, archive, tmp_path):
    files = sorted(glob.glob(str(archive / "dump-*")))
    df = load(spark, str(archive), splitSize="64KiB", mode="FAILFAST")
    out = str(tmp_path / "soif-out")
    df.write.format("soif").mode("overwrite").save(out)
    parts = part_files(out)
    assert len(parts) == df.rdd.getNumPartitions() > 5
    assert os.path.exists(os.path.join(out, "_SUCCESS"))
    assert not glob.glob(os.path.join(out, ".soif-*"))
    # The part files, in partition order, are the canonical SOIF of the inputs.
    assert b"".join(open(p, "rb").read() for p in parts) == canonical(soif_bin, *files)
    back = load(spark, out, mode="FAILFAST")
    assert spark_rows(back) == spark_rows(df)


def test_write_round_trip_of_hazards_and_envelopes(spark, soif_bin, adversarial, tmp_path):
    """Non-UTF-8 values, values holding objects, envelope actions survive the writer."""
    df = load(spark, str(adversarial), splitSize="100", mode="DROPMALFORMED")
    out = str(tmp_path / "hazards")
    df.write.format("soif").mode("append").save(out)
    parts = part_files(out)
    assert len(parts) > 5
    for p in parts:  # each part is canonical SOIF (its envelopes closed within it)
        assert open(p, "rb").read() == canonical(soif_bin, p)
    assert spark_rows(load(spark, out, mode="FAILFAST")) == spark_rows(df)
    assert any(r["action"] for r in spark_rows(df))


def test_append_never_overwrites_and_overwrite_replaces(spark, tmp_path):
    out = str(tmp_path / "dir")
    df = load(spark, str(FIXTURES / "rfc2655"), splitSize="1", mode="FAILFAST")
    df.write.format("soif").mode("append").save(out)
    first = {p: open(p, "rb").read() for p in part_files(out)}
    df.write.format("soif").mode("append").save(out)
    second = part_files(out)
    assert len(second) == 2 * len(first)
    assert all(open(p, "rb").read() == b for p, b in first.items())
    assert load(spark, out).count() == 2 * df.count()
    (tmp_path / "dir" / "notes.soif").write_bytes(b"@FILE { http://old/\n}\n")
    df.write.format("soif").mode("overwrite").save(out)
    third = part_files(out)
    assert len(third) == len(first) and not set(third) & set(second)
    assert not os.path.exists(tmp_path / "dir" / "notes.soif")
    assert spark_rows(load(spark, out)) == spark_rows(df)


def test_failed_job_leaves_nothing(spark, archive, tmp_path):
    """A job of five tasks, one of which fails after writing part of its file: the job
    aborts, the temporary files of every task are gone, earlier jobs' files are intact."""
    out = str(tmp_path / "dir")
    small = load(spark, str(FIXTURES / "rfc2655"), splitSize="1", mode="FAILFAST")
    small.write.format("soif").mode("append").save(out)
    before = {p: open(p, "rb").read() for p in part_files(out)}

    df = load(spark, str(archive), mode="FAILFAST")  # a partition per file
    assert df.rdd.getNumPartitions() == 5

    def check():
        assert sorted(os.listdir(out)) == sorted([os.path.basename(p) for p in before] + ["_SUCCESS"])
        assert all(open(p, "rb").read() == b for p, b in before.items())

    write_failing_in_task_1(spark, df, out, check)


def test_writer_cleans_up_without_spark(tmp_path):
    """The writer's protocol, driven directly: a failing task removes its file, abort
    removes committed tasks' files and those of lost attempts, commit never replaces."""
    w = SoifWriter({"path": str(tmp_path)}, None, overwrite=False)
    ok = w.write(batches("http://a/", "http://b/"))
    assert isinstance(ok, SoifCommitMessage) and ok.records == 2 and os.path.exists(ok.temp)
    with pytest.raises(Exception, match="input broke"):
        w.write(batches("http://c/", "http://d/", fail_after=1))
    assert os.listdir(tmp_path) == [os.path.basename(ok.temp)]
    lost = tmp_path / f".soif-{w.job}-00007-3.tmp"  # an attempt whose executor died
    lost.write_bytes(b"@FILE { http://lost/\n}\n")
    w.abort([ok, None])
    assert os.listdir(tmp_path) == []

    w2 = SoifWriter({"path": str(tmp_path)}, None, overwrite=False)
    m = w2.write(batches("http://a/"))
    assert w2.write(iter(())).temp is None  # an empty task writes no file
    (tmp_path / f"part-00000-{w2.job}.soif").write_bytes(b"earlier")
    with pytest.raises(FileExistsError, match="never replaced"):
        w2.commit([m])
    assert (tmp_path / f"part-00000-{w2.job}.soif").read_bytes() == b"earlier"


def test_writer_refuses_corrupt_rows(spark, tmp_path):
    from pyspark.errors import PySparkException

    df = load(spark, str(FIXTURES / "pipeline" / "bad.soif"))
    out = str(tmp_path / "dir")
    with pytest.raises(PySparkException, match="_corrupt_record IS NULL"):
        df.write.format("soif").mode("append").save(out)
    assert not glob.glob(os.path.join(out, "*")) and not glob.glob(os.path.join(out, ".soif-*"))
    df.where("_corrupt_record IS NULL").write.format("soif").mode("append").save(out)
    assert load(spark, out).count() == 3


def test_empty_files_give_an_empty_dataframe(spark, tmp_path):
    (tmp_path / "empty.soif").write_bytes(b"")
    (tmp_path / "empty.soif.gz").write_bytes(gzip.compress(b""))
    df = load(spark, str(tmp_path))
    assert df.count() == 0
    assert df.columns == LAYOUT.names + ["_corrupt_record"]


def test_the_jvm_reader_reads_local_files_when_its_jar_is_given(spark, tmp_path):
    """With ``SOIF_SPARK_JAR`` (scripts/test.sh's second run of this suite), ``soif`` is
    the JVM data source: local files are scanned in the JVM (a columnar scan, no Python);
    without it, by the Python data source. Writes go through the Python one either way,
    and its rows read back the same."""
    df = load(spark, str(FIXTURES / "rfc2655"))
    plan = df._jdf.queryExecution().executedPlan().toString()
    if os.environ.get("SOIF_SPARK_JAR"):
        assert "ColumnarToRow" in plan and "(Python)" not in plan, plan
    else:
        assert "(Python)" in plan, plan
    df.write.format("soif").mode("overwrite").save(str(tmp_path / "out"))
    assert spark_rows(load(spark, str(tmp_path / "out"))) == spark_rows(df)


def test_jvm_reader_globs_expand_as_python_globs(spark, tmp_path):
    """The JVM reader expands paths through its native library (``Native.expand``, soif's
    path rules in sources/src/paths.rs): the same files, in the same order and spelling
    (``_source``), as ``expand_paths``."""
    src = (FIXTURES / "rfc2655").glob("*.soif")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    names = ["a.soif", "b.soif", "_skip.soif", ".dot.soif", "sub/c.soif", "sub/deeper/d.soif", ".hidden/e.soif"]
    data = next(iter(src)).read_bytes()
    for n in names:
        (tmp_path / n).write_bytes(data)
    patterns = [
        str(tmp_path / "*.soif"),
        str(tmp_path / "**" / "*.soif"),
        str(tmp_path / "**"),
        str(tmp_path / "s?b" / "[cd].soif"),
        str(tmp_path / "sub" / "[!c]*"),
        str(tmp_path / ".*.soif"),
    ]
    for pattern in patterns:
        for recursive in ("false", "true"):
            df = load(spark, pattern, includeSource="true", recursiveFileLookup=recursive)
            got = sorted({r["_source"]["file"] for r in df.select("_source").collect()})
            want = sorted(set(expand_paths([pattern], recursive=recursive == "true")))
            assert got == want, (pattern, recursive)
