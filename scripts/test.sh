#!/usr/bin/env bash
# The project's one test command (README, "Run the tests"; `.ci/run` calls it): every
# suite, Rust first, then the Python ones, installing what they need itself.
#
#   scripts/test.sh            # everything
#   SOIF_TEST_ONLY=rust scripts/test.sh
#
# Python suites run in a project virtual environment (.venv, made on first use), with
# their packages from PyPI listed in `tests/python/requirements.txt`; each suite is a
# folder of pytest files registered in PYTHON_SUITES below.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
only="${SOIF_TEST_ONLY:-all}"

# Folders of pytest suites (added by the issues that bring them).
PYTHON_SUITES=(tests/python python/tests)

rust_tests() {
    cargo test --workspace --locked
}

python_env() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ -f tests/python/requirements.txt ]; then
        .venv/bin/python -m pip install --quiet -r tests/python/requirements.txt
    fi
}

# The browse pages' browser test (tests/python/test_browse.py) drives Debian's headless
# Chromium through chromedriver: installed here when missing.
browser() {
    if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
        return 0
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium chromium-driver
}

python_tests() {
    if [ ${#PYTHON_SUITES[@]} -eq 0 ]; then
        return 0
    fi
    browser
    python_env
    # The soif package itself (python/: PyO3 + maturin), built from source as a user would.
    .venv/bin/python -m pip install --quiet ./python
    # The suites drive the `soif` binary built by the Rust tests (target/debug/soif).
    export SOIF_BIN="${SOIF_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/soif}"
    # One pytest run per suite: each has its own conftest.py, and in one run the second
    # would shadow the first (`from conftest import …`). Every suite runs; the status
    # is a failing suite's, if any.
    local status=0
    for suite in "${PYTHON_SUITES[@]}"; do
        echo "== pytest $suite"
        .venv/bin/python -m pytest -q "$suite" || status=$?
    done
    return "$status"
}

case "$only" in
    rust) rust_tests ;;
    python) python_tests ;;
    all) rust_tests; python_tests ;;
    *) echo "SOIF_TEST_ONLY: rust, python or all" >&2; exit 2 ;;
esac
