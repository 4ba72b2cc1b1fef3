"""Fixtures for the soif Python package's tests (run by scripts/test.sh)."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def soif_bin():
    """The `soif` CLI (SOIF_BIN, else the workspace's debug build), or None."""
    for cand in (os.environ.get("SOIF_BIN"), ROOT / "target" / "debug" / "soif", shutil.which("soif")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return str(cand)
    return None


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def canonical():
    """Canonical SOIF of a path as the CLI writes it (`soif convert --to soif`)."""
    exe = soif_bin()
    if exe is None:
        pytest.skip("the soif CLI is not built (cargo build), SOIF_BIN not set")

    def run(*paths, lenient=False, on_error="fail"):
        args = [exe, "convert", *map(str, paths), "--to", "soif", "-q", "--on-error", on_error]
        if lenient:
            args.append("--lenient")
        out = subprocess.run(args, capture_output=True)
        assert out.returncode in (0, 3), out.stderr.decode()
        return out.stdout

    return run
