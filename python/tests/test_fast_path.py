"""The fast path (a file or `bytes` held whole: objects decoded in place and copied straight
into the Arrow buffers) against the record path (a file object or a compressed file, read
as a stream): the same tables, counts, errors and quarantine, on hostile input, also with
the extra columns (`_corrupt_record`, `_source`) and for `range=` reads of splits."""

import gzip
import io
import pathlib

import pyarrow as pa
import pytest

import soif

HOSTILE = b"".join(
    [
        b"@FILE { http://a/\nTitle{5}:\tHello\nAuthor-1{3}:\tAnn\nAuthor-2{3}:\tBob\nEmpty{0}:\t\n}\n",
        # Non-UTF-8 template, URL, name and values.
        b"@F\xe9LE { http://b/\xff\nN\xe9{3}:\t\xff\xd8\x00\nThumb{2}:\t\xc3\x28\n}\n",
        # A count that runs past the object, then garbage between objects.
        b"@FILE { http://bad/\nTitle{999}:\tshort\n}\njunk junk\n",
        # Lenient repairs: `: `, a URL broken by a line wrap, a size `{x}`.
        b"@FILE { ftp://host/dir/ file.txt\nTitle{5}: Hello\nHits{x}:\t12\n}\n",
        # Envelopes.
        b"@DELETE {\n@FILE { http://gone/\n}\n}\n@UPDATE {\n@FILE { http://new/\nTitle{3}:\tNew\n}\n}\n",
        b"@FILE { -\n}\n",
    ]
    * 50
)


def sources(tmp_path):
    """The same bytes as each kind of source: (name, source, fast path?)."""
    plain = tmp_path / "h.soif"
    plain.write_bytes(HOSTILE)
    gz = tmp_path / "h.soif.gz"
    gz.write_bytes(gzip.compress(HOSTILE))
    return [
        ("mapped file", plain, True),
        ("bytes", HOSTILE, True),
        ("file object", lambda: io.BytesIO(HOSTILE), False),
        ("gzip file", gz, False),
    ]


def counts(r):
    return (r.records_in, r.records_out, r.rejected, r.repaired)


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("batch_size", [1, 7, 4096])
def test_fast_and_record_paths_give_the_same_tables(tmp_path, lenient, batch_size):
    results = []
    for name, src, _ in sources(tmp_path):
        src = src() if callable(src) else src
        r = soif.read(src, lenient=lenient, on_error="skip", batch_size=batch_size)
        batches = list(r)
        table = pa.Table.from_batches(batches, schema=soif.schema())
        table.validate(full=True)
        results.append((name, [b.num_rows for b in batches], table, counts(r), [(e.record, e.offset) for e in r.errors]))
    (_, sizes, table, c, errors) = results[0]
    assert c[2] > 0 and table.num_rows > 0
    for name, s, t, cc, ee in results[1:]:
        assert t.equals(table, check_metadata=True), name
        assert s == sizes, name
        assert cc == c, name
        assert ee == errors, name


def test_fast_and_record_paths_fail_alike(tmp_path):
    seen = []
    for name, src, _ in sources(tmp_path):
        src = src() if callable(src) else src
        r = soif.read(src, batch_size=1)
        rows = 0
        with pytest.raises(soif.DecodeError) as e:
            for b in r:
                rows += b.num_rows
        # The message starts with the input's name, which differs.
        message = str(e.value).split(": ", 1)[1]
        seen.append((name, rows, e.value.record, e.value.offset, e.value.url, message))
    assert all(s[1:] == seen[0][1:] for s in seen), seen
    assert seen[0][1] == 3 and seen[0][2] == 4


def test_fast_and_record_paths_quarantine_alike(tmp_path):
    out = []
    for name, src, _ in sources(tmp_path):
        src = src() if callable(src) else src
        q = tmp_path / f"q-{len(out)}.soif"
        n = pa.table(soif.read(src, on_error="quarantine", quarantine=q)).num_rows
        out.append((n, q.read_bytes()))
    assert all(o == out[0] for o in out)
    assert b"http://bad/" in out[0][1]


# -- the extra columns: `_corrupt_record` (on_error="column") and `_source` ----------------
#
# A mapped file keeps the fast path with these columns too: good objects are batches of
# spans, each bad record a row of a batch of its own kind. The rows and every value must
# be the record path's (an `open()`ed file object of the same path, read as a stream);
# only where batches begin and end may differ.

# (on_error, source_column): each extra column alone, and both.
EXTRAS = [("column", False), ("skip", True), ("column", True)]


def adversarial_files():
    """Hostile inputs: the table above, the hazard file and random files of
    test_split (fake objects inside values, envelopes, wrong counts, records over
    max_record_size, garbage, non-UTF-8), and the repository's fixtures."""
    from test_split import hazards, random_file

    files = [("hostile", HOSTILE), ("hazards", hazards())]
    files += [(f"random {seed}", random_file(seed)) for seed in range(24)]
    root = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures"
    for p in sorted(root.glob("*/*.soif")) + sorted((root / "seeds").glob("*.txt")):
        files.append((p.name, p.read_bytes()))
    return files


def read_all(src, **kw):
    r = soif.read(src, **kw)
    batches = list(r)
    schema = r.schema
    for b in batches:
        assert b.schema == schema
        pa.Table.from_batches([b]).validate(full=True)
    return pa.Table.from_batches(batches, schema=schema), batches, r


def errors(r):
    return [(e.record, e.offset, e.url, str(e)) for e in r.errors]


def kind(batch):
    """'corrupt', 'good' or 'mixed': what the rows of a batch are."""
    if "_corrupt_record" not in batch.schema.names:
        return "good"
    bad = batch.column("_corrupt_record").null_count != batch.num_rows
    good = batch.column("_corrupt_record").null_count > 0
    return "mixed" if bad and good else ("corrupt" if bad else "good")


@pytest.mark.parametrize("on_error,source_column", EXTRAS)
@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize("batch_size", [1, 7, 4096])
def test_extra_columns_are_the_record_paths_on_the_fast_path(tmp_path, on_error, source_column, lenient, batch_size):
    kw = dict(
        lenient=lenient,
        on_error=on_error,
        source_column=source_column,
        batch_size=batch_size,
        max_record_size=512,
    )
    path = tmp_path / "in.soif"
    corrupt_rows = 0
    for name, data in adversarial_files():
        path.write_bytes(data)
        fast, fast_batches, rf = read_all(path, **kw)
        with open(path, "rb") as f:
            slow, _, rs = read_all(f, **kw)
        assert fast.equals(slow, check_metadata=True), name
        assert fast.to_pylist() == slow.to_pylist(), name
        assert counts(rf) == counts(rs), name
        assert errors(rf) == errors(rs), name
        assert all(b.num_rows <= batch_size for b in fast_batches), name
        if on_error == "column":
            corrupt_rows += len(fast) - fast.column("_corrupt_record").null_count
            # The fast path was taken: its batches hold good objects or bad records,
            # never both (the record path mixes them).
            assert "mixed" not in {kind(b) for b in fast_batches}, name
        if source_column:
            files = set(fast.column("_source").combine_chunks().field("file").to_pylist())
            assert files <= {str(path)}, name
        # `bytes` is read in place too: against a file object of the same name.
        held, held_batches, rb = read_all(data, **kw)
        stream = io.BytesIO(data)
        stream.name = "<bytes>"
        streamed, _, rbs = read_all(stream, **kw)
        assert held.equals(streamed, check_metadata=True), name
        assert (counts(rb), errors(rb)) == (counts(rbs), errors(rbs)), name
        assert [b.num_rows for b in held_batches] == [b.num_rows for b in fast_batches], name
    if on_error == "column":
        assert corrupt_rows > 100


def test_the_corrupt_records_values_on_the_fast_path(tmp_path):
    """Bad records among good ones, read in place: each bad record's bytes, text,
    error, offset and record number, the good rows around them, and the batches: good
    spans up to the bad record, the bad ones together, then spans again."""
    good = b"@FILE { http://good/%d\nTitle{4}:\tgood\n}\n"
    bad = b"@FILE { http://bad/\nTitle{4}\tnone\n}\n"
    latin = b"@FILE { http://l/\nT{2}\t\xe9\xe9\n}\n"
    data = good % 1 + good % 2 + bad + latin + good % 3 + bad
    path = tmp_path / "a.soif"
    path.write_bytes(data)
    r = soif.read(path, on_error="column", source_column=True)
    batches = list(r)
    assert [(b.num_rows, kind(b)) for b in batches] == [(2, "good"), (2, "corrupt"), (1, "good"), (1, "corrupt")]
    rows = pa.Table.from_batches(batches).to_pylist()
    assert [r["url"] for r in rows] == ["http://good/1", "http://good/2", None, None, "http://good/3", None]
    offsets = [0, len(good % 1), 2 * len(good % 1), 2 * len(good % 1) + len(bad)]
    offsets += [offsets[-1] + len(latin), offsets[-1] + len(latin) + len(good % 3)]
    c = [row["_corrupt_record"] for row in rows]
    assert c[0] is None and c[1] is None and c[4] is None
    assert (c[2]["bytes"], c[2]["text"], c[2]["record"]) == (bad, bad.decode(), 3)
    assert (c[3]["bytes"], c[3]["text"], c[3]["record"]) == (latin, None, 4)
    assert (c[5]["bytes"], c[5]["record"]) == (bad, 6)
    assert all("record" in x["error"] and x["offset"] >= o for x, o in zip([c[2], c[3], c[5]], offsets[2:4] + offsets[5:]))
    # `_source`: the path, and where each object starts (for a bad record, its error).
    sources = [row["_source"] for row in rows]
    assert {s["file"] for s in sources} == {str(path)}
    for i in (0, 1, 4):
        assert sources[i]["offset"] == offsets[i]
    for i in (2, 3, 5):
        assert sources[i]["offset"] == c[i]["offset"]
    assert (r.records_in, r.records_out, r.rejected) == (6, 3, 3)


@pytest.mark.parametrize("lenient", [False, True])
def test_extra_columns_of_splits_on_the_fast_path(tmp_path, lenient):
    """`range=` reads (each on the fast path) of a file's splits, concatenated: the
    record path's rows of the whole file, `_source` offsets in the whole file."""
    decoder = dict(lenient=lenient, max_record_size=512)
    kw = dict(on_error="column", source_column=True, **decoder)
    path = tmp_path / "in.soif"
    for name, data in adversarial_files()[:14]:
        path.write_bytes(data)
        with open(path, "rb") as f:
            whole, _, _ = read_all(f, **kw)
        for size in (1, 50, 700):
            splits = soif.split(path, size=size, **decoder)
            parts = [read_all(path, range=s, batch_size=5, **kw) for s in splits]
            for _, batches, _ in parts:
                assert "mixed" not in {kind(b) for b in batches}
            got = pa.concat_tables([t for t, _, _ in parts])
            assert got.equals(whole), (name, size)


def test_extra_columns_across_inputs_of_both_kinds(tmp_path):
    """Mapped files and a gzip'd one (a stream) in one read: the chunks switch between
    spans, bad records and rows of records, and the rows are those of each input read on
    its own by the record path."""
    from test_split import hazards, random_file

    kw = dict(on_error="column", source_column=True, max_record_size=512)
    a, b, c = tmp_path / "a.soif", tmp_path / "b.soif.gz", tmp_path / "c.soif"
    a.write_bytes(HOSTILE)
    b.write_bytes(gzip.compress(hazards()))
    c.write_bytes(random_file(3))
    for batch_size in (1, 3, 4096):
        got, _, r = read_all([a, b, c], batch_size=batch_size, **kw)
        parts = []
        for p in (a, b, c):
            if p.suffix == ".gz":
                parts.append(read_all(p, **kw)[0])
            else:
                with open(p, "rb") as f:
                    parts.append(read_all(f, **kw)[0])
        assert got.equals(pa.concat_tables(parts)), batch_size
        assert r.rejected == sum(len(t) - t.column("_corrupt_record").null_count for t in parts)
