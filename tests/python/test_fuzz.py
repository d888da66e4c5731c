"""Random shapes, types, strides, offsets and options against NumPy and math.fsum: a value or a
ValueError/TypeError, never a crash."""
import math
from fractions import Fraction

import numpy as np
from conftest import DTYPES, HOST_BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xreduce as xr

FOLDS = ["sum", "prod", "min", "max"]


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.integers(0, 40)) for _ in range(ndim))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        base = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        base = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, size=shape)).astype(dtype)
        if base.size and draw(st.booleans()):
            base.flat[rng.integers(0, base.size)] = draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))
    view = draw(st.sampled_from(["plain", "fortran", "step", "slice", "reversed", "broadcast", "transposed step", "fortran step"]))
    if view == "fortran":
        base = np.asfortranarray(base)
    elif view == "step":
        base = base[::2] if ndim == 1 else np.repeat(base, 2, axis=0)[::2]
    elif view == "slice" and ndim == 2 and shape[1] > 1:
        base = base[:, 1:]
    elif view == "reversed":
        base = base[::-1]
    elif view == "broadcast" and base.size:
        base = np.broadcast_to(base[:1], base.shape)
    elif view == "transposed step" and ndim == 2:
        base = np.repeat(base, 2, axis=1)[:, ::2].T
    elif view == "fortran step" and ndim == 2:
        base = np.repeat(base, 2, axis=0)[::2].T
    return base


def reference(x, op, axis):
    if op in ("sum", "prod") and (x.dtype.kind == "f" or x.dtype.name == "bfloat16"):
        return None  # rounding order differs; exact sums are compared with math.fsum below
    if op == "prod":
        return np.prod(x, axis=axis, dtype=x.dtype)
    if op == "sum":
        return np.sum(x, axis=axis, dtype=np.uint64 if x.dtype.kind == "u" else np.int64)
    return getattr(np, op)(x.astype(np.float32) if x.dtype.name == "bfloat16" else x, axis=axis)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=arrays(), op=st.sampled_from(FOLDS + ["argmin", "argmax", "minmax"]),
       axis=st.sampled_from([None, 0, 1, -1]), backend=st.sampled_from(HOST_BACKENDS),
       exact=st.booleans(), keepdims=st.booleans())
def test_fuzz_reduce(x, op, axis, backend, exact, keepdims):
    if axis == 1 and x.ndim == 1:
        axis = None
    f = getattr(xr, op)
    kwargs = {"exact": exact} if op == "sum" else {}
    try:
        want = reference(x, "min" if op == "minmax" else op, axis)
        numpy_error = None
    except ValueError as e:
        want, numpy_error = None, e
    try:
        got = f(x, axis=axis, backend=backend, keepdims=keepdims, **kwargs)
    except (ValueError, TypeError) as e:
        assert str(e)
        return
    assert numpy_error is None, f"NumPy raised {numpy_error}, xreduce returned {got}"
    if op == "minmax":
        got = got[0]
    if keepdims and want is not None:
        want = np.reshape(want, np.shape(got))
    if want is not None:
        np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))
    elif op == "sum" and axis is None and np.isfinite(x.astype(np.float64)).all():
        terms = x.astype(np.float64).ravel()
        got = np.asarray(got).reshape(-1)[0]
        if exact and x.dtype in (np.float32, np.float64):
            assert float(got) == float(np.dtype(x.dtype).type(float(sum(Fraction(float(t)) for t in terms))))
        else:
            bound = (terms.size + 1) * np.finfo(np.float32).eps * math.fsum(abs(terms))
            assert abs(float(got) - math.fsum(terms)) <= bound


@settings(max_examples=150, deadline=None, database=None)
@given(n=st.integers(0, 200), cuts=st.lists(st.integers(-5, 205), max_size=12),
       op=st.sampled_from(FOLDS + ["argmin", "argmax", "minmax"]),
       backend=st.sampled_from(HOST_BACKENDS), seed=st.integers(0, 1000))
def test_fuzz_segments(n, cuts, op, backend, seed):
    x = np.random.default_rng(seed).integers(-50, 50, size=n).astype(np.int32)
    offsets = np.array([0] + cuts, dtype=np.int64)
    try:
        got = xr.reduce_segments(x, offsets, op, backend=backend)
    except ValueError as e:
        assert (np.diff(offsets) < 0).any() or (offsets > n).any() or (offsets < 0).any(), e
        return
    for i in range(len(offsets) - 1):
        part = x[offsets[i]:offsets[i + 1]]
        if op == "minmax":
            assert (got[0][i], got[1][i]) == ((part.min(), part.max()) if part.size else (2**31 - 1, -2**31))
        elif op in ("argmin", "argmax"):
            assert got[i] == (getattr(np, op)(part) if part.size else -1)
        elif part.size:
            want = {"sum": part.sum(), "prod": np.prod(part, dtype=np.int32), "min": part.min(), "max": part.max()}[op]
            assert got[i] == want
