"""Read and write Harvest/Netscape SOIF metadata (RFC 2655) from Python.

SOIF, the Summary Object Interchange Format of the Harvest gatherers and Netscape catalog
servers, is a stream of objects::

    @FILE { http://example.com/
    Title{7}:	Example
    Author-1{3}:	Ann
    }

This package reads it with the decoder of the ``soif`` command-line tool (in Rust, with
the GIL released) and hands it to today's tools:

- :func:`read` streams record batches in soif's Arrow layout. The reader implements the
  Arrow PyCapsule interface, so ``pyarrow.table(r)``, ``polars.DataFrame(r)`` and
  ``duckdb.sql("SELECT … FROM r")`` take it without a copy; iterating it yields
  ``pyarrow.RecordBatch``\\ es.
- :func:`records` yields plain :class:`Record` objects, for code that wants no Arrow.
- :func:`write` writes canonical SOIF from records, Arrow data in the layout, or a Polars
  DataFrame.

A source is a path (``str`` or ``os.PathLike``; a directory or a glob reads every file in
it, sorted), an ``http(s)://`` URL, a list of those, ``bytes``, or a binary file object.
gzip, bzip2, xz and zstd are recognised by their first bytes, whatever the name. Memory
stays bounded by one batch and the largest record, whatever the input's size.

The Arrow layout (``soif:layout`` = ``records``, version 1), one row per record:

============== ================================ ===========================================
column         type                             holds
============== ================================ ===========================================
template       string                           ``FILE``; null only when not UTF-8
url            string                           the URL (``-`` when none)
action         string                           ``delete``/``refresh``/``update`` inside a
                                                Harvest envelope, else null
attributes     list<struct<name, value, bytes,  the attributes in order, repeated names kept;
               name_bytes>>                     ``value`` is the text when UTF-8, else
                                                ``bytes`` holds the exact bytes
template_bytes binary                           the template's bytes when not UTF-8
url_bytes      binary                           the URL's bytes when not UTF-8
============== ================================ ===========================================

A plain file can be read in byte ranges that decode independently, each on its own
worker (the Spark data source does this): :func:`split` finds them, ``read(path,
range=split)`` reads one, and the ranges' rows, concatenated, are exactly the rows of one
``read(path)``.

Errors are :class:`SoifError` and its subclasses :class:`DecodeError` (a bad record under
``on_error="fail"``) and :class:`LayoutError` (Arrow data in another layout); each carries
``input``, ``offset`` (byte offset), ``record`` (record number, from 1) and ``url`` where
known.
"""

from __future__ import annotations

import io
import os
import re
from typing import (
    IO,
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _soif
from ._soif import DecodeError, LayoutError, SoifError

__all__ = [
    "read",
    "records",
    "write",
    "split",
    "Split",
    "schema",
    "Reader",
    "RecordReader",
    "Record",
    "SoifError",
    "DecodeError",
    "LayoutError",
    "LAYOUT_VERSION",
    "DEFAULT_MAX_RECORD_SIZE",
]

__version__ = "0.1.0"

for _e in (SoifError, DecodeError, LayoutError):
    try:
        _e.__module__ = "soif"
    except (AttributeError, TypeError):  # pragma: no cover - read-only on some builds
        pass
    for _attr in ("input", "offset", "record", "url"):
        if not hasattr(_e, _attr):
            setattr(_e, _attr, None)

#: The version of the Arrow layout this package reads and writes.
LAYOUT_VERSION: str = _soif.LAYOUT_VERSION
#: The default ``max_record_size``: 64 MiB.
DEFAULT_MAX_RECORD_SIZE: int = _soif.DEFAULT_MAX_RECORD_SIZE
#: The default split size of :func:`split`: 128 MiB.
DEFAULT_SPLIT_SIZE: int = _soif.DEFAULT_SPLIT_SIZE

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes], Sequence[Any]]



class Split(NamedTuple):
    """A byte range of a plain SOIF file that decodes on its own, and the decoder's state
    at its start, as :func:`split` finds them. Read one with ``soif.read(path,
    range=split)``.

    ``start`` is 0 or the byte offset of an object's ``@``; ``end`` is the next split's
    start, or the file's size. ``first_record`` counts the objects (records and rejected
    ones) before ``start``: record numbers in the range's errors go on from it, as in a
    read of the whole file. ``envelope`` is the byte offset of the Harvest envelope
    (``@UPDATE {`` …) open at ``start`` (its action goes on the records inside it), or
    None; ``end_known`` whether the decoder already knows where the file ends there (a
    value declared past the end was met before). Pass the ``Split`` itself to
    :func:`read`: a bare ``(start, end)`` pair loses the envelope.
    """

    start: int
    end: int
    first_record: int
    envelope: Optional[int] = None
    end_known: bool = False

    def __str__(self) -> str:
        """The text form ``soif split`` prints and ``soif convert --range`` reads."""
        s = f"{self.start}..{self.end}"
        if self.first_record:
            s += f",record={self.first_record}"
        if self.envelope is not None:
            s += f",envelope={self.envelope}"
        if self.end_known:
            s += ",end-known"
        return s


def split(
    path: Union[str, "os.PathLike[str]"],
    *,
    size: Optional[int] = None,
    parts: Optional[int] = None,
    lenient: bool = False,
    max_record_size: Union[int, str] = DEFAULT_MAX_RECORD_SIZE,
) -> List[Split]:
    """The byte ranges of a plain SOIF file that decode independently, in order.

    A value may hold anything, ``@FILE {`` lines and whole fake objects included, so a
    range cannot start at the next line that looks like an object: one pass of soif's own
    decoder over the file (with the GIL released; it steps over values without building
    records) finds the real object boundaries nearest the split points and the decoder's
    state there. Reading each split with ``read(path, range=split)`` and concatenating
    the rows gives exactly the rows of ``read(path)``: the same records, rejections,
    repairs, offsets and record numbers.

    :param path: a plain (uncompressed) SOIF file.
    :param size: split points every ``size`` bytes (default :data:`DEFAULT_SPLIT_SIZE`,
        128 MiB), each moved on to the next object boundary.
    :param parts: instead of ``size``: at most this many splits of about equal size.
    :param lenient: as for :func:`read`; give the same ``lenient`` and
        ``max_record_size`` to ``read``, since they decide where objects end.
    :param max_record_size: as for :func:`read`.
    :returns: the splits, covering the file, none empty (an empty file has none).
    :raises ValueError: the file is compressed (gzip, bzip2, xz, zstd: a compressed
        stream cannot be entered in the middle, so it is read whole), or not a regular
        file.

    >>> import soif, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "a.soif")
    >>> _ = open(p, "wb").write(b"@FILE { http://a/\\nNote{11}:\\t@FILE { x }\\n}\\n@FILE { http://b/\\n}\\n")
    >>> soif.split(p, size=8)
    [Split(start=0, end=42, first_record=0, envelope=None, end_known=False), Split(start=42, end=62, first_record=1, envelope=None, end_known=False)]
    >>> [r.url for s in soif.split(p, size=8) for r in soif.records(p, range=s)]
    ['http://a/', 'http://b/']
    """
    if isinstance(path, (bytes, bytearray, memoryview)) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"soif.split takes the path of a plain file, not {type(path).__name__}")
    if size is not None and parts is not None:
        raise ValueError("give size= or parts=, not both")
    got = _soif.split(
        os.fspath(path),
        size=None if size is None else int(size),
        parts=None if parts is None else int(parts),
        options=[("lenient", _option_text(lenient)), ("max_record_size", _option_text(max_record_size))],
    )
    return [Split(*t) for t in got]


def _range_arg(range: Any, first_record: int) -> Optional[Tuple[int, int, int, Optional[int], bool]]:
    if range is None:
        if first_record:
            raise ValueError("first_record= goes with range=")
        return None
    if isinstance(range, Split):
        if first_record and first_record != range.first_record:
            raise ValueError(
                f"first_record={first_record} contradicts the split's first_record={range.first_record}"
            )
        return (range.start, range.end, range.first_record, range.envelope, bool(range.end_known))
    try:
        start, end = range
    except (TypeError, ValueError):
        raise TypeError("range must be a soif.Split or a (start, end) pair of byte offsets") from None
    start, end, first = int(start), int(end), int(first_record)
    if start < 0 or end < start or first < 0:
        raise ValueError(f"range=({start}, {end}), first_record={first}: offsets must satisfy 0 <= start <= end")
    return (start, end, first, None, False)


def _option_text(value: Any) -> str:
    """A keyword argument's value as the option text soif's option code reads."""
    if isinstance(value, (list, tuple, dict)):
        # A list (``transforms=[...]``) or a mapping (``tables={...}``): JSON, as Spark's
        # options take them.
        import json

        def text(v: Any) -> str:
            return os.fspath(v) if isinstance(v, os.PathLike) else str(v)

        if isinstance(value, dict):
            return json.dumps({str(k): text(v) for k, v in value.items()})
        return json.dumps([text(v) for v in value])
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _native_reader(
    source: Any,
    lenient: Any,
    max_record_size: Any,
    on_error: Any,
    quarantine: Any,
    batch_size: Any,
    range: Any = None,
    first_record: int = 0,
    source_column: Any = False,
    extra: Optional[Dict[str, Any]] = None,
) -> Any:
    # Every option goes, as text, to soif's one option code (the CLI's, pipeline files'
    # and Spark's): the same sizes, names and errors.
    given = dict(lenient=lenient, max_record_size=max_record_size, on_error=on_error)
    if quarantine is not None:
        given["quarantine"] = quarantine
    if batch_size is not None:
        given["batch_size"] = batch_size
    if source_column:
        given["source_column"] = source_column
    given.update(extra or {})
    options = [(k, _option_text(v)) for k, v in given.items() if v is not None]
    rng = _range_arg(range, first_record)
    if isinstance(source, (bytes, bytearray, memoryview)):
        kind, name, data = "bytes", "<bytes>", bytes(source)
    elif isinstance(source, (str, os.PathLike)):
        kind, data = "paths", [os.fspath(source)]
        name = data[0]
    elif isinstance(source, (list, tuple)) and not isinstance(source, Split):
        data = [os.fspath(s) for s in source]
        if not data:
            raise ValueError("no source given (an empty list)")
        kind, name = "paths", data[0]
    elif hasattr(source, "read"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("a text file was given: open it in binary mode ('rb')")
        kind, data = "file", source
        n = getattr(source, "name", None)
        name = n if isinstance(n, str) else "<file>"
    else:
        raise TypeError(
            "source must be a path, a URL, a list of them, bytes or a binary file object, "
            f"not {type(source).__name__}"
        )
    return _soif._Reader(kind, data, name, options=options, range=rng)


class _Counts:
    """The counts of a read, readable during and after it (also once a reader has been
    handed to pyarrow, Polars or DuckDB)."""

    _native: Any

    @property
    def records_in(self) -> int:
        """Records read, good and bad (``records_out + rejected``)."""
        return self._native.records_in

    @property
    def records_out(self) -> int:
        """Records handed out."""
        return self._native.records_out

    @property
    def rejected(self) -> int:
        """Bad records skipped or quarantined (or the one that failed the read)."""
        return self._native.rejected

    @property
    def filtered(self) -> int:
        """Records the transforms dropped on purpose (``match``, ``since``, a ``remap``
        program's ``abort``; see ``transforms=``): ``records_in + added - records_out -
        rejected``, as the CLI's summary counts them."""
        return self._native.filtered

    @property
    def added(self) -> int:
        """Records the transforms made beyond one per record read (a ``remap`` program
        whose result is an array of records)."""
        return self._native.added

    @property
    def warnings(self) -> List[str]:
        """The transforms' warnings (the first 1000), e.g. ``dc``'s values it could not
        convert."""
        return self._native.warnings

    @property
    def repaired(self) -> int:
        """Records that needed a repair (``lenient=True``)."""
        return self._native.repaired

    @property
    def quarantined(self) -> int:
        """Rejected records whose original bytes went to the quarantine file."""
        return self._native.quarantined

    @property
    def bytes_read(self) -> int:
        """Bytes read from the inputs as stored (compressed, for compressed inputs)."""
        return self._native.bytes_read

    @property
    def errors(self) -> List[DecodeError]:
        """The rejected records (the first 1000) as :class:`DecodeError`\\ s, each with
        ``input``, ``offset``, ``record`` and ``url``."""
        return self._native.errors

    @property
    def error(self) -> Optional[SoifError]:
        """The error that ended the read, else None: a :class:`DecodeError` (with
        ``input``, ``offset``, ``record``, ``url``) when a record failed the read under
        ``on_error="fail"``, a :class:`SoifError` when an input could not be read.

        Iterating a reader raises it directly. Through the Arrow stream (``pyarrow.table``,
        ``polars.DataFrame``, DuckDB) the consumer raises its own exception type
        (``pyarrow.ArrowInvalid``, ``polars.exceptions.ComputeError``, DuckDB's
        ``InvalidInputException``) with the stream's error message, which starts with
        ``soif.DecodeError:`` and names the input, byte offset, record number and URL;
        this property then holds the exception itself."""
        return self._native.error

    def close(self) -> None:
        """Stops reading and closes the inputs; the counts stay readable."""
        self._native.close()

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _counts(self) -> str:
        return (
            f"records_in={self.records_in}, records_out={self.records_out}, "
            f"rejected={self.rejected}, repaired={self.repaired}"
        )


class Reader(_Counts):
    """Record batches in soif's Arrow layout, streamed from a source (see :func:`read`).

    - ``pyarrow.table(reader)``, ``polars.DataFrame(reader)`` (or ``polars.from_arrow``)
      and ``duckdb.sql("SELECT … FROM reader")`` read it through the Arrow PyCapsule
      stream interface (``__arrow_c_stream__``), without a copy.
    - Iterating it yields ``pyarrow.RecordBatch``\\ es (needs pyarrow).

    A reader streams once: after one consumer has read it, reading it again raises
    :class:`SoifError`. ``__arrow_c_schema__`` gives the schema without reading, so that
    DuckDB asks for the stream only once. The counts (``records_in``, ``records_out``,
    ``rejected``, ``repaired``) are readable during and after the read.
    """

    def __init__(self, native: Any) -> None:
        self._native = native

    def __arrow_c_schema__(self) -> Any:
        """The layout's schema as an ``arrow_schema`` PyCapsule (reads nothing)."""
        return self._native.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The batches as an ``arrow_array_stream`` PyCapsule (the Arrow PyCapsule
        interface). The stream takes what is left of the reader."""
        return self._native.__arrow_c_stream__(requested_schema)

    @property
    def schema(self) -> Any:
        """The reader's ``pyarrow.Schema``: the layout's, then ``_corrupt_record`` and
        ``_source`` when asked for."""
        import pyarrow as pa

        return pa.schema(self._native)

    def __iter__(self) -> "Reader":
        return self

    def __next__(self) -> Any:
        import pyarrow as pa

        batch = self._native._next_batch()
        if batch is None:
            raise StopIteration
        return pa.record_batch(batch)

    def read_all(self) -> Any:
        """Everything left as one ``pyarrow.Table``. A failure is raised as the
        :class:`DecodeError` or :class:`SoifError` itself (``pyarrow.table(reader)``
        raises pyarrow's exception with the same message; see :attr:`error`)."""
        import pyarrow as pa

        try:
            return pa.table(self)
        except pa.ArrowException as e:
            error = self.error
            if error is None:
                raise
            raise error from e

    def __repr__(self) -> str:
        return f"<soif.Reader {self._counts()}>"


class RecordReader(_Counts):
    """An iterator of :class:`Record`\\ s streamed from a source (see :func:`records`),
    with the same counts as :class:`Reader`."""

    _CHUNK = 1024

    def __init__(self, native: Any) -> None:
        self._native = native
        self._buffer: List[Any] = []
        self._pos = 0

    def __iter__(self) -> "RecordReader":
        return self

    def __next__(self) -> "Record":
        if self._pos >= len(self._buffer):
            self._buffer = self._native._next_records(self._CHUNK)
            self._pos = 0
            if not self._buffer:
                raise StopIteration
        t, u, a, attrs = self._buffer[self._pos]
        self._pos += 1
        return Record._from_native(t, u, a, attrs)

    def __repr__(self) -> str:
        return f"<soif.RecordReader {self._counts()}>"


def read(
    source: Source,
    *,
    lenient: bool = False,
    max_record_size: Union[int, str] = DEFAULT_MAX_RECORD_SIZE,
    on_error: str = "fail",
    quarantine: Union[str, "os.PathLike[str]", None] = None,
    batch_size: Optional[int] = None,
    range: Union[Split, Tuple[int, int], None] = None,
    first_record: int = 0,
    source_column: bool = False,
    transforms: Union[Sequence[str], str, None] = None,
    tables: Optional[Dict[str, Union[str, "os.PathLike[str]"]]] = None,
    **options: Any,
) -> Reader:
    """Streams the records of ``source`` as Arrow record batches in soif's layout.

    :param source: a path, a directory or glob, an ``http(s)://`` URL, a list of these,
        ``bytes``, or a binary file object. Compressed data (gzip, bzip2, xz, zstd) is
        recognised by its first bytes.
    :param lenient: repair what legacy data is known to carry (a space for the tab after
        ``:``, byte counts broken by CRLF conversion, ``{x}`` sizes); ``repaired`` counts
        the records repaired.
    :param max_record_size: the largest object accepted (default 64 MiB): a number of
        bytes, or a size as the CLI takes it (``"64MB"`` = 64,000,000 bytes,
        ``"64MiB"`` = 2^26); a larger declared size is rejected before anything is
        allocated for it.
    :param on_error: ``"fail"`` (raise :class:`DecodeError` at the first bad record, after
        the batches before it), ``"skip"`` (count it, keep it in ``errors``, go on),
        ``"quarantine"`` (as skip, and append its original bytes to ``quarantine``) or
        ``"column"`` (a bad record becomes a row of its own, in order: its layout columns
        null, and an extra column ``_corrupt_record: struct<bytes: binary, text: string,
        error: string, offset: int64, record: int64>`` set — its bytes exactly as in the
        input, their text when UTF-8, the error message, the error's byte offset and the
        record number; ``bytes`` is null for a record over ``max_record_size``, whose
        bytes are skipped, not kept. ``_corrupt_record`` is null on good rows. This is
        Spark's PERMISSIVE mode.)
    :param quarantine: the quarantine file (with ``on_error="quarantine"``).
    :param batch_size: rows per batch (default 4096; a batch also ends at 8 MiB of values).
    :param range: read only one byte range of a plain file (``source`` one path): a
        :class:`Split` from :func:`split` (which carries the decoder's state at its
        start), or a ``(start, end)`` pair of boundaries outside any envelope. The rows
        are those of ``read(source)`` whose objects start in the range, with the same
        offsets, record numbers and errors; the decoder reads on past ``end`` to finish
        the last one. Compressed files have no ranges (:class:`ValueError`).
    :param first_record: with a ``(start, end)`` pair: the number of objects before
        ``start`` (the split's ``first_record``), so that record numbers go on from it.
    :param source_column: add a column ``_source: struct<file: string, offset: int64>``:
        the input (as named in the source) and the byte offset where the record starts
        (for a bad record, where its error is). For a plain file that is the offset in
        the file; for a compressed one, in the decompressed stream.
    :param transforms: the transform chain, applied to each record before it becomes a
        row: a list of the specs the CLI takes as ``-t SPEC`` (``["collapse",
        "select:URL,Title"]``; one spec alone may be a string), built by the CLI's own
        code, so that the rows equal those ``soif convert --to parquet -t …`` writes.
        A record a transform rejects (``validate``) goes to ``on_error`` as a bad record
        does (with ``"column"``, a row of its own; with ``"quarantine"``, its bytes as
        read); ``filtered`` counts the records the transforms dropped, ``warnings`` holds
        theirs. A bad spec, or a file it names that cannot be read, is a
        :class:`ValueError` before anything is read. A ``remap:FILE.vrl`` program is
        compiled before anything is read too (a compile error is a :class:`ValueError`
        with VRL's diagnostic).
    :param tables: the lookup tables ``remap`` programs search, ``{"NAME":
        "FILE.csv"}``, as the CLI's ``--table NAME=FILE.csv``; loaded once, before
        anything is read.
    :param options: the other source options, by the names the CLI's pipeline files
        use (``format``, ``mmap``). Every option is read by soif's one option code (that
        of the CLI, pipeline files and Spark), so an unknown or malformed one is a
        :class:`ValueError` with the same text as there.

    Columns: the layout's, then ``_corrupt_record``, then ``_source``; all nullable.

    >>> import soif, pyarrow as pa
    >>> r = soif.read(b"@FILE { http://a/\\nTitle{5}:\\tHello\\n}\\n")
    >>> pa.table(r).column("url").to_pylist()
    ['http://a/']
    >>> r.records_out
    1
    """
    return Reader(
        _native_reader(
            source,
            lenient,
            max_record_size,
            on_error,
            quarantine,
            batch_size,
            range,
            first_record,
            source_column,
            _with_transforms(options, transforms, tables),
        )
    )


def records(
    source: Source,
    *,
    lenient: bool = False,
    max_record_size: Union[int, str] = DEFAULT_MAX_RECORD_SIZE,
    on_error: str = "fail",
    quarantine: Union[str, "os.PathLike[str]", None] = None,
    range: Union[Split, Tuple[int, int], None] = None,
    first_record: int = 0,
    transforms: Union[Sequence[str], str, None] = None,
    tables: Optional[Dict[str, Union[str, "os.PathLike[str]"]]] = None,
    **options: Any,
) -> RecordReader:
    """Streams the records of ``source`` as :class:`Record` objects (no Arrow needed).

    The arguments are those of :func:`read` (``on_error="column"`` is :func:`read`'s
    only: a :class:`Record` has no place for a bad one). A record's attributes are those
    of its row in :func:`read`: after ``transforms=["collapse"]`` a list is repeated
    attributes of its collapsed name (``Author``, ``Author``), parts keep their SOIF
    names.

    >>> import soif
    >>> [r["Title"] for r in soif.records(b"@FILE { http://a/\\nTitle{5}:\\tHello\\n}\\n")]
    ['Hello']
    """
    if on_error == "column":
        raise ValueError('on_error="column" is for soif.read (rows); soif.records yields good records only')
    return RecordReader(
        _native_reader(
            source,
            lenient,
            max_record_size,
            on_error,
            quarantine,
            None,
            range,
            first_record,
            extra=_with_transforms(options, transforms, tables),
        )
    )


def _with_transforms(
    options: Dict[str, Any], transforms: Union[Sequence[str], str, None], tables: Optional[Dict[str, Any]]
) -> Dict[str, Any]:
    out = dict(options)
    if transforms is not None:
        if not isinstance(transforms, (str, list, tuple)):
            raise TypeError(f"transforms must be a list of specs or one spec, not {type(transforms).__name__}")
        out["transforms"] = transforms
    if tables is not None:
        if not isinstance(tables, dict):
            raise TypeError(f"tables must be a dict of names and CSV files, not {type(tables).__name__}")
        out["tables"] = tables
    return out


def schema() -> Any:
    """soif's Arrow layout as a ``pyarrow.Schema`` (with its ``soif:layout`` metadata)."""
    import pyarrow as pa

    return pa.schema(_Capsule(_soif.layout_schema()))


class _Capsule:
    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> Any:
        return self._capsule


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _raw(s: Union[str, bytes]) -> bytes:
    if isinstance(s, (bytes, bytearray, memoryview)):
        return bytes(s)
    return s.encode("utf-8", "surrogateescape")


_SUFFIX = re.compile(r"-\d+\Z")


def _base(name: str) -> Tuple[str, int]:
    """RFC 2655 §4 naming: the name without its ``-N`` suffix, lower-cased, and N (0 when
    there is none)."""
    m = _SUFFIX.search(name)
    if m:
        return name[: m.start()].lower(), int(name[m.start() + 1 :])
    return name.lower(), 0


class Record:
    """One SOIF object: ``template`` (``FILE``), ``url`` (``-`` when none), ``action``
    (``"delete"``, ``"refresh"``, ``"update"`` inside a Harvest envelope, else None) and
    ``attributes``, the ordered ``(name, value)`` pairs, values as ``bytes``, repeated
    names kept.

    Names, template and URL are ``str``; bytes that are not UTF-8 are kept with the
    ``surrogateescape`` error handler, so writing the record back reproduces them exactly.

    >>> r = soif.Record("FILE", "http://a/", [("Title", b"Hi"), ("Author-1", b"Ann"), ("Author-2", b"Bob")])
    >>> r["title"], r.values("Author")
    ('Hi', ['Ann', 'Bob'])
    """

    __slots__ = ("template", "url", "action", "attributes")

    def __init__(
        self,
        template: str = "FILE",
        url: str = "-",
        attributes: Iterable[Tuple[str, Union[bytes, str]]] = (),
        action: Optional[str] = None,
    ) -> None:
        self.template = template
        self.url = url
        self.action = action
        self.attributes: List[Tuple[str, bytes]] = [
            (n, v.encode("utf-8") if isinstance(v, str) else bytes(v)) for n, v in attributes
        ]

    @classmethod
    def _from_native(cls, t: bytes, u: bytes, a: Optional[str], attrs: List[Tuple[bytes, bytes]]) -> "Record":
        r = cls.__new__(cls)
        r.template = _text(t)
        r.url = _text(u)
        r.action = a
        r.attributes = [(_text(n), v) for n, v in attrs]
        return r

    def _find(self, name: str) -> Optional[bytes]:
        for n, v in self.attributes:
            if n == name:
                return v
        low = name.lower()
        for n, v in self.attributes:
            if n.lower() == low:
                return v
        return None

    def __getitem__(self, name: str) -> str:
        """The value of attribute ``name`` as text (the exact name first, else ignoring
        case); bytes that are not UTF-8 become U+FFFD. ``KeyError`` when absent."""
        v = self._find(name)
        if v is None:
            raise KeyError(name)
        return v.decode("utf-8", "replace")

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """As ``record[name]``, or ``default`` when absent."""
        v = self._find(name)
        return default if v is None else v.decode("utf-8", "replace")

    def get_bytes(self, name: str) -> Optional[bytes]:
        """The exact bytes of attribute ``name`` (as ``record[name]`` finds it), or None."""
        return self._find(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._find(name) is not None

    def values(self, name: str, *, raw: bool = False) -> List[Any]:
        """Every value of the multi-valued attribute ``name``, by RFC 2655 §4 naming: the
        name matched ignoring case and a ``-N`` suffix (``Author``, ``Author-1``,
        ``author-2``…), a plain ``Author`` first, then in the order of N. Text, or the
        exact ``bytes`` with ``raw=True``."""
        want, _ = _base(name)
        found = []
        for i, (n, v) in enumerate(self.attributes):
            base, num = _base(n)
            if base == want:
                found.append((num, i, v))
        found.sort(key=lambda x: (x[0], x[1]))
        if raw:
            return [v for _, _, v in found]
        return [v.decode("utf-8", "replace") for _, _, v in found]

    def names(self) -> List[str]:
        """The attribute names in order (repeated names kept)."""
        return [n for n, _ in self.attributes]

    def to_dict(self) -> dict:
        """``{"template", "url", "action", "attributes": {name: text}}``; a repeated name
        keeps its first value (use :meth:`values` or ``attributes`` for all)."""
        attrs: dict = {}
        for n, v in self.attributes:
            attrs.setdefault(n, v.decode("utf-8", "replace"))
        return {"template": self.template, "url": self.url, "action": self.action, "attributes": attrs}

    def __len__(self) -> int:
        return len(self.attributes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.template, self.url, self.action, self.attributes) == (
            other.template,
            other.url,
            other.action,
            other.attributes,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        act = f", action={self.action!r}" if self.action else ""
        return f"<soif.Record @{self.template} {self.url!r}{act}, {len(self.attributes)} attributes>"


class _Dest:
    """A path opened for writing, or a binary file object used as it is (not closed)."""

    def __init__(self, dest: Any) -> None:
        if isinstance(dest, (str, os.PathLike)):
            self._file: Any = open(dest, "wb")
            self._close = True
        elif hasattr(dest, "write"):
            if isinstance(dest, io.TextIOBase):
                raise TypeError("a text file was given: open it in binary mode ('wb')")
            self._file = dest
            self._close = False
        else:
            raise TypeError(f"dest must be a path or a binary file object, not {type(dest).__name__}")
        self.write = self._file.write

    def __enter__(self) -> "_Dest":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._close:
            self._file.close()


def _arrow_stream(data: Any) -> Any:
    """``data`` as an object with ``__arrow_c_stream__``, or None when it is not Arrow."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    mod = type(data).__module__ or ""
    if mod.startswith("polars") and hasattr(data, "to_arrow"):
        return data.to_arrow()  # an older Polars without the PyCapsule interface
    if hasattr(data, "__arrow_c_array__"):
        import pyarrow as pa

        return pa.Table.from_batches([pa.record_batch(data)])
    return None


def write(data: Any, dest: Union[str, "os.PathLike[str]", IO[bytes]]) -> int:
    """Writes ``data`` to ``dest`` as canonical SOIF (``@T { url``, ``Name{n}:<TAB>value``
    per attribute, ``}``; Harvest envelopes around records with an ``action``), with the
    encoder of the ``soif`` tool. Returns the number of records written.

    :param data: a :class:`Record`, an iterable of them (a list, :func:`records`), or Arrow
        data in soif's layout: anything with ``__arrow_c_stream__`` (a :class:`Reader`, a
        ``pyarrow.Table`` or ``RecordBatchReader``, a DuckDB relation) or a Polars
        DataFrame. Arrow columns are found by name, so the string and list types Polars and
        DuckDB use are fine; a schema whose metadata names another layout raises
        :class:`LayoutError`.
    :param dest: a path (created or truncated) or a binary file object (left open).

    >>> import io, soif
    >>> out = io.BytesIO()
    >>> soif.write(soif.Record("FILE", "http://a/", [("Title", b"Hi")]), out)
    1
    >>> out.getvalue()
    b'@FILE { http://a/\\nTitle{2}:\\tHi\\n}\\n'
    """
    enc = _soif._Encoder()
    if isinstance(data, Record):
        data = [data]
    stream = _arrow_stream(data)
    with _Dest(dest) as out:
        if stream is not None:
            enc.push_arrow(stream, out.write)
        else:
            if isinstance(data, (str, bytes, dict)) or not hasattr(data, "__iter__"):
                raise TypeError(
                    "soif.write takes soif.Records or Arrow data in soif's layout, "
                    f"not {type(data).__name__}"
                )
            for r in data:
                if not isinstance(r, Record):
                    raise TypeError(f"soif.write: expected soif.Record, got {type(r).__name__}")
                enc.push(
                    _raw(r.template),
                    _raw(r.url),
                    r.action,
                    [(_raw(n), v if isinstance(v, bytes) else _raw(v)) for n, v in r.attributes],
                )
                if enc.pending() >= 1 << 20:
                    out.write(enc.take())
        out.write(enc.finish())
    return enc.records
