#!/usr/bin/env bash
# The project's one test command (README, "Run the tests"; `.ci/run` calls it): every
# suite, Rust first, then the Python ones, installing what they need itself.
#
#   scripts/test.sh            # everything
#   SOIF_TEST_ONLY=rust scripts/test.sh    # only the Rust part: imports, fmt, clippy, cargo test
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
    # The crate graph runs one way and no file imports a file that imports it back
    # (docs/architecture.md); the checker first checks itself.
    python3 scripts/check_imports.py --self-test
    python3 scripts/check_imports.py
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
    # The soif package itself (python/: PyO3 + maturin), built from source as a user
    # would, with two differences that only make it build faster: the `ci-bindings`
    # profile (root Cargo.toml: `release` without debug information), and the
    # maturin of tests/python/requirements.txt (found on PATH) rather than one installed
    # into an isolated build environment. The JVM data source's library below is built
    # with the same profile in the same target directory: the crates both use compile once.
    export SOIF_CARGO_PROFILE=ci-bindings
    PATH="$PWD/.venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile $SOIF_CARGO_PROFILE" \
        .venv/bin/python -m pip install --quiet --no-build-isolation ./python
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

# Everything: the Debian packages first (sudo may ask for a password), then the Python
# suites' packages download and install into .venv in the background while the Rust suite
# compiles (the one waits on the network, the other on the CPU); their output is shown
# only if they fail.
all_tests() {
    browser
    java_runtime
    local setup_log setup
    setup_log="$(mktemp)"
    python_env >"$setup_log" 2>&1 &
    setup=$!
    trap "kill $setup 2>/dev/null || true" EXIT
    rust_tests
    if ! wait "$setup"; then
        cat "$setup_log" >&2
        echo "installing the Python suites' packages into .venv failed" >&2
        return 1
    fi
    trap - EXIT
    rm -f "$setup_log"
    python_tests
}

case "$only" in
    rust) rust_tests ;;
    python) browser; java_runtime; python_env; python_tests ;;
    all) all_tests ;;
    *) echo "SOIF_TEST_ONLY: rust, python or all" >&2; exit 2 ;;
esac
