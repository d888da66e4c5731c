"""xreduce.distributed.all_reduce against NCCL's all-reduce (torch.distributed), CUDA tensors of
f32, one rank per GPU: time a call, and whether the exact and plain forms give NCCL's bits. Two
data sets: `normal` (standard normal values, whose ranks' values of one element mostly span
fewer than 24 binades) and `wide` (normal values scaled by 10^-6 to 10^5, which mostly span more).

    mpiexec -n R python3 bench/all_reduce_vs_nccl.py [log2 sizes...]   (default 14 18 20)

Host time of a call with every GPU synchronised before and after (a barrier first), the median of
5 after 2 warm-up calls, less the time of the clone each call starts from. Bus GB/s counts
2 (R - 1) / R of the bytes, as NCCL's tests do. The table prints on rank 0.
"""

import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from mpi4py import MPI

import xreduce.distributed as xd


def timed(f, reps: int = 5) -> float:
    times = []
    for i in range(reps + 2):
        dist.barrier()
        torch.cuda.synchronize()
        start = time.perf_counter()
        f()
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, ranks = comm.rank, comm.size
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29611")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=ranks)
    rows = []
    for log2n in [int(a) for a in sys.argv[1:]] or [14, 18, 20]:
        for dist_name in ("normal", "wide"):
            n = 2 ** log2n
            g = torch.Generator(device="cuda")
            g.manual_seed(rank + 1)
            x = torch.randn(n, device="cuda", generator=g)
            if dist_name == "wide":
                x *= 10.0 ** torch.randint(-6, 6, (n,), device="cuda", generator=g)
            nccl, exact, plain = x.clone(), x.clone(), x.clone()
            dist.all_reduce(nccl)
            xd.all_reduce(exact, exact=True)
            xd.all_reduce(plain, exact=False)
            clone = timed(lambda: x.clone())
            rows.append((log2n, dist_name, timed(lambda: dist.all_reduce(x.clone())) - clone,
                         timed(lambda: xd.all_reduce(x.clone(), exact=True)) - clone,
                         timed(lambda: xd.all_reduce(x.clone(), exact=False)) - clone,
                         torch.equal(nccl.view(torch.int32), exact.view(torch.int32)),
                         torch.equal(nccl.view(torch.int32), plain.view(torch.int32))))
    if rank == 0:
        print(f"ranks {ranks}, f32, ms a call")
        print("n      data     nccl ms  exact ms  plain ms  exact/nccl  nccl busbw  exact busbw  plain busbw  "
              "exact==nccl  plain==nccl")
        for log2n, dist_name, t_nccl, t_exact, t_plain, same_exact, same_plain in rows:
            bus = 2 * (ranks - 1) / ranks * 4 * 2 ** log2n / 1e6  # bytes / 1e6: GB/s over ms
            print(f"2^{log2n:<4} {dist_name:7s} {t_nccl:8.3f} {t_exact:9.3f} {t_plain:9.3f} {t_exact / t_nccl:11.2f} "
                  f"{bus / t_nccl:11.1f} {bus / t_exact:12.1f} {bus / t_plain:12.1f} {str(same_exact):>12} "
                  f"{str(same_plain):>12}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
