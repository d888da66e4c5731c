"""The Python side of the CUDA path, run without a GPU: xreduce's CUDA entry points are stood in
for by the host backend over the same memory, and a "device" array library by NumPy arrays
behind __cuda_array_interface__. What is checked is what the package does around the entry
points: the plan (flat, matrix, strides), the arguments, the stream, the results' types and
shapes. The entry points themselves are checked on a GPU by test_device_arrays.py."""
import ctypes
import inspect
import re

import numpy as np
import pytest

import xreduce as xr
from xreduce import _api, _arrays, _device

LIBRARY = __name__.split(".")[0]


class DeviceArray:
    """A NumPy array presented as CUDA memory of this module's "library"."""

    def __init__(self, array, stream=7):
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "data": (array.ctypes.data, False),
            "strides": None if array.flags.c_contiguous else array.strides, "version": 3, "stream": stream}


class Stand_in:
    """The CUDA entry points of the extension, with the same parameters, done on the host."""

    def __init__(self, real, streams):
        self.real, self.streams = real, streams
        self.host = real.Reducer("omp")
        self.has_cuda = True

    def __getattr__(self, name):
        return getattr(self.real, name)

    def backend_statuses(self):
        return [dict(s, usable=True, reason="") if s["backend"] == "cuda" else s for s in self.real.backend_statuses()]

    def cuda_reduce(self, data, n, dtype, op, stream, exact=False, kernel="auto", accumulator="wide", repeat=1,
                    warmup=0):
        self.streams.append(stream)
        return self.host.reduce(data, n, dtype, op, exact, "auto", 0, accumulator, repeat, warmup)

    def cuda_reduce_axis(self, data, dtype, rows, cols, stride, order, axis, op, out, stream, exact=False,
                         kernel="auto", accumulator="wide"):
        self.streams.append(stream)
        return _write(out, op, *self.host.reduce_axis(data, dtype, rows, cols, stride, order, axis, op, exact))

    def cuda_reduce_segments(self, data, n, dtype, offsets, n_segments, op, out, stream, exact=False, kernel="auto",
                             accumulator="wide"):
        self.streams.append(stream)
        return _write(out, op, *self.host.reduce_segments(data, n, dtype, offsets, n_segments + 1, op, exact))


    def cuda_reduce_async(self, data, n, dtype, op, out, stream, exact=False, kernel="auto", accumulator="wide"):
        self.streams.append(stream)
        r = self.host.reduce(data, n, dtype, op, exact, "auto", 0, accumulator, 1, 0)
        if op in ("argmin", "argmax"):  # the record: the value, then the int64 index at byte 8
            out, values = out + 8, np.asarray([r.index], dtype=np.int64)
        else:
            values = np.asarray([r.value, r.maximum] if op == "minmax" else [r.value],
                                dtype=_arrays._numpy_dtype(r.dtype))
        ctypes.memmove(out, values.ctypes.data, values.nbytes)

    def cuda_reduce_axis_async(self, data, dtype, rows, cols, stride, order, axis, op, out, stream, kernel="auto",
                               accumulator="wide"):
        self.cuda_reduce_axis(data, dtype, rows, cols, stride, order, axis, op, out, stream, False, kernel, accumulator)

    def cuda_synchronize(self, stream):
        pass


def _write(out, op, raw, dtype, record, indices, maxima):
    """What the CUDA entry points write at `out`: values, or one record per segment (argmin and
    argmax: the value, then the int64 index; minmax: min, then max)."""
    as_words = np.dtype(f"u{_api._itemsize(dtype)}")  # the values' bits
    if op in ("argmin", "argmax"):
        records = np.zeros((raw.size // as_words.itemsize, 2), dtype=np.int64)
        if indices is not None:
            records[:, 1] = indices.view(np.int64)
        raw = records.view(np.uint8).ravel()
    elif op == "minmax":
        raw = np.stack([raw.view(as_words), (maxima if maxima is not None else raw).view(as_words)], axis=1).ravel()
    ctypes.memmove(out, raw.ctypes.data, raw.nbytes)
    return record


def _empty(a, count, dtype):
    t = np.empty(count, dtype=_arrays._numpy_dtype(dtype))
    return t, t.ctypes.data


def _scalar(a, value, dtype):
    return np.asarray(value, dtype=_arrays._numpy_dtype(dtype))  # 0-d, as a device library's scalar


@pytest.fixture
def streams(monkeypatch):
    seen = []
    stand_in = Stand_in(_api._xreduce, seen)
    for module in (_api, _arrays, _device):
        monkeypatch.setattr(module, "_xreduce", stand_in)
    monkeypatch.setattr(_arrays, "_status_cache", {})
    monkeypatch.setitem(_device._DEVICE_RESULTS, LIBRARY, (_empty, _scalar))
    return seen


def test_stand_in_matches_the_extension():
    if not _api._xreduce.has_cuda:
        pytest.skip("built without CUDA: no entry points to compare with")
    for name in ("cuda_reduce", "cuda_reduce_axis", "cuda_reduce_segments", "cuda_reduce_async",
                 "cuda_reduce_axis_async", "cuda_synchronize"):
        doc = getattr(_api._xreduce, name).__doc__  # "name(data: int, n: int, ...) -> ..."
        names = re.findall(r"(\w+): ", doc[doc.index("(") + 1:doc.index(")")])
        assert names == list(inspect.signature(getattr(Stand_in, name)).parameters)[1:], doc


def test_whole_arrays(streams):
    x = np.arange(1, 11, dtype=np.float32)
    s = xr.sum(DeviceArray(x), exact=True)
    assert isinstance(s, np.ndarray) and s.shape == () and s == 55 and s.dtype == np.float32
    assert xr.argmax(DeviceArray(x)) == 9 and xr.argmax(DeviceArray(x)).dtype == np.int64
    lo, hi = xr.minmax(DeviceArray(x))
    assert (lo, hi) == (1, 10)
    assert xr.sum(DeviceArray(np.int8([100, 100]))).dtype == np.int64
    assert xr.sum(DeviceArray(x), keepdims=True).shape == (1,)
    assert set(streams) == {7}


def test_axes_and_layouts(streams):
    m = np.arange(24, dtype=np.int32).reshape(4, 6)
    for name, v in (("C", m), ("F", np.asfortranarray(m)), ("rows", np.repeat(m, 2, axis=0)[::2])):
        for axis in (0, 1, -1):
            got = xr.sum(DeviceArray(v), axis=axis)
            np.testing.assert_array_equal(got, m.sum(axis=axis), err_msg=name)
        lo, hi = xr.minmax(DeviceArray(v), axis=0, keepdims=True)
        np.testing.assert_array_equal(lo, m.min(axis=0, keepdims=True))
        np.testing.assert_array_equal(hi, m.max(axis=0, keepdims=True))
    assert xr.max(DeviceArray(m[:, 2])) == m[:, 2].max()  # a strided column, in place
    with pytest.raises(ValueError, match="contiguous"):
        xr.sum(DeviceArray(np.repeat(m, 2, axis=0)[::2]))  # gaps, axis=None: not on a device
    for name, v in (("C", m), ("F", np.asfortranarray(m)), ("rows", np.repeat(m, 2, axis=0)[::2])):
        for axis in (0, 1):
            np.testing.assert_array_equal(xr.argmax(DeviceArray(v), axis=axis), m.argmax(axis=axis), err_msg=name)
            np.testing.assert_array_equal(xr.argmin(DeviceArray(v), axis=axis), m.argmin(axis=axis), err_msg=name)
    assert xr.argmax(DeviceArray(m[:, 2])) == 3  # a strided column
    with pytest.raises(ValueError, match="zero-size"):
        xr.argmax(DeviceArray(np.zeros((3, 0), dtype=np.float32)), axis=1)
    out = np.empty(6, dtype=np.int64)
    assert xr.sum(DeviceArray(m), axis=0, out=out) is out
    np.testing.assert_array_equal(out, m.sum(axis=0))


def test_segments_and_records(streams):
    x = np.arange(10, dtype=np.float64)
    offsets = np.array([0, 4, 4, 10], dtype=np.int64)
    np.testing.assert_array_equal(xr.reduce_segments(DeviceArray(x), DeviceArray(offsets)), [6, 0, 39])
    np.testing.assert_array_equal(xr.reduce_segments(DeviceArray(x), DeviceArray(offsets), op="argmax"), [3, -1, 5])
    lo, hi = xr.reduce_segments(DeviceArray(x), DeviceArray(offsets), op="minmax")
    np.testing.assert_array_equal(lo, [0, np.inf, 4])
    np.testing.assert_array_equal(hi, [3, -np.inf, 9])
    with pytest.raises(TypeError, match="int64"):
        xr.reduce_segments(DeviceArray(x), DeviceArray(offsets.astype(np.int32)))
    r = xr.Reducer("cuda")
    assert r.record(DeviceArray(x), "max", repeat=2).value == 9
    with pytest.raises(ValueError, match="host memory"):
        r.record(x)
    assert r.reduce(DeviceArray(x), "prod") == 0


def test_legacy_default_stream(streams):
    xr.sum(DeviceArray(np.ones(4, dtype=np.float32), stream=1))
    assert streams == [0]
