"""soif.read and soif.records: sources, compression, counts, the error policies."""

import gzip
import http.server
import io
import threading

import pyarrow as pa
import pytest

import soif

DOCS = "pipeline/documents.soif"
GOOD = b"@FILE { http://a/\nTitle{5}:\tHello\nAuthor-1{3}:\tAnn\nAuthor-2{3}:\tBob\n}\n"


def urls(reader):
    return pa.table(reader).column("url").to_pylist()


def test_path_to_pyarrow_table(fixtures):
    r = soif.read(fixtures / "rfc2655" / "documents.soif")
    t = pa.table(r)
    assert t.schema.metadata[b"soif:layout"] == b"records"
    assert t.schema.metadata[b"soif:layout_version"] == soif.LAYOUT_VERSION.encode()
    assert t.schema == soif.schema()
    assert t.num_rows == 3
    first = t.slice(0, 1).to_pylist()[0]
    assert first["template"] == "DOCUMENT"
    assert first["url"] == "http://home.netscape.com:80/"
    assert first["action"] is None
    assert first["attributes"][0] == {"name": "Title", "value": "Welcome to Netscape", "bytes": None, "name_bytes": None}
    assert (r.records_in, r.records_out, r.rejected, r.repaired) == (3, 3, 0, 0)
    assert r.bytes_read > 0


@pytest.mark.parametrize("ext", ["gz", "bz2", "xz", "zst"])
def test_compressed_archives_detected_by_magic(fixtures, ext):
    plain = urls(soif.read(fixtures / "rfc2655" / "documents.soif"))
    assert urls(soif.read(fixtures / f"{DOCS}.{ext}")) == plain
    # Whatever the name says: the first bytes decide.
    data = (fixtures / f"{DOCS}.{ext}").read_bytes()
    assert urls(soif.read(data)) == plain
    assert urls(soif.read(io.BytesIO(data))) == plain


def test_bytes_bytearray_memoryview_and_file_objects(fixtures):
    data = (fixtures / "rfc2655" / "documents.soif").read_bytes()
    want = urls(soif.read(fixtures / "rfc2655" / "documents.soif"))
    assert urls(soif.read(data)) == want
    assert urls(soif.read(bytearray(data))) == want
    assert urls(soif.read(memoryview(data))) == want
    with open(fixtures / "rfc2655" / "documents.soif", "rb") as f:
        assert urls(soif.read(f)) == want
    with gzip.open(fixtures / f"{DOCS}.gz", "rb") as f:  # a decompressing file object
        assert len(urls(soif.read(f))) == 3


def test_a_file_object_read_in_small_pieces():
    class Trickle(io.RawIOBase):
        def __init__(self, data):
            self.data, self.pos = data, 0

        def readable(self):
            return True

        def read(self, n=-1):
            chunk = self.data[self.pos : self.pos + 3]
            self.pos += len(chunk)
            return chunk

    data = GOOD * 50
    r = soif.read(Trickle(data), batch_size=7)
    batches = list(r)
    assert sum(b.num_rows for b in batches) == 50
    assert all(b.num_rows <= 7 for b in batches)
    assert r.bytes_read == len(data)


def test_text_file_refused(tmp_path):
    p = tmp_path / "a.soif"
    p.write_bytes(GOOD)
    with open(p) as f, pytest.raises(TypeError, match="binary"):
        soif.read(f)


def test_list_of_paths_directory_and_glob(fixtures, tmp_path):
    (tmp_path / "a.soif").write_bytes(GOOD)
    (tmp_path / "b.soif.gz").write_bytes(gzip.compress(GOOD.replace(b"http://a/", b"http://b/")))
    assert urls(soif.read(tmp_path)) == ["http://a/", "http://b/"]
    assert urls(soif.read(str(tmp_path / "*.soif*"))) == ["http://a/", "http://b/"]
    assert urls(soif.read([tmp_path / "b.soif.gz", tmp_path / "a.soif"])) == ["http://b/", "http://a/"]


def test_http_url(fixtures):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(fixtures), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{DOCS}.gz"
        assert urls(soif.read(url)) == urls(soif.read(fixtures / "rfc2655" / "documents.soif"))
    finally:
        server.shutdown()


def test_iterating_yields_pyarrow_record_batches():
    r = soif.read(GOOD * 10, batch_size=4)
    batches = list(r)
    assert [b.num_rows for b in batches] == [4, 4, 2]
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert r.records_out == 10


def test_a_reader_streams_once():
    r = soif.read(GOOD)
    assert pa.table(r).num_rows == 1
    with pytest.raises(soif.SoifError, match="already read"):
        pa.table(r)
    assert r.records_out == 1  # the counts stay


def test_schema_without_reading():
    r = soif.read(GOOD)
    assert pa.schema(r) == soif.schema()
    assert r.records_in == 0
    assert pa.table(r).num_rows == 1


def test_records_plain_objects(fixtures):
    recs = list(soif.records(fixtures / f"{DOCS}.gz"))
    assert len(recs) == 3
    ssl = recs[1]
    assert ssl.template == "DOCUMENT"
    assert ssl["Title"] == "SSL Protocol V. 3.0"
    assert ssl["title"] == "SSL Protocol V. 3.0"  # case-insensitive
    assert ssl.values("Author") == ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]
    assert ssl.values("author-1") == ssl.values("AUTHOR")  # RFC 2655 §4: -N ignored
    assert isinstance(ssl.attributes[0], tuple) and isinstance(ssl.attributes[0][1], bytes)
    assert "Title" in ssl and "Nope" not in ssl
    with pytest.raises(KeyError):
        ssl["Nope"]
    assert ssl.get("Nope") is None


def test_values_order_plain_first_then_by_number():
    r = soif.Record("FILE", "-", [("Author-10", b"J"), ("Author-2", b"B"), ("Author", b"A"), ("Authors", b"x")])
    assert r.values("Author") == ["A", "B", "J"]
    assert r.values("Author", raw=True) == [b"A", b"B", b"J"]


def test_non_utf8_is_kept_exactly():
    data = b"@FILE { http://a/\xe9\nN\xe9{1}:\t\xff\nTitle{2}:\tok\n}\n"
    (rec,) = soif.records(data)
    assert rec.get_bytes("Title") == b"ok"
    assert rec.attributes[0][1] == b"\xff"
    assert rec.url.encode("utf-8", "surrogateescape") == b"http://a/\xe9"
    t = pa.table(soif.read(data)).to_pylist()[0]
    assert t["url"] is None and t["url_bytes"] == b"http://a/\xe9"
    assert t["attributes"][0] == {"name": None, "value": None, "bytes": b"\xff", "name_bytes": b"N\xe9"}
    assert t["attributes"][1]["value"] == "ok"


def test_envelopes_set_action():
    data = b"@DELETE {\n@FILE { http://gone/\n}\n}\n@FILE { http://kept/\n}\n"
    assert [r.action for r in soif.records(data)] == ["delete", None]
    assert pa.table(soif.read(data)).column("action").to_pylist() == ["delete", None]


# Bad input under each policy (fixtures/pipeline/bad.soif: a, bad, c, garbage, d).


def test_on_error_fail_raises_decode_error_after_the_good_batches(fixtures):
    path = fixtures / "pipeline" / "bad.soif"
    r = soif.read(path, batch_size=1)
    it = iter(r)
    assert next(it).column("url").to_pylist() == ["http://a/"]
    with pytest.raises(soif.DecodeError) as e:
        next(it)
    err = e.value
    assert isinstance(err, soif.SoifError)
    assert err.input == str(path)
    assert err.record == 2
    data = path.read_bytes()
    start = data.index(b"@DOCUMENT { http://bad/")
    assert start <= err.offset < data.index(b"@DOCUMENT { http://c/")
    assert err.url == "http://bad/"
    assert "bad" in str(err) or "abc" in str(err)
    assert r.rejected == 1
    with pytest.raises(StopIteration):
        next(it)  # the read is over


def test_on_error_fail_through_the_arrow_stream(fixtures):
    with pytest.raises(pa.ArrowException, match="record 2"):
        pa.table(soif.read(fixtures / "pipeline" / "bad.soif"))


def test_on_error_skip_counts_and_keeps_errors(fixtures):
    r = soif.read(fixtures / "pipeline" / "bad.soif", on_error="skip")
    assert urls(r) == ["http://a/", "http://c/", "http://d/"]
    assert (r.records_in, r.records_out, r.rejected) == (5, 3, 2)
    assert [e.record for e in r.errors] == [2, 4]
    assert all(isinstance(e, soif.DecodeError) and e.input for e in r.errors)


def test_on_error_quarantine_writes_the_original_bytes(fixtures, tmp_path):
    q = tmp_path / "q.soif"
    r = soif.records(fixtures / "pipeline" / "bad.soif", on_error="quarantine", quarantine=q)
    assert [x.url for x in r] == ["http://a/", "http://c/", "http://d/"]
    assert r.quarantined == 2
    data = q.read_bytes()
    assert b"@DOCUMENT { http://bad/\nTitle{abc}:\tbroken\n}\n" in data
    assert b"this is not soif" in data


def test_quarantine_matches_the_cli(fixtures, tmp_path):
    import subprocess

    from conftest import soif_bin

    exe = soif_bin()
    if exe is None:
        pytest.skip("the soif CLI is not built")
    bad = fixtures / "pipeline" / "bad.soif"
    cli_q = tmp_path / "cli.q"
    subprocess.run([exe, "convert", str(bad), "--to", "null", "-q", "--on-error", "quarantine", "--quarantine", str(cli_q)])
    py_q = tmp_path / "py.q"
    pa.table(soif.read(bad, on_error="quarantine", quarantine=py_q))
    assert py_q.read_bytes() == cli_q.read_bytes()


def test_policy_arguments_checked(tmp_path):
    with pytest.raises(ValueError, match="quarantine"):
        soif.read(GOOD, on_error="quarantine")
    with pytest.raises(ValueError, match="on_error"):
        soif.read(GOOD, on_error="ignore")
    with pytest.raises(ValueError):
        soif.read(GOOD, quarantine=tmp_path / "q")
    with pytest.raises(TypeError):
        soif.read(42)


def test_missing_file_is_a_soif_error(tmp_path):
    with pytest.raises(soif.SoifError, match="nope.soif"):
        soif.read(tmp_path / "nope.soif")


def test_max_record_size_rejects_a_large_object():
    big = b"@FILE { http://big/\nBody{5000}:\t" + b"x" * 5000 + b"\n}\n" + GOOD
    r = soif.read(big, max_record_size=1024, on_error="skip")
    assert urls(r) == ["http://a/"]
    assert r.rejected == 1
    assert "too large" in str(r.errors[0])


def test_lenient_repairs_are_counted():
    data = b"@FILE { http://a/\nTitle{5}: Hello\n}\n"
    with pytest.raises(soif.DecodeError):
        list(soif.records(data))
    r = soif.records(data, lenient=True)
    (rec,) = list(r)
    assert rec["Title"] == "Hello"
    assert r.repaired == 1


def test_truncated_gzip_stops_with_what_came_before(fixtures):
    data = (fixtures / f"{DOCS}.gz").read_bytes()
    r = soif.records(data[: len(data) // 2] if len(data) > 40 else data[:-8])
    got = []
    with pytest.raises(soif.SoifError, match="reading stopped"):
        for rec in r:
            got.append(rec)


def test_memory_stays_bounded_on_a_large_stream():
    import resource

    class Endless(io.RawIOBase):
        """About 200 MB of records, generated as they are read."""

        def __init__(self, n):
            self.n = n
            self.rec = b"@FILE { http://x/\nBody{1000}:\t" + b"y" * 1000 + b"\n}\n"

        def readable(self):
            return True

        def read(self, size=-1):
            if self.n <= 0:
                return b""
            k = max(1, min(self.n, (size if size and size > 0 else 1 << 20) // len(self.rec)))
            self.n -= k
            return self.rec * k

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = soif.read(Endless(200_000))
    rows = 0
    for b in r:
        rows += b.num_rows
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert rows == 200_000
    # ru_maxrss is in KiB on Linux: well under the 200 MB that went through.
    assert after - before < 150 * 1024


def test_stopping_early_and_closing():
    data = GOOD * 20_000
    r = soif.read(data, batch_size=100)
    first = next(iter(r))
    assert first.num_rows == 100
    r.close()
    with pytest.raises(soif.SoifError):
        next(iter(r))
    assert r.records_out >= 100
    # A stream abandoned half-way is released without reading on.
    r2 = soif.read(data, batch_size=100)
    stream = pa.RecordBatchReader.from_stream(r2)
    assert stream.read_next_batch().num_rows == 100
    del stream
    with soif.records(data) as recs:
        assert next(recs).url == "http://a/"
