"""The same options, written in each front end's spelling — the CLI's flags, a pipeline
file, the Python package's keyword arguments and Spark's ``.option(...)`` (the Python
data source, or the JVM one when ``SOIF_SPARK_JAR`` is set) — mean the same thing on the
same input: the same records kept and rejected, and the same clear error for an unknown
or malformed option. The table below is the contract; each row is read by every front
end."""

import json
import re
import subprocess

import pytest
from conftest import load

import soif

#: A small record, one of between 1000 and 1024 bytes (kept under 1KiB, rejected under
#: 1kB: MB means 10^6, MiB 2^20, everywhere), and one with a space instead of the tab
#: after ``Title{5}:`` (repaired under lenient, rejected otherwise).
MID_VALUE = b"x" * 990
INPUT = (
    b"@FILE { http://small/\nTitle{5}:\tSmall\n}\n\n"
    + b"@FILE { http://mid/\nBody{%d}:\t" % len(MID_VALUE)
    + MID_VALUE
    + b"\n}\n\n"
    + b"@FILE { http://legacy/\nTitle{5}: Hello\n}\n\n"
    + b"@FILE { http://last/\nTitle{4}:\tLast\n}\n"
)
MID_OBJECT = len(b"@FILE { http://mid/\nBody{990}:\t" + MID_VALUE + b"\n}\n")

#: (max record size, lenient) -> the URLs kept when bad records are skipped.
CASES = [
    ("1kB", False, ["http://small/", "http://last/"]),
    ("1KiB", False, ["http://small/", "http://mid/", "http://last/"]),
    ("1KiB", True, ["http://small/", "http://mid/", "http://legacy/", "http://last/"]),
    ("1000", True, ["http://small/", "http://legacy/", "http://last/"]),
    ("64MB", False, ["http://small/", "http://mid/", "http://last/"]),
]

#: What every front end's error for a malformed size ends with (soif_options' size parser).
SIZE_EXPECTED = "(e.g. 1048576, 512KiB, 64MB, 1GiB)"


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("options") / "input.soif"
    path.write_bytes(INPUT)
    return path


def test_the_input_is_what_the_table_assumes():
    assert 1000 < MID_OBJECT <= 1024, MID_OBJECT


# -- each front end: (max record size, lenient, policy) -> URLs kept, or the error --------


def cli(soif_bin, path, tmp_path, size, lenient, policy="skip"):
    args = [soif_bin, "convert", str(path), "--to", "jsonl", "-q", "--max-record-size", size, "--on-error", policy]
    if lenient:
        args.append("--lenient")
    out = subprocess.run(args, capture_output=True)
    return _jsonl(out)


def pipeline(soif_bin, path, tmp_path, size, lenient, policy="skip", extra=""):
    dest = tmp_path / "out.jsonl"
    config = tmp_path / "read.toml"
    config.write_text(
        f"[source]\ninputs = [{json.dumps(str(path))}]\nmax_record_size = {json.dumps(size)}\n"
        f"lenient = {'true' if lenient else 'false'}\n{extra}"
        f'[errors]\non_error = "{policy}"\n\n[[sink]]\nformat = "jsonl"\noutput = {json.dumps(str(dest))}\n'
    )
    out = subprocess.run([soif_bin, "run", str(config), "-q"], capture_output=True)
    if out.returncode in (0, 3) and dest.exists():
        return [json.loads(line)["url"] for line in dest.read_text().splitlines()]
    return _error(out.stderr.decode())


def _jsonl(out):
    if out.returncode in (0, 3):
        return [json.loads(line)["url"] for line in out.stdout.decode().splitlines()]
    return _error(out.stderr.decode())


class _error(str):
    """An error's text (rather than the URLs kept)."""


def python(path, size, lenient, policy="skip", **extra):
    try:
        return [r.url for r in soif.records(path, max_record_size=size, lenient=lenient, on_error=policy, **extra)]
    except (ValueError, soif.SoifError) as e:
        return _error(str(e))


SPARK_MODES = {"skip": "DROPMALFORMED", "fail": "FAILFAST"}


def spark_read(spark, path, size, lenient, policy="skip", **extra):
    try:
        df = load(spark, str(path), maxRecordSize=size, lenient=str(lenient).lower(), mode=SPARK_MODES[policy], **extra)
        return [r["url"] for r in df.select("url").collect()]
    except Exception as e:  # PySpark's exceptions (AnalysisException, Py4JJavaError, ...)
        return _error(str(e))


# -- the table ------------------------------------------------------------------------------


@pytest.mark.parametrize("size,lenient,kept", CASES)
def test_sizes_and_lenient_mean_the_same_everywhere(spark, soif_bin, archive, tmp_path, size, lenient, kept):
    got = {
        "cli": cli(soif_bin, archive, tmp_path, size, lenient),
        "pipeline": pipeline(soif_bin, archive, tmp_path, size, lenient),
        "python": python(archive, size, lenient),
        "spark": spark_read(spark, archive, size, lenient),
    }
    for front, urls in got.items():
        assert not isinstance(urls, _error), (front, urls)
        assert urls == kept, (front, size, lenient)


def test_fail_and_failfast_stop_at_the_same_record(spark, soif_bin, archive, tmp_path):
    got = {
        "cli": cli(soif_bin, archive, tmp_path, "1kB", False, "fail"),
        "pipeline": pipeline(soif_bin, archive, tmp_path, "1kB", False, "fail"),
        "python": python(archive, "1kB", False, "fail"),
        "spark": spark_read(spark, archive, "1kB", False, "fail"),
    }
    for front, e in got.items():
        assert isinstance(e, _error), (front, e)
        # The second record, too large for 1kB (1000 bytes), named by input and number.
        assert "record 2" in e and "input.soif" in e, (front, e)


def test_a_malformed_size_is_the_same_error_everywhere(spark, soif_bin, archive, tmp_path):
    got = {
        "cli": cli(soif_bin, archive, tmp_path, "12 parsecs", False),
        "pipeline": pipeline(soif_bin, archive, tmp_path, "12 parsecs", False),
        "python": python(archive, "12 parsecs", False),
        "spark": spark_read(spark, archive, "12 parsecs", False),
    }
    for front, e in got.items():
        assert isinstance(e, _error), (front, e)
        assert SIZE_EXPECTED in e and "12 parsecs" in e, (front, e)


#: Mistakes, each written in every front end's spelling, and the core of the message each
#: gives (soif_options' OptionError; docs/contract.md#option-errors): the option named as
#: it was written (Spark hands its Python data source the names in lower case, hence
#: re.IGNORECASE), the value, and what was expected or the option meant.
#: (CLI flags or None, pipeline table and line, Python kwargs, Spark options, pattern.)
MISTAKES = [
    (
        ["--max-record-sise", "1k"],
        ("source", 'max_record_sise = "1k"'),
        dict(max_record_sise="1k"),
        dict(maxRecordSise="1k"),
        r"unknown option `(--)?max.?record.?sise` \(did you mean `(--)?max.?record.?size`\?\)",
    ),
    (
        ["--max-record-size", "64XB"],
        ("source", 'max_record_size = "64XB"'),
        dict(max_record_size="64XB"),
        dict(maxRecordSize="64XB"),
        r"option (--)?max.?record.?size=`64XB`: expected a size in bytes \(e\.g\. 1048576, 512KiB, 64MB, 1GiB\)",
    ),
    (
        ["--on-error", "explode"],
        ("errors", 'on_error = "explode"'),
        dict(on_error="explode"),
        dict(mode="explode"),
        r"option (--)?(on.?error|mode)=`explode`: expected (fail, skip|PERMISSIVE, DROPMALFORMED)",
    ),
    (
        # A flag without a value on the command line.
        None,
        ("source", 'lenient = "maybe"'),
        dict(lenient="maybe"),
        dict(lenient="maybe"),
        r"option lenient=`maybe`: expected true or false",
    ),
]


def _cli_mistake(soif_bin, path, flags):
    out = subprocess.run(
        [soif_bin, "convert", str(path), "--to", "jsonl", "-q", *flags], capture_output=True
    )
    assert out.returncode == 2, out
    err = out.stderr.decode()
    # The CLI adds its usage line.
    assert "Usage: soif convert" in err, err
    return err


def _pipeline_mistake(soif_bin, path, tmp_path, table, line):
    config = tmp_path / "mistake.toml"
    tables = {"source": f"inputs = [{json.dumps(str(path))}]\n", "errors": ""}
    tables[table] += line + "\n"
    text = "".join(f"[{t}]\n{body}\n" for t, body in tables.items())
    text += '[[sink]]\nformat = "null"\n'
    config.write_text(text)
    out = subprocess.run([soif_bin, "run", str(config), "-q"], capture_output=True)
    assert out.returncode == 2, out
    err = out.stderr.decode()
    # The pipeline file adds its file, line and table.
    number = text.splitlines().index(line) + 1
    assert f"{config}:{number}: [{table}] " in err or f"{config}: [{table}] " in err, err
    return err


@pytest.mark.parametrize("flags,entry,kwargs,options,pattern", MISTAKES)
def test_a_mistaken_option_is_the_same_error_everywhere(
    spark, soif_bin, archive, tmp_path, flags, entry, kwargs, options, pattern
):
    got = {"pipeline": _pipeline_mistake(soif_bin, archive, tmp_path, *entry)}
    if flags is not None:
        got["cli"] = _cli_mistake(soif_bin, archive, flags)
    try:
        list(soif.records(archive, **kwargs))
        got["python"] = "accepted"
    except ValueError as e:  # Python adds its exception type
        got["python"] = str(e)
    try:
        load(spark, str(archive), **options).collect()
        got["spark"] = "accepted"
    except Exception as e:  # PySpark's exceptions (AnalysisException, Py4JJavaError, ...)
        got["spark"] = str(e)
    for front, e in got.items():
        assert isinstance(e, str) and re.search(pattern, e, re.IGNORECASE), (front, pattern, e)


def test_an_unknown_policy_is_the_same_error_in_python_and_spark(spark, archive):
    e = python(archive, "1k", False, "ignore")
    assert isinstance(e, _error) and "option on_error=`ignore`: expected" in e, e
    try:
        load(spark, str(archive), mode="IGNORE").collect()
        raise AssertionError("mode=IGNORE was accepted")
    except Exception as x:
        assert "option mode=`IGNORE`: expected PERMISSIVE, DROPMALFORMED or FAILFAST" in str(x), x


# -- the transform chain: `-t`, `transforms = [...]`, transforms=[...], .option("transforms") --

#: A chain whose specs hold a colon and commas, and the URLs it keeps (default size,
#: strict): `mid` has no Title (filtered), `legacy` is rejected by the decoder.
CHAIN = ["match:Title=l", "select:URL,Title"]
CHAIN_KEPT = ["http://small/", "http://last/"]


def _pipeline_chain(soif_bin, path, tmp_path, chain):
    dest = tmp_path / "chain.jsonl"
    config = tmp_path / "chain.toml"
    config.write_text(
        f"transforms = {json.dumps(chain)}\n\n[source]\ninputs = [{json.dumps(str(path))}]\n\n"
        f'[errors]\non_error = "skip"\n\n[[sink]]\nformat = "jsonl"\noutput = {json.dumps(str(dest))}\n'
    )
    out = subprocess.run([soif_bin, "run", str(config), "-q"], capture_output=True)
    if out.returncode in (0, 3) and dest.exists():
        return [json.loads(line)["url"] for line in dest.read_text().splitlines()]
    return _error(out.stderr.decode())


def _chain_everywhere(spark, soif_bin, archive, tmp_path, chain):
    args = [soif_bin, "convert", str(archive), "--to", "jsonl", "-q", "--on-error", "skip"]
    for spec in chain:
        args += ["-t", spec]
    return {
        "cli": _jsonl(subprocess.run(args, capture_output=True)),
        "pipeline": _pipeline_chain(soif_bin, archive, tmp_path, chain),
        "python": python(archive, "64MB", False, transforms=chain),
        "spark": spark_read(spark, archive, "64MB", False, transforms=json.dumps(chain)),
    }


def test_transforms_mean_the_same_everywhere(spark, soif_bin, archive, tmp_path):
    for front, urls in _chain_everywhere(spark, soif_bin, archive, tmp_path, CHAIN).items():
        assert not isinstance(urls, _error), (front, urls)
        assert urls == CHAIN_KEPT, front


def test_an_unknown_transform_is_named_everywhere(spark, soif_bin, archive, tmp_path):
    for front, e in _chain_everywhere(spark, soif_bin, archive, tmp_path, ["frobnicate"]).items():
        assert isinstance(e, _error) and "unknown transform `frobnicate`" in e, (front, e)
