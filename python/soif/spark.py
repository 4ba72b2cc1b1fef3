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

Reading
-------
``load`` takes a path, a directory (its files, not recursing unless
``recursiveFileLookup`` is true; names starting with ``.`` or ``_`` are skipped, as Spark's
file sources do), a glob (``*``, ``?``, ``[…]``, ``**``; Spark hands it over unexpanded, so
it is expanded here, and a pattern that matches nothing is an error), or a list of these.
Paths are local (or a filesystem mounted on every node, such as NFS); ``file:`` URIs are
accepted, other schemes are refused with an error.

Partitions are planned on the driver:

- a compressed file (gzip, bzip2, xz, zstd, recognised by its first bytes) is one
  partition: a compressed stream cannot be entered in the middle;
- a plain file is cut into byte ranges of at most about ``splitSize`` bytes, all of
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

Options (names as Spark's own file sources spell them, case-insensitive):

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
``splitSize``               the size of a plain file's byte ranges (default 128 MiB)
``includeSource``           ``true``: a ``_source`` column ``struct<file, offset>`` (the
                            file and the record's byte offset in it)
``recursiveFileLookup``     ``true``: read directories recursively
``batchSize``               rows per Arrow batch handed to Spark (default 4096)
=========================== =================================================================

The schema is :func:`soif.schema` (``template``, ``url``, ``action``, ``attributes``
``array<struct<name, value, bytes, name_bytes>>``, ``template_bytes``, ``url_bytes``), then
the corrupt-record column ``struct<bytes: binary, text: string, error: string, offset:
bigint, record: bigint>`` in ``PERMISSIVE`` mode, then ``_source`` when asked for.

Writing
-------
``df.write.format("soif").mode("append" | "overwrite").save(DIR)`` writes each task's
rows as one canonical SOIF file (the encoder of the ``soif`` tool), first under a hidden
temporary name (``.soif-<job>-<partition>-<attempt>-<random>.tmp``), renamed to
``part-<partition>-<job>.soif`` when the job commits, then a ``_SUCCESS`` marker. A task
that fails removes its temporary file; a job that aborts removes every temporary file of
the job (those of failed or lost tasks too). ``append`` never replaces a file: part names
carry the job's unique id, and the rename refuses an existing name. ``overwrite`` removes
the directory's earlier regular files (not its subdirectories) once the new files are in
place. The DataFrame needs the layout's columns (``template``, ``url``, ``attributes``;
``action``, ``template_bytes``, ``url_bytes`` when present); other columns, such as the
corrupt-record column, are not written, and a corrupt-record row (no template, no URL)
fails the task with an error, since it holds no record.
"""

from __future__ import annotations

import dataclasses
import glob as _glob
import os
import re
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence

import soif

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
#: The name of the source column (``includeSource``).
SOURCE: str = "_source"

_MODES = {"PERMISSIVE": "column", "DROPMALFORMED": "skip", "FAILFAST": "fail"}

# The first bytes of the compressed formats soif's decoder recognises (the same test as
# soif.read's): gzip, bzip2, xz, zstd.
_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")

_GLOB = re.compile(r"[*?\[]")
_SCHEME = re.compile(r"\A([A-Za-z][A-Za-z0-9+.-]*):")
_SIZE = re.compile(r"\A\s*(\d+)\s*([A-Za-z]*)\s*\Z")
_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 1 << 10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 1 << 20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 1 << 30,
}


def register(spark: Any) -> None:
    """Registers the data source with ``spark`` under the format name ``soif``
    (``spark.dataSource.register(SoifDataSource)``)."""
    spark.dataSource.register(SoifDataSource)


# -- options -------------------------------------------------------------------------------


def _bool(options: Dict[str, str], key: str, default: bool = False) -> bool:
    v = options.get(key)
    if v is None:
        return default
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"soif: option {key}={v!r}: expected true or false")


def _size(options: Dict[str, str], key: str, default: int) -> int:
    v = options.get(key)
    if v is None:
        return default
    m = _SIZE.match(str(v))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise ValueError(f"soif: option {key}={v!r}: expected a size in bytes (e.g. 134217728, 128MiB, 64MB)")
    n = int(m.group(1)) * _UNITS[unit]
    if n <= 0:
        raise ValueError(f"soif: option {key}={v!r}: must be positive")
    return n


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
    batch_size: Optional[int]

    @classmethod
    def parse(cls, options: Dict[str, str]) -> "_Options":
        mode = str(options.get("mode", "PERMISSIVE")).strip().upper()
        if mode not in _MODES:
            raise ValueError(f"soif: option mode={mode!r}: expected PERMISSIVE, DROPMALFORMED or FAILFAST")
        batch = options.get("batchSize")
        return cls(
            on_error=_MODES[mode],
            corrupt_column=str(options.get("columnNameOfCorruptRecord", CORRUPT_RECORD)),
            lenient=_bool(options, "lenient"),
            max_record_size=_size(options, "maxRecordSize", soif.DEFAULT_MAX_RECORD_SIZE),
            split_size=_size(options, "splitSize", DEFAULT_SPLIT_SIZE),
            include_source=_bool(options, "includeSource"),
            recursive=_bool(options, "recursiveFileLookup"),
            batch_size=None if batch is None else _size(options, "batchSize", 0),
        )


# -- paths ---------------------------------------------------------------------------------


def _local(path: str) -> str:
    """``path`` as a local path: ``file:`` URIs accepted, other schemes refused."""
    m = _SCHEME.match(path)
    if m and len(m.group(1)) > 1:  # not a Windows drive letter
        if m.group(1).lower() != "file":
            raise ValueError(
                f"soif: {path}: only local paths (or a filesystem mounted on every node) are read, "
                f"not {m.group(1)}: URLs"
            )
        rest = path[len(m.group(0)) :]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):  # file://host/path: the host is not ours to read
                host, _, tail = rest.partition("/")
                if host not in ("", "localhost"):
                    raise ValueError(f"soif: {path}: a file: URI with a host ({host}) is not a local path")
                rest = "/" + tail
        return rest
    return path


def _visible(name: str) -> bool:
    return not (name.startswith(".") or name.startswith("_"))


def _dir_files(d: str, recursive: bool) -> List[str]:
    out: List[str] = []
    for root, dirs, files in os.walk(d):
        dirs[:] = sorted(x for x in dirs if _visible(x)) if recursive else []
        out.extend(os.path.join(root, f) for f in sorted(files) if _visible(f))
    return sorted(out)


def expand_paths(paths: Sequence[str], recursive: bool = False) -> List[str]:
    """The files to read for the paths given to ``load``, in order: a file as it is, a
    directory's visible files (sorted; recursively with ``recursive``), a glob's matches
    (sorted; a directory among them expanded in turn).

    :raises FileNotFoundError: a path that does not exist, or a glob that matches nothing.
    :raises ValueError: a URL of a scheme other than ``file:``.
    """
    files: List[str] = []
    for given in paths:
        p = _local(str(given))
        if _GLOB.search(p):
            matches = sorted(_glob.glob(p, recursive=True))
            if not matches:
                raise FileNotFoundError(f"soif: no file matches the pattern {given}")
        elif os.path.exists(p):
            matches = [p]
        else:
            raise FileNotFoundError(f"soif: {given}: no such file or directory")
        for m in matches:
            if os.path.isdir(m):
                files.extend(_dir_files(m, recursive))
            else:
                files.append(m)
    return files


def _compressed(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(6)
    return any(head.startswith(m) for m in _MAGIC)


class SoifPartition(InputPartition):
    """One task's input: a whole file (``split`` None: a compressed file) or one
    :class:`soif.Split` of a plain file."""

    def __init__(self, path: str, split: Optional["soif.Split"]) -> None:
        super().__init__((path, split))
        self.path = path
        self.split = split

    def __repr__(self) -> str:
        where = "" if self.split is None else f"[{self.split}]"
        return f"SoifPartition({self.path}{where})"


def plan_partitions(
    files: Sequence[str],
    split_size: int = DEFAULT_SPLIT_SIZE,
    lenient: bool = False,
    max_record_size: int = soif.DEFAULT_MAX_RECORD_SIZE,
) -> List[SoifPartition]:
    """The partitions of ``files``, in order: a compressed file whole, a plain file in the
    byte ranges :func:`soif.split` finds, as many as ``split_size`` asks for and of about
    equal size (an empty file has none)."""
    parts: List[SoifPartition] = []
    for path in files:
        if _compressed(path):
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
        if partition.split is not None:
            kw["range"] = partition.split
        with soif.read(partition.path, **kw) as reader:
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
    documentation)."""

    def __init__(self, options: Dict[str, str], schema: Any, overwrite: bool) -> None:
        paths = _paths_option(options)
        if len(paths) != 1:
            raise ValueError(f"soif: write to one directory, not {paths}")
        self.dir = os.path.abspath(_local(paths[0]))
        if os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise ValueError(f"soif: {self.dir} exists and is not a directory")
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex
        os.makedirs(self.dir, exist_ok=True)

    def _temp(self, partition: int, attempt: int) -> str:
        # The random part keeps two attempts apart even where Spark numbers them alike.
        tag = uuid.uuid4().hex[:8]
        return os.path.join(self.dir, f".soif-{self.job}-{partition:05d}-{attempt}-{tag}.tmp")

    def _final(self, partition: int) -> str:
        return os.path.join(self.dir, f"part-{partition:05d}-{self.job}.soif")

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
        os.makedirs(self.dir, exist_ok=True)
        temp = self._temp(partition, attempt)

        def rest() -> Iterator[Any]:
            yield first
            for b in batches:
                yield b.cast(first.schema) if not b.schema.equals(first.schema) else b

        try:
            n = soif.write(pa.RecordBatchReader.from_batches(first.schema, rest()), temp)
        except BaseException:
            _remove(temp)
            raise
        return SoifCommitMessage(partition, temp, n)

    def _sweep(self) -> None:
        """Removes every temporary file of this job (failed and lost attempts included)."""
        for p in _glob.glob(os.path.join(_glob.escape(self.dir), f".soif-{self.job}-*.tmp")):
            _remove(p)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:  # type: ignore[override]
        written = set()
        for m in messages:
            if not isinstance(m, SoifCommitMessage) or m.temp is None:
                continue
            final = self._final(m.partition)
            _rename_new(m.temp, final)
            written.add(final)
        self._sweep()
        if self.overwrite:
            for name in os.listdir(self.dir):
                p = os.path.join(self.dir, name)
                if p in written or name.startswith(".soif-") or not os.path.isfile(p):
                    continue
                if _visible(name) or name == "_SUCCESS":
                    _remove(p)
        with open(os.path.join(self.dir, "_SUCCESS"), "wb"):
            pass

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:  # type: ignore[override]
        for m in messages:
            if isinstance(m, SoifCommitMessage) and m.temp is not None:
                _remove(m.temp)
        self._sweep()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _rename_new(src: str, dst: str) -> None:
    """Renames ``src`` to ``dst``, refusing to replace an existing ``dst`` (a hard link
    fails on an existing name; where links are not supported, a checked rename)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        raise FileExistsError(f"soif: {dst} exists: an earlier job's file is never replaced") from None
    except OSError:
        if os.path.exists(dst):
            raise FileExistsError(f"soif: {dst} exists: an earlier job's file is never replaced") from None
        os.rename(src, dst)
        return
    os.remove(src)

