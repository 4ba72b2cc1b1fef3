"""SOIF on Apache Spark: ``spark.read.format("soif")`` and ``df.write.format("soif")``.

A data source of Spark 4's Python Data Source API (``pyspark.sql.datasource``) that reads
SOIF archives into DataFrames in soif's Arrow layout, with the project's Rust decoder, and
writes DataFrames in that layout back as canonical SOIF::

    from pyspark.sql import SparkSession
    import soif.spark

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    soif.spark.register(spark)                  # or spark.dataSource.register(soif.spark.SoifDataSource)

    df = spark.read.format("soif").load("/data/gatherers/")      # a file, directory, glob or list
    df.createOrReplaceTempView("soif")
    spark.sql("SELECT url, a.value AS title FROM soif LATERAL VIEW explode(attributes) t AS a "
              "WHERE lower(a.name) = 'title'").show()
    good = df.where("_corrupt_record IS NULL").drop("_corrupt_record")
    good.write.parquet("/data/gatherers.parquet")      # the rows `soif convert --to parquet` writes
    good.write.format("soif").mode("overwrite").save("/data/copy/")  # canonical SOIF part files

pyspark is imported only by this module (``import soif`` works without it), and only the
driver and executors that use the data source need it.

soif's JVM data source (``spark/`` in the repository: a jar built by ``spark/build.sh``,
given to the session with ``spark.jars``) reads the same format faster: it owns the name
``soif`` when it is on the classpath, decodes local files on the executors' task threads
(the same Rust reading loop, over JNI, with the same paths, partitions, options, rows
and errors), and hands writes and remote filesystems to this data source, which
:func:`register` then registers as ``soif_python`` (:data:`PYTHON_NAME`).

Reading
-------
``load`` takes a path, a directory (its files, not recursing unless
``recursiveFileLookup`` is true; names starting with ``.`` or ``_`` are skipped, as Spark's
file sources do), a glob (``*``, ``?``, ``[…]``, ``**``; Spark hands it over unexpanded, so
it is expanded here, and a pattern that matches nothing is an error), or a list of these.

A path is local (or on a filesystem mounted on every node, such as NFS; ``file:`` URIs
too), or a URI of a remote filesystem that ``pyarrow.fs.FileSystem.from_uri`` resolves:
``s3://bucket/dumps/`` (``s3a://`` and ``s3n://``, Hadoop's names, are read as
``s3://``), ``gs://``, ``hdfs://namenode:8020/dumps`` (pyarrow's HDFS needs libhdfs and
Hadoop's ``CLASSPATH`` on every node), and any other scheme the installed pyarrow knows::

    df = spark.read.format("soif").load("s3://archive/gatherers/")
    df = spark.read.format("soif").load(["s3://archive/2024/*.soif.gz", "hdfs://nn:8020/old/"])
    # An S3-compatible store (MinIO, Ceph, a national library's own): its endpoint
    # in the query string, which pyarrow reads as the filesystem's options.
    df = spark.read.format("soif").load(
        "s3://archive/gatherers/?endpoint_override=store.example.org:9000&scheme=http")

Remote directories are listed, and patterns expanded against the listing, through
``pyarrow.fs`` (the same rules as for local paths: names starting with ``.`` or ``_``
skipped in directories; in patterns ``*``, ``[…]`` and ``**``, a name starting with ``.``
matched only by a pattern segment starting with ``.``; ``?`` is no wildcard in a URI,
since it starts the query string). Errors and the ``_source`` column name a remote file
by its URI without the query string (``s3://archive/gatherers/dump-1.soif``) nor the
user name and password a URI may carry.

Each node finds its credentials and settings in its own environment, as ``pyarrow.fs``
does: for S3, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``),
``AWS_DEFAULT_REGION``, ``~/.aws/credentials`` or the instance's role (recent pyarrow
also reads the endpoint from ``AWS_ENDPOINT_URL``); for GCS, Google's default
credentials; for HDFS, Hadoop's configuration and Kerberos ticket. The filesystem's
options from the URI (endpoint, scheme, region…) travel with each partition; secrets
found in the environment do not: each executor needs its own (its instance role, or
its environment, e.g. set with ``spark.executorEnv.AWS_ACCESS_KEY_ID`` on YARN and
Kubernetes).

Partitions are planned on the driver:

- a file on a remote filesystem is one partition: the boundary pass memory-maps a file,
  and a remote one would have to be read whole on the driver before any task starts.
  The task reads it as a stream (in 8 MiB requests; a compressed one is recognised by
  its first bytes and decompressed by soif), so an archive stored as many files gives
  Spark as many tasks;
- a compressed local file (gzip, bzip2, xz, zstd, recognised by its first bytes) is one
  partition: a compressed stream cannot be entered in the middle;
- a plain local file is cut into byte ranges of at most about ``splitSize`` bytes, all of
  about the same size (a 170 MB file and the default 128 MiB give two ranges of 85 MB,
  not 128 and 42: the tasks of one stage then end together), by :func:`soif.split`. A value may hold anything, ``@FILE {`` lines and whole fake objects
  included, so a range cannot start at the next line that looks like an object;
  ``soif.split`` runs soif's own decoder over the file (stepping over values without
  building records) and returns the real object boundaries with the decoder's state there
  (record count, open Harvest envelope). Each task decodes its range with
  ``soif.read(path, range=split)``, so the union of the partitions' rows is exactly one
  sequential decode of the file: every record once, errors with the same offsets and
  record numbers, whatever the split size.

Each task yields ``pyarrow.RecordBatch``\\ es straight from the decoder (no Python parsing,
no per-row Python objects).

Options (names as Spark's own file sources spell them, case-insensitive; parsed by soif's
one option code, the JVM data source's, the Python package's and the CLI's, so sizes mean
the same everywhere — ``64MB`` is 64,000,000 bytes, ``64MiB`` 2^26 — and an unknown or
malformed option is an error naming it):

=========================== =================================================================
option                      meaning
=========================== =================================================================
``mode``                    ``PERMISSIVE`` (default): a bad record becomes a row whose
                            corrupt-record column holds its bytes, text, error, byte offset
                            and record number, the layout columns null; ``DROPMALFORMED``:
                            bad records are dropped; ``FAILFAST``: the first bad record fails
                            the job with an error naming the file, byte offset and record
                            number
``columnNameOfCorruptRecord`` the corrupt-record column's name (default ``_corrupt_record``)
``lenient``                 ``true``: repair what legacy data is known to carry, as the CLI's
                            ``--lenient``
``maxRecordSize``           the largest object accepted (bytes, or ``64MB``, ``1GiB``…;
                            default 64 MiB), as the CLI's ``--max-record-size``
``splitSize``               the size of a plain local file's byte ranges (default 128 MiB)
``includeSource``           ``true``: a ``_source`` column ``struct<file, offset>`` (the
                            file and the record's byte offset in it)
``recursiveFileLookup``     ``true``: read directories recursively
``batchSize``               rows per Arrow batch handed to Spark (default 4096)
``transforms``              the transform chain, as a JSON array of the CLI's ``-t`` specs
                            (``'["collapse", "select:URL,Title"]'``; one spec alone may be
                            given as it is): the rows are those ``soif convert --to parquet``
                            writes with that chain. Checked on the driver, which reads the
                            files the specs name and ships their bytes with the chain, so the
                            executors need no copy of them; ``order``, ``hits`` and
                            ``dedupe`` need the whole stream and are refused
                            (docs/spark.md#transforms)
=========================== =================================================================

The schema is :func:`soif.schema` (``template``, ``url``, ``action``, ``attributes``
``array<struct<name, value, bytes, name_bytes>>``, ``template_bytes``, ``url_bytes``), then
the corrupt-record column ``struct<bytes: binary, text: string, error: string, offset:
bigint, record: bigint>`` in ``PERMISSIVE`` mode, then ``_source`` when asked for.

Writing
-------
``df.write.format("soif").mode("append" | "overwrite").save(DIR)`` (a local directory
or a remote one, ``s3://bucket/out/``, as for reading) writes each task's rows as one
canonical SOIF file (the encoder of the ``soif`` tool), first under a hidden
temporary name (``.soif-<job>-<partition>-<attempt>-<random>.tmp``), renamed to
``part-<partition>-<job>.soif`` when the job commits, then a ``_SUCCESS`` marker. A task
that fails removes its temporary file; a job that aborts removes every temporary file of
the job (those of failed or lost tasks too). ``append`` never replaces a file: part names
carry the job's unique id, and the rename refuses an existing name. ``overwrite`` removes
the directory's earlier files that a read would read (by the path rules: names starting
with ``.`` or ``_`` and subdirectories stay, ``_SUCCESS`` is written anew) once the new
files are in place. The DataFrame needs the layout's columns (``template``, ``url``, ``attributes``;
``action``, ``template_bytes``, ``url_bytes`` when present); other columns, such as the
corrupt-record column, are not written, and a corrupt-record row (no template, no URL)
fails the task with an error, since it holds no record.

On an object store (S3, GCS) a rename is a copy of the object and a delete
(``pyarrow.fs``'s ``move``): the commit takes time in proportion to the data, a reader
listing the directory during it can see a part file both under its temporary name
(hidden, so skipped) and its final one, and on S3 each copy is one ``CopyObject``
request, which AWS limits to 5 GiB (a task's part file must stay below it:
``repartition`` into more tasks). An existing final name is checked before the copy
(not atomically with it, as object stores have no rename that refuses to replace; the
part names carry the job's unique id, so no other job's file can be in the way).
"""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence

import soif
from soif import _soif

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )
except ImportError as _e:
    raise ImportError(
        "soif.spark needs pyspark 4 (pip install 'pyspark[sql]>=4'): " + str(_e)
    ) from _e

__all__ = [
    "SoifDataSource",
    "SoifPartition",
    "RemoteFile",
    "register",
    "expand_paths",
    "plan_partitions",
    "DEFAULT_SPLIT_SIZE",
    "CORRUPT_RECORD",
]

#: The default ``splitSize``: 128 MiB, Spark's own ``spark.sql.files.maxPartitionBytes``.
DEFAULT_SPLIT_SIZE: int = 128 << 20
#: The default name of the corrupt-record column (``columnNameOfCorruptRecord``).
CORRUPT_RECORD: str = "_corrupt_record"
#: How long an aborted write keeps removing its tasks' temporary files: Spark's
#: ``spark.python.task.killTimeout`` (2 s by default) for the tasks it cancels, and a margin.
ABORT_GRACE_SECONDS: float = 4.0
#: The name of the source column (``includeSource``).
SOURCE: str = "_source"


_GLOB = re.compile(r"[*?\[]")


#: The name this data source takes when soif's JVM data source owns ``soif`` (see
#: :func:`register`); the JVM one hands it writes and remote files under this name.
PYTHON_NAME = "soif_python"


def register(spark: Any) -> None:
    """Registers the data source with ``spark`` under the format name ``soif``
    (``spark.dataSource.register(SoifDataSource)``).

    When soif's JVM data source (``soif-spark.jar``, built by ``spark/build.sh`` and given
    to the session with ``spark.jars``) is on the classpath, it owns the name ``soif``: it
    reads local files on the task threads and hands writes and other filesystems to this
    data source, registered then as ``soif_python`` (:data:`PYTHON_NAME`)."""
    try:
        spark.dataSource.register(SoifDataSource)
    except Exception as e:  # pyspark's AnalysisException, whose class differs by version
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
        spark.dataSource.register(_BehindJvm)


# -- options -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Options:
    """The reader's options, parsed once on the driver (and pickled to the executors)."""

    on_error: str
    corrupt_column: str
    lenient: bool
    max_record_size: int
    split_size: int
    include_source: bool
    recursive: bool
    batch_size: int
    #: The transform chain as the executors build it (the specs, with the bytes of the
    #: files they read, read on the driver), or None.
    transforms: Optional[str] = None

    @classmethod
    def parse(cls, options: Dict[str, str]) -> "_Options":
        """Spark's options, parsed by soif's option code (the JVM data source's too)."""
        o = _soif.spark_options([(str(k), str(v)) for k, v in options.items()])
        return cls(
            on_error=o["on_error"],
            corrupt_column=o["corrupt_column"],
            lenient=o["lenient"],
            max_record_size=o["max_record_size"],
            split_size=o["split_size"],
            include_source=o["include_source"],
            recursive=o["recursive"],
            batch_size=o["batch_size"],
            transforms=o["transforms"],
        )


# -- paths ---------------------------------------------------------------------------------


def _local(path: str) -> Optional[str]:
    """``path`` as a local path (``file:`` URIs accepted), or None for a URI of another
    scheme (a remote filesystem, see :class:`_Remote`)."""
    try:
        return _soif.local_path(path)
    except ValueError as e:
        raise ValueError(f"soif: {e}") from None


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """A file on a remote filesystem (``pyarrow.fs``), as :func:`expand_paths` lists it.

    ``uri`` names it in errors and in the ``_source`` column (the given URI's scheme and
    authority with the file's path, without the query string, which holds options, nor
    credentials); ``filesystem`` and ``path`` are what ``pyarrow.fs`` opens it with. The
    filesystem is pickled to the executors with its options (endpoint, region, scheme…);
    credentials found in the environment are not: each executor finds its own, as
    ``pyarrow.fs`` does (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, an instance
    profile…).
    """

    uri: str
    filesystem: Any
    path: str
    size: int

    def __str__(self) -> str:
        return self.uri


# Hadoop's names of S3 (what Spark users write): the same store for pyarrow.fs.
_S3_ALIASES = ("s3a", "s3n")


class _Remote:
    """A URI of a remote filesystem split into what ``pyarrow.fs`` resolves (the part
    before the first segment holding a glob character) and the glob's segments.

    ``pyarrow.fs.FileSystem.from_uri`` parses a strict URI (``[`` is a syntax error in a
    path), so a pattern is never handed to it: its fixed leading part is, and the rest is
    matched against that part's listing by soif's path rules (``_soif.select_listing``). In a URI, ``?`` starts the query string (pyarrow's
    options, e.g. ``?endpoint_override=host:port&scheme=http``), so it is no wildcard
    there: ``*`` and ``[…]`` are.
    """

    def __init__(self, given: str) -> None:
        import urllib.parse

        import pyarrow.fs as pafs

        self.given = given
        u = urllib.parse.urlsplit(given)
        scheme = u.scheme.lower()
        if _GLOB.search(u.netloc):
            raise ValueError(f"soif: {given}: a pattern in the bucket or host name is not supported")
        segments = u.path.split("/")
        first = next((i for i, seg in enumerate(segments) if _GLOB.search(seg)), len(segments))
        self.pattern = [urllib.parse.unquote(seg) for seg in segments[first:] if seg != ""]
        base_path = "/".join(segments[:first]) or "/"
        resolve = "s3" if scheme in _S3_ALIASES else scheme
        base_uri = urllib.parse.urlunsplit((resolve, u.netloc, base_path, u.query, ""))
        try:
            self.fs, base = pafs.FileSystem.from_uri(base_uri)
        except Exception as e:
            # pyarrow's message quotes the URI, which may carry a password: named without.
            shown = self._display_of(given)
            why = str(e).replace(base_uri, self._display_of(base_uri))
            raise ValueError(f"soif: {shown}: pyarrow.fs cannot open it: {why}") from None
        self.base = base.rstrip("/") if base not in ("", "/") else base
        # How a filesystem path reads as a URI: S3 and GCS paths begin with the bucket
        # (the URI's authority), HDFS paths with "/" (the authority is the name node).
        # The authority's user information (which may hold a secret) is left out.
        host = u.hostname or ""
        if u.port is not None:
            host += f":{u.port}"
        self.prefix = f"{u.scheme}://" + (host if self.base.startswith("/") else "")

    @staticmethod
    def _display_of(given: str) -> str:
        import urllib.parse

        u = urllib.parse.urlsplit(given)
        host = u.hostname or ""
        if u.port is not None:
            host += f":{u.port}"
        return urllib.parse.urlunsplit((u.scheme, host, u.path, "", ""))

    def uri(self, path: str) -> str:
        return self.prefix + path

    def display(self) -> str:
        return self._display_of(self.given)

    def files(self, recursive: bool) -> List[RemoteFile]:
        """The files the URI names: the file, a directory's files, a pattern's matches (a
        directory among them giving its files), sorted. Which entries of the listing are
        read is decided by soif's path rules with Spark's variant, the local paths' rules
        and glob matcher (``_soif.select_listing``: ``soif_sources::paths``)."""
        import pyarrow.fs as pafs

        if self.pattern:
            return self._glob(recursive)
        info = self.fs.get_file_info(self.base)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"soif: {self.display()}: no such file or directory")
        if info.type != pafs.FileType.Directory:
            return [self._file(info)]
        return self._select(None, self._listing(self.base, recursive), recursive)

    def _file(self, info: Any) -> RemoteFile:
        return RemoteFile(self.uri(info.path), self.fs, info.path, int(info.size or 0))

    def _listing(self, d: str, recursive: bool) -> List[Any]:
        import pyarrow.fs as pafs

        return self.fs.get_file_info(pafs.FileSelector(d, recursive=recursive, allow_not_found=True))

    def _entries(self, listing: List[Any]) -> List[Any]:
        """A listing as soif's path rules take it: paths relative to the base, file or not."""
        import pyarrow.fs as pafs

        return [("/".join(_relative(i.path, self.base)), i.type == pafs.FileType.File) for i in listing]

    def _select(self, pattern: Optional[str], listing: List[Any], recursive: bool) -> List[RemoteFile]:
        try:
            picked = _soif.select_listing(pattern, self._entries(listing), spark=True, recursive=recursive)
        except FileNotFoundError:
            raise FileNotFoundError(f"soif: no file matches the pattern {self.display()}") from None
        except ValueError as e:
            raise ValueError(f"soif: {self.display()}: {e}") from None
        return [self._file(listing[i]) for i in picked]

    def _glob(self, recursive: bool) -> List[RemoteFile]:
        """A pattern's files, from one listing of the base deep enough for the pattern
        and the directories it matches: the whole tree for a pattern of several names,
        ``**``, or ``recursive``; else the base's entries and those of the directories
        among them that the pattern matches."""
        import pyarrow.fs as pafs

        if self.fs.get_file_info(self.base).type != pafs.FileType.Directory:
            raise FileNotFoundError(f"soif: no file matches the pattern {self.display()}")
        pattern = "/".join(self.pattern)
        deep = recursive or len(self.pattern) > 1 or "**" in self.pattern
        listing = self._listing(self.base, deep)
        if not deep:
            try:
                matched = _soif.match_listing(pattern, self._entries(listing))
            except ValueError as e:
                raise ValueError(f"soif: {self.display()}: {e}") from None
            for i in matched:
                if listing[i].type == pafs.FileType.Directory:
                    listing.extend(self._listing(listing[i].path, False))
        return self._select(pattern, listing, recursive)


def _relative(path: str, base: str) -> List[str]:
    rest = path[len(base) :] if path.startswith(base) else path
    return [seg for seg in rest.split("/") if seg]


def expand_paths(paths: Sequence[str], recursive: bool = False) -> List[Any]:
    """The files to read for the paths given to ``load``, in order: a file as it is, a
    directory's visible files (sorted; recursively with ``recursive``), a glob's matches
    (sorted; a directory among them expanded in turn). Local paths follow soif's path
    rules with Spark's variant (``docs/inputs.md``); remote ones the same rules, listed
    through ``pyarrow.fs``.

    A local path (or ``file:`` URI) gives a path string; a URI of another scheme
    (``s3://``, ``s3a://``, ``gs://``, ``hdfs://``, whatever
    ``pyarrow.fs.FileSystem.from_uri`` resolves) gives :class:`RemoteFile`\\ s, listed
    through ``pyarrow.fs``.

    :raises FileNotFoundError: a path that does not exist, or a glob that matches nothing.
    :raises ValueError: a URI ``pyarrow.fs`` cannot open (its error is given).
    """
    files: List[Any] = []
    for given in paths:
        # soif's one rule for what is another filesystem's (the JVM data source's too).
        if _soif.is_remote(str(given)):
            files.extend(_Remote(str(given)).files(recursive))
            continue
        # Local paths by soif's one set of path rules (soif_sources::paths in the
        # repository), Spark's variant: the same as the JVM data source's.
        try:
            files.extend(_soif.expand_paths([str(given)], spark=True, recursive=recursive))
        except FileNotFoundError as e:
            raise FileNotFoundError(f"soif: {e}") from None
    return files


def _open_remote(f: RemoteFile) -> Any:
    """The bytes of a remote file as a binary file object named by its URI (the name
    soif's errors and ``_source`` column give), read in 8 MiB requests: no decompression
    by pyarrow (soif recognises compressed data by its first bytes)."""
    return _NamedStream(f.filesystem.open_input_stream(f.path, compression=None, buffer_size=_REMOTE_BUFFER), f.uri)


#: The size of one read of a remote file (one ranged GET on an object store).
_REMOTE_BUFFER = 8 << 20


class _NamedStream:
    """A pyarrow input stream with a ``name`` (soif.read names its input by it)."""

    def __init__(self, stream: Any, name: str) -> None:
        self._stream = stream
        self.name = name

    def read(self, n: int = -1) -> bytes:
        return self._stream.read(None if n is None or n < 0 else n)

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> "_NamedStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SoifPartition(InputPartition):
    """One task's input: a whole file (``split`` None: a compressed file, or a remote
    one) or one :class:`soif.Split` of a plain local file. ``path`` names the file (a
    local path, or a remote file's URI); ``remote`` is the :class:`RemoteFile` to open,
    None for a local file."""

    def __init__(self, path: str, split: Optional["soif.Split"], remote: Optional[RemoteFile] = None) -> None:
        super().__init__((path, split))
        self.path = path
        self.split = split
        self.remote = remote

    def __repr__(self) -> str:
        where = "" if self.split is None else f"[{self.split}]"
        return f"SoifPartition({self.path}{where})"


def plan_partitions(
    files: Sequence[Any],
    split_size: int = DEFAULT_SPLIT_SIZE,
    lenient: bool = False,
    max_record_size: int = soif.DEFAULT_MAX_RECORD_SIZE,
) -> List[SoifPartition]:
    """The partitions of ``files`` (paths or :class:`RemoteFile`\\ s, as
    :func:`expand_paths` gives them), in order: a compressed file whole, a plain local
    file in the byte ranges :func:`soif.split` finds, as many as ``split_size`` asks for
    and of about equal size, a remote file whole (an empty file has none)."""
    parts: List[SoifPartition] = []
    for f in files:
        if isinstance(f, RemoteFile):
            # The boundary pass memory-maps the file: a remote one would have to be read
            # whole on the driver before any task starts. One task per remote file.
            if f.size > 0:
                parts.append(SoifPartition(f.uri, None, f))
            continue
        if _soif.is_remote(str(f)):  # a URI not expanded by expand_paths
            parts.extend(plan_partitions(_Remote(str(f)).files(False), split_size, lenient, max_record_size))
            continue
        path = _local(str(f)) or str(f)
        # soif's one test of the first bytes (gzip, bzip2, xz, zstd), the JVM source's too.
        if _soif.compression(path) is not None:
            parts.append(SoifPartition(path, None))
            continue
        # Equal ranges rather than ranges of `split_size` and a remainder: the stage
        # takes as long as its longest task.
        n = max(1, -(-os.path.getsize(path) // max(1, split_size)))
        for s in soif.split(path, parts=n, lenient=lenient, max_record_size=max_record_size):
            parts.append(SoifPartition(path, s))
    return parts


# -- schema --------------------------------------------------------------------------------


def _arrow_schema(opts: _Options) -> Any:
    """The Arrow schema the reader's batches come in (soif's layout and extra columns)."""
    import pyarrow as pa

    schema = soif.schema().remove_metadata()
    if opts.on_error == "column":
        schema = schema.append(
            pa.field(
                opts.corrupt_column,
                pa.struct(
                    [
                        pa.field("bytes", pa.binary()),
                        pa.field("text", pa.string()),
                        pa.field("error", pa.string()),
                        pa.field("offset", pa.int64()),
                        pa.field("record", pa.int64()),
                    ]
                ),
            )
        )
    if opts.include_source:
        schema = schema.append(
            pa.field(SOURCE, pa.struct([pa.field("file", pa.string()), pa.field("offset", pa.int64())]))
        )
    return schema


def _spark_schema(opts: _Options) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(_arrow_schema(opts))


def _paths_option(options: Dict[str, str]) -> List[str]:
    """The paths ``load`` was given: ``path`` for one, ``paths`` (a JSON array) for a list."""
    import json

    out: List[str] = []
    if options.get("paths"):
        v = options["paths"]
        try:
            got = json.loads(v)
        except ValueError:
            got = [v]
        out.extend(got if isinstance(got, list) else [got])
    if options.get("path"):
        out.append(options["path"])
    if not out:
        raise ValueError('soif: no path given: spark.read.format("soif").load(PATH)')
    return [str(p) for p in out]


# -- the data source -----------------------------------------------------------------------


class SoifDataSource(DataSource):
    """The ``soif`` data source: reads SOIF files and directories, writes SOIF part files
    (see the module's documentation for paths, partitions and options).

    >>> spark.dataSource.register(SoifDataSource)                          # doctest: +SKIP
    >>> spark.read.format("soif").option("mode", "FAILFAST").load("a.soif")  # doctest: +SKIP
    """

    @classmethod
    def name(cls) -> str:
        return "soif"

    def schema(self) -> Any:
        return _spark_schema(_Options.parse(self.options))

    def reader(self, schema: Any) -> "SoifReader":
        return SoifReader(self.options, schema)

    def writer(self, schema: Any, overwrite: bool) -> "SoifWriter":
        return SoifWriter(self.options, schema, overwrite)


class _BehindJvm(SoifDataSource):
    """This data source under :data:`PYTHON_NAME`, behind soif's JVM data source."""

    @classmethod
    def name(cls) -> str:
        return PYTHON_NAME


class SoifReader(DataSourceReader):
    """Plans the partitions on the driver and decodes one per task."""

    def __init__(self, options: Dict[str, str], schema: Any) -> None:
        self.opts = _Options.parse(options)
        self.paths = _paths_option(options)
        expected = _spark_schema(self.opts)
        if schema is not None and [f.name for f in schema.fields] != expected.fieldNames():
            raise ValueError(
                "soif: the schema is soif's Arrow layout and cannot be set with .schema(...); "
                f"expected the columns {expected.fieldNames()}, got {[f.name for f in schema.fields]} "
                "(select or cast columns after loading)"
            )
        self.schema = schema if schema is not None else expected

    def partitions(self) -> List[SoifPartition]:
        files = expand_paths(self.paths, self.opts.recursive)
        return plan_partitions(files, self.opts.split_size, self.opts.lenient, self.opts.max_record_size)

    def read(self, partition: SoifPartition) -> Iterator[Any]:  # type: ignore[override]
        from pyspark.sql.pandas.types import to_arrow_schema

        # The batches must carry exactly the Arrow schema Spark derives from the DataFrame's
        # schema (list items named `element`, the corrupt-record column's own name): a cast
        # that renames, without copying the buffers.
        target = to_arrow_schema(self.schema, timezone="UTC")
        o = self.opts
        kw: Dict[str, Any] = dict(
            lenient=o.lenient,
            max_record_size=o.max_record_size,
            on_error=o.on_error,
            source_column=o.include_source,
            batch_size=o.batch_size,
        )
        if o.transforms is not None:
            kw["transforms"] = o.transforms
        if partition.split is not None:
            kw["range"] = partition.split
        if partition.remote is not None:
            with _open_remote(partition.remote) as f, soif.read(f, **kw) as reader:
                yield from _cast(reader, target)
        else:
            with soif.read(partition.path, **kw) as reader:
                yield from _cast(reader, target)


def _cast(reader: Any, target: Any) -> Iterator[Any]:
    for batch in reader:
        if batch.num_rows:
            yield batch.rename_columns(target.names).cast(target)


# -- the writer ----------------------------------------------------------------------------


@dataclasses.dataclass
class SoifCommitMessage(WriterCommitMessage):
    """A task's written file: its temporary path, its partition and its record count."""

    partition: int
    temp: Optional[str]
    records: int


_LAYOUT_COLUMNS = ("template", "url", "action", "attributes", "template_bytes", "url_bytes")


def _layout_batches(iterator: Iterator[Any]) -> Iterator[Any]:
    """The layout's columns of each batch, with a clear error for a row that is no record."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for batch in iterator:
        names = [n for n in _LAYOUT_COLUMNS if n in batch.schema.names]
        for need in ("template", "url", "attributes"):
            if need not in names:
                raise ValueError(
                    f"soif: the DataFrame has no column {need!r}: writing SOIF needs soif's "
                    f"Arrow layout ({', '.join(_LAYOUT_COLUMNS)}), got {batch.schema.names}"
                )
        b = batch.select(names)
        template = b.column("template")
        tbytes = b.column("template_bytes") if "template_bytes" in names else None
        missing = template.is_null()
        if tbytes is not None:
            missing = pc.and_(missing, tbytes.is_null())
        if pc.any(missing).as_py():
            row = pc.index(missing, pa.scalar(True)).as_py()
            raise ValueError(
                f"soif: row {row} of a batch has no template: a {CORRUPT_RECORD} row holds no record "
                f"(filter them out first: df.where('{CORRUPT_RECORD} IS NULL'))"
            )
        yield b


class SoifWriter(DataSourceArrowWriter):
    """Writes each task's rows as one SOIF part file, committed by rename (see the module's
    documentation). ``dir`` names the output directory (a local path, or a URI without
    its query string)."""

    def __init__(self, options: Dict[str, str], schema: Any, overwrite: bool) -> None:
        paths = _paths_option(options)
        if len(paths) != 1:
            raise ValueError(f"soif: write to one directory, not {paths}")
        local = _local(paths[0])
        self._out: Any = _LocalDir(os.path.abspath(local)) if local is not None else _RemoteDir(paths[0])
        self.dir = self._out.name
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex
        self._out.prepare()

    def _temp(self, partition: int, attempt: int) -> str:
        # The random part keeps two attempts apart even where Spark numbers them alike.
        tag = uuid.uuid4().hex[:8]
        return self._out.join(f".soif-{self.job}-{partition:05d}-{attempt}-{tag}.tmp")

    def _final(self, partition: int) -> str:
        return self._out.join(f"part-{partition:05d}-{self.job}.soif")

    def write(self, iterator: Iterator[Any]) -> SoifCommitMessage:  # type: ignore[override]
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx else 0
        attempt = ctx.attemptNumber() if ctx else 0
        batches = _layout_batches(iter(iterator))
        first = next(batches, None)
        if first is None:
            return SoifCommitMessage(partition, None, 0)  # an empty task writes no file
        self._out.prepare()
        temp = self._temp(partition, attempt)

        def rest() -> Iterator[Any]:
            yield first
            for b in batches:
                yield b.cast(first.schema) if not b.schema.equals(first.schema) else b

        try:
            n = self._out.write(temp, pa.RecordBatchReader.from_batches(first.schema, rest()))
        except BaseException:
            self._out.remove(temp)
            raise
        return SoifCommitMessage(partition, temp, n)

    def _sweep(self) -> None:
        """Removes every temporary file of this job (failed and lost attempts included)."""
        mine = f".soif-{self.job}-"
        for name, _ in self._out.list():
            if name.startswith(mine) and name.endswith(".tmp"):
                self._out.remove(self._out.join(name))

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:  # type: ignore[override]
        written = set()
        for m in messages:
            if not isinstance(m, SoifCommitMessage) or m.temp is None:
                continue
            final = self._final(m.partition)
            self._out.rename_new(m.temp, final)
            written.add(final)
        self._sweep()
        if self.overwrite:
            # The earlier files a read of the directory would read, by soif's path rules
            # (Spark's variant); `_SUCCESS` is written again below.
            listing = self._out.list()
            for i in _soif.select_listing(None, listing, spark=True, recursive=False):
                p = self._out.join(listing[i][0])
                if p not in written:
                    self._out.remove(p)
        self._out.touch(self._out.join("_SUCCESS"))

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:  # type: ignore[override]
        import time

        for m in messages:
            if isinstance(m, SoifCommitMessage) and m.temp is not None:
                self._out.remove(m.temp)
        # Spark calls abort as soon as one task has failed, while it is still cancelling
        # the others: a task's Python worker may go on to create or finish its temporary
        # file after a first sweep, until Spark kills it (`spark.python.task.killTimeout`,
        # 2 s by default). So the sweep is repeated for a while after that.
        deadline = time.monotonic() + ABORT_GRACE_SECONDS
        self._sweep()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            self._sweep()


def _exists_error(dst: str) -> FileExistsError:
    return FileExistsError(f"soif: {dst} exists: an earlier job's file is never replaced")


class _LocalDir:
    """The writer's output directory on a local (or mounted) filesystem."""

    def __init__(self, path: str) -> None:
        self.name = path

    def prepare(self) -> None:
        if os.path.exists(self.name) and not os.path.isdir(self.name):
            raise ValueError(f"soif: {self.name} exists and is not a directory")
        os.makedirs(self.name, exist_ok=True)

    def join(self, name: str) -> str:
        return os.path.join(self.name, name)

    def write(self, path: str, stream: Any) -> int:
        return soif.write(stream, path)

    def list(self) -> List[Any]:
        return [(n, os.path.isfile(os.path.join(self.name, n))) for n in sorted(os.listdir(self.name))]

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def touch(self, path: str) -> None:
        with open(path, "wb"):
            pass

    def rename_new(self, src: str, dst: str) -> None:
        """Renames ``src`` to ``dst``, refusing to replace an existing ``dst`` (a hard
        link fails on an existing name; where links are not supported, a checked rename)."""
        try:
            os.link(src, dst)
        except FileExistsError:
            raise _exists_error(dst) from None
        except OSError:
            if os.path.exists(dst):
                raise _exists_error(dst) from None
            os.rename(src, dst)
            return
        os.remove(src)


class _RemoteDir:
    """The writer's output directory on a remote filesystem (``pyarrow.fs``). Paths are
    the filesystem's (``bucket/dir/name`` on S3); the filesystem is pickled to the
    executors with its options, and each finds its credentials in its environment."""

    def __init__(self, given: str) -> None:
        r = _Remote(given)
        if r.pattern:
            raise ValueError(f"soif: write to a directory, not a pattern: {r.display()}")
        self.fs = r.fs
        self.base = r.base
        self.name = r.uri(r.base)

    def prepare(self) -> None:
        import pyarrow.fs as pafs

        info = self.fs.get_file_info(self.base)
        if info.type == pafs.FileType.File:
            raise ValueError(f"soif: {self.name} exists and is not a directory")
        if info.type == pafs.FileType.NotFound:
            self.fs.create_dir(self.base, recursive=True)

    def join(self, name: str) -> str:
        return self.base.rstrip("/") + "/" + name

    def write(self, path: str, stream: Any) -> int:
        out = self.fs.open_output_stream(path, compression=None)
        try:
            n = soif.write(stream, out)
        finally:
            # Closing completes the upload (an object store writes the object only
            # now); after a failure the caller removes what was written.
            out.close()
        return n

    def list(self) -> List[Any]:
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(self.base, recursive=False, allow_not_found=True)
        got = []
        for info in self.fs.get_file_info(sel):
            name = _relative(info.path, self.base)
            if len(name) == 1:
                got.append((name[0], info.type == pafs.FileType.File))
        return sorted(got)

    def remove(self, path: str) -> None:
        import pyarrow.fs as pafs

        if self.fs.get_file_info(path).type == pafs.FileType.File:
            self.fs.delete_file(path)

    def touch(self, path: str) -> None:
        self.fs.open_output_stream(path, compression=None).close()

    def rename_new(self, src: str, dst: str) -> None:
        """Moves ``src`` to ``dst``, refusing to replace an existing ``dst``. On an object
        store a move is a copy and a delete, and the check before it is not atomic with
        it: the part names carry the job's unique id, so only another writer of the
        same job could race it, and there is none."""
        import pyarrow.fs as pafs

        if self.fs.get_file_info(dst).type != pafs.FileType.NotFound:
            raise _exists_error(self.name + dst[len(self.base) :])
        self.fs.move(src, dst)
