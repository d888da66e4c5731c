"""xreduce: reductions of arrays on CUDA, OpenCL and OpenMP, with exact sums.

    import numpy as np, xreduce as xr
    x = np.random.rand(1_000_000).astype(np.float32)
    xr.sum(x, exact=True)        # the correctly rounded sum, the same bits on every backend

Functions follow NumPy's names and conventions (sum, prod, min, max, argmin, argmax, minmax,
nansum, nanmin, nanmax, count_nonzero, mean, any, all with axis, keepdims, out); reduce_segments reduces CSR segments; backends() and check() report
what this machine can run and whether it computes what xreduce's semantics say. Arrays are
read in place, never copied.
"""


def _load_bundled_cuda_runtime() -> None:
    """A package built with CUDA carries its CUDA runtime (libcudart.so.N) beside the extension:
    loaded before it, the extension finds it there on machines without a CUDA toolkit."""
    import ctypes
    import glob
    import os
    for path in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcudart.so.*")):
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


_load_bundled_cuda_runtime()

from ._api import (BackendUnavailable, DeviceError, KernelBuildError, Reducer, Result, all, any, argmax,  # noqa: E402
                   argmin, backends, check, count_nonzero, max, mean, min, minmax, nanmax, nanmin, nansum, prod,
                   reduce_segments, sum)

__version__ = "0.1.0"

for _cls in (BackendUnavailable, DeviceError, KernelBuildError, Result):
    _cls.__module__ = __name__

__all__ = ["sum", "prod", "min", "max", "argmin", "argmax", "minmax", "nansum", "nanmin", "nanmax", "count_nonzero",
           "mean", "any", "all", "reduce_segments", "backends", "check",
           "Reducer", "Result", "BackendUnavailable", "DeviceError", "KernelBuildError", "__version__"]
