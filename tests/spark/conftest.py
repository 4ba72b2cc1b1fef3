"""Fixtures of the Spark suite (scripts/test.sh runs it on its own: a local Spark session).

One ``local[2]`` session serves every test (Spark takes tens of seconds to start on a
loaded machine). The suite drives the ``soif`` CLI built by the Rust tests (``SOIF_BIN``,
else ``target/debug/soif``) for reference outputs (``soif convert --to parquet``) and
``soif-gen`` beside it for generated archives.

Remote filesystems are tested against a local S3-compatible server (moto's, on
127.0.0.1 at a port chosen at run time), reached with ``s3://`` URIs whose query string
names the endpoint (``?endpoint_override=127.0.0.1:PORT&scheme=http``). The credentials
come from the environment, as on a cluster: the ``spark`` fixture sets ``AWS_*`` before
the session starts, so that the JVM, and the Python workers it forks, inherit them.

With ``SOIF_SPARK_JAR`` set (the jar ``spark/build.sh`` builds), the session has soif's
JVM data source on its classpath: ``format("soif")`` then reads local files on the task
threads (the Rust decoder over JNI) and hands writes and remote files to the Python data
source. ``scripts/test.sh`` runs the suite both ways: every test holds for both readers.
"""

import gzip
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import soif

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def _exe(name):
    env = os.environ.get("SOIF_BIN")
    cands = []
    if env:
        cands.append(pathlib.Path(env).with_name(name) if name != "soif" else pathlib.Path(env))
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    cands += [target / "debug" / name, target / "release" / name, ROOT / "target" / "debug" / name]
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    pytest.fail(f"{name} is not built (cargo build --bins) and SOIF_BIN is not set")


@pytest.fixture(scope="session")
def soif_bin():
    return _exe("soif")


#: The S3 test server's credentials (it accepts any; the point is that the executors find
#: them in their environment, as pyarrow.fs does on a cluster).
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "soif-test-key",
    "AWS_SECRET_ACCESS_KEY": "soif-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@pytest.fixture(scope="session")
def spark():
    """A local[2] session with the soif data source registered."""
    os.environ.update(S3_ENV)  # before the JVM starts: its Python workers inherit it
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import soif.spark

    builder = SparkSession.builder
    if os.environ.get("SOIF_SPARK_JAR"):
        builder = builder.config("spark.jars", os.environ["SOIF_SPARK_JAR"])
    session = (
        builder.master("local[2]")
        .appName("soif-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("FATAL")
    soif.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def convert(soif_bin, tmp_path_factory):
    """``soif convert PATHS --to parquet [-t SPEC…]``, read back with pyarrow (the
    reference rows)."""
    out_dir = tmp_path_factory.mktemp("convert")
    count = [0]

    def run(*paths, lenient=False, on_error="skip", transforms=()):
        count[0] += 1
        out = out_dir / f"{count[0]}.parquet"
        args = [soif_bin, "convert", *map(str, paths), "--to", "parquet", "-o", str(out), "-q", "--on-error", on_error]
        if lenient:
            args.append("--lenient")
        for spec in transforms:
            args += ["-t", spec]
        done = subprocess.run(args, capture_output=True)
        assert done.returncode in (0, 3), done.stderr.decode()
        return pq.read_table(out)

    return run


@pytest.fixture(scope="session")
def archive(tmp_path_factory):
    """A directory of generated archives: three plain files and two gzip'd ones (by
    ``soif-gen``), plus a hidden file and a ``_SUCCESS`` marker the reader skips."""
    gen = _exe("soif-gen")
    d = tmp_path_factory.mktemp("archive")
    for i, size in enumerate(("400KB", "250KB", "30KB", "300KB", "120KB")):
        raw = subprocess.run([gen, "--size", size, "--seed", str(i + 1)], capture_output=True, check=True).stdout
        if i < 3:
            (d / f"dump-{i}.soif").write_bytes(raw)
        else:
            (d / f"dump-{i}.soif.gz").write_bytes(gzip.compress(raw))
    (d / ".hidden.soif").write_bytes(b"@FILE { http://hidden/\n}\n")
    (d / "_SUCCESS").write_bytes(b"")
    return d


def obj(n, value, size=None, delim=b":\t"):
    size = len(value) if size is None else size
    return b"@FILE { http://x/%d\nNote{%s}%s%s\n}\n" % (n, str(size).encode(), delim, value)


@pytest.fixture(scope="session")
def adversarial(tmp_path_factory):
    """A plain file of every hazard a split meets: values holding ``@FILE {`` lines and
    whole fake objects (and fake envelopes), Harvest envelopes, a byte count too long, one
    too short, a count past the end of the file, garbage between objects, non-UTF-8 bytes,
    a space for the tab (lenient repair), ``{x}`` sizes."""
    fake = b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n"
    parts = [b"garbage before the first object\n"]
    for n in range(40):
        k = n % 10
        if k == 0:
            parts.append(obj(n, fake))
        elif k == 1:
            parts.append(b"@UPDATE {\n" + obj(n, b"inside an envelope") + obj(n + 1000, fake * 3) + b"}\n")
        elif k == 2:
            parts.append(obj(n, b"short", size=5000 if n < 30 else 9))
        elif k == 3:
            v = b"abc\n}\n@FILE { http://fake/x\n"
            parts.append(obj(n, v, size=len(v) + 2))
        elif k == 4:
            parts.append(obj(n, b"\xff\xfe latin \xe9 " * 20))
        elif k == 5:
            parts.append(obj(n, b"space for the tab", delim=b": "))
        elif k == 6:
            parts.append(b"<html>garbage @ here</html>\n@DELETE {\n" + obj(n, b"}\n@FILE {\n") + b"}\n")
        elif k == 7:
            parts.append(obj(n, b"x size", size="x"))
        elif k == 8:
            parts.append(obj(n, b"w" * 700))
        else:
            parts.append(obj(n, b"@REFRESH {\n" + fake + b"}\n"))
    parts.append(obj(99, b"runs past the end", size=1 << 20))
    p = tmp_path_factory.mktemp("adversarial") / "hazards.soif"
    p.write_bytes(b"".join(parts))
    return p


class S3:
    """A bucket on the test's S3 server: ``uri(key)`` is the ``s3://`` URI of a key (with
    the endpoint in its query string), ``fs`` a pyarrow filesystem on the server."""

    bucket = "soif-test"

    def __init__(self, port):
        import pyarrow.fs as pafs

        self.port = port
        self.query = f"endpoint_override=127.0.0.1:{port}&scheme=http"
        self.fs = pafs.S3FileSystem(
            access_key=S3_ENV["AWS_ACCESS_KEY_ID"],
            secret_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
            region=S3_ENV["AWS_DEFAULT_REGION"],
            endpoint_override=f"127.0.0.1:{port}",
            scheme="http",
            allow_bucket_creation=True,
        )
        self.fs.create_dir(self.bucket)

    def uri(self, key="", scheme="s3"):
        return f"{scheme}://{self.bucket}/{key}?{self.query}"

    def name(self, key=""):
        """The URI soif names the key by (no query string)."""
        return f"s3://{self.bucket}/{key}"

    def put(self, key, data):
        with self.fs.open_output_stream(f"{self.bucket}/{key}", compression=None) as f:
            f.write(data)

    def get(self, key):
        with self.fs.open_input_stream(f"{self.bucket}/{key}", compression=None) as f:
            return f.read()

    def keys(self, prefix):
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(f"{self.bucket}/{prefix}", recursive=True, allow_not_found=True)
        got = self.fs.get_file_info(sel)
        return sorted(i.path[len(self.bucket) + 1 :] for i in got if i.type == pafs.FileType.File)


@pytest.fixture(scope="session")
def s3():
    """A local S3-compatible server (moto) on 127.0.0.1 at a run-time port, with a
    bucket; stopped at the end of the session."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        _, port = server.get_host_and_port()
        yield S3(port)
    finally:
        server.stop()


LAYOUT = soif.schema().remove_metadata()


def layout_rows(table):
    """The layout columns of an Arrow table, cast to soif's layout, as Python rows."""
    table = table.select(LAYOUT.names)
    return table.cast(LAYOUT).to_pylist()


def spark_rows(df, corrupt="_corrupt_record"):
    """A DataFrame's good rows (the corrupt-record column null) as layout rows."""
    t = df.toArrow()
    if corrupt in t.column_names:
        t = t.filter(t.column(corrupt).is_null())
    return layout_rows(t)


def canonical(soif_bin, *paths):
    """``soif convert PATHS --to soif``: the canonical SOIF of the inputs."""
    out = subprocess.run([soif_bin, "convert", *map(str, paths), "--to", "soif", "-q"], capture_output=True)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def write_failing_in_task_1(spark, df, out, check):
    """Writes `df` to `out` in append and in overwrite mode with task 1 failing after its
    rows (each job must fail, naming the bad row), calling `check()` after each."""
    from pyspark.errors import PySparkException

    def no_record_last_in_task_1(batches):
        # After task 1's rows, a row that is no record (no template): with batches of 4
        # rows, the task's writer has its temporary file open, rows in it, when it meets
        # it. (Nested, so that Spark's workers get it by value: they cannot import
        # conftest.)
        import pyarrow as pa
        from pyspark import TaskContext

        last = None
        for b in batches:
            yield b
            last = b
        if TaskContext.get().partitionId() == 1 and last is not None:
            bad = last.slice(0, 1)
            i = bad.schema.get_field_index("template")
            yield bad.set_column(i, bad.schema.field(i), pa.nulls(1, pa.string()))

    rows = df.mapInArrow(no_record_last_in_task_1, df.schema)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
    try:
        for mode in ("append", "overwrite"):
            with pytest.raises(PySparkException, match="has no template"):
                rows.write.format("soif").mode(mode).save(out)
            check()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def batches(*urls, fail_after=None):
    """Batches of one record each (the URLs given) for driving the writer directly; the
    input breaks before the `fail_after`-th."""
    schema = pa.schema(
        [
            ("template", pa.string()),
            ("url", pa.string()),
            ("attributes", pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))),
        ]
    )
    for i, u in enumerate(urls):
        if fail_after is not None and i == fail_after:
            raise RuntimeError("the task's input broke")
        yield pa.record_batch([["FILE"], [u], [[{"name": "Title", "value": u}]]], schema=schema)


def load(spark, paths, **options):
    """`spark.read.format("soif")` with the options given (those that are None left out)."""
    r = spark.read.format("soif")
    for k, v in options.items():
        if v is not None:
            r = r.option(k, v)
    return r.load(paths)
