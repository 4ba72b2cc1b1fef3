"""The soif data source on a remote filesystem: ``s3://`` URIs on a local S3-compatible
server (the ``s3`` fixture), read through ``pyarrow.fs`` by the executors with the
credentials of their environment. Rows equal ``soif convert --to parquet`` of the same
local files; errors and ``_source`` name the URIs; the writer's commit, append,
overwrite and abort hold on an object store."""

import glob
import os

import pyarrow as pa
import pytest
from conftest import FIXTURES, batches, canonical, layout_rows, load, spark_rows, write_failing_in_task_1

import soif
import soif.spark
from soif.spark import RemoteFile, SoifCommitMessage, SoifWriter, expand_paths, plan_partitions


@pytest.fixture(scope="module")
def remote(s3, archive, adversarial):
    """The generated archive (three plain files, two gzip'd, a hidden file and a
    ``_SUCCESS`` marker) under ``archive/``, the adversarial file under ``hazards/``,
    bad.soif under ``bad/``, and a tree of directories under ``tree/``."""
    for p in sorted(archive.iterdir()):
        s3.put(f"archive/{p.name}", p.read_bytes())
    s3.put("hazards/hazards.soif", adversarial.read_bytes())
    s3.put("bad/bad.soif", (FIXTURES / "pipeline" / "bad.soif").read_bytes())
    one = b"@FILE { http://tree/%s\n}\n"
    tree = ("a.soif", "b.soif", "_SUCCESS", ".part.tmp", "sub/c.soif", "sub/deeper/d.soif", "_tmp/e.soif", ".hid/f.soif")
    for key in tree:
        s3.put(f"tree/{key}", one % key.encode())
    return s3


def test_directory_glob_list_and_s3a_equal_convert(spark, convert, archive, remote):
    files = sorted(glob.glob(str(archive / "dump-*")))
    want = layout_rows(convert(*files))
    assert len(want) > 50
    names = [os.path.basename(f) for f in files]
    for given in (
        remote.uri("archive/"),
        remote.uri("archive"),
        remote.uri("archive/dump-*.soif*"),
        remote.uri("archive/dump-[0-4].soif*"),
        [remote.uri(f"archive/{n}") for n in names],
        # Local and remote files in one load, in order.
        [files[0], remote.uri(f"archive/{names[1]}"), "file://" + files[2]]
        + [remote.uri(f"archive/{n}") for n in names[3:]],
        remote.uri("archive/", scheme="s3a"),  # Hadoop's name of S3, as Spark users write it
    ):
        df = load(spark, given, mode="FAILFAST")
        assert spark_rows(df) == want, given


def test_one_partition_per_remote_file(spark, remote):
    files = expand_paths([remote.uri("archive/")])
    assert all(isinstance(f, RemoteFile) for f in files)
    assert [f.uri for f in files] == [remote.name(f"archive/dump-{i}.soif") for i in range(3)] + [
        remote.name(f"archive/dump-{i}.soif.gz") for i in (3, 4)
    ]
    assert all(f.size > 0 for f in files)
    parts = plan_partitions(files, split_size=1024)  # splitSize does not apply: whole files
    assert [(p.path, p.split) for p in parts] == [(f.uri, None) for f in files]
    assert load(spark, remote.uri("archive/"), splitSize="1KB").rdd.getNumPartitions() == 5


@pytest.mark.parametrize("lenient", [False, True])
def test_adversarial_equals_one_decode(spark, convert, adversarial, remote, lenient):
    """Fake objects inside values, envelopes, damaged objects, repairs: the rows, corrupt
    records included (their errors naming the URI), are one decode of the local file."""
    df = load(spark, remote.uri("hazards/hazards.soif"), lenient="true" if lenient else None)
    got = df.toArrow()
    want = pa.table(soif.read(adversarial, on_error="column", lenient=lenient))
    assert layout_rows(got) == layout_rows(want)
    bad = [c for c in got.column("_corrupt_record").to_pylist() if c is not None]
    local = [c for c in want.column("_corrupt_record").to_pylist() if c is not None]
    assert len(bad) == len(local) > 5
    for c in local:
        c["error"] = c["error"].replace(str(adversarial), remote.name("hazards/hazards.soif"))
    assert bad == local
    good = got.filter(got.column("_corrupt_record").is_null())
    assert layout_rows(good) == layout_rows(convert(adversarial, lenient=lenient))


def test_failfast_names_the_uri_offset_and_record(spark, remote):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as e:
        load(spark, remote.uri("bad/bad.soif"), mode="FAILFAST").collect()
    msg = str(e.value)
    assert "DecodeError" in msg
    assert f"{remote.name('bad/bad.soif')}: byte 65, record 2" in msg
    assert "endpoint_override" not in msg


def test_source_column_names_the_uri(spark, archive, remote):
    df = load(spark, remote.uri("archive/"), includeSource="true")
    rows = df.select("url", "_source.file", "_source.offset").collect()
    assert len(rows) > 50

    def uri(f):
        return remote.name(f"archive/{os.path.basename(f)}")

    plain = {uri(f): open(f, "rb").read() for f in glob.glob(str(archive / "dump-*.soif"))}
    for url, file, offset in rows:
        if file in plain:
            assert plain[file][offset:].startswith(b"@FILE { " + url.encode() + b"\n"), (file, offset)
    assert {f for _, f, _ in rows} == {uri(f) for f in glob.glob(str(archive / "dump-*"))}


def test_missing_paths_and_empty_patterns_are_clear_errors(spark, remote):
    from pyspark.errors import PySparkException

    cases = [
        (remote.uri("archive/nothing-*.soif"), f"no file matches the pattern {remote.name('archive/nothing-*.soif')}"),
        (remote.uri("archive/dump-[7-9].soif"), "no file matches the pattern"),
        (remote.uri("nowhere/"), f"{remote.name('nowhere/')}: no such file or directory"),
        ("s3://soif-*/x", "a pattern in the bucket or host name is not supported"),
    ]
    for path, text in cases:
        with pytest.raises(PySparkException, match=text.replace("[", r"\[").replace("*", r"\*")):
            load(spark, path).collect()


def test_directories_hidden_names_recursion_and_globs(remote):
    def names(paths, recursive=False):
        return [f.uri.split("/tree/", 1)[1] for f in expand_paths(paths, recursive)]

    assert names([remote.uri("tree/")]) == ["a.soif", "b.soif"]
    assert names([remote.uri("tree/")], recursive=True) == ["a.soif", "b.soif", "sub/c.soif", "sub/deeper/d.soif"]
    # As glob.glob: "**" any number of directories, "*" no name starting with "." (but "_").
    assert names([remote.uri("tree/**/*.soif")]) == [
        "_tmp/e.soif",
        "a.soif",
        "b.soif",
        "sub/c.soif",
        "sub/deeper/d.soif",
    ]
    assert names([remote.uri("tree/*/c.soif")]) == ["sub/c.soif"]
    assert names([remote.uri("tree/.hid/*")]) == [".hid/f.soif"]
    # A directory a pattern matches gives its visible files.
    assert names([remote.uri("tree/s*")]) == ["sub/c.soif"]
    assert names([remote.uri("tree/a.soif"), remote.uri("tree/sub/deeper/d.soif")]) == ["a.soif", "sub/deeper/d.soif"]


def test_remote_listings_select_what_local_paths_do(remote, tmp_path):
    """A remote tree gives the files the same tree on a local disk gives, for directories
    and patterns (``*``, ``[…]``, ``**``, hidden and ``_`` names at each depth), recursive
    or not: one set of path rules and one glob matcher (soif_sources::paths), applied to a
    local walk and to a pyarrow.fs listing."""
    keys = (
        "a.soif",
        "ab.soif",
        "_SUCCESS",
        ".part.tmp",
        "a-b/x.soif",
        "sub/c.soif",
        "sub/_u.soif",
        "sub/.v.soif",
        "sub/_x/w.soif",
        "sub/deeper/d.soif",
        "sub/deeper/.hid/z.soif",
        "_tmp/e.soif",
        ".hid/f.soif",
    )
    for key in keys:
        data = b"@FILE { http://same/%s\n}\n" % key.encode()
        remote.put(f"same/{key}", data)
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(data)

    def local(pattern, recursive):
        try:
            return [os.path.relpath(f, tmp_path) for f in expand_paths([str(tmp_path / pattern)], recursive)]
        except (FileNotFoundError, ValueError) as e:
            return type(e)

    def far(pattern, recursive):
        try:
            return [f.uri.split("/same/", 1)[1] for f in expand_paths([remote.uri(f"same/{pattern}")], recursive)]
        except (FileNotFoundError, ValueError) as e:
            return type(e)

    patterns = [
        "",
        "sub",
        "_tmp",
        "*",
        "*.soif",
        "[ab]*.soif",
        "[!a]*",
        "_*",
        ".*",
        ".hid/*",
        "sub/*",
        "s*/*.soif",
        "*/*",
        "**",
        "**/*.soif",
        "**/*",
        "**/d.soif",
        "**/.hid/*",
        "sub/**",
        "*/**",
        "**/**",
        "nothing-*",
        "[ab.soif",
    ]
    for recursive in (False, True):
        for pattern in patterns:
            assert far(pattern, recursive) == local(pattern, recursive), (pattern, recursive)
    # The cases where listing rules once written apart disagreed: `**` matches
    # directories only (`_SUCCESS` is no match), a `_` or `.` name is skipped in every
    # matched directory, `*` matches a `_` name itself.
    assert far("**", False) == [
        "_tmp/e.soif",
        "a-b/x.soif",
        "a.soif",
        "ab.soif",
        "sub/_x/w.soif",
        "sub/c.soif",
        "sub/deeper/d.soif",
    ]
    assert far("*", False) == ["_SUCCESS", "_tmp/e.soif", "a-b/x.soif", "a.soif", "ab.soif", "sub/c.soif"]
    assert far("", True) == ["a-b/x.soif", "a.soif", "ab.soif", "sub/c.soif", "sub/deeper/d.soif"]
    assert far("[ab.soif", False) is ValueError


def test_overwrite_keeps_what_a_read_skips(remote, monkeypatch):
    """Overwrite removes the earlier files a read of the directory reads, by the path
    rules: hidden and ``_`` names and subdirectories stay."""
    from conftest import S3_ENV

    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    for key in ("old.soif", "_keep.soif", ".keep", "sub/old.soif", "_SUCCESS"):
        remote.put(f"overwritten/{key}", b"@FILE { http://old/\n}\n")
    w = SoifWriter({"path": remote.uri("overwritten")}, None, overwrite=True)
    w.commit([w.write(batches("http://new/"))])
    keys = remote.keys("overwritten")
    assert [k for k in keys if "/part-" not in k] == [
        "overwritten/.keep",
        "overwritten/_SUCCESS",
        "overwritten/_keep.soif",
        "overwritten/sub/old.soif",
    ]
    assert remote.get("overwritten/_SUCCESS") == b""


def remote_parts(s3, prefix):
    return [k for k in s3.keys(prefix) if os.path.basename(k).startswith("part-")]


def test_write_round_trip_append_and_overwrite(spark, soif_bin, archive, remote):
    files = sorted(glob.glob(str(archive / "dump-*")))
    df = load(spark, str(archive), splitSize="64KiB", mode="FAILFAST")
    out = remote.uri("written/")
    df.write.format("soif").mode("overwrite").save(out)
    parts = remote_parts(remote, "written")
    assert len(parts) == df.rdd.getNumPartitions() > 5
    keys = remote.keys("written")
    assert "written/_SUCCESS" in keys
    assert not [k for k in keys if "/.soif-" in k]
    # The part files, in partition order, are the canonical SOIF of the inputs.
    assert b"".join(remote.get(k) for k in parts) == canonical(soif_bin, *files)
    assert spark_rows(load(spark, out, mode="FAILFAST")) == spark_rows(df)

    # Append: the first job's objects stay as they were, beside the second's.
    first = {k: remote.get(k) for k in parts}
    df.write.format("soif").mode("append").save(out)
    second = remote_parts(remote, "written")
    assert len(second) == 2 * len(first)
    assert all(remote.get(k) == b for k, b in first.items())
    # Overwrite: the new job's objects only (an earlier visible file removed too).
    remote.put("written/notes.soif", b"@FILE { http://old/\n}\n")
    df.write.format("soif").mode("overwrite").save(out)
    third = remote_parts(remote, "written")
    assert len(third) == len(first) and not set(third) & set(second)
    assert "written/notes.soif" not in remote.keys("written")
    assert spark_rows(load(spark, out)) == spark_rows(df)


def test_failed_write_leaves_nothing(spark, archive, remote):
    """A job whose task 1 fails after writing part of its object: the job aborts, no
    temporary object of any task is left, earlier jobs' objects are intact."""
    out = remote.uri("failed/")
    load(spark, str(FIXTURES / "rfc2655"), splitSize="1", mode="FAILFAST").write.format("soif").mode("append").save(out)
    before = {k: remote.get(k) for k in remote.keys("failed")}
    assert len(before) > 2

    def check():
        assert {k: remote.get(k) for k in remote.keys("failed")} == before

    write_failing_in_task_1(spark, load(spark, str(archive), mode="FAILFAST"), out, check)


def test_writer_protocol_on_an_object_store(remote, monkeypatch):
    """The writer driven directly: a failing task removes its object, abort removes
    committed tasks' objects and lost attempts', commit never replaces an object."""
    from conftest import S3_ENV

    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    w = SoifWriter({"path": remote.uri("protocol")}, None, overwrite=False)
    assert w.dir == remote.name("protocol")
    ok = w.write(batches("http://a/", "http://b/"))
    assert isinstance(ok, SoifCommitMessage) and ok.records == 2
    assert remote.get(ok.temp.split("/", 1)[1]) == (
        b"@FILE { http://a/\nTitle{9}:\thttp://a/\n}\n@FILE { http://b/\nTitle{9}:\thttp://b/\n}\n"
    )
    with pytest.raises(Exception, match="input broke"):
        w.write(batches("http://c/", "http://d/", fail_after=1))
    assert remote.keys("protocol") == [ok.temp.split("/", 1)[1]]
    remote.put(f"protocol/.soif-{w.job}-00007-3.tmp", b"@FILE { http://lost/\n}\n")  # a lost attempt
    w.abort([ok, None])
    assert remote.keys("protocol") == []

    w2 = SoifWriter({"path": remote.uri("protocol")}, None, overwrite=False)
    m = w2.write(batches("http://a/"))
    assert w2.write(iter(())).temp is None  # an empty task writes no object
    remote.put(f"protocol/part-00000-{w2.job}.soif", b"earlier")
    with pytest.raises(FileExistsError, match="never replaced"):
        w2.commit([m])
    assert remote.get(f"protocol/part-00000-{w2.job}.soif") == b"earlier"


def read_without_spark(options):
    """The reader's partitions, planned and read in this process (as a driver and its
    executors would), as one Arrow table."""
    from soif.spark import SoifReader

    r = SoifReader(options, None)
    return pa.Table.from_batches([b for p in r.partitions() for b in r.read(p)])


def test_endpoint_from_the_environment(remote, monkeypatch):
    """No query string: pyarrow takes the endpoint from AWS_ENDPOINT_URL and the
    credentials from AWS_*, as executors configured by their environment do."""
    from conftest import S3_ENV

    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{remote.port}")
    got = read_without_spark({"path": "s3://soif-test/tree/", "mode": "FAILFAST", "includeSource": "true"})
    assert got.column("url").to_pylist() == ["http://tree/a.soif", "http://tree/b.soif"]
    assert got.column("_source").combine_chunks().field("file").to_pylist() == [
        "s3://soif-test/tree/a.soif",
        "s3://soif-test/tree/b.soif",
    ]


def test_credentials_in_the_uri_are_never_shown(remote, monkeypatch):
    """Credentials given in the URI (s3://KEY:SECRET@bucket/…) are left out of the names
    in errors and in the _source column."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    uri = f"s3://uri-key:uri-secret@soif-test/bad/bad.soif?{remote.query}"
    got = read_without_spark({"path": uri, "includeSource": "true"})
    files = set(got.column("_source").combine_chunks().field("file").to_pylist())
    assert files == {"s3://soif-test/bad/bad.soif"}
    errors = [c["error"] for c in got.column("_corrupt_record").to_pylist() if c is not None]
    assert len(errors) == 2 and all(e.startswith("s3://soif-test/bad/bad.soif: byte ") for e in errors)
    with pytest.raises(soif.DecodeError) as e:
        read_without_spark({"path": uri, "mode": "FAILFAST"})
    assert "s3://soif-test/bad/bad.soif: byte 65, record 2" in str(e.value)
    assert "uri-secret" not in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        read_without_spark({"path": uri.replace("bad.soif?", "none-*.soif?")})
    assert "uri-secret" not in str(e.value) and "s3://soif-test/bad/none-*.soif" in str(e.value)
