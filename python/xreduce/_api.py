"""NumPy's conventions over xreduce's C++ API: arrays in place, axis, keepdims, out, backends."""

from __future__ import annotations

import builtins
import json
import math
import os
import subprocess
import tempfile
import threading
from typing import Any, NamedTuple

import numpy as np

from . import _xreduce
from ._xreduce import BackendUnavailable, DeviceError, KernelBuildError, Result

__all__ = [
    "sum", "prod", "min", "max", "argmin", "argmax", "minmax", "reduce_segments",
    "backends", "check", "Reducer", "Result", "BackendUnavailable", "DeviceError", "KernelBuildError",
]

_BACKENDS = ("cuda", "opencl", "omp")
_HOST_ORDER = ("omp", "opencl")  # backend="auto" for host arrays
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13
_CAI_TYPES = {"<i1": "i8", "|i1": "i8", "<u1": "u8", "|u1": "u8", "<i4": "i32", "<u4": "u32", "<i8": "i64",
              "<u8": "u64", "<f2": "f16", "<f4": "f32", "<f8": "f64"}
_AxisError = getattr(np, "exceptions", np).AxisError  # a ValueError and IndexError; np.exceptions since 1.25
_CONTIGUOUS_HINT = "np.ascontiguousarray(x) (or the array library's own contiguous copy)"


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


_NUMPY_DTYPES = {name: np.dtype(t) for name, t in (("i8", np.int8), ("u8", np.uint8), ("i32", np.int32),
                                                   ("u32", np.uint32), ("i64", np.int64), ("u64", np.uint64),
                                                   ("f16", np.float16), ("f32", np.float32), ("f64", np.float64))}


def _numpy_dtype(name: str):
    """The NumPy dtype of an xreduce type name; bf16 needs ml_dtypes (else f32, which holds it exactly)."""
    if name == "bf16":
        bf16 = _bfloat16()
        return np.dtype(bf16) if bf16 is not None else _NUMPY_DTYPES["f32"]
    return _NUMPY_DTYPES[name]


class _Array(NamedTuple):
    """An input read in place: pointer, shape and strides in elements, type, device, stream."""
    keep: Any          # what keeps the memory alive (the array, or its DLPack view)
    data: int
    shape: tuple
    strides: tuple
    dtype: str
    device_type: int
    device_id: int
    stream: int        # CUDA: the cudaStream_t to order the reduction on (0: the legacy default)
    library: str       # "numpy", "torch", "cupy", "jax", ... : the module the array came from


def _library(x) -> str:
    return type(x).__module__.split(".")[0]


def _caller_stream(x, library: str, device_id: int) -> int:
    """The stream the caller's library is working on: where the reduction is ordered."""
    if library == "torch":
        import torch
        return torch.cuda.current_stream(device_id).cuda_stream
    if library == "cupy":
        import cupy
        with cupy.cuda.Device(device_id):
            return cupy.cuda.get_current_stream().ptr
    return 0


def _acquire(x) -> _Array:
    library = _library(x)
    if isinstance(x, np.ndarray) and not x.dtype.isnative:
        raise TypeError(f"xreduce reads native byte order, not {x.dtype.str}: x.astype(x.dtype.newbyteorder('='))")
    if isinstance(x, np.ndarray) and x.dtype.kind == "V" and x.dtype.name == "bfloat16":
        v = _xreduce.view(x.view(np.uint16), "bf16")
        return _Array(v, v.data, tuple(v.shape), tuple(v.strides), "bf16", _KDL_CPU, 0, 0, "numpy")
    if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
        device_type, device_id = (int(d) for d in x.__dlpack_device__())
        if device_type in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            _require_cuda()
            stream = _caller_stream(x, library, device_id)
            # DLPack: the producer makes the data ready on the stream the consumer names (1: the
            # legacy default stream, which cudaStream_t 0 names).
            v = _xreduce.view(x.__dlpack__(stream=stream or 1))
            return _Array((x, v), v.data, tuple(v.shape), tuple(v.strides), v.dtype, _KDL_CUDA, device_id,
                          stream, library)
        if device_type not in (_KDL_CPU, _KDL_CUDA_HOST):
            raise TypeError(f"xreduce reduces host and CUDA arrays, not DLPack device type {device_type}")
    elif hasattr(x, "__cuda_array_interface__"):
        _require_cuda()
        cai = x.__cuda_array_interface__
        if cai.get("mask") is not None:
            raise TypeError("xreduce does not reduce masked arrays (__cuda_array_interface__ with a mask)")
        if cai["typestr"] not in _CAI_TYPES:
            raise TypeError(f"xreduce does not reduce __cuda_array_interface__ type {cai['typestr']!r}")
        dtype = _CAI_TYPES[cai["typestr"]]
        size = np.dtype(cai["typestr"]).itemsize
        shape = tuple(cai["shape"])
        if cai.get("strides") is None:
            strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
        else:
            if any(s % size for s in cai["strides"]):
                raise ValueError("__cuda_array_interface__ strides that are not whole elements")
            strides = tuple(s // size for s in cai["strides"])
        stream = cai.get("stream") or 0
        return _Array(x, int(cai["data"][0]), shape, strides, dtype, _KDL_CUDA, 0, 0 if stream == 1 else stream,
                      library)
    v = _xreduce.view(x)
    return _Array((x, v), v.data, tuple(v.shape), tuple(v.strides), v.dtype, _KDL_CPU, 0, 0,
                  "numpy" if isinstance(x, np.ndarray) else library)


# One reducer per (backend, device), made on first use: device discovery and kernel builds
# happen once; a Reducer serves concurrent calls one after the other (xreduce/reducer.hpp).
_reducers: dict = {}
_reducers_lock = threading.Lock()


def _shared_reducer(backend: str, device) -> _xreduce.Reducer:
    key = (backend, "" if device is None else str(device))
    with _reducers_lock:
        r = _reducers.get(key)
        if r is None:
            r = _reducers[key] = _xreduce.Reducer(backend, -1, key[1])
        return r


def _host_backend(backend: str) -> str:
    if backend not in ("auto",) + _BACKENDS:
        raise ValueError(f"backend must be 'auto', 'cuda', 'opencl' or 'omp', not {backend!r}")
    if backend == "cuda":
        raise ValueError("backend='cuda' reduces arrays on a CUDA device (CuPy, PyTorch, JAX, ...); "
                         "this array is in host memory: use 'omp' or 'opencl'")
    if backend != "auto":
        return backend
    reasons = []
    for name in _HOST_ORDER:
        status = _xreduce_status(name)
        if status["usable"]:
            return name
        reasons.append(f"{name}: {status['reason']}")
    raise BackendUnavailable("no host backend is usable: " + "; ".join(reasons))


_status_cache: dict = {}


def _xreduce_status(name: str) -> dict:
    with _reducers_lock:
        if not _status_cache:
            _status_cache.update({s["backend"]: s for s in _xreduce.backend_statuses()})
    return _status_cache[name]


def _normalize_axis(axis, ndim: int):
    if axis is None:
        return None
    if isinstance(axis, tuple):
        if len(axis) == ndim and sorted(a % ndim if -ndim <= a < ndim else a for a in axis) == list(range(ndim)):
            return None
        if len(axis) != 1:
            raise ValueError(f"axis {axis}: xreduce reduces one axis or all of them")
        axis = axis[0]
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be None or an int, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise _AxisError(int(axis), ndim)
    return int(axis) % ndim


def _matrix(a: _Array):
    """(rows, cols, stride, order) of a 2-D array read in place, or None."""
    rows, cols = a.shape
    s0, s1 = a.strides
    if rows == 0 or cols == 0:
        return rows, cols, 0, "C"
    if rows <= 1:
        s0 = builtins.max(cols, 1)
    if cols <= 1:
        s1 = 1 if rows <= 1 or s0 != 1 else builtins.max(rows, 1)
    if s1 == 1 and s0 >= cols:
        return rows, cols, s0, "C"
    if s0 == 1 and s1 >= rows:
        return rows, cols, s1, "F"
    return None


def _not_in_place(what: str, a: _Array) -> ValueError:
    return ValueError(f"{what}: xreduce reads arrays in place and cannot read shape {a.shape} with strides "
                      f"{a.strides} (in elements) that way; make it contiguous first, e.g. {_CONTIGUOUS_HINT}")


def _is_contiguous(a: _Array) -> bool:
    if 0 in a.shape:
        return True
    expected = 1
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _is_f_contiguous(a: _Array) -> bool:
    if 0 in a.shape:
        return True
    expected = 1
    for n, s in zip(a.shape, a.strides):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


class _Plan(NamedTuple):
    kind: str            # "flat": reduce n elements at data; "matrix": reduce_axis over a matrix;
                         # "lines": the whole of a matrix, its lines (rows, or columns) first
    n: int
    rows: int = 0
    cols: int = 0
    stride: int = 0
    order: str = "C"
    axis: int = 0        # reduce_axis's axis (1: one value per row)


def _plan(a: _Array, axis, op: str) -> _Plan:
    ndim = len(a.shape)
    if ndim > 2:
        raise ValueError(f"xreduce reduces 1-D and 2-D arrays, not {ndim}-D; reshape the array (a view) first")
    n = math.prod(a.shape)
    if ndim == 0:
        return _Plan("flat", 1)
    if ndim == 1:
        if a.strides[0] == 1 or n <= 1:
            return _Plan("flat", n)
        if a.strides[0] <= 0 or op in ("argmin", "argmax"):
            raise _not_in_place(op, a)
        return _Plan("matrix", n, n, 1, a.strides[0], "C", 0)
    m = _matrix(a)
    if axis is None:
        if _is_contiguous(a) or (_is_f_contiguous(a) and op not in ("argmin", "argmax")):
            return _Plan("flat", n)
        if m is None:
            raise _not_in_place(f"{op} with axis=None", a)
        rows, cols, stride, order = m
        return _Plan("lines", n, rows, cols, stride, order, 1 if order == "C" else 0)
    if m is None:
        raise _not_in_place(f"{op} with axis={axis}", a)
    rows, cols, stride, order = m
    return _Plan("matrix", n, rows, cols, stride, order, 1 if axis == 1 else 0)


def _values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """The bytes of a segmented result as its type (bf16 without ml_dtypes: widened to f32)."""
    if dtype == "bf16" and _bfloat16() is None:
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return raw.view(_numpy_dtype(dtype))


def _host_scalar(value, dtype: str):
    return _numpy_dtype(dtype).type(value)


def _finish(values, keepdims: bool, ndim: int, axis, out):
    """keepdims and out= for a result computed as `values` (a NumPy array or scalar)."""
    if keepdims:
        shape = list(np.shape(values))
        if axis is None:
            shape = [1] * builtins.max(ndim, 1) if ndim else []
        else:
            shape.insert(axis, 1)
        values = np.reshape(values, shape)
    if out is not None:
        out[...] = values
        return out
    return values


class Reducer:
    """One backend and device, for repeated calls: ``Reducer("omp" | "opencl" | "cuda", device=...)``.

    The module's functions share one Reducer per (backend, device); a Reducer of your own keeps
    its device, kernels and staging buffers for your calls. Calls release the GIL; concurrent
    calls on one Reducer run one after the other, calls on different Reducers run in parallel.
    Raises BackendUnavailable (with the reason) when the backend is not built or has no device.
    """

    def __init__(self, backend: str = "auto", device: int | str | None = None, platform: int = -1):
        if backend == "auto":
            backend = _host_backend("auto")
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be 'auto', 'cuda', 'opencl' or 'omp', not {backend!r}")
        self.name = backend
        self._device = device
        if backend == "cuda":
            _require_cuda()
            self._reducer = None
        else:
            self._reducer = _xreduce.Reducer(backend, platform, "" if device is None else str(device))

    @property
    def backend(self) -> str:
        return self.name

    @property
    def device(self) -> str:
        return self._reducer.device if self._reducer is not None else str(self._device or 0)

    def kernels(self) -> list:
        """The ladder: name, note, kind, ops, types, exact, blocks of each kernel ("auto" included)."""
        return self._reducer.kernels() if self._reducer is not None else _xreduce.cuda_kernels()

    def segment_kernels(self) -> list:
        """The strategies of segmented reductions, with the layouts each reduces."""
        return self._reducer.segment_kernels() if self._reducer is not None else _xreduce.cuda_segment_kernels()

    def reduce(self, x, op: str = "sum", *, axis=None, exact: bool = False, kernel: str = "auto",
               threads: int = 0, keepdims: bool = False, out=None):
        """Reduces x with op ("sum", "prod", "min", "max", "argmin", "argmax", "minmax") on this backend."""
        return _reduce(x, op, axis, exact, self.name, self._device, keepdims, out, kernel, threads, self._reducer)

    def record(self, x, op: str = "sum", *, exact: bool = False, kernel: str = "auto", threads: int = 0,
               repeat: int = 1, warmup: int = 0) -> Result:
        """The whole reduction's record (a Result): value, index (arg ops), maximum (minmax), n,
        backend, device, kernel that ran, launches, median kernel and transfer times over `repeat`
        runs after `warmup`, bytes/s, rounding depth. x: a contiguous array."""
        if op not in ("sum", "prod", "min", "max", "argmin", "argmax", "minmax"):
            raise ValueError(f"unknown op {op!r}: sum, prod, min, max, argmin, argmax or minmax")
        a = _acquire(x)
        if not _is_contiguous(a):
            raise _not_in_place("record", a)
        n = math.prod(a.shape)
        if a.device_type == _KDL_CUDA:
            return _xreduce.cuda_reduce(a.data, n, a.dtype, op, a.stream, exact, kernel, "wide", repeat, warmup)
        if self._reducer is None:
            raise ValueError("a CUDA Reducer reduces arrays on a CUDA device; this array is in host memory")
        return self._reducer.reduce(a.data, n, a.dtype, op, exact, kernel, threads, "wide", repeat, warmup)

    def reduce_segments(self, x, offsets, op: str = "sum", *, exact: bool = False, kernel: str = "auto",
                        threads: int = 0):
        """One value per CSR segment [offsets[i], offsets[i + 1]) of the 1-D array x."""
        return _segments(x, offsets, op, exact, self.name, self._device, kernel, threads, self._reducer)

    def __repr__(self) -> str:
        return f"xreduce.Reducer({self.name!r}, device={self.device!r})"


def _reduce(x, op, axis, exact, backend, device, keepdims, out, kernel="auto", threads=0, reducer=None):
    if op not in ("sum", "prod", "min", "max", "argmin", "argmax", "minmax"):
        raise ValueError(f"unknown op {op!r}: sum, prod, min, max, argmin, argmax or minmax")
    a = _acquire(x)
    ndim = len(a.shape)
    axis = _normalize_axis(axis, ndim)
    if a.device_type == _KDL_CUDA:
        return _cuda_reduce(a, op, axis, exact, backend, keepdims, out, kernel)
    if reducer is None:
        reducer = _shared_reducer(_host_backend(backend), device)
    if op == "minmax":
        plan = _plan(a, axis, op)
        if plan.kind == "flat":  # one read for both
            r = reducer.reduce(a.data, plan.n, a.dtype, "minmax", False, kernel, threads)
            lo, hi = _host_scalar(r.value, r.dtype), _host_scalar(r.maximum, r.dtype)
        else:  # segmented reductions take the folds: one pass each
            lo = _host_reduce(reducer, a, "min", axis, exact, kernel, threads)
            hi = _host_reduce(reducer, a, "max", axis, exact, kernel, threads)
        if out is not None:
            out = tuple(out)
            return (_finish(lo, keepdims, ndim, axis, out[0]), _finish(hi, keepdims, ndim, axis, out[1]))
        return (_finish(lo, keepdims, ndim, axis, None), _finish(hi, keepdims, ndim, axis, None))
    return _finish(_host_reduce(reducer, a, op, axis, exact, kernel, threads), keepdims, ndim, axis, out)


def _host_reduce(reducer, a: _Array, op, axis, exact, kernel, threads):
    plan = _plan(a, axis, op)
    if plan.kind == "flat":
        r = reducer.reduce(a.data, plan.n, a.dtype, op, exact, kernel, threads)
        if op in ("argmin", "argmax"):
            return np.int64(r.index)
        return _host_scalar(r.value, r.dtype)
    if plan.kind == "lines":
        return _host_lines(reducer, a, op, plan, exact, kernel, threads)
    if op in ("argmin", "argmax"):
        return _host_arg_axis(reducer, a, op, plan, kernel, threads)
    length = plan.rows if plan.axis == 0 else plan.cols
    count = plan.cols if plan.axis == 0 else plan.rows
    if length == 0 and op in ("min", "max"):
        raise ValueError(f"{op} of a zero-size axis has no value (as in NumPy: no identity)")
    raw, dtype, _ = reducer.reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis,
                                        op, exact, kernel, threads)
    values = _values(raw, dtype)
    if len(a.shape) == 1:
        return values[0]
    return values


def _host_lines(reducer, a: _Array, op, plan: _Plan, exact, kernel, threads):
    """The whole of a 2-D array that is not one contiguous run: each line (a row of a C-order
    array, a column of a Fortran-order one) first, then their results. Min, max and integer sums
    and products come out as one reduction gives them; float sums and products round in that
    order; an exact sum would round twice, so it is refused."""
    if op == "sum" and exact and a.dtype in ("f16", "bf16", "f32", "f64"):
        raise ValueError("an exact sum with axis=None reads the array in one piece, and this one has gaps between "
                         f"its {'rows' if plan.order == 'C' else 'columns'}; make it contiguous first, e.g. "
                         f"{_CONTIGUOUS_HINT}")
    if op not in ("argmin", "argmax"):
        raw, dtype, _ = reducer.reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis,
                                            op, exact, kernel, threads)
        r = reducer.reduce(raw.ctypes.data, raw.size // _itemsize(dtype), dtype, op, exact, kernel, threads)
        return _host_scalar(r.value, r.dtype)
    lines, length = (plan.rows, plan.cols) if plan.order == "C" else (plan.cols, plan.rows)
    step = plan.stride * _itemsize(a.dtype)
    found = [reducer.reduce(a.data + i * step, length, a.dtype, op, False, kernel, threads) for i in range(lines)]
    kind = np.float64 if a.dtype in ("f16", "bf16", "f32", "f64") else np.uint64 if a.dtype[0] == "u" else np.int64
    values = np.array([r.value for r in found], dtype=kind)
    first = np.array([r.index for r in found], dtype=np.int64)
    best = int(np.argmin(values) if op == "argmin" else np.argmax(values))  # NumPy's rules: the first NaN
    if plan.order == "C":
        return np.int64(best * plan.cols + first[best])
    # Columns: of those holding the extreme (or a NaN), the one whose first occurrence comes
    # first in C order: the smallest row, then the smallest column.
    target = values[best]
    same = np.flatnonzero(np.isnan(values)) if target != target else np.flatnonzero(values == target)
    column = int(same[np.lexsort((same, first[same]))[0]])
    return np.int64(first[column] * plan.cols + column)


def _itemsize(dtype: str) -> int:
    return {"i8": 1, "u8": 1, "f16": 2, "bf16": 2, "i32": 4, "u32": 4, "f32": 4}.get(dtype, 8)


def _host_arg_axis(reducer, a: _Array, op, plan: _Plan, kernel, threads):
    """argmin/argmax along an axis: one whole-array reduction per slice, each slice contiguous."""
    rows, cols = a.shape
    along = plan.axis  # 1: along each row
    count, length = (rows, cols) if along == 1 else (cols, rows)
    step = a.strides[1] if along == 1 else a.strides[0]
    if length > 1 and step != 1:
        raise ValueError(f"{op} along axis {along}: xreduce's segmented reductions take sum, prod, min and max; "
                         f"the arg ops run slice by slice and need each slice contiguous (axis {along} of a "
                         f"{'C' if along == 1 else 'Fortran'}-order array); pass such an array, e.g. "
                         f"np.ascontiguousarray(x) or np.asfortranarray(x)")
    if length == 0:
        raise ValueError(f"{op} of a zero-size axis has no value (as in NumPy)")
    start = a.strides[0] if along == 1 else a.strides[1]
    size = _itemsize(a.dtype)
    index = np.empty(count, dtype=np.int64)
    for i in range(count):
        index[i] = reducer.reduce(a.data + i * start * size, length, a.dtype, op, False, kernel, threads).index
    return index


def _segments(x, offsets, op, exact, backend, device, kernel="auto", threads=0, reducer=None):
    a = _acquire(x)
    if len(a.shape) != 1:
        raise ValueError(f"reduce_segments takes a 1-D array, not {len(a.shape)}-D")
    if a.shape[0] > 1 and a.strides[0] != 1:
        raise _not_in_place("reduce_segments", a)
    if a.device_type == _KDL_CUDA:
        return _cuda_segments(a, offsets, op, exact, kernel)
    offs = offsets if isinstance(offsets, np.ndarray) and offsets.dtype == np.int64 and offsets.ndim == 1 \
        and offsets.flags.c_contiguous else np.ascontiguousarray(offsets, dtype=np.int64)
    if offs.ndim != 1:
        raise ValueError("offsets must be 1-D")
    if reducer is None:
        reducer = _shared_reducer(_host_backend(backend), device)
    raw, dtype, _ = reducer.reduce_segments(a.data, a.shape[0], a.dtype, offs.ctypes.data, offs.shape[0], op, exact,
                                            kernel, threads)
    return _values(raw, dtype)


# ---- CUDA arrays -----------------------------------------------------------------------------

def _require_cuda() -> None:
    """BackendUnavailable, with the registry's reason, unless the CUDA backend is built and has a device."""
    if not _xreduce.has_cuda or not _xreduce_status("cuda")["usable"]:
        raise BackendUnavailable("cuda backend unavailable: " + _xreduce_status("cuda")["reason"])


def _torch_empty(a: _Array, count: int, dtype: str):
    import torch
    names = {"i8": "int8", "u8": "uint8", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64",
             "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
    torch_dtype = getattr(torch, names[dtype], None)  # uint32 and uint64 came with PyTorch 2.3
    if torch_dtype is None:
        raise TypeError(f"this PyTorch has no {names[dtype]} tensors for xreduce's {dtype} results")
    t = torch.empty(count, dtype=torch_dtype, device=f"cuda:{a.device_id}")
    return t, t.data_ptr()


def _torch_scalar(a: _Array, value, dtype: str):
    import torch
    host = torch.from_numpy(np.asarray(value, dtype=_numpy_dtype(dtype if dtype != "bf16" else "f32")))
    if dtype == "bf16":
        host = host.to(torch.bfloat16)
    return host.to(f"cuda:{a.device_id}")


def _cupy_empty(a: _Array, count: int, dtype: str):
    import cupy
    with cupy.cuda.Device(a.device_id):
        t = cupy.empty(count, dtype=_numpy_dtype(dtype))
    return t, t.data.ptr


def _cupy_scalar(a: _Array, value, dtype: str):
    import cupy
    with cupy.cuda.Device(a.device_id):
        return cupy.asarray(np.asarray(value, dtype=_numpy_dtype(dtype)))


def _jax_scalar(a: _Array, value, dtype: str):
    import jax
    import jax.numpy as jnp
    gpu = [d for d in jax.devices() if d.platform == "gpu" and d.id == a.device_id]
    return jax.device_put(jnp.asarray(value, dtype=_numpy_dtype(dtype)), gpu[0] if gpu else None)


# How results of CUDA arrays are made, by the array's library (its top-level module):
# empty(array, count, dtype) -> (an uninitialised 1-D array on the array's device, its pointer),
# scalar(array, value, dtype) -> a 0-d array on the array's device. None: not available.
_DEVICE_RESULTS = {
    "torch": (_torch_empty, _torch_scalar),
    "cupy": (_cupy_empty, _cupy_scalar),
    "jax": (None, _jax_scalar),
    "jaxlib": (None, _jax_scalar),
}


def _device_empty(a: _Array, count: int, dtype: str):
    empty = _DEVICE_RESULTS.get(a.library, (None, None))[0]
    if empty is None:
        raise TypeError(f"xreduce returns device arrays of CuPy and PyTorch; reduce {a.library} arrays with "
                        "axis=None, or pass them through one of those libraries (DLPack, no copy)")
    return empty(a, count, dtype)


def _device_scalar(a: _Array, value, dtype: str):
    scalar = _DEVICE_RESULTS.get(a.library, (None, None))[1]
    return scalar(a, value, dtype) if scalar is not None else _host_scalar(value, dtype)


def _cuda_reduce(a: _Array, op, axis, exact, backend, keepdims, out, kernel):
    if backend not in ("auto", "cuda"):
        raise ValueError(f"backend={backend!r}: this array is on a CUDA device; use 'cuda' or 'auto'")
    plan = _plan(a, axis, op)
    ops = ("min", "max") if op == "minmax" and plan.kind != "flat" else (op,)
    results = []
    for o in ops:
        if plan.kind == "flat" and o == "minmax":  # one read for both
            r = _xreduce.cuda_reduce(a.data, plan.n, a.dtype, o, a.stream, False, kernel)
            results += [_device_scalar(a, r.value, r.dtype), _device_scalar(a, r.maximum, r.dtype)]
        elif plan.kind == "lines":
            raise _not_in_place(f"{op} with axis=None of a CUDA array", a)
        elif plan.kind == "flat":
            r = _xreduce.cuda_reduce(a.data, plan.n, a.dtype, o, a.stream, exact, kernel)
            value = r.index if o in ("argmin", "argmax") else r.value
            results.append(_device_scalar(a, value, "i64" if o in ("argmin", "argmax") else r.dtype))
        else:
            if o in ("argmin", "argmax"):
                raise ValueError(f"{o} with an axis: xreduce's segmented reductions take sum, prod, min and max")
            count = plan.cols if plan.axis == 0 else plan.rows
            dtype = _xreduce.result_dtype(o, a.dtype)
            values, ptr = _device_empty(a, count, dtype)
            _xreduce.cuda_reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis, o,
                                      ptr, a.stream, exact, kernel)
            results.append(values[0] if len(a.shape) == 1 else values)
    if keepdims:
        shape_of = (lambda v: [1] * len(a.shape)) if axis is None else \
            (lambda v: list(v.shape[:axis]) + [1] + list(v.shape[axis:]))
        results = [v.reshape(shape_of(v)) for v in results]
    if out is not None:
        outs = tuple(out) if op == "minmax" else (out,)
        for o, v in zip(outs, results):
            o[...] = v
        results = list(outs)
    return tuple(results) if op == "minmax" else results[0]


def _cuda_segments(a: _Array, offsets, op, exact, kernel):
    o = _acquire(offsets)
    if o.device_type != _KDL_CUDA or o.dtype != "i64" or len(o.shape) != 1 or (o.shape[0] > 1 and o.strides[0] != 1):
        raise TypeError("offsets of a CUDA array: a contiguous 1-D int64 array on the same device")
    if o.shape[0] < 1:
        raise ValueError("offsets must hold at least one value ([0] is no segments)")
    count = o.shape[0] - 1
    values, ptr = _device_empty(a, count, _xreduce.result_dtype(op, a.dtype))
    _xreduce.cuda_reduce_segments(a.data, a.shape[0], a.dtype, o.data, count, op, ptr, a.stream, exact, kernel)
    return values


# ---- the functions, by NumPy's names ---------------------------------------------------------

_COMMON = """
    axis: None (every element), or 0, 1, -1 for 1-D and 2-D arrays.
    exact: float sums return the correctly rounded exact sum (the same bits on every backend).
    backend: "auto" (host arrays: omp, else opencl; CUDA arrays: cuda), "cuda", "opencl", "omp".
    device: the backend's device, an index or a name substring (OpenCL); CUDA arrays run on their own device.
    keepdims, out: as in NumPy (out receives the values: a copy of the result, never of the input).

    x is read in place: any array with __dlpack__, __cuda_array_interface__ or the buffer
    protocol (NumPy, CuPy, PyTorch, JAX, ...), C or Fortran order, rows or columns strided
    (axis=None of such a host array: line by line, then the lines' results; exact sums need it
    contiguous); an array that cannot be read in place raises ValueError saying how to make it
    contiguous.
    NumPy in, NumPy out; a CUDA array in, an array of its library on its device out, ordered on
    the caller's current stream.
"""


def sum(x, axis=None, *, exact: bool = False, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "sum", axis, exact, backend, device, keepdims, out)


def prod(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "prod", axis, False, backend, device, keepdims, out)


def min(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "min", axis, False, backend, device, keepdims, out)


def max(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "max", axis, False, backend, device, keepdims, out)


def argmin(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "argmin", axis, False, backend, device, keepdims, out)


def argmax(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "argmax", axis, False, backend, device, keepdims, out)


def minmax(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "minmax", axis, False, backend, device, keepdims, out)


sum.__doc__ = """Sum of the elements of x (NumPy's sum), one read of the data.

    Differs from NumPy: i8, u8, i32 and u32 sum in 64 bits (i64, u64), as NumPy does on Linux;
    64-bit integer sums wrap. f16 and bf16 accumulate in f32 and return f32 (NumPy returns f16).
    A sum of only -0.0 terms is -0.0 and the sum of nothing is +0.0, as in NumPy. Float sums
    round in xreduce's order (a tree, not NumPy's pairwise order) unless exact=True.
""" + _COMMON
prod.__doc__ = """Product of the elements of x (NumPy's prod).

    Differs from NumPy: integer products keep the input type and wrap (NumPy widens i8, u8, i32
    and u32 to 64 bits); f16 and bf16 products return f32. The product of nothing is 1.
    Float products have no exact mode.
""" + _COMMON
min.__doc__ = """Smallest element of x (NumPy's min). Any NaN makes the result NaN, as in NumPy.

    Returns the input type (f16, bf16 included). The min of no elements raises ValueError.
""" + _COMMON
max.__doc__ = """Largest element of x (NumPy's max). Any NaN makes the result NaN, as in NumPy.

    Returns the input type (f16, bf16 included). The max of no elements raises ValueError.
""" + _COMMON
argmin.__doc__ = """Index of the first smallest element of x (NumPy's argmin), an int64.

    Ties go to the smallest index; a NaN wins, the first NaN's index, as in NumPy. With
    axis=None the index counts in C order, whatever the layout. Along an axis each slice must be
    contiguous (one whole-array reduction per slice).
""" + _COMMON
argmax.__doc__ = argmin.__doc__.replace("smallest element", "largest element").replace("argmin", "argmax")
minmax.__doc__ = """(min(x), max(x)) as a pair, by min's and max's rules.
""" + _COMMON


def reduce_segments(x, offsets, op: str = "sum", *, exact: bool = False, backend: str = "auto", device=None):
    """One value per CSR segment [offsets[i], offsets[i + 1]) of the 1-D array x.

    op: "sum", "prod", "min" or "max". offsets: len(offsets) - 1 segments, non-decreasing, from
    0 up to len(x) (ValueError naming the first bad position otherwise); int64 arrays are read in
    place, others converted. An empty segment gives the op's identity: sum 0, prod 1, min +inf
    or the type's largest value, max -inf or the type's lowest value. Values have the type of
    the whole-array reduction (sum of i32: i64; of f16: f32). For a CUDA x, offsets must be a
    contiguous int64 array on the same device.
    """
    return _segments(x, offsets, op, exact, backend, device)


def backends() -> list:
    """Every backend xreduce knows, as `reduce_cli --list` shows them: name, compiled, usable,
    the reason when not usable, and the devices (name, detail, platform, device, gpu)."""
    return _xreduce.backend_statuses()


def _reduce_cli() -> str:
    """$XR_REDUCE_CLI, else reduce_cli beside the package (installed), else in a build tree's apps/."""
    here = os.path.dirname(__file__)
    candidates = [os.environ.get("XR_REDUCE_CLI", ""), os.path.join(here, "reduce_cli"),
                  os.path.join(here, "..", "..", "apps", "reduce_cli")]
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    raise BackendUnavailable("check: no reduce_cli beside the package, in its build tree or at $XR_REDUCE_CLI "
                             "(xreduce built with XREDUCE_BUILD_APPS=OFF)")


def check(backend: str = "all", *, kernels=None, sizes=None, seed: int = 1, full: bool = False) -> dict:
    """The conformance matrix of `reduce_cli check`, as data: every usable backend, device and
    kernel, every op and type, against the exact host reference.

    Returns {"passed": bool, "seed", "notes", "devices_failed", "cases": [{backend, device,
    target, kernel, op, type, n, dist, seed, exact, pass, detail, reproducer}, ...]}.
    backend: "all", "cuda", "opencl", "omp"; kernels: names; sizes: element counts.
    """
    args = [_reduce_cli(), "check", "-b", backend, "--seed", str(int(seed))]
    if kernels:
        args += ["--kernel", ",".join(kernels)]
    if sizes:
        args += ["--sizes", ",".join(str(int(s)) for s in sizes)]
    if full:
        args.append("--full")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "check.json")
        proc = subprocess.run(args + ["--json", path], capture_output=True, text=True)
        if proc.returncode == 3:
            raise BackendUnavailable(proc.stderr.strip().removeprefix("reduce_cli: "))
        if proc.returncode not in (0, 1) or not os.path.exists(path):
            raise ValueError(proc.stderr.strip() or f"reduce_cli check exited with {proc.returncode}")
        with open(path) as f:
            report = json.load(f)
    report["passed"] = proc.returncode == 0
    return report
