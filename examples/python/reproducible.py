"""One float32 array summed wherever it can be: NumPy, PyTorch on the CPU and on the GPU (where
installed), and xreduce's exact sum on every backend this machine has. Plain sums differ with
the order of their additions; the exact sum is the same bits everywhere."""
import numpy as np

import xreduce as xr

x = np.random.default_rng(1).standard_normal(10_000_000).astype(np.float32)
sums = {"numpy.sum": float(np.sum(x))}
try:
    import torch
    t = torch.from_numpy(x)
    sums["torch.sum, CPU"] = float(torch.sum(t))
    if torch.cuda.is_available():
        sums["torch.sum, CUDA"] = float(torch.sum(t.cuda()))
except ImportError:
    torch = None
exact = {}
for status in xr.backends():
    if not status["usable"]:
        continue
    b = status["backend"]
    if b == "cuda":
        if torch is not None and torch.cuda.is_available():
            exact["xreduce exact, cuda"] = float(xr.sum(torch.from_numpy(x).cuda(), exact=True))
        continue
    exact[f"xreduce exact, {b}"] = float(xr.sum(x, exact=True, backend=b))
for name, value in {**sums, **exact}.items():
    print(f"{name:22} {value!r:>22}  {np.float32(value).view(np.uint32):#010x}")
assert len(set(exact.values())) == 1, exact
