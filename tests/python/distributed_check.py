"""xreduce.distributed.all_reduce under mpiexec, on NumPy arrays through mpi4py and, where torch
is installed, on torch tensors through torch.distributed (Gloo on CPU tensors; NCCL on CUDA
tensors when every rank has a GPU of its own). Run by test_distributed.py:

    mpiexec -n R python distributed_check.py [--torch]

Every rank can make every rank's data (seeded by the data set's number), so each checks the
result against its own reference: exact sums against the exact rational sum rounded once,
everything else against xreduce's own reduction of the stacked data, bit for bit. Exact sums are
also run with the data sets rotated over the ranks: the same bits whatever rank holds which.
Exits 1 with a line per failure.
"""

from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import numpy as np
from mpi4py import MPI

import xreduce
from xreduce.distributed import all_reduce

comm = MPI.COMM_WORLD
RANK, RANKS = comm.Get_rank(), comm.Get_size()
failures: list[str] = []


def fail(what: str) -> None:
    failures.append(f"rank {RANK} of {RANKS}: {what}")


def data(dtype, n: int, kind: str, which: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * which + n)
    if kind == "normal":
        v = rng.standard_normal(n)
    elif kind == "wide":  # magnitudes 1e-30 .. 1e30, both signs
        v = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-30, 30, n)
    elif kind == "cancel":  # large terms that cancel across the ranks, and small ones
        big = np.random.default_rng(7 + n).standard_normal(n) * 1e8
        v = (big if which % 2 == 0 else -big) + rng.standard_normal(n) * 1e-3
    elif kind == "special":  # -0 everywhere but a few NaN, +inf, -inf, 0 and tiny terms
        v = np.full(n, -0.0)
        if n:
            v[rng.integers(0, n)] = rng.choice([np.nan, np.inf, -np.inf, 0.0, 1e-310])
    elif kind == "ints":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        raise ValueError(kind)
    return v.astype(dtype)


def round_to(q: Fraction, dtype) -> float:
    """q rounded once to dtype (f32 or f64), ties to even."""
    d = float(q)  # correctly rounded to f64
    if dtype == np.float64:
        return d
    f = np.float32(d)
    if math.isinf(f) or float(f) == d or not math.isfinite(d):
        return float(f)
    # d is not an f32: if it lies exactly halfway between two f32, q decides (f32 rounding of d
    # would round twice).
    lo, hi = sorted((float(f), float(np.nextafter(f, np.float32(np.inf if d > float(f) else -np.inf)))))
    mid = Fraction(lo) + (Fraction(hi) - Fraction(lo)) / 2
    if Fraction(d) != mid or q == mid:
        return float(f)
    return hi if q > mid else lo


def exact_reference(sets: list[np.ndarray], dtype, mean: bool = False) -> np.ndarray:
    """The exact sum (or mean) of each element over the sets, rounded once to dtype."""
    out = np.empty(sets[0].size, dtype=dtype)
    for i in range(out.size):
        terms = [float(s[i]) for s in sets]
        if any(math.isnan(t) for t in terms) or (math.inf in terms and -math.inf in terms):
            out[i] = np.nan
        elif math.inf in terms or -math.inf in terms:
            out[i] = math.inf if math.inf in terms else -math.inf
        else:
            q = sum((Fraction(t) for t in terms), Fraction(0)) / (len(terms) if mean else 1)
            out[i] = -0.0 if q == 0 and all(math.copysign(1, t) < 0 for t in terms) else round_to(q, dtype)
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":  # NaNs of any payload count as one
        nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
        a, b = np.where(nan, 0, a).astype(a.dtype), np.where(nan, 0, b).astype(b.dtype)
    return a.tobytes() == b.tobytes()


def check_exact(dtype, n: int, kind: str, arrays, op: str = "sum") -> None:
    sets = [data(dtype, n, kind, r) for r in range(RANKS)]
    want = exact_reference(sets, dtype, mean=op == "mean")
    for rotation in range(min(RANKS, 3)):
        mine = sets[(RANK + rotation) % RANKS].copy()
        got = arrays.to_host(all_reduce(arrays.of(mine), op, exact=True, **arrays.kw))
        if not same_bits(got, want):
            bad = [i for i in range(n) if not same_bits(got[i:i + 1], want[i:i + 1])][:3]
            fail(f"{arrays.name} exact {op} {dtype.__name__} {kind} n={n} rotation {rotation}: elements {bad}: "
                 f"{[got[i] for i in bad]} against {[want[i] for i in bad]}")


def check_fold(dtype, n: int, kind: str, op: str, arrays) -> None:
    sets = [data(dtype, n, kind, r) for r in range(RANKS)]
    stacked = np.stack(sets) if n else np.empty((RANKS, 0), dtype=dtype)
    if np.dtype(dtype).kind == "f" and op in ("sum", "prod", "mean"):  # in rank order, in f32 for f16
        wide = np.float32 if np.dtype(dtype).itemsize == 2 else dtype
        acc = stacked[0].astype(wide)
        for row in stacked[1:]:
            acc = np.multiply(acc, row.astype(wide)) if op == "prod" else np.add(acc, row.astype(wide))
        if op == "mean":  # divided in f64, rounded to the sum's type, then to x's
            acc = (acc.astype(np.float64) / RANKS).astype(wide)
        want = acc.astype(dtype)
    else:
        want = np.asarray(getattr(xreduce, op)(stacked, axis=0)).astype(dtype) if n else stacked[0]
    got = arrays.to_host(all_reduce(arrays.of(sets[RANK].copy()), op, exact=False, **arrays.kw))
    if not same_bits(got, want):
        fail(f"{arrays.name} {op} {np.dtype(dtype).name} {kind} n={n}: {got[:4]} against {want[:4]}")


def check_errors(arrays) -> None:
    cases = [
        ("unknown op", lambda: all_reduce(arrays.of(np.zeros(4, np.float32)), "median" if RANK == RANKS - 1 else "sum",
                                          **arrays.kw), f"rank {RANKS - 1}: unknown op 'median'"),
        ("mean of ints", lambda: all_reduce(arrays.of(np.zeros(4, np.int32)), "mean", **arrays.kw),
         "rank 0: the mean of int32 is a float"),
        ("exact mean f16", lambda: all_reduce(arrays.of(np.zeros(3, np.float16)), "mean", exact=True, **arrays.kw),
         "rank 0: exact means take float32 and float64"),
        ("counts differ", lambda: all_reduce(arrays.of(np.zeros(4 + RANK, np.float32)), **arrays.kw),
         "the ranks disagree" if RANKS > 1 else None),
        ("exact f16", lambda: all_reduce(arrays.of(np.zeros(3, np.float16)), "sum", exact=True, **arrays.kw),
         "rank 0: exact sums take float32 and float64"),
    ]
    if arrays.name == "numpy":
        frozen = np.zeros(4, np.float32)
        frozen.flags.writeable = False
        cases.append(("read-only", lambda: all_reduce(frozen), "rank 0: x is read-only"))
        cases.append(("strided", lambda: all_reduce(np.zeros(8, np.float32)[::2]), "rank 0: x must be contiguous"))
    for what, call, message in cases:
        try:
            call()
        except ValueError as e:
            if message is None or message not in str(e):
                fail(f"{arrays.name} {what}: {e}")
        else:
            if message is not None:
                fail(f"{arrays.name} {what}: no error")


def run_all(arrays) -> None:
    for n in (0, 1, 3, 1001):
        for kind in ("normal", "wide", "cancel", "special"):
            for dtype in (np.float32, np.float64):
                check_exact(dtype, n, kind, arrays)
                check_exact(dtype, n, kind, arrays, "mean")
        for dtype, kind, op in ((np.float32, "normal", "sum"), (np.float16, "normal", "sum"),
                                (np.float64, "wide", "prod"), (np.float32, "special", "max"),
                                (np.float64, "special", "min"), (np.int32, "ints", "sum"), (np.uint8, "ints", "sum"),
                                (np.int64, "ints", "prod"), (np.int8, "ints", "min"), (np.uint64, "ints", "max"),
                                (np.float32, "normal", "mean"), (np.float16, "wide", "mean"),
                                (np.float64, "special", "mean")):
            check_fold(dtype, n, kind, op, arrays)
    check_errors(arrays)


class NumpyArrays:
    name = "numpy"
    kw: dict = {}

    @staticmethod
    def of(a):
        return a

    @staticmethod
    def to_host(a):
        return a


class TorchArrays:
    def __init__(self, device: str):
        import torch
        self.torch, self.device = torch, device
        self.name = f"torch {device}"
        self.kw = {}

    def of(self, a):
        return self.torch.from_numpy(a).to(self.device)

    def to_host(self, t):
        return t.cpu().numpy()


def main() -> int:
    run_all(NumpyArrays())
    if "--torch" in sys.argv:
        import torch
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(comm.bcast(29500 + os.getpid() % 1000)))
        cuda = torch.cuda.is_available() and torch.cuda.device_count() >= RANKS
        if cuda:
            torch.cuda.set_device(RANK)
        dist.init_process_group("nccl" if cuda else "gloo", rank=RANK, world_size=RANKS)
        run_all(TorchArrays(f"cuda:{RANK}" if cuda else "cpu"))
        dist.destroy_process_group()
    everyone = comm.gather(failures)
    if RANK == 0:
        lines = [line for rank_lines in everyone for line in rank_lines]
        for line in lines[:40]:
            print(line)
        print(f"distributed_check: {RANKS} ranks, {len(lines)} failures")
        return 1 if lines else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
