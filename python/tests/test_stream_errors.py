"""A read that fails (on_error="fail") consumed through the Arrow C stream: the consumer
raises its own exception type, with a message naming soif's error class, the input, the
byte offset, the record number and the URL; the reader keeps the soif.DecodeError itself
(Reader.error), and Reader.read_all raises it."""

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import soif


@pytest.fixture
def bad(fixtures):
    return fixtures / "pipeline" / "bad.soif"


def check_kept(r, path):
    err = r.error
    assert isinstance(err, soif.DecodeError)
    assert (err.input, err.offset, err.record, err.url) == (str(path), 65, 2, "http://bad/")
    assert r.rejected == 1


def check_message(message, path):
    assert "soif.DecodeError: " in message
    assert f"{path}: byte 65, record 2 (http://bad/)" in message
    assert "non-numeric size {abc}" in message


def test_pyarrow_table(bad):
    r = soif.read(bad)
    with pytest.raises(pa.ArrowInvalid) as e:
        pa.table(r)
    check_message(str(e.value), bad)
    check_kept(r, bad)


def test_polars(bad):
    r = soif.read(bad)
    with pytest.raises(pl.exceptions.ComputeError) as e:
        pl.DataFrame(r)
    check_message(str(e.value), bad)
    check_kept(r, bad)


def test_duckdb(bad):
    r = soif.read(bad)
    with pytest.raises(duckdb.Error) as e:
        duckdb.sql("SELECT count(*) FROM r").fetchall()
    check_message(str(e.value), bad)
    check_kept(r, bad)


def test_read_all_raises_the_decode_error(bad):
    r = soif.read(bad)
    with pytest.raises(soif.DecodeError) as e:
        r.read_all()
    assert (e.value.record, e.value.offset) == (2, 65)
    assert isinstance(e.value.__cause__, pa.ArrowException)


def test_iterating_raises_it_and_keeps_it(bad):
    r = soif.read(bad, batch_size=1)
    with pytest.raises(soif.DecodeError) as e:
        list(r)
    assert e.value.record == 2
    check_kept(r, bad)


def test_no_error_after_a_good_read(bad):
    r = soif.read(bad, on_error="skip")
    assert pa.table(r).num_rows == 3
    assert r.error is None


def test_an_unreadable_input_is_a_soif_error(fixtures):
    data = (fixtures / "pipeline" / "documents.soif.gz").read_bytes()
    r = soif.read(data[: len(data) // 2])
    with pytest.raises(pa.ArrowException) as e:
        pa.table(r)
    assert "soif.SoifError: " in str(e.value) and "reading stopped" in str(e.value)
    assert isinstance(r.error, soif.SoifError) and not isinstance(r.error, soif.DecodeError)
