"""Every op x type x axis x layout against NumPy, on every host backend."""
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from conftest import DTYPES, HOST_BACKENDS, sample

import xreduce as xr

OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]


def numpy_ref(x, op, axis):
    if op == "sum":
        return np.sum(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=axis)
    if op == "prod":
        return np.prod(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=axis, dtype=x.dtype if x.dtype.kind in "iu" else None)
    return getattr(np, op)(x, axis=axis)


def layouts(x):
    yield "C", x
    yield "F", np.asfortranarray(x)
    padded = np.zeros((x.shape[0], x.shape[1] + 3), dtype=x.dtype)
    padded[:, : x.shape[1]] = x
    yield "strided rows", padded[:, : x.shape[1]]
    yield "every other row", np.repeat(x, 2, axis=0)[::2]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_op_type_axis(backend, op, dtype):
    rng = np.random.default_rng(7)
    x2 = sample(dtype, (5, 7), rng, special=op in ("min", "max", "argmin", "argmax"))
    if op == "prod":
        x2 = np.where(x2 == 0, 1, np.sign(x2.astype(np.float64)) * 1).astype(dtype) if np.dtype(dtype).kind != "u" \
            else np.ones((5, 7), dtype=dtype)
    for axis in (None, 0, 1, -1):
        for name, x in layouts(x2):
            got = getattr(xr, op)(x, axis=axis, backend=backend)
            want = numpy_ref(x.astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x, op, axis)
            np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                          err_msg=f"{op} {name} axis={axis}")
    x1 = x2[0]
    for axis in (None, 0, -1):
        got = getattr(xr, op)(x1, axis=axis, backend=backend)
        want = numpy_ref(x1.astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x1, op, axis)
        assert float(got) == float(want)
    got = getattr(xr, op)(x2[:, 1], backend=backend)  # a strided 1-D column, read in place
    want = numpy_ref(x2[:, 1].astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x2[:, 1], op, None)
    assert float(got) == float(want)


NAN_OPS = ["nansum", "nanmin", "nanmax", "count_nonzero"]


def with_nans(x2):
    """x2 with a row and a column wholly NaN, a lone NaN and a -0 (floats); integers as they are."""
    if x2.dtype.kind != "f" and np.dtype(x2.dtype).name != "bfloat16":
        return x2
    x = x2.copy()
    x[2, :] = np.nan
    x[:, 4] = np.nan
    x[0, 1] = np.nan
    x[3, 0] = -0.0
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", NAN_OPS)
def test_nan_ops_as_numpy(backend, op, dtype):
    rng = np.random.default_rng(11)
    x2 = with_nans(sample(dtype, (5, 7), rng))
    for axis in (None, 0, 1, -1):
        for name, x in layouts(x2):
            got = getattr(xr, op)(x, axis=axis, backend=backend)
            ref = x.astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's all-NaN slice warning
                want = getattr(np, op)(ref.astype(np.float64) if op == "nansum" and ref.dtype.kind == "f" else ref,
                                       axis=axis)
            np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                                          err_msg=f"{op} {name} axis={axis}")
            if op == "count_nonzero":
                assert np.asarray(got).dtype == np.int64


def test_nan_ops_edges(backend):
    nan = np.nan
    assert np.isnan(xr.nanmax(np.float32([nan, nan]), backend=backend))
    assert xr.nanmin(np.float64([nan, np.inf]), backend=backend) == np.inf
    assert xr.nanmax(np.float32([-np.inf, nan]), backend=backend) == -np.inf
    s = xr.nansum(np.float32([-0.0, nan]), backend=backend)
    assert s == 0 and math.copysign(1, s) == 1  # NaN counts as +0, as in NumPy
    assert xr.nansum(np.float16([nan, 1, 2]), backend=backend).dtype == np.float32
    assert xr.nansum(np.float64([]), backend=backend) == 0
    assert xr.count_nonzero(np.float32([0, -0.0, nan, 2]), backend=backend) == 2
    assert xr.count_nonzero(np.zeros((3, 0), dtype=np.int8), axis=1, backend=backend).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="zero-size"):
        xr.nanmin(np.zeros((4, 0), dtype=np.float32), axis=1, backend=backend)
    with pytest.raises(ValueError, match="unknown op"):
        xr.Reducer(backend).reduce(np.float32([1]), "nanprod")
    y = np.float32([nan, nan, 1, -2, nan, 7])
    offs = [0, 2, 2, 6]
    np.testing.assert_array_equal(xr.reduce_segments(y, offs, "nanmax", backend=backend), [nan, -np.inf, 7])
    np.testing.assert_array_equal(xr.reduce_segments(y, offs, "nansum", backend=backend), [0, 0, 6])
    np.testing.assert_array_equal(xr.reduce_segments(y, offs, "sumsq", backend=backend), [nan, 0, nan])
    np.testing.assert_array_equal(xr.reduce_segments(y[2:], [0, 2, 4], "asum", backend=backend), [3, nan])
    assert xr.reduce_segments(y, offs, "count_nonzero", backend=backend).tolist() == [2, 0, 4]
    # axis=None of an array with gaps: the lines' values combined by the fold (sums of squares
    # summed, not squared again).
    m = np.repeat(np.float32([[1, 2], [3, 4]]), 2, axis=0)[::2]
    assert xr.Reducer(backend).reduce(m, "sumsq") == 30
    assert xr.Reducer(backend).reduce(m, "asum") == 10


def test_result_types():
    assert xr.sum(np.int8([1, 2])).dtype == np.int64
    assert xr.sum(np.uint32([1, 2])).dtype == np.uint64
    assert xr.sum(np.float16([1, 2])).dtype == np.float32
    assert xr.prod(np.int8([100, 3])).dtype == np.int8 and xr.prod(np.int8([100, 3])) == np.int8(44)
    assert xr.max(np.float16([1, 2])).dtype == np.float16
    assert xr.argmax(np.float32([1, 2])).dtype == np.int64
    assert isinstance(xr.sum(np.float32([1, 2])), np.float32)


def test_nan_and_signed_zero(backend):
    x = np.float64([1, np.nan, 3, np.nan])
    assert np.isnan(xr.max(x, backend=backend)) and np.isnan(xr.min(x, backend=backend))
    assert xr.argmax(x, backend=backend) == np.argmax(x) == 1
    assert xr.argmin(x, backend=backend) == np.argmin(x) == 1
    z = np.float32([-0.0, -0.0])
    assert math.copysign(1, xr.sum(z, backend=backend)) == -1
    assert math.copysign(1, xr.sum(np.float32([]), backend=backend)) == 1
    assert xr.argmax(np.int32([3, 5, 5]), backend=backend) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_sums(backend, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(10001) * 10.0 ** rng.integers(-20, 20, 10001)).astype(dtype)
    want = dtype(math.fsum(x.astype(np.float64))) if dtype == np.float64 else \
        np.float32(float(sum(Fraction(float(v)) for v in x)))
    got = xr.sum(x, exact=True, backend=backend)
    assert got == want and got.dtype == dtype
    m = x[:10000].reshape(100, 100)
    rows = xr.sum(m, axis=1, exact=True, backend=backend)
    for i in (0, 57, 99):
        assert rows[i] == dtype(float(sum(Fraction(float(v)) for v in m[i])))


def test_keepdims_and_out(backend):
    m = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert xr.sum(m, axis=0, keepdims=True, backend=backend).shape == (1, 4)
    assert xr.sum(m, axis=1, keepdims=True, backend=backend).shape == (3, 1)
    assert xr.sum(m, keepdims=True, backend=backend).shape == (1, 1)
    out = np.empty(4, dtype=np.int64)
    assert xr.sum(m, axis=0, out=out, backend=backend) is out
    np.testing.assert_array_equal(out, m.sum(axis=0))
    lo, hi = xr.minmax(m, axis=1, backend=backend)
    np.testing.assert_array_equal(lo, m.min(axis=1))
    np.testing.assert_array_equal(hi, m.max(axis=1))


def test_segments(backend):
    x = np.arange(10, dtype=np.float32)
    offsets = np.array([0, 3, 3, 10], dtype=np.int64)
    np.testing.assert_array_equal(xr.reduce_segments(x, offsets, backend=backend), [3, 0, 42])
    mx = xr.reduce_segments(x, offsets, "max", backend=backend)
    assert mx[0] == 2 and mx[1] == -np.inf and mx[2] == 9
    assert xr.reduce_segments(np.int32([1, 2, 3]), [0, 1, 3], backend=backend).dtype == np.int64
    y = np.float32([3, 1, 1, np.nan, 2, 5, 5])
    offs = [0, 3, 3, 5, 7]
    idx = xr.reduce_segments(y, offs, "argmin", backend=backend)
    assert idx.dtype == np.int64 and idx.tolist() == [1, -1, 0, 0]  # ties: the first; a NaN wins; empty: -1
    assert xr.reduce_segments(y, offs, "argmax", backend=backend).tolist() == [0, -1, 0, 0]
    lo, hi = xr.reduce_segments(y, offs, "minmax", backend=backend)
    assert lo.dtype == hi.dtype == np.float32
    np.testing.assert_array_equal(lo, [1, np.inf, np.nan, 5])
    np.testing.assert_array_equal(hi, [3, -np.inf, np.nan, 5])
    with pytest.raises(ValueError, match="zero-size"):
        xr.argmin(np.zeros((4, 0), dtype=np.float32), axis=1, backend=backend)
    with pytest.raises(ValueError, match="decrease"):
        xr.reduce_segments(x, [0, 5, 3, 10], backend=backend)
    with pytest.raises(ValueError):
        xr.reduce_segments(x, [0, 11], backend=backend)


def test_reducer_object(backend):
    r = xr.Reducer(backend)
    assert r.backend == backend
    x = np.arange(100, dtype=np.float64)
    assert r.reduce(x) == 4950
    assert r.reduce(x, "argmax") == 99
    assert r.reduce_segments(x, [0, 50, 100]).tolist() == [1225, 3725]
    assert any(k["kind"] == "auto" for k in r.kernels())
    assert any("rows" in k["layouts"] for k in r.segment_kernels())
    rec = r.record(x, "argmax", repeat=3, warmup=1)
    assert (rec.value, rec.index, rec.n, rec.op, rec.type, rec.backend) == (99, 99, 100, "argmax", "f64", backend)
    assert rec.kernel.startswith("auto") and rec.launches >= 1 and "argmax" in repr(rec)
    rec = r.record(np.float32([1, -4, 2]), "minmax")
    assert (rec.value, rec.maximum) == (-4, 2)
    with pytest.raises(ValueError, match="repeat"):
        r.record(x, repeat=0)


def test_other_array_objects():
    assert xr.sum(memoryview(np.int32([1, 2, 3]))) == 6
    import array
    assert xr.sum(array.array("d", [0.5, 0.25])) == 0.75
    assert xr.max(np.float32(3.5)) == 3.5  # 0-d


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_minmax(backend, dtype):
    x = sample(dtype, (6, 5), np.random.default_rng(11), special=True)
    ref = x.astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x
    for axis in (None, 0, 1):
        lo, hi = xr.minmax(x, axis=axis, backend=backend)
        np.testing.assert_array_equal(np.asarray(lo, dtype=np.float64), np.min(ref, axis=axis).astype(np.float64))
        np.testing.assert_array_equal(np.asarray(hi, dtype=np.float64), np.max(ref, axis=axis).astype(np.float64))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_whole_array_with_gaps(backend, dtype):
    """axis=None of a 2-D array with gaps between its rows or columns: line by line, in place."""
    rng = np.random.default_rng(5)
    for trial in range(20):
        base = rng.integers(-3, 3, size=(6, 9)).astype(dtype)  # many ties
        if dtype != np.int32 and trial % 3 == 0:
            base[rng.integers(0, 6, 2), rng.integers(0, 9, 2)] = np.nan
        for x in (base[:, :7], np.asfortranarray(base)[:5], np.asfortranarray(base), base[::2]):
            for op in ("argmin", "argmax", "min", "max", "sum"):
                got = getattr(xr, op)(x, backend=backend)
                want = getattr(np, op)(x)
                assert got == want or (np.isnan(got) and np.isnan(want)), (op, x.flags, got, want)
            if dtype != np.int32 and not x.flags.c_contiguous and not x.flags.f_contiguous:
                with pytest.raises(ValueError, match="exact"):
                    xr.sum(x, exact=True, backend=backend)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_mean_as_numpy(backend, dtype):
    rng = np.random.default_rng(13)
    x2 = sample(dtype, (5, 7), rng)
    wide = np.dtype(dtype).kind in "iu"
    for axis in (None, 0, 1, -1):
        for name, x in layouts(x2):
            got = xr.mean(x, axis=axis, backend=backend)
            # sample's values sum exactly in any order; with axis=None an array with gaps is the mean
            # of its lines' means, rounded twice
            want = np.mean(x.astype(np.float64), axis=axis)
            assert np.asarray(got).dtype == (np.float64 if wide or dtype == np.float64 else np.float32), name
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-6 if not wide else 1e-14,
                                       err_msg=f"mean {name} axis={axis}")


def test_mean_edges(backend):
    assert np.isnan(xr.mean(np.float32([]), backend=backend))
    assert math.copysign(1, xr.mean(np.float64([]), backend=backend)) == 1  # +NaN, as NumPy's
    assert np.isnan(xr.mean(np.int32([]), backend=backend)) and xr.mean(np.int32([]), backend=backend).dtype == np.float64
    assert np.all(np.isnan(xr.mean(np.zeros((3, 0), dtype=np.float32), axis=1, backend=backend)))
    big = np.int64([2**62, 2**62, 2**62])
    assert xr.mean(big, backend=backend) == np.mean(big) == 2.0**62  # f64 accumulation: no wrap
    assert xr.mean(np.uint8([255, 255, 1]), backend=backend) == np.mean(np.uint8([255, 255, 1]))
    np.testing.assert_array_equal(xr.reduce_segments(np.float64([1, 2, 3, 4]), [0, 1, 1, 4], "mean", backend=backend),
                                  [1, np.nan, 3])
    assert np.isnan(xr.mean(np.float32([1, np.nan]), backend=backend))
    m = np.repeat(np.float32([[1, 2], [3, 5]]), 2, axis=0)[::2]  # axis=None with gaps: the lines' means
    assert xr.mean(m, backend=backend) == 2.75
    with pytest.raises(ValueError, match="exact"):
        xr.mean(m, exact=True, backend=backend)
    with pytest.raises(ValueError, match="no exact mode"):
        xr.mean(np.int32([1, 2]), exact=True, backend=backend)
    rows = np.float64([[1.0, 2.0**-53, 0.0], [1e308, 1e308, 1e308]])  # each row's exact mean, rounded once
    want = [float((1 + Fraction(2.0**-53)) / 3), 1e308]  # the first one ulp above 1 / 3's double
    np.testing.assert_array_equal(xr.mean(rows, axis=1, exact=True, backend=backend), want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_exact_mean(backend, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(10001) * 10.0 ** rng.integers(-3, 3, 10001)).astype(dtype)
    exact = sum(Fraction(float(v)) for v in x) / len(x)
    want = np.float64(float(exact)) if dtype == np.float64 else np.float32(float(exact))
    got = xr.mean(x, exact=True, backend=backend)
    assert got == want and got.dtype == want.dtype
    tie = np.float64([1.0, 2.0**-53])  # exact mean 0.5 + 2^-54: correctly rounded to 0.5
    assert xr.mean(tie, exact=True, backend=backend) == 0.5
    assert xr.mean(np.float64([1e308, 1e308, 1e308]), exact=True, backend=backend) == 1e308


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ["any", "all"])
def test_any_all_as_numpy(backend, op, dtype):
    rng = np.random.default_rng(11)
    x2 = sample(dtype, (5, 7), rng)
    x2[1, :] = 0  # a row of zeros: any False there
    x2[:, 2] = 1  # a column without zeros: all True there
    x2 = with_nans(x2)
    for axis in (None, 0, 1, -1):
        for name, x in layouts(x2):
            got = getattr(xr, op)(x, axis=axis, backend=backend)
            want = getattr(np, op)(x.astype(np.float32) if np.dtype(dtype).name == "bfloat16" else x, axis=axis)
            assert np.asarray(got).dtype == np.bool_, f"{op} {name} axis={axis}"
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {name} axis={axis}")


def test_any_all_edges(backend):
    nothing = np.float32([])
    assert xr.any(nothing, backend=backend) is np.False_ and xr.all(nothing, backend=backend) is np.True_
    assert xr.all(np.float64([np.nan, -1.0]), backend=backend) and not xr.any(np.float64([-0.0, 0.0]), backend=backend)
    assert isinstance(xr.any(np.int8([0, 3]), backend=backend), np.bool_)
    np.testing.assert_array_equal(xr.any(np.zeros((3, 0), dtype=np.float32), axis=1, backend=backend), [False] * 3)
    np.testing.assert_array_equal(xr.all(np.zeros((3, 0), dtype=np.float32), axis=1, backend=backend), [True] * 3)
    b = np.array([[True, False, True], [True, True, True]])
    for op in ("any", "all", "count_nonzero"):  # bool arrays: their bytes, read in place
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(getattr(xr, op)(b, axis=axis, backend=backend), getattr(np, op)(b, axis=axis))
    np.testing.assert_array_equal(xr.reduce_segments(np.float64([0, 2, 0, 0]), [0, 1, 1, 2, 4], "any", backend=backend),
                                  [False, False, True, False])
    np.testing.assert_array_equal(xr.reduce_segments(np.float64([0, 2, 0, 0]), [0, 1, 1, 2, 4], "all", backend=backend),
                                  [False, True, True, False])
    out = np.empty(2, dtype=bool)
    assert xr.all(b, axis=1, out=out, backend=backend) is out and out.tolist() == [False, True]
    assert xr.any(b, axis=1, keepdims=True, backend=backend).shape == (2, 1)
    with pytest.raises(ValueError, match="no exact mode"):
        xr.Reducer(backend).reduce(np.float32([1]), "any", exact=True)
