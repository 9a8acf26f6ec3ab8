"""plyvel's own test suite (``test/test_plyvel.py`` of plyvel's source distribution on PyPI,
pinned below and checked by hash, extracted unchanged), run with ``import plyvel`` answered
by ``leveltable.plyvel``.

The sdist is fetched with pip. Without a network the module is skipped, unless
LEVELTABLE_REQUIRE_SERVERS=1.
"""

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree

import pytest

PLYVEL_VERSION = "1.5.1"
PLYVEL_SHA256 = "3caf6009e4fc24fbf8712d3f5ef3da7e56495c26a488df2161218fc34e46019c"
# The tests test_plyvel.py of this release holds.
SUITE_TESTS = 54

# The shim: plyvel's tests import `plyvel`, and get leveltable's.
CONFTEST = """\
import sys

import leveltable.plyvel

sys.modules["plyvel"] = leveltable.plyvel
"""


def _root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# As root, a directory without write permission is still writable: plyvel's test that
# opening a database there raises plyvel.IOError cannot pass (nor does it with plyvel
# itself, which then raises plyvel.Error: the database does not exist).
EXPECTED_FAILURES = {"test_open_read_only_dir"} if _root() else set()


@pytest.fixture(scope="module")
def plyvel_tests(tmp_path_factory):
    """The directory holding plyvel's test_plyvel.py and the shim."""
    download = tmp_path_factory.mktemp("plyvel-sdist")
    requirements = download / "requirements.txt"
    requirements.write_text(f"plyvel=={PLYVEL_VERSION} --hash=sha256:{PLYVEL_SHA256}\n")
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", "--require-hashes", "-r", str(requirements),
         "--dest", str(download)],
        capture_output=True, text=True, timeout=300,
    )
    if fetched.returncode != 0:
        if os.environ.get("LEVELTABLE_REQUIRE_SERVERS") == "1":
            raise RuntimeError(f"pip could not fetch plyvel's sdist:\n{fetched.stderr}")
        pytest.skip(f"plyvel {PLYVEL_VERSION}'s sdist could not be fetched from PyPI "
                    "(no network?)")
    suite = tmp_path_factory.mktemp("plyvel-suite")
    member = f"plyvel-{PLYVEL_VERSION}/test/test_plyvel.py"
    with tarfile.open(download / f"plyvel-{PLYVEL_VERSION}.tar.gz") as sdist:
        (suite / "test_plyvel.py").write_bytes(sdist.extractfile(member).read())
    (suite / "conftest.py").write_text(CONFTEST)
    return suite


def test_plyvel_suite_passes_with_leveltable(plyvel_tests):
    report = plyvel_tests / "report.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--rootdir={plyvel_tests}", f"--junitxml={report}", "test_plyvel.py"],
        cwd=plyvel_tests, capture_output=True, text=True, timeout=600,
    )
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcomes[case.get("name")] = "failed" if failed else "skipped" if skipped else "passed"
    failed = {name for name, outcome in outcomes.items() if outcome == "failed"}
    passed = sum(1 for outcome in outcomes.values() if outcome == "passed")
    print(f"plyvel {PLYVEL_VERSION}'s suite with leveltable.plyvel: {passed} of "
          f"{len(outcomes)} passed; failed: {sorted(failed)}")
    assert len(outcomes) == SUITE_TESTS, run.stdout[-3000:]
    assert failed == EXPECTED_FAILURES, run.stdout[-6000:]
    assert passed == SUITE_TESTS - len(EXPECTED_FAILURES), run.stdout[-3000:]
