#!/usr/bin/env bash
# The project's one test command (README, "Run the tests"; `.ci/run` calls it): every
# suite, Rust first, then the Python ones, installing what they need itself.
#
#   scripts/test.sh            # everything
#   SOIF_TEST_ONLY=rust scripts/test.sh    # only the Rust part: fmt, clippy, cargo test
#
# Python suites run in a project virtual environment (.venv, made on first use), with
# their packages from PyPI listed in `tests/python/requirements.txt` (and the Spark
# suite's in `tests/spark/requirements.txt`); each suite is a folder of pytest files
# registered in PYTHON_SUITES below. The Spark suite needs Java 17 or later with its
# compiler (soif's JVM data source, spark/build.sh, is built here): the machine's `java`
# and `javac`, else Debian's openjdk-17-jdk-headless, installed here. It runs twice: with
# the Python data source alone, then with the JVM one's jar on Spark's classpath.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
only="${SOIF_TEST_ONLY:-all}"

# Folders of pytest suites (added by the issues that bring them).
PYTHON_SUITES=(tests/python python/tests tests/spark)

# Style first (formatting, then clippy with every warning an error: the lints are
# declared once in the root Cargo.toml's [workspace.lints]), then the tests.
rust_tests() {
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --locked -- -D warnings
    cargo test --workspace --locked
}

python_env() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install --quiet --upgrade pip
    local reqs=() f
    for f in tests/python/requirements.txt tests/spark/requirements.txt; do
        if [ -f "$f" ]; then
            reqs+=(-r "$f")
        fi
    done
    if [ ${#reqs[@]} -gt 0 ]; then
        .venv/bin/python -m pip install --quiet "${reqs[@]}"
    fi
}

as_root() {
    if [ "$(id -u)" -ne 0 ]; then
        sudo "$@"
    else
        "$@"
    fi
}

# The Spark suite (tests/spark) runs PySpark 4 in local mode: a Java 17+ runtime and
# compiler (for soif's JVM data source), the machine's when there are.
java_runtime() {
    if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 \
        && java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' \
        && javac -version 2>&1 | grep -Eq 'javac (1[7-9]|[2-9][0-9])'; then
        return 0
    fi
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jdk-headless
}

# The browse pages' browser test (tests/python/test_browse.py) drives Debian's headless
# Chromium through chromedriver: installed here when missing.
browser() {
    if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
        return 0
    fi
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver
}

python_tests() {
    if [ ${#PYTHON_SUITES[@]} -eq 0 ]; then
        return 0
    fi
    browser
    java_runtime
    python_env
    # The soif package itself (python/: PyO3 + maturin), built from source as a user would.
    .venv/bin/python -m pip install --quiet ./python
    # The suites drive the `soif` binary built by the Rust tests (target/debug/soif).
    export SOIF_BIN="${SOIF_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/soif}"
    # Spark's Python workers must import the same soif package: the venv's interpreter.
    export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
    # One pytest run per suite: each has its own conftest.py, and in one run the second
    # would shadow the first (`from conftest import …`). Every suite runs; the status
    # is a failing suite's, if any.
    local status=0
    for suite in "${PYTHON_SUITES[@]}"; do
        echo "== pytest $suite"
        .venv/bin/python -m pytest -q "$suite" || status=$?
    done
    # The Spark suite again with soif's JVM data source (the Rust decoder over JNI, built
    # against the venv's PySpark): every test holds for both readers.
    local jar
    if jar="$(spark/build.sh .venv/bin/python)"; then
        echo "== pytest tests/spark (JVM data source: $jar)"
        SOIF_SPARK_JAR="$jar" .venv/bin/python -m pytest -q tests/spark || status=$?
    else
        echo "spark/build.sh failed" >&2
        status=1
    fi
    return "$status"
}

case "$only" in
    rust) rust_tests ;;
    python) python_tests ;;
    all) rust_tests; python_tests ;;
    *) echo "SOIF_TEST_ONLY: rust, python or all" >&2; exit 2 ;;
esac
