"""Shared fixtures: where the repository's test data lives."""

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = REPO / "crates" / "table" / "testdata"


@pytest.fixture
def testdata() -> pathlib.Path:
    return TESTDATA


def golden_entries() -> list:
    """The 1000 entries LevelDB 1.23 wrote into the golden tables, in order."""
    lines = (TESTDATA / "entries.tsv").read_text().splitlines()
    return [tuple(bytes.fromhex(f) for f in line.split("\t")) for line in lines]
