"""NumPy's conventions over xreduce's C++ API: arrays in place, axis, keepdims, out, backends."""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile

import numpy as np

from . import _xreduce
from ._xreduce import BackendUnavailable, DeviceError, KernelBuildError, Result

__all__ = [
    "sum", "prod", "min", "max", "argmin", "argmax", "minmax", "nansum", "nanmin", "nanmax", "count_nonzero",
    "mean", "any", "all", "reduce_segments",
    "backends", "check", "Reducer", "Result", "BackendUnavailable", "DeviceError", "KernelBuildError",
]
from ._arrays import (_BACKENDS, _CONTIGUOUS_HINT, _FOLD_OF, _KDL_CUDA, _NO_IDENTITY, _TRUTH_OPS, _ZERO_TESTS,
                      _Array, _acquire, _as_bool, _bool_as_bytes, _check_op, _finish, _host_scalar, _is_contiguous,
                      _normalize_axis, _not_in_place, _Plan, _plan, _require_cuda, _values)
from ._device import _cuda_reduce, _cuda_segments, _host_backend, _shared_reducer


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
        """Reduces x with op on this backend: "sum", "prod", "min", "max", "argmin", "argmax", "minmax",
        or a mapped op: "nansum", "nanmin", "nanmax", "count_nonzero", "sumsq" (sum of squares),
        "asum" (sum of absolute values), "mean", "any", "all" (bool results)."""
        return _reduce(x, op, axis, exact, self.name, self._device, keepdims, out, kernel, threads, self._reducer)

    def record(self, x, op: str = "sum", *, exact: bool = False, kernel: str = "auto", threads: int = 0,
               repeat: int = 1, warmup: int = 0) -> Result:
        """The whole reduction's record (a Result): value, index (arg ops), maximum (minmax), n,
        backend, device, kernel that ran, launches, median kernel and transfer times over `repeat`
        runs after `warmup`, bytes/s, rounding depth. x: a contiguous array."""
        _check_op(op)
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
    _check_op(op)
    a = _acquire(_bool_as_bytes(x) if op in _ZERO_TESTS else x)
    ndim = len(a.shape)
    axis = _normalize_axis(axis, ndim)
    if a.device_type == _KDL_CUDA:
        return _cuda_reduce(a, op, axis, exact, backend, keepdims, out, kernel)
    if reducer is None:
        reducer = _shared_reducer(_host_backend(backend), device)
    found = _host_reduce(reducer, a, op, axis, exact, kernel, threads)
    if op in _TRUTH_OPS:
        found = _as_bool(found, "numpy")
    if op == "minmax":
        outs = tuple(out) if out is not None else (None, None)
        return tuple(_finish(v, keepdims, ndim, axis, o) for v, o in zip(found, outs))
    return _finish(found, keepdims, ndim, axis, out)


def _host_reduce(reducer, a: _Array, op, axis, exact, kernel, threads):
    plan = _plan(a, axis, op)
    if plan.kind == "flat":
        r = reducer.reduce(a.data, plan.n, a.dtype, op, exact, kernel, threads)
        if op in ("argmin", "argmax"):
            return np.int64(r.index)
        if op == "minmax":  # one read for both
            return _host_scalar(r.value, r.dtype), _host_scalar(r.maximum, r.dtype)
        return _host_scalar(r.value, r.dtype)
    if plan.kind == "lines":
        return _host_lines(reducer, a, op, plan, exact, kernel, threads)
    length = plan.rows if plan.axis == 0 else plan.cols
    if length == 0 and op in _NO_IDENTITY:
        raise ValueError(f"{op} of a zero-size axis has no value (as in NumPy: no identity)")
    found = _unpack(op, *reducer.reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order,
                                             plan.axis, op, exact, kernel, threads))
    if len(a.shape) == 1:  # a strided 1-D array: one column
        return tuple(v[0] for v in found) if op == "minmax" else found[0]
    return found


def _unpack(op, raw, dtype, record, indices, maxima):
    """The NumPy result of a segmented reduction: values, argmin's and argmax's int64 indices
    within their segments, or minmax's (minima, maxima)."""
    if op in ("argmin", "argmax"):
        return indices.view(np.int64) if indices is not None else np.empty(0, dtype=np.int64)
    if op == "minmax":
        return _values(raw, dtype), _values(maxima if maxima is not None else raw[:0], dtype)
    return _values(raw, dtype)


def _host_lines(reducer, a: _Array, op, plan: _Plan, exact, kernel, threads):
    """The whole of a 2-D array that is not one contiguous run: each line (a row of a C-order
    array, a column of a Fortran-order one) first, then their results (by the op's fold: the
    lines' sums of squares are summed, not squared again). Min, max, the arg ops and integer sums
    and products come out as one reduction gives them; float sums and products round in that
    order; an exact sum would round twice, so it is refused."""
    if op in ("sum", "mean") and exact and a.dtype in ("f16", "bf16", "f32", "f64"):
        raise ValueError(f"an exact {op} with axis=None reads the array in one piece, and this one has gaps between "
                         f"its {'rows' if plan.order == 'C' else 'columns'}; make it contiguous first, e.g. "
                         f"{_CONTIGUOUS_HINT}")
    lines = reducer.reduce_axis(a.data, a.dtype, plan.rows, plan.cols, plan.stride, plan.order, plan.axis, op, exact,
                                kernel, threads)
    if op == "minmax":
        lo, hi = _unpack(op, *lines)
        r_lo = reducer.reduce(lo.ctypes.data, lo.size, lines[1], "min", False, kernel, threads)
        r_hi = reducer.reduce(hi.ctypes.data, hi.size, lines[1], "max", False, kernel, threads)
        return _host_scalar(r_lo.value, r_lo.dtype), _host_scalar(r_hi.value, r_hi.dtype)
    if op not in ("argmin", "argmax"):
        raw, dtype = lines[0], lines[1]
        r = reducer.reduce(raw.ctypes.data, raw.size // _itemsize(dtype), dtype, _FOLD_OF.get(op, op), exact, kernel,
                           threads)
        return _host_scalar(r.value, r.dtype)
    # The arg ops: each line's extreme and its first index, then NumPy's rules over the lines.
    values = _values(lines[0], lines[1]).astype(np.float64 if a.dtype in ("f16", "bf16", "f32", "f64") else
                                                 np.uint64 if a.dtype[0] == "u" else np.int64)
    first = _unpack(op, *lines)
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


def _segments(x, offsets, op, exact, backend, device, kernel="auto", threads=0, reducer=None):
    a = _acquire(_bool_as_bytes(x) if op in _ZERO_TESTS else x)
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
    found = _unpack(op, *reducer.reduce_segments(a.data, a.shape[0], a.dtype, offs.ctypes.data, offs.shape[0], op,
                                                 exact, kernel, threads))
    return _as_bool(found, "numpy") if op in _TRUTH_OPS else found


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


def nansum(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "nansum", axis, False, backend, device, keepdims, out)


def nanmin(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "nanmin", axis, False, backend, device, keepdims, out)


def nanmax(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "nanmax", axis, False, backend, device, keepdims, out)


def count_nonzero(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "count_nonzero", axis, False, backend, device, keepdims, out)


def mean(x, axis=None, *, exact: bool = False, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "mean", axis, exact, backend, device, keepdims, out)


def any(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "any", axis, False, backend, device, keepdims, out)


def all(x, axis=None, *, backend: str = "auto", device=None, keepdims: bool = False, out=None):
    return _reduce(x, "all", axis, False, backend, device, keepdims, out)


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
    axis=None the index counts in C order, whatever the layout. Along an axis: one index per row
    (axis=1) or column (axis=0), counted within it, in one segmented reduction; a zero-size axis
    raises ValueError, as in NumPy.
""" + _COMMON
argmax.__doc__ = argmin.__doc__.replace("smallest element", "largest element").replace("argmin", "argmax")
minmax.__doc__ = """(min(x), max(x)) as a pair, by min's and max's rules.
""" + _COMMON
nansum.__doc__ = """Sum of the elements of x that are not NaN (NumPy's nansum): a NaN counts as +0.

    Types and rounding as sum (f16 and bf16 return f32; narrow integers sum in 64 bits; integers
    have no NaN, so it is their sum). All NaN, or nothing, sums to +0.0, as in NumPy; [-0.0, NaN]
    gives +0.0 (NaN's +0 added to -0), as NumPy's does. No exact mode.
""" + _COMMON
nanmin.__doc__ = """Smallest element of x ignoring NaN (NumPy's nanmin).

    Where every element (of a row or column, along an axis) is NaN the result is NaN, as NumPy's
    (without its RuntimeWarning); -inf beside NaN gives -inf. Returns the input type. Nothing to
    reduce raises ValueError. A CUDA float array: with axis=None the value is read on the host
    once (a second pass tells an all-NaN input from one whose min is +inf), so the call waits;
    along an axis it raises ValueError.
""" + _COMMON
nanmax.__doc__ = nanmin.__doc__.replace("Smallest", "Largest").replace("nanmin", "nanmax").replace(
    "-inf beside NaN gives -inf", "+inf beside NaN gives +inf").replace("min is +inf", "max is -inf")
count_nonzero.__doc__ = """Number of elements of x that are not zero (NumPy's count_nonzero), an int64.

    NaN counts (it is not zero); -0.0 does not. axis=None gives an int64 scalar, an axis an int64
    array (NumPy gives a Python int and intp). A bool array (NumPy, CuPy, PyTorch) is read in
    place as its bytes, 0 and 1.
""" + _COMMON
any.__doc__ = """Whether any element of x is not zero (NumPy's any): a bool, or a bool array along an axis.

    count_nonzero's count, tested on the backend (above 0): NaN counts as true, -0.0 as false; an
    empty array or a zero-size axis gives False. A bool array (NumPy, CuPy, PyTorch) is read in
    place as its bytes. A CUDA array's result is its library's bool array, on the caller's stream
    (the int64 truth value the device writes, converted by that library).
""" + _COMMON
all.__doc__ = any.__doc__.replace("Whether any element", "Whether every element").replace(
    "NumPy's any", "NumPy's all").replace("(above 0)", "(equal to the element count)").replace(
    "gives False", "gives True")
mean.__doc__ = """Mean of the elements of x (NumPy's mean): their sum divided by their count.

    Floats sum as sum does (f16 and bf16 in f32, returning f32 where NumPy returns f16), then
    the sum is divided in f64 and rounded to the result type. Integers of every width sum their
    values converted to f64 and return f64, as NumPy's mean. The mean of nothing (an empty array
    or a zero-size axis) is NaN, as NumPy's (without its RuntimeWarning). exact=True (floats):
    the exact sum divided by the count, rounded once, the correctly rounded mean, of the whole
    array or of each row or column: the same bits on every backend. A CUDA array's mean is
    divided on the device, on the caller's stream; with exact=True the quotients are rounded on
    the host, so that call waits.
""" + _COMMON


def reduce_segments(x, offsets, op: str = "sum", *, exact: bool = False, backend: str = "auto", device=None):
    """One value per CSR segment [offsets[i], offsets[i + 1]) of the 1-D array x.

    op: "sum", "prod", "min", "max", "argmin", "argmax" (int64 indices within each segment),
    "minmax" (a pair of arrays: minima, maxima), or a mapped op: "nansum", "nanmin", "nanmax",
    "count_nonzero", "sumsq", "asum", "mean", "any", "all" (nanmin and nanmax give NaN for a
    segment of only NaN, of a float CUDA x they raise ValueError; mean NaN for an empty one; any
    and all bool arrays, False and True for an empty one). offsets: len(offsets) - 1 segments,
    non-decreasing, from 0 up to len(x) (ValueError naming the first bad position otherwise);
    int64 arrays are read in place, others converted. An empty segment gives the op's identity:
    sum 0, prod 1, min +inf or the type's largest value, max -inf or the type's lowest value;
    argmin and argmax give index -1, minmax (min's identity, max's). Values have the type of the
    whole-array reduction (sum of i32: i64; of f16: f32). For a CUDA x, offsets must be a
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
