"""xreduce's Python functions against torch.sum, cupy.sum, NumPy and math.fsum on the same arrays.

    python3 bench/python_vs_torch.py [--rounds 5] [--json out.json] [--only cpu|gpu]

GPU part (needs torch with CUDA; CuPy where installed): CUDA events around each call on the
current stream, warm-up calls first, the median over rounds of the mean of a batch of calls:
  whole f32 arrays of 2^10 .. 2^28 elements: xreduce.sum(t) against torch.sum(t);
  exact=True at 2^28 (f32, f16, bf16) against torch.sum's throughput;
  axis=1 of (2^25, 2), (2^23, 8), (2^21, 32) f32 and axis=0 of the segmented stage's shapes,
  against torch.sum(t, dim) and cupy.sum(a, axis).
CPU part: xreduce.sum(a, exact=True) of a 10^7-element f64 NumPy array against math.fsum(a)
and np.sum(a), wall clock, median over rounds.
Prints one table per part (ratios are xreduce's time over the other's: below 1 is faster) and
writes every figure to --json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

import xreduce as xr


def median_ms(fn, rounds: int, batch: int, timer) -> float:
    """The median over `rounds` of the mean time of `batch` calls of fn, after warm-up calls."""
    for _ in range(3):
        fn()
    return statistics.median(timer(fn, batch) for _ in range(rounds))


def wall_timer(fn, batch: int) -> float:
    start = time.perf_counter()
    for _ in range(batch):
        fn()
    return (time.perf_counter() - start) * 1e3 / batch


def cuda_timer(torch):
    def timer(fn, batch: int) -> float:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) / batch
    return timer


def batch_for(nbytes: int) -> int:
    """Enough calls that a batch takes about a millisecond or more, and at least ten, so that each
    call's host work overlaps the kernels before it, as in a program that reduces again and again."""
    return max(10, min(200, (64 << 20) // max(nbytes, 1)))


def gpu_part(rounds: int) -> list[dict]:
    import torch
    if not torch.cuda.is_available():
        print("SKIP gpu: torch has no CUDA device", file=sys.stderr)
        return []
    try:
        import cupy
    except ImportError:
        cupy = None
    timer = cuda_timer(torch)
    rows = []

    def row(what, n_bytes, ours, theirs, against):
        rows.append({"case": what, "bytes": n_bytes, "xreduce_ms": ours, "other_ms": theirs, "other": against,
                     "ratio": ours / theirs, "xreduce_gbps": n_bytes / ours / 1e6})

    for log2 in (10, 12, 14, 16, 18, 20, 22, 24, 26, 28):
        t = torch.rand(1 << log2, device="cuda", dtype=torch.float32)
        b = batch_for(t.nbytes)
        row(f"sum f32 2^{log2}", t.nbytes, median_ms(lambda: xr.sum(t), rounds, b, timer),
            median_ms(lambda: torch.sum(t), rounds, b, timer), "torch.sum")
        if log2 == 28:
            row("sum f32 2^28 exact", t.nbytes, median_ms(lambda: xr.sum(t, exact=True), rounds, b, timer),
                median_ms(lambda: torch.sum(t), rounds, b, timer), "torch.sum")
        del t
    for dtype in (torch.float16, torch.bfloat16):
        t = torch.rand(1 << 28, device="cuda").to(dtype)
        b = batch_for(t.nbytes)
        row(f"sum {str(dtype)[6:]} 2^28 exact", t.nbytes, median_ms(lambda: xr.sum(t, exact=True), rounds, b, timer),
            median_ms(lambda: torch.sum(t), rounds, b, timer), "torch.sum")
        del t
    shapes = [((1 << 25, 2), 1), ((1 << 23, 8), 1), ((1 << 21, 32), 1),
              ((1 << 25, 2), 0), ((1 << 23, 8), 0), ((1 << 21, 32), 0), ((4096, 4096), 0), ((64, 1 << 20), 0)]
    for shape, axis in shapes:
        t = torch.rand(shape, device="cuda", dtype=torch.float32)
        b = batch_for(t.nbytes)
        ours = median_ms(lambda: xr.sum(t, axis=axis), rounds, b, timer)
        row(f"sum f32 {shape[0]}x{shape[1]} axis={axis}", t.nbytes, ours,
            median_ms(lambda: torch.sum(t, dim=axis), rounds, b, timer), "torch.sum")
        if cupy is not None:
            a = cupy.from_dlpack(t)
            row(f"sum f32 {shape[0]}x{shape[1]} axis={axis}", t.nbytes, ours,
                median_ms(lambda: cupy.sum(a, axis=axis), rounds, b, timer), "cupy.sum")
        del t
    return rows


def cpu_part(rounds: int) -> list[dict]:
    rng = np.random.default_rng(1)
    a = rng.standard_normal(10_000_000)
    ours = median_ms(lambda: xr.sum(a, exact=True), rounds, 1, wall_timer)
    rows = []
    for name, fn in (("math.fsum", lambda: math.fsum(a)), ("np.sum", lambda: np.sum(a))):
        theirs = median_ms(fn, rounds, 1, wall_timer)
        rows.append({"case": "sum f64 1e7 exact (host)", "bytes": a.nbytes, "xreduce_ms": ours, "other_ms": theirs,
                     "other": name, "ratio": ours / theirs, "xreduce_gbps": a.nbytes / ours / 1e6})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", default="")
    p.add_argument("--only", choices=("cpu", "gpu"), default="")
    args = p.parse_args()
    rows = []
    if args.only != "cpu":
        try:
            rows += gpu_part(args.rounds)
        except ImportError as e:
            print(f"SKIP gpu: {e}", file=sys.stderr)
    if args.only != "gpu":
        rows += cpu_part(args.rounds)
    print(f"{'case':34} {'against':10} {'xreduce ms':>11} {'other ms':>10} {'ratio':>7} {'GB/s':>8}")
    for r in rows:
        print(f"{r['case']:34} {r['other']:10} {r['xreduce_ms']:11.4f} {r['other_ms']:10.4f} {r['ratio']:7.3f} "
              f"{r['xreduce_gbps']:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
