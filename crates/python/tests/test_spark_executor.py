"""What a Spark executor whose Python cannot import leveltable runs into: the functions
``write_leveldb`` ships to the executors, called as Spark calls them, without Spark."""

import os
import subprocess
import sys

import pytest

import leveltable
from leveltable import spark


def functions(tmp_path):
    return spark._executor_functions(str(tmp_path), "key", "value", None, {}, None)


def test_an_executor_without_leveltable_says_which_python_lacks_it(tmp_path, monkeypatch):
    arrow, rows = functions(tmp_path)
    # As on an executor whose Python does not have the package.
    monkeypatch.setitem(sys.modules, "leveltable._leveltable", None)
    for task in (arrow, rows):
        with pytest.raises(ImportError) as info:
            next(task(iter([])))
        message = str(info.value)
        assert spark._MISSING_ON_EXECUTORS in message
        assert sys.executable in message
        assert f"{sys.executable} -m pip install leveltable" in message
        assert "spark.pyspark.python" in message


def test_the_driver_reports_the_executors_message(tmp_path):
    arrow, _ = functions(tmp_path)
    # What a failed job's error holds: the executor's traceback, inside Spark's.
    executor = f"Traceback ...\nImportError: {spark._MISSING_ON_EXECUTORS} (/opt/py/bin/python): x"
    job = RuntimeError(f"An error occurred while calling o42.collect.\n{executor}\n\tat org...")
    with pytest.raises(leveltable.Error) as info:
        spark._raise_if_executors_lack_leveltable(job)
    assert str(info.value).startswith(f"{spark._MISSING_ON_EXECUTORS} (/opt/py/bin/python)")
    assert "\n" not in str(info.value)
    # Any other failure is left as it is.
    assert spark._raise_if_executors_lack_leveltable(RuntimeError("null key")) is None


def test_the_shipped_functions_unpickle_without_leveltable(tmp_path):
    # Spark pickles with the cloudpickle it ships (pyspark.cloudpickle), or the package.
    try:
        import cloudpickle

        module = "cloudpickle"
    except ImportError:
        cloudpickle = pytest.importorskip("pyspark.cloudpickle")
        module = "pyspark.cloudpickle"
    arrow, rows = functions(tmp_path)
    shipped = cloudpickle.dumps((arrow, rows))
    # A Python that cannot import leveltable at all unpickles them (Spark's executors do so
    # before running them) and gets the message when they run.
    script = (
        "import importlib, sys\n"
        f"cloudpickle = importlib.import_module({module!r})\n"
        "sys.modules['leveltable'] = None\n"
        "arrow, rows = cloudpickle.loads(sys.stdin.buffer.read())\n"
        "try:\n"
        "    next(rows(iter([])))\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run(
        [sys.executable, "-c", script], input=shipped, capture_output=True, env=env
    )
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    assert spark._MISSING_ON_EXECUTORS in text, text
    assert sys.executable in text
