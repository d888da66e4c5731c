"""Errors: ValueError for bad arguments, TypeError for bad types, xreduce's own classes for
backends and devices; nothing crashes the interpreter."""
import numpy as np
import pytest

import xreduce as xr


def test_bad_arguments():
    x = np.float32([1, 2, 3])
    with pytest.raises(ValueError, match="out of bounds"):
        xr.sum(x, axis=1)
    with pytest.raises(ValueError, match="out of bounds"):
        xr.sum(x.reshape(1, 3), axis=-3)
    with pytest.raises(ValueError, match="out of bounds"):
        xr.sum(np.float32(1), axis=0)
    with pytest.raises(ValueError, match="backend"):
        xr.sum(x, backend="tpu")
    with pytest.raises(ValueError, match="unknown op"):
        xr.Reducer("omp").reduce(x, "median")
    with pytest.raises(ValueError, match="no value"):
        xr.max(np.float32([]))
    with pytest.raises(ValueError, match="zero-size"):
        xr.min(np.zeros((0, 3), dtype=np.float32), axis=0)
    with pytest.raises(ValueError, match="1-D and 2-D"):
        xr.sum(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="contiguous"):
        xr.sum(np.arange(20.0).reshape(4, 5)[:, ::2], axis=0)
    with pytest.raises(ValueError, match="contiguous"):
        xr.sum(np.arange(10.0)[::-1])
    with pytest.raises(ValueError, match="exact"):
        xr.Reducer("omp").reduce(x, "prod", exact=True)
    with pytest.raises(ValueError, match="decrease"):
        xr.reduce_segments(x, [0, 2, 1, 3])
    with pytest.raises(ValueError, match="kernel"):
        xr.Reducer("omp").reduce(x, kernel="no_such_rung")


def test_bad_types():
    for bad in (np.zeros(3, dtype=np.int16), np.zeros(3, dtype=np.complex64), np.zeros(3, dtype=bool)):
        with pytest.raises(TypeError, match="xreduce reduces"):
            xr.sum(bad)
    with pytest.raises(TypeError, match="byte order"):
        xr.sum(np.arange(3, dtype=">f4"))
    with pytest.raises(TypeError, match="xreduce takes arrays"):
        xr.sum([1, 2, 3])
    with pytest.raises(TypeError):
        xr.sum("text")
    with pytest.raises(TypeError):
        xr.sum(np.float32([1]), axis=1.5)


def test_backend_unavailable_says_why():
    statuses = {s["backend"]: s for s in xr.backends()}
    assert set(statuses) == {"cuda", "opencl", "omp"}
    for name, s in statuses.items():
        if not s["usable"]:
            assert s["reason"]
            with pytest.raises(xr.BackendUnavailable, match=name) as e:
                xr.Reducer(name)
            assert isinstance(e.value, RuntimeError)
    assert issubclass(xr.DeviceError, RuntimeError)
    assert issubclass(xr.KernelBuildError, xr.DeviceError)


def test_cuda_on_host_array():
    with pytest.raises(ValueError, match="host memory"):
        xr.sum(np.float32([1]), backend="cuda")
