import numpy as np
import pytest

import xreduce as xr

HOST_BACKENDS = [s["backend"] for s in xr.backends() if s["usable"] and s["backend"] in ("omp", "opencl")]

DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
try:
    import ml_dtypes

    DTYPES.append(ml_dtypes.bfloat16)
except ImportError:
    ml_dtypes = None


@pytest.fixture(params=HOST_BACKENDS)
def backend(request):
    return request.param


def sample(dtype, shape, rng, special=False):
    """Values every type holds exactly, so that sums of few of them are exact in any order."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -100
        x = rng.integers(lo, 100, size=shape).astype(dtype)
    else:
        x = (rng.integers(-64, 64, size=shape) / 8).astype(dtype)
        if special and x.size:
            x.flat[rng.integers(0, x.size)] = np.nan
    return x


def pytest_terminal_summary(terminalreporter):
    """One `SKIP <test>: <reason>` line per skipped test, as the C++ suites print them
    (scripts/test.sh lists those lines after the run)."""
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        name = report.nodeid.split("::")[-1]
        terminalreporter.write_line(f"SKIP python {name}: {reason.removeprefix('Skipped: ')}")
