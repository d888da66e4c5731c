"""Arrays as xreduce reads them: DLPack, the CUDA array interface and the buffer protocol taken in
place, their types, and how a shape, strides and an axis map onto xreduce's matrices."""

from __future__ import annotations

import builtins
import math
import threading
from typing import Any, NamedTuple

import numpy as np

from . import _xreduce
from ._xreduce import BackendUnavailable

_BACKENDS = ("cuda", "opencl", "omp")
_HOST_ORDER = ("omp", "opencl")  # backend="auto" for host arrays
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13
_CAI_TYPES = {"<i1": "i8", "|i1": "i8", "<u1": "u8", "|u1": "u8", "<i4": "i32", "<u4": "u32", "<i8": "i64",
              "<u8": "u64", "<f2": "f16", "<f4": "f32", "<f8": "f64"}
_AxisError = getattr(np, "exceptions", np).AxisError  # a ValueError and IndexError; np.exceptions since 1.25
_CONTIGUOUS_HINT = "np.ascontiguousarray(x) (or the array library's own contiguous copy)"


# What backend_statuses() says of each backend, read once.
_status_cache: dict = {}
_status_lock = threading.Lock()


def _xreduce_status(name: str) -> dict:
    with _status_lock:
        if not _status_cache:
            _status_cache.update({s["backend"]: s for s in _xreduce.backend_statuses()})
    return _status_cache[name]


def _require_cuda() -> None:
    """BackendUnavailable, with the registry's reason, unless the CUDA backend is built and has a device."""
    if _status_cache.get("cuda", {}).get("usable") and _xreduce.has_cuda:  # the common case, without the lock
        return
    if not _xreduce.has_cuda or not _xreduce_status("cuda")["usable"]:
        raise BackendUnavailable("cuda backend unavailable: " + _xreduce_status("cuda")["reason"])


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


# The ops by name (xreduce/types.hpp): the folds, the pair ops and the mapped ops.
_OPS = ("sum", "prod", "min", "max", "argmin", "argmax", "minmax", "nansum", "nanmin", "nanmax", "count_nonzero",
        "sumsq", "asum", "mean", "any", "all")
# Ops with no value over nothing: a zero-size axis raises ValueError, as in NumPy.
_NO_IDENTITY = ("min", "max", "argmin", "argmax", "minmax", "nanmin", "nanmax")
# What combines the values of a mapped op over parts of an array (its fold), where not itself:
# a mean's over lines of one length is the mean of their means.
_FOLD_OF = {"sumsq": "sum", "asum": "sum", "nansum": "sum", "count_nonzero": "sum", "any": "max", "all": "min"}
# Ops whose values are truth values: 1 or 0 in the library's int64, bool here (NumPy's any, all).
_TRUTH_OPS = ("any", "all")
# Ops that test each element against zero: they read a bool array's bytes (0 and 1) as uint8.
_ZERO_TESTS = ("count_nonzero", "any", "all")


def _as_bool(values, library: str):
    """Truth values (int64 0 and 1, an array or scalar of `library`) as that library's bool."""
    return values.bool() if library == "torch" else values.astype(bool)


def _bool_as_bytes(x):
    """A NumPy, CuPy or PyTorch bool array as uint8 over the same memory (its elements are 0 and
    1); any other object as it is."""
    dtype = str(getattr(x, "dtype", ""))
    if dtype == "torch.bool":
        import torch
        return x.view(torch.uint8)
    if dtype == "bool" and hasattr(x, "view") and _library(x) in ("numpy", "cupy"):
        return x.view(np.uint8)
    return x


def _check_op(op: str) -> None:
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}: " + ", ".join(_OPS[:-1]) + " or " + _OPS[-1])


_LIBRARY_OF_TYPE: dict = {}  # type -> its top-level module's name, filled as types come


def _library(x) -> str:
    kind = type(x)
    library = _LIBRARY_OF_TYPE.get(kind)
    if library is None:
        library = _LIBRARY_OF_TYPE[kind] = kind.__module__.split(".")[0]
    return library


_torch_raw_stream = None  # torch's current raw stream of a device, found on first use


def _torch_stream(device_id: int) -> int:
    global _torch_raw_stream
    if _torch_raw_stream is None:
        import torch
        # What current_stream() reads, without making the stream object (older PyTorch: with it).
        _torch_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
            (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _torch_raw_stream(device_id)


def _caller_stream(x, library: str, device_id: int) -> int:
    """The stream the caller's library is working on: where the reduction is ordered."""
    if library == "torch":
        return _torch_stream(device_id)
    if library == "cupy":
        import cupy
        with cupy.cuda.Device(device_id):
            return cupy.cuda.get_current_stream().ptr
    return 0


# torch dtype -> xreduce type name (uint32 and uint64 came with PyTorch 2.3), made on first use.
_TORCH_TYPES: dict = {}


def _acquire_torch_cuda(x):
    """A CUDA tensor through its own attributes: the pointer, shape and strides its DLPack capsule
    holds, at a fraction of a capsule's cost (a call of a few microseconds matters on a GPU).
    None where DLPack must speak (types xreduce does not reduce, negated views)."""
    if not _TORCH_TYPES:
        import torch
        for name, dtype in (("int8", "i8"), ("uint8", "u8"), ("int32", "i32"), ("uint32", "u32"), ("int64", "i64"),
                            ("uint64", "u64"), ("float16", "f16"), ("bfloat16", "bf16"), ("float32", "f32"),
                            ("float64", "f64")):
            if hasattr(torch, name):
                _TORCH_TYPES[getattr(torch, name)] = dtype
    dtype = _TORCH_TYPES.get(x.dtype)
    if dtype is None or x.is_neg():
        return None
    _require_cuda()
    device_id = x.get_device()
    return _Array(x, x.data_ptr(), tuple(x.shape), x.stride(), dtype, _KDL_CUDA, device_id, _torch_stream(device_id),
                  "torch")


def _acquire(x) -> _Array:
    library = _library(x)
    if library == "torch" and getattr(x, "is_cuda", False):
        a = _acquire_torch_cuda(x)
        if a is not None:
            return a
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
    if ndim == 1:  # first: the common case
        n = a.shape[0]
        if a.strides[0] == 1 or n <= 1:
            return _Plan("flat", n)
        if a.strides[0] <= 0:
            raise _not_in_place(op, a)
        return _Plan("matrix", n, n, 1, a.strides[0], "C", 0)
    if ndim > 2:
        raise ValueError(f"xreduce reduces 1-D and 2-D arrays, not {ndim}-D; reshape the array (a view) first")
    if ndim == 0:
        return _Plan("flat", 1)
    n = math.prod(a.shape)
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
