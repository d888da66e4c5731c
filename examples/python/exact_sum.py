"""Sums that cancel: NumPy's float32 sum against xreduce's plain and exact sums on each host
backend, and the exact sum of each row of a matrix."""
import math

import numpy as np

import xreduce as xr

rng = np.random.default_rng(0)
big = np.float32(2.0**24)
x = np.concatenate([rng.random(1_000_000, dtype=np.float32), [big, -big]]).astype(np.float32)
rng.shuffle(x)

exact = math.fsum(x.astype(np.float64))  # every float32 term is a float64: fsum is exact here
print(f"math.fsum        {exact!r}")
print(f"numpy.sum        {float(np.sum(x))!r}")
for status in xr.backends():
    if status["usable"] and status["backend"] != "cuda":
        b = status["backend"]
        print(f"xreduce {b:7}  {float(xr.sum(x, backend=b))!r}  exact: {float(xr.sum(x, exact=True, backend=b))!r}")
        assert xr.sum(x, exact=True, backend=b) == np.float32(exact)

m = x[:1_000_000].reshape(1000, 1000)
rows = xr.sum(m, axis=1, exact=True)
assert all(rows[i] == np.float32(math.fsum(m[i].astype(np.float64))) for i in (0, 499, 999))
print(f"row sums         {rows[:3]} ... (exact, {rows.shape[0]} rows)")
