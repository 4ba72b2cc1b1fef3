"""soif.split and soif.read(range=…): byte ranges of a plain file that decode on their own,
whose rows, concatenated, are exactly one read's; on_error="column" and source_column."""

import gzip
import random

import pyarrow as pa
import pytest

import soif

GOOD = b"@FILE { http://good/%d\nTitle{4}:\tgood\n}\n"


def obj(n, value, size=None, delim=b":\t"):
    size = len(value) if size is None else size
    return b"@FILE { http://x/%d\nNote{%s}%s%s\n}\n" % (n, str(size).encode(), delim, value)


def hazards():
    """A file with one of each hazard: values holding `@FILE {` lines and whole fake
    objects, envelopes (one never closed), wrong counts, a value over max_record_size,
    counts past the end of the file, garbage, non-UTF-8 bytes."""
    parts = [
        b"junk before\n",
        b"@UPDATE {\n",
        obj(1, b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n"),
        obj(2, b"short", size=5000),
        obj(3, b"abc\n}\n@FILE { http://fake/x\n", size=len(b"abc\n}\n@FILE { http://fake/x\n") + 2),
        b"}\n@DELETE {\n",
        obj(4, b"v" * 700),
        obj(5, b"\xff\xfe latin \xe9", delim=b": "),
        b"<html>garbage</html>\n",
        obj(6, b"x", size=1 << 30),
        obj(7, b"tail", size="x"),
        obj(8, b"tail", size=40),
    ]
    return b"".join(parts)


def random_file(seed):
    rng = random.Random(seed)
    values = [
        b"plain",
        b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n",
        b"\n@FILE {\n",
        b"}\n@UPDATE {\n@FILE { http://fake/env\n}\n}\n",
        b"\x00\xff{}",
        b"w" * 300,
    ]
    out = []
    for n in range(rng.randrange(5, 40)):
        k = rng.random()
        if k < 0.08:
            out.append(rng.choice([b"@UPDATE {\n", b"@DELETE {\n", b"}\n", b"@REFRESH { }\n"]))
        elif k < 0.12:
            out.append(b"<p>garbage @ here</p>\n")
        else:
            v = rng.choice(values)
            size = rng.choice([len(v)] * 6 + [len(v) + rng.randrange(-3, 4), 5000, "x"])
            if isinstance(size, int):
                size = max(size, 0)
            out.append(obj(n, v, size=size))
    return b"".join(out)


def table(path, **kw):
    return pa.table(soif.read(path, on_error="column", source_column=True, **kw))


def by_splits(path, splits, **kw):
    tables = [table(path, range=s, **kw) for s in splits]
    return pa.concat_tables(tables) if tables else None


def check_splits(path, splits):
    data = path.read_bytes()
    at = 0
    for s in splits:
        assert isinstance(s, soif.Split)
        assert s.start == at and s.end > s.start
        assert s.start == 0 or data[s.start : s.start + 1] == b"@"
        at = s.end
    assert at == len(data)


@pytest.mark.parametrize("lenient", [False, True])
def test_splits_of_adversarial_files_concatenate_to_one_read(tmp_path, lenient):
    files = [hazards()] + [random_file(seed) for seed in range(12)]
    for i, data in enumerate(files):
        path = tmp_path / f"f{i}.soif"
        path.write_bytes(data)
        kw = dict(lenient=lenient, max_record_size=512)
        whole = table(path, **kw)
        assert whole.num_rows > 0
        for size in (1, 7, 64, 500, 4096):
            splits = soif.split(path, size=size, **kw)
            check_splits(path, splits)
            got = by_splits(path, splits, **kw)
            assert got.equals(whole), f"file {i}, size {size}: {splits}"
        for parts in (1, 3, 8):
            splits = soif.split(path, parts=parts, **kw)
            assert len(splits) <= parts
            check_splits(path, splits)
            assert by_splits(path, splits, **kw).equals(whole)


def test_the_hazard_file_has_what_it_claims(tmp_path):
    path = tmp_path / "h.soif"
    path.write_bytes(hazards())
    t = table(path, max_record_size=512).to_pylist()
    urls = [r["url"] for r in t if r["_corrupt_record"] is None]
    assert "http://fake/" not in urls and "http://x/1" in urls
    assert [r["action"] for r in t if r["url"] == "http://x/1"] == ["update"]
    assert sum(r["_corrupt_record"] is not None for r in t) >= 4


def test_fixtures_split_like_one_read(fixtures):
    for path in sorted(fixtures.glob("*/*.soif")) + sorted((fixtures / "seeds").glob("*.txt")):
        whole = table(path)
        for size in (13, 1000):
            splits = soif.split(path, size=size)
            check_splits(path, splits)
            assert by_splits(path, splits).equals(whole), path


def test_split_is_a_named_tuple_with_the_decoders_state(tmp_path):
    data = b"@DELETE { }\n@UPDATE {\n" + b"".join(GOOD % n for n in range(20))
    path = tmp_path / "env.soif"
    path.write_bytes(data)
    splits = soif.split(path, parts=4)
    assert len(splits) == 4
    first = splits[0]
    assert (first.start, first.first_record, first.envelope, first.end_known) == (0, 0, None, False)
    assert first._fields == ("start", "end", "first_record", "envelope", "end_known")
    # Inside the @UPDATE envelope (at byte 12): every split carries it.
    assert all(s.envelope == 12 for s in splits[1:])
    assert splits[1].first_record > 0
    assert str(splits[1]) == f"{splits[1].start}..{splits[1].end},record={splits[1].first_record},envelope=12"
    rows = by_splits(path, splits).to_pylist()
    assert len(rows) == 21
    assert all(r["action"] == "update" for r in rows[:20])
    # The envelope is never closed: the last split reports it, at the envelope's offset.
    assert rows[20]["_corrupt_record"]["offset"] == 12
    assert "UPDATE" in rows[20]["_corrupt_record"]["error"]


def test_size_and_parts(tmp_path):
    path = tmp_path / "a.soif"
    path.write_bytes(b"".join(GOOD % n for n in range(100)))
    assert len(soif.split(path)) == 1  # 128 MiB by default
    assert len(soif.split(path, size=10**9)) == 1
    assert len(soif.split(path, parts=7)) == 7
    assert len(soif.split(path, size=1)) == 100
    with pytest.raises(ValueError, match="not both"):
        soif.split(path, size=10, parts=2)
    with pytest.raises(ValueError, match="positive"):
        soif.split(path, parts=0)
    empty = tmp_path / "empty.soif"
    empty.write_bytes(b"")
    assert soif.split(empty) == []


def test_compressed_files_are_not_split(tmp_path):
    path = tmp_path / "a.soif.gz"
    path.write_bytes(gzip.compress(GOOD % 1))
    with pytest.raises(ValueError, match="compressed inputs are not split"):
        soif.split(path)
    with pytest.raises(ValueError, match="compressed"):
        pa.table(soif.read(path, range=(0, 10)))
    with pytest.raises(ValueError, match="not a regular file"):
        soif.split(tmp_path)
    with pytest.raises(TypeError):
        soif.split(b"@FILE { x\n}\n")
    with pytest.raises(ValueError, match="range="):
        soif.read(GOOD % 1, range=(0, 5))


def test_a_range_that_is_not_a_boundary_is_refused(tmp_path):
    path = tmp_path / "a.soif"
    path.write_bytes(GOOD % 1 + GOOD % 2)
    with pytest.raises(ValueError, match="not an object boundary"):
        pa.table(soif.read(path, range=(3, 20)))
    with pytest.raises(ValueError, match="not inside the input"):
        pa.table(soif.read(path, range=(0, 10**6)))
    with pytest.raises(ValueError, match="first_record"):
        soif.read(path, first_record=3)


def test_a_pair_with_first_record_numbers_errors_as_the_whole_read(tmp_path):
    bad = b"@FILE { http://bad/\nTitle{4}\tnone\n}\n"
    data = GOOD % 1 + GOOD % 2 + bad + GOOD % 3
    path = tmp_path / "a.soif"
    path.write_bytes(data)
    start = len(GOOD % 1)
    with pytest.raises(soif.DecodeError) as whole:
        list(soif.read(path))
    with pytest.raises(soif.DecodeError) as part:
        list(soif.read(path, range=(start, len(data)), first_record=1))
    assert part.value.record == whole.value.record == 3
    assert part.value.offset == whole.value.offset > 2 * start
    assert str(part.value) == str(whole.value)


def test_corrupt_record_column(tmp_path):
    bad = b"@FILE { http://bad/\nTitle{4}\tnone\n}\n"
    latin = b"@FILE { http://l/\nT{2}\t\xe9\xe9\n}\n"
    huge = b"@FILE { http://huge/\nBody{100}:\t" + b"b" * 100 + b"\n}\n"
    data = GOOD % 1 + bad + latin + huge + GOOD % 2
    path = tmp_path / "a.soif"
    path.write_bytes(data)
    r = soif.read(path, on_error="column", max_record_size=90)
    t = pa.table(r)
    names = t.schema.names
    assert names[: len(soif.schema().names)] == soif.schema().names
    assert names[-1] == "_corrupt_record"
    corrupt = t.schema.field("_corrupt_record")
    assert corrupt.nullable
    assert corrupt.type == pa.struct(
        [
            ("bytes", pa.binary()),
            ("text", pa.string()),
            ("error", pa.string()),
            ("offset", pa.int64()),
            ("record", pa.int64()),
        ]
    )
    rows = t.to_pylist()
    assert [r["url"] for r in rows] == ["http://good/1", None, None, None, "http://good/2"]
    assert rows[0]["_corrupt_record"] is None
    c = rows[1]["_corrupt_record"]
    assert c["bytes"] == bad and c["text"] == bad.decode()
    assert c["record"] == 2 and c["offset"] >= len(GOOD % 1)
    assert "bad.soif" not in c["error"] and "record 2" in c["error"]
    for col in ("template", "url", "action", "attributes", "template_bytes", "url_bytes"):
        assert rows[1][col] is None
    c = rows[2]["_corrupt_record"]
    assert c["bytes"] == latin and c["text"] is None
    c = rows[3]["_corrupt_record"]
    assert c["bytes"] is None and c["record"] == 4 and "record too large" in c["error"]
    assert (r.records_in, r.records_out, r.rejected) == (5, 2, 3)
    assert len(r.errors) == 3
    with pytest.raises(ValueError, match="soif.read"):
        soif.records(path, on_error="column")


def test_source_column(tmp_path, fixtures):
    data = GOOD % 1 + GOOD % 2
    path = tmp_path / "a.soif"
    path.write_bytes(data)
    r = soif.read(path, source_column=True)
    t = pa.table(r)
    assert t.schema.names[-1] == "_source"
    assert t.schema.field("_source").type == pa.struct([("file", pa.string()), ("offset", pa.int64())])
    assert t.column("_source").to_pylist() == [
        {"file": str(path), "offset": 0},
        {"file": str(path), "offset": len(GOOD % 1)},
    ]
    t = pa.table(soif.read(path, source_column=True, on_error="column"))
    assert t.schema.names[-2:] == ["_corrupt_record", "_source"]
    # A compressed file: offsets in the decompressed stream.
    gz = tmp_path / "a.soif.gz"
    gz.write_bytes(gzip.compress(data))
    offsets = [s["offset"] for s in pa.table(soif.read(gz, source_column=True)).column("_source").to_pylist()]
    assert offsets == [0, len(GOOD % 1)]
    # The schema is known before reading (DuckDB and Spark ask for it first).
    assert soif.read(path, source_column=True).schema.names[-1] == "_source"
