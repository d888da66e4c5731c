"""The package around the functions: backends(), check(), the examples, the type stubs."""
import os
import pathlib
import subprocess
import sys

import pytest

import xreduce as xr

ROOT = pathlib.Path(os.environ.get("XR_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


def test_backends_as_reduce_cli_lists_them():
    statuses = xr.backends()
    assert [s["backend"] for s in statuses] == ["cuda", "opencl", "omp"]
    for s in statuses:
        assert set(s) == {"backend", "compiled", "usable", "reason", "devices"}
        assert s["usable"] == (s["reason"] == "")
        assert all({"name", "detail", "gpu"} <= set(d) for d in s["devices"])


def test_check_report():
    try:
        report = xr.check("omp", sizes=[0, 33], kernels=["auto"])
    except xr.BackendUnavailable as e:
        pytest.skip(str(e))
    assert report["passed"] is True
    assert report["cases"] and all(c["pass"] and c["backend"] == "omp" for c in report["cases"])
    assert {c["n"] for c in report["cases"]} == {0, 33}
    with pytest.raises(ValueError):
        xr.check("omp", kernels=["no_such_rung"])


@pytest.mark.parametrize("example", sorted((ROOT / "examples" / "python").glob("*.py")), ids=lambda p: p.name)
def test_example(example):
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_typed():
    package = pathlib.Path(xr.__file__).parent
    assert (package / "py.typed").exists() and (package / "__init__.pyi").exists()
    stub = (package / "__init__.pyi").read_text()
    for name in xr.__all__:
        assert name in stub, name
