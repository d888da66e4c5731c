"""CuPy, PyTorch and JAX arrays: host ones on the host backends, CUDA ones on the CUDA backend
ordered on the caller's stream. Each test skips, saying why, without the package or a GPU."""
import math

import numpy as np
import pytest

import xreduce as xr

CUDA = next(s for s in xr.backends() if s["backend"] == "cuda")
needs_cuda = pytest.mark.skipif(not CUDA["usable"], reason=f"CUDA backend not usable: {CUDA['reason']}")


def on_a_busy_stream(torch, reduce, n=1 << 16):
    """reduce(x) on a stream still busy with a sleep and then x.fill_(2.0), x an f32 CUDA tensor
    of n zeros before: asserts that xreduce returned without waiting, and gives what reduce
    returned, read once the stream is done (of x filled with 2)."""
    stream = torch.cuda.Stream()
    x = torch.zeros(n, device="cuda", dtype=torch.float32)
    reduce(x)  # kernels loaded: loading one may wait for the GPU
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(1 << 31)  # about a second of GPU time before the fill
        x.fill_(2.0)
        results = reduce(x)
        assert not stream.query(), "xreduce waited for the stream"
    stream.synchronize()
    return results


def test_cuda_unavailable_is_reported():
    if CUDA["usable"]:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(xr.BackendUnavailable, match="cuda"):
        xr.Reducer("cuda")


def test_torch_host():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32)
    assert xr.sum(t) == 45
    assert xr.max(torch.arange(4, dtype=torch.bfloat16)) == 3
    np.testing.assert_array_equal(xr.sum(t.reshape(2, 5), axis=1), [10, 35])


@needs_cuda
def test_torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    t = torch.arange(1000, dtype=torch.float32, device="cuda")
    s = xr.sum(t, exact=True)
    assert isinstance(s, torch.Tensor) and s.device == t.device and s.ndim == 0 and s.item() == 499500
    assert xr.argmax(t).item() == 999
    rows = xr.sum(t.reshape(10, 100), axis=1)
    assert rows.device == t.device and torch.equal(rows, t.reshape(10, 100).sum(dim=1))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        u = torch.ones(1 << 20, device="cuda", dtype=torch.bfloat16)
        assert xr.sum(u).item() == 1 << 20
    off = torch.tensor([0, 10, 1000], device="cuda", dtype=torch.int64)
    assert xr.reduce_segments(t, off).tolist() == [45, 499455]
    m = torch.rand(300, 7, device="cuda")
    for axis in (0, 1):
        assert torch.equal(xr.argmax(m, axis=axis), m.argmax(dim=axis))
        assert torch.equal(xr.argmin(m.T, axis=axis), m.T.argmin(dim=axis))  # Fortran order
        lo, hi = xr.minmax(m, axis=axis)
        assert torch.equal(lo, m.amin(dim=axis)) and torch.equal(hi, m.amax(dim=axis))
    assert xr.reduce_segments(t, off, op="argmax").tolist() == [9, 989]


@needs_cuda
def test_torch_cuda_nan_ops():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    nan = float("nan")
    t = torch.tensor([nan, 1.0, -2.0, nan, 0.0, -0.0], device="cuda")
    assert xr.nansum(t).item() == -1 and xr.count_nonzero(t).item() == 4
    assert xr.nanmin(t).item() == -2 and xr.nanmax(t).item() == 1
    assert math.isnan(xr.nanmax(torch.full((100,), nan, device="cuda")).item())
    assert xr.nanmin(torch.tensor([nan, math.inf], device="cuda")).item() == math.inf
    m = torch.rand(300, 7, device="cuda")
    m[5, :] = nan
    m[:, 3] = nan
    for axis in (0, 1):
        assert torch.allclose(xr.nansum(m, axis=axis), m.nansum(dim=axis))
        assert torch.equal(xr.count_nonzero(m, axis=axis), torch.count_nonzero(m, dim=axis))
        with pytest.raises(ValueError, match="may be all NaN"):
            xr.nanmax(m, axis=axis)
    i = torch.arange(-50, 50, dtype=torch.int32, device="cuda").reshape(10, 10)
    assert torch.equal(xr.nanmax(i, axis=1), i.amax(dim=1))  # integers have no NaN


@needs_cuda
def test_torch_cuda_mean():
    """A mean divided on the device, on the caller's stream; exact ones rounded on the host."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    t = torch.arange(1000, dtype=torch.float32, device="cuda")
    m = xr.mean(t)
    assert isinstance(m, torch.Tensor) and m.device == t.device and m.ndim == 0 and m.item() == 499.5
    assert xr.mean(torch.arange(10, dtype=torch.int32, device="cuda")).dtype == torch.float64
    assert math.isnan(xr.mean(torch.empty(0, device="cuda")).item())
    x = torch.randn(300, 7, device="cuda", dtype=torch.float64)
    for axis in (0, 1):
        assert torch.allclose(xr.mean(x, axis=axis), x.mean(dim=axis), rtol=1e-12)
        assert torch.allclose(xr.mean(x.T, axis=axis), x.T.mean(dim=axis), rtol=1e-12)  # Fortran order
    off = torch.tensor([0, 10, 10, 1000], device="cuda", dtype=torch.int64)
    seg = xr.reduce_segments(t, off, op="mean").tolist()
    assert seg[0] == 4.5 and math.isnan(seg[1]) and seg[2] == 504.5
    w = (torch.randn(100003, device="cuda") * 1e3).to(torch.float32)
    host = xr.mean(w.cpu().numpy(), exact=True)  # the same bits on every backend
    assert xr.mean(w, exact=True).item() == float(host)
    rows = xr.mean(x, axis=1, exact=True)  # each row's exact mean: the same bits as on the host
    assert rows.device == x.device and np.array_equal(rows.cpu().numpy(), xr.mean(x.cpu().numpy(), axis=1, exact=True))
    my, rows = on_a_busy_stream(torch, lambda y: (xr.mean(y), xr.mean(y.reshape(256, 256), axis=1)))
    assert my.item() == 2.0 and bool((rows == 2.0).all())


@needs_cuda
def test_torch_cuda_any_all():
    """any and all: the device's truth values as torch bools on its device, on the caller's stream."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    t = torch.tensor([0.0, 2.0, float("nan"), -0.0], device="cuda")
    a = xr.any(t)
    assert isinstance(a, torch.Tensor) and a.dtype == torch.bool and a.device == t.device and a.ndim == 0 and a.item()
    assert not xr.all(t).item()
    assert not xr.any(torch.empty(0, device="cuda")).item() and xr.all(torch.empty(0, device="cuda")).item()
    b = torch.rand(300, 7, device="cuda") > 0.3
    for axis in (0, 1):
        assert torch.equal(xr.any(b, axis=axis), b.any(dim=axis))
        assert torch.equal(xr.all(b, axis=axis), b.all(dim=axis))
        assert torch.equal(xr.all(b.T, axis=axis), b.T.all(dim=axis))  # Fortran order
    assert xr.all(b).item() == b.all().item() and xr.count_nonzero(b).item() == b.sum().item()
    off = torch.tensor([0, 1, 1, 4], device="cuda", dtype=torch.int64)
    assert xr.reduce_segments(t, off, op="all").tolist() == [False, True, False]
    every, some = on_a_busy_stream(torch, lambda y: (xr.all(y), xr.any(y, axis=0)))
    assert every.item() and some.item()


@needs_cuda
def test_cupy_cuda():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(1000, dtype=cupy.int32)
    s = xr.sum(x)
    assert isinstance(s, cupy.ndarray) and int(s) == 499500
    lo, hi = xr.minmax(x)
    assert int(lo) == 0 and int(hi) == 999
    assert cupy.array_equal(xr.max(x.reshape(10, 100), axis=0), x.reshape(10, 100).max(axis=0))


@needs_cuda
def test_torch_results_stay_on_the_stream():
    """The reduction is enqueued behind the caller's pending work and returns without waiting."""
    torch = pytest.importorskip("torch")
    s, i, (lo, hi), e = on_a_busy_stream(torch, lambda x: (xr.sum(x), xr.argmax(x), xr.minmax(x), xr.sum(x, exact=True)))
    assert s.item() == 2 * (1 << 16) and i.item() == 0 and lo.item() == hi.item() == 2
    assert e.item() == 2 * (1 << 16) and e.dtype == torch.float32
    assert s.dtype == torch.float32 and i.dtype == torch.int64 and lo.dtype == torch.float32
    assert all(v.is_cuda and v.ndim == 0 for v in (s, i, lo, hi))
    assert xr.sum(torch.ones(1000, device="cuda", dtype=torch.float16)).dtype == torch.float32
    assert xr.sum(torch.ones(1000, device="cuda", dtype=torch.int32)).dtype == torch.int64


def test_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    x = jnp.arange(10, dtype=jnp.float32)
    on_gpu = x.devices().pop().platform == "gpu"
    if on_gpu and not CUDA["usable"]:
        with pytest.raises(xr.BackendUnavailable):
            xr.sum(x)
        return
    assert float(xr.sum(x)) == 45
    rows = xr.sum(x.reshape(2, 5), axis=1)
    np.testing.assert_array_equal(np.asarray(rows), [10, 35])
    np.testing.assert_array_equal(np.asarray(xr.argmax(x.reshape(2, 5), axis=0)), [1, 1, 1, 1, 1])
    lo, hi = xr.minmax(x)
    assert float(lo) == 0 and float(hi) == 9 and int(xr.argmax(x)) == 9
    if on_gpu:
        assert isinstance(rows, jax.Array) and rows.devices() == x.devices()
        np.testing.assert_array_equal(np.asarray(xr.max(x.reshape(2, 5), axis=0, keepdims=True)), [[5, 6, 7, 8, 9]])


class FakeDLPackCuda:
    """Says it lives on CUDA device 0; gives no capsule (xreduce must not ask without CUDA)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        raise AssertionError("asked for a capsule")


class FakeCudaArrayInterface:
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (1 << 40, False), "version": 3}


@pytest.mark.parametrize("array", [FakeDLPackCuda(), FakeCudaArrayInterface()], ids=["dlpack", "cai"])
def test_device_array_without_cuda(array):
    if CUDA["usable"]:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(xr.BackendUnavailable, match=CUDA["reason"].split(":")[0]):
        xr.sum(array)
    with pytest.raises(xr.BackendUnavailable):
        xr.reduce_segments(array, [0, 4])


@needs_cuda
def test_torch_exact_sums_rounded_on_the_device():
    """Exact sums of CUDA tensors, rounded on the device: the host backend's bits (the same on
    every backend), and math.fsum's value for f64."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    g = torch.Generator().manual_seed(3)
    n = 100003
    wide = torch.randn(n, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-40, 40, (n,), generator=g)
    cancelling = torch.cat([wide[: n // 2], -wide[: n // 2], torch.tensor([2.0 ** -60], dtype=torch.float64)])
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        for values in (wide, cancelling, torch.tensor([], dtype=torch.float64)):
            x = values.to(dtype)
            got = xr.sum(x.cuda(), exact=True)
            want = xr.sum(x, exact=True)
            assert got.device.type == "cuda" and got.ndim == 0
            assert got.cpu().numpy().tobytes() == np.asarray(want).tobytes(), (dtype, got.item(), want)
            if dtype == torch.float64:
                assert got.item() == math.fsum(x.tolist())
