"""Arrays on a CUDA device: results made by the array's own library on its device, and the CUDA
entry points called on the caller's stream."""

from __future__ import annotations

import math
import threading

import numpy as np

from . import _xreduce
from ._arrays import (_BACKENDS, _HOST_ORDER, _KDL_CUDA, _NO_IDENTITY, _TRUTH_OPS, _Array, _acquire, _as_bool,
                      _host_scalar, _not_in_place, _numpy_dtype, _plan, _xreduce_status)
from ._xreduce import BackendUnavailable

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


_TORCH_NAMES = {"i8": "int8", "u8": "uint8", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64",
                "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}


_TORCH_DTYPES: dict = {}  # xreduce type name -> torch dtype, made on first use


def _torch_empty(a: _Array, shape, dtype: str):
    import torch
    torch_dtype = _TORCH_DTYPES.get(dtype)
    if torch_dtype is None:
        torch_dtype = getattr(torch, _TORCH_NAMES[dtype], None)  # uint32 and uint64 came with PyTorch 2.3
        if torch_dtype is None:
            raise TypeError(f"this PyTorch has no {_TORCH_NAMES[dtype]} tensors for xreduce's {dtype} results")
        _TORCH_DTYPES[dtype] = torch_dtype
    if isinstance(a.keep, torch.Tensor):  # its own device, without parsing one
        t = a.keep.new_empty(shape, dtype=torch_dtype)
    else:
        t = torch.empty(shape, dtype=torch_dtype, device=torch.device("cuda", a.device_id))
    return t, t.data_ptr()


def _torch_scalar(a: _Array, value, dtype: str):
    import torch
    host = torch.from_numpy(np.asarray(value, dtype=_numpy_dtype(dtype if dtype != "bf16" else "f32")))
    if dtype == "bf16":
        host = host.to(torch.bfloat16)
    return host.to(f"cuda:{a.device_id}")


def _cupy_empty(a: _Array, shape, dtype: str):
    import cupy
    with cupy.cuda.Device(a.device_id):
        t = cupy.empty(shape, dtype=_numpy_dtype(dtype))
    return t, t.data.ptr


def _cupy_scalar(a: _Array, value, dtype: str):
    import cupy
    with cupy.cuda.Device(a.device_id):
        return cupy.asarray(np.asarray(value, dtype=_numpy_dtype(dtype)))


def _jax_x64() -> bool:
    import jax
    return bool(getattr(jax.config, "jax_enable_x64", False))


def _jax_device(a: _Array):
    import jax
    gpu = [d for d in jax.devices() if d.platform == "gpu" and d.id == a.device_id]
    return gpu[0] if gpu else None


def _jax_empty(a: _Array, shape, dtype: str):
    # A fresh buffer of JAX's, finished before xreduce writes to it; the caller waits for the
    # writes (_cuda_reduce), as JAX offers no stream to order them on.
    import jax
    import jax.numpy as jnp
    t = jax.device_put(jnp.zeros(shape, dtype=_numpy_dtype(dtype)), _jax_device(a))
    if t.dtype.itemsize != _numpy_dtype(dtype).itemsize:  # 64-bit types off: JAX made 32-bit ones
        raise TypeError(f"xreduce's {dtype} results need JAX's 64-bit types: jax.config.update('jax_enable_x64', True)")
    t.block_until_ready()
    return t, t.unsafe_buffer_pointer()


def _jax_scalar(a: _Array, value, dtype: str):
    import jax
    import jax.numpy as jnp
    return jax.device_put(jnp.asarray(value, dtype=_numpy_dtype(dtype)), _jax_device(a))


# How results of CUDA arrays are made, by the array's library (its top-level module):
# empty(array, shape, dtype) -> (an uninitialised array on the array's device, its pointer),
# scalar(array, value, dtype) -> a 0-d array on the array's device.
_DEVICE_RESULTS = {
    "torch": (_torch_empty, _torch_scalar),
    "cupy": (_cupy_empty, _cupy_scalar),
    "jax": (_jax_empty, _jax_scalar),
    "jaxlib": (_jax_empty, _jax_scalar),
}
_SYNCHRONOUS_RESULTS = ("jax", "jaxlib")  # libraries whose results xreduce waits for


def _device_empty(a: _Array, shape, dtype: str):
    empty = _DEVICE_RESULTS.get(a.library, (None, None))[0]
    if empty is None:
        raise TypeError(f"xreduce returns device arrays of CuPy, PyTorch and JAX; pass {a.library} arrays through "
                        "one of those libraries (DLPack, no copy)")
    return empty(a, shape, dtype)


def _device_scalar(a: _Array, value, dtype: str):
    scalar = _DEVICE_RESULTS.get(a.library, (None, None))[1]
    return scalar(a, value, dtype) if scalar is not None else _host_scalar(value, dtype)


_RESULT_DTYPES: dict = {}  # (op, type) -> the result's type name, asked of the library once


def _result_dtype(op: str, dtype: str) -> str:
    found = _RESULT_DTYPES.get((op, dtype))
    if found is None:
        found = _RESULT_DTYPES[(op, dtype)] = _xreduce.result_dtype(op, dtype)
    return found


def _flat_async(a: _Array, n: int, op: str, exact: bool, kernel: str) -> list:
    """A whole array, reduced on the caller's stream into device memory: the results as 0-d views
    of one record (xreduce/cuda.hpp: argmin and argmax write (value, int64 index), minmax (min, max)).
    Exact sums are rounded on the device too."""
    if op in ("argmin", "argmax"):
        record, ptr = _device_empty(a, 2, "i64")
        _xreduce.cuda_reduce_async(a.data, n, a.dtype, op, ptr, a.stream, exact, kernel)
        return [record[1]]
    dtype = _result_dtype(op, a.dtype)
    record, ptr = _device_empty(a, 2 if op == "minmax" else (), dtype)
    _xreduce.cuda_reduce_async(a.data, n, a.dtype, op, ptr, a.stream, exact, kernel)
    return [record[0], record[1]] if op == "minmax" else [record]


def _flat_sync(a: _Array, n: int, op: str, exact: bool, kernel: str) -> list:
    """Waits for the reduction and makes its results from the host values: JAX arrays (waited
    for anyway) and libraries xreduce makes no arrays of."""
    r = _xreduce.cuda_reduce(a.data, n, a.dtype, op, a.stream, exact, kernel)
    if op == "minmax":
        return [_device_scalar(a, r.value, r.dtype), _device_scalar(a, r.maximum, r.dtype)]
    if op in ("argmin", "argmax"):
        return [_device_scalar(a, r.index, "i64")]
    return [_device_scalar(a, r.value, r.dtype)]


def _segment_results(a: _Array, count: int, op: str):
    """(an array for `count` segments of op, its pointer, pick): pick(array) gives the results, to
    take once the kernels are done (a JAX slice is a copy): the values (folds); the int64 indices
    of argmin and argmax in their (value, index) records; the minima and maxima of minmax in
    their (min, max) records (xreduce/cuda.hpp, xreduce/segments.hpp)."""
    if op in ("argmin", "argmax"):
        if a.library in _SYNCHRONOUS_RESULTS and not _jax_x64():
            # JAX without 64-bit types: int32 indices, as its own argmin gives, from the low word
            # of each int64 index (an index within a segment of x, below 2^31).
            if math.prod(a.shape) >= 2**31:
                raise TypeError(f"{op} of 2^31 or more elements needs JAX's 64-bit types: "
                                "jax.config.update('jax_enable_x64', True)")
            records, ptr = _device_empty(a, 4 * count, "i32")
            return records, ptr, lambda r: [r[2::4]]
        records, ptr = _device_empty(a, 2 * count, "i64")
        return records, ptr, lambda r: [r[1::2]]
    dtype = _result_dtype(op, a.dtype)
    if op == "minmax":
        records, ptr = _device_empty(a, 2 * count, dtype)
        return records, ptr, lambda r: [r[0::2], r[1::2]]
    values, ptr = _device_empty(a, count, dtype)
    return values, ptr, lambda r: [r]


def _cuda_reduce(a: _Array, op, axis, exact, backend, keepdims, out, kernel):
    if backend not in ("auto", "cuda"):
        raise ValueError(f"backend={backend!r}: this array is on a CUDA device; use 'cuda' or 'auto'")
    plan = _plan(a, axis, op)
    if plan.kind == "lines":
        raise _not_in_place(f"{op} with axis=None of a CUDA array", a)
    if plan.kind == "flat":
        # nanmin and nanmax of floats: an all-NaN input takes a second pass once the value is on the host;
        # an exact mean's quotient is rounded there.
        on_host = (op == "mean" and exact) or (op in ("nanmin", "nanmax") and a.dtype in ("f16", "bf16", "f32", "f64"))
        if a.library in _SYNCHRONOUS_RESULTS or a.library not in _DEVICE_RESULTS or on_host:
            results = _flat_sync(a, plan.n, op, exact, kernel)
        else:
            results = _flat_async(a, plan.n, op, exact, kernel)
    else:
        length = plan.rows if plan.axis == 0 else plan.cols
        if length == 0 and op in _NO_IDENTITY:
            raise ValueError(f"{op} of a zero-size axis has no value (as in NumPy: no identity)")
        count = plan.cols if plan.axis == 0 else plan.rows
        records, ptr, pick = _segment_results(a, count, op)
        if exact:
            _xreduce.cuda_reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis, op,
                                      ptr, a.stream, True, kernel)
        else:
            _xreduce.cuda_reduce_axis_async(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis,
                                            op, ptr, a.stream, kernel)
        if a.library in _SYNCHRONOUS_RESULTS:
            _xreduce.cuda_synchronize(a.stream)
        results = pick(records)
        if len(a.shape) == 1:  # a strided 1-D array: one column
            results = [v[0] for v in results]
    if op in _TRUTH_OPS:  # the device's int64 truth values as the library's bools, on its stream
        results = [_as_bool(v, a.library) for v in results]
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
    records, ptr, pick = _segment_results(a, count, op)
    _xreduce.cuda_reduce_segments(a.data, a.shape[0], a.dtype, o.data, count, op, ptr, a.stream, exact, kernel)
    results = pick(records)  # the synchronous form has waited
    if op in _TRUTH_OPS:
        results = [_as_bool(v, a.library) for v in results]
    return tuple(results) if op == "minmax" else results[0]
