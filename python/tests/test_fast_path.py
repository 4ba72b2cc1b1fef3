"""The fast path (a file or `bytes` held whole: objects decoded in place and copied straight
into the Arrow buffers) against the record path (a file object or a compressed file, read
as a stream): the same tables, counts, errors and quarantine, on hostile input."""

import gzip
import io

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
