"""The element-wise all-reduce across processes, with xreduce's semantics: every element of an
exact sum is the correctly rounded sum of the ranks' values, the same bits for any number of
ranks, any order of them and any topology.

    xreduce.distributed.all_reduce(x, op="sum", *, exact=True, group=None, comm=None)

x is reduced in place and returned, as ``torch.distributed.all_reduce`` does:

- a PyTorch tensor goes through ``torch.distributed`` (the default process group, or ``group``;
  NCCL for CUDA tensors, Gloo for CPU tensors);
- a NumPy array goes through mpi4py (``comm``, else ``MPI.COMM_WORLD``).

How: each rank owns a slice of the elements. An all-to-all gives it every rank's values of its
slice, as the rows of an R x c matrix (R ranks); xreduce reduces the matrix's columns; an
all-gather gives every rank every slice. That is the traffic of a ring all-reduce (the
all-to-all takes the place of its reduce-scatter), and the values of each element meet on one
rank, where they are reduced at once rather than in steps along a ring or a tree.

Ops: "sum", "prod", "min", "max", and "mean" (the average over the ranks, as torch's
``ReduceOp.AVG``; floats only, since x keeps its type). Results keep x's type: integer sums and
products wrap, as in MPI; f16 and bf16 are reduced in f32 and rounded once. exact=True (float
sums and means): f32 and f64 only (f16 and bf16 raise ValueError: pass exact=False), each
element the correctly rounded sum, or mean, of the ranks' values; elsewhere it changes nothing,
as integers, min and max are exact anyway. exact=False: float sums and products fold the ranks'
values in rank order, element by element, so the bits depend on the number and order of the
ranks, never on the topology or on the element's position; a mean is that sum divided by the
rank count in f64 and rounded once to the sum's type (as ``xreduce.mean``).

Every rank checks its arguments and the ranks compare theirs (element count, type, op, exact)
before any value moves; a problem on any rank raises the same error on every rank, naming the
rank. x must be contiguous (it is written in place).
"""

from __future__ import annotations

import zlib

import numpy as np

from . import _api

__all__ = ["all_reduce"]

_OPS = ("sum", "prod", "min", "max", "mean")
_FOLDS = {"sum": _api.sum, "prod": _api.prod, "min": _api.min, "max": _api.max}
_EXACT_TYPES = ("float32", "float64")
_FLOAT_TYPES = ("float16", "bfloat16", "float32", "float64")


def all_reduce(x, op: str = "sum", *, exact: bool = True, group=None, comm=None):
    """Reduces x element-wise over every rank, in place; returns x (see the module's docstring)."""
    if type(x).__module__.split(".")[0] == "torch":
        if comm is not None:
            raise TypeError("all_reduce: a torch tensor goes through torch.distributed (group=), not comm=")
        return _torch_all_reduce(x, op, exact, group)
    if isinstance(x, np.ndarray):
        if group is not None:
            raise TypeError("all_reduce: a NumPy array goes through mpi4py (comm=), not group=")
        return _mpi_all_reduce(x, op, exact, comm)
    raise TypeError(f"all_reduce takes a torch tensor (torch.distributed) or a NumPy array (mpi4py), "
                    f"not {type(x).__module__}.{type(x).__name__}")


def _problem(dtype_name: str, contiguous: bool, op: str, exact: bool):
    """This rank's argument error as (exception class, message), or None."""
    if op not in _OPS:
        return ValueError, f"unknown op {op!r}: sum, prod, min, max or mean"
    if not contiguous:
        return ValueError, "x must be contiguous: it is reduced in place"
    name = dtype_name.split(".")[-1]
    if op == "mean" and name not in _FLOAT_TYPES:
        return ValueError, (f"the mean of {name} is a float, and x is reduced in place: pass a float array "
                            "(or sum, then divide)")
    if exact and op in ("sum", "mean") and name in ("float16", "bfloat16"):
        return ValueError, (f"exact {op}s take float32 and float64, not {name}; exact=False sums {name} in "
                            "float32 and rounds once")
    return None


def _agree(mine: tuple, problem, gather, codes_agree=None) -> None:
    """Raises on every rank when any rank has a problem, or when the ranks' (count, type, op,
    exact) differ. gather(obj) -> the list of every rank's obj. codes_agree(codes) -> whether
    every rank passed the same integer codes (a cheaper collective than gather): when given, the
    objects are gathered only if the codes differ."""
    if codes_agree is not None:
        codes = (mine[0], _code(mine[1]), _OPS.index(mine[2]) if mine[2] in _OPS else -1, int(mine[3]),
                 int(problem is not None))
        if codes_agree(codes):
            if problem is None:
                return
    everyone = gather((mine, None if problem is None else (problem[0].__name__, problem[1])))
    for rank, (_, p) in enumerate(everyone):
        if p is not None:
            kind = {"ValueError": ValueError, "TypeError": TypeError}.get(p[0], RuntimeError)
            raise kind(f"all_reduce: rank {rank}: {p[1]}")
    first = everyone[0][0]
    for rank, (theirs, _) in enumerate(everyone):
        if theirs != first:
            raise ValueError(f"all_reduce: the ranks disagree: rank 0 has {_describe(first)}, "
                             f"rank {rank} has {_describe(theirs)}")


def _code(dtype_name: str) -> int:
    """An integer for a type's name, the same on every rank."""
    return zlib.crc32(dtype_name.encode())


def _describe(mine: tuple) -> str:
    count, dtype, op, exact = mine
    return f"{count} {dtype} elements, op {op}, exact={exact}"


def _column_results(cols, op: str, exact: bool, dtype_name: str, cast, combine):
    """The reduction of each column of the (ranks, c) matrix cols, in cols' library. Exact sums
    and means, integers, min and max: xreduce's column reduction (their results do not depend on
    the order of the terms). Plain float sums, products and means: folded in rank order,
    element-wise, in f32 for f16 and bf16 (cast(row, None) gives a row in that type,
    cast(row, "float64") one in f64; combine(a, b) adds or multiplies), so that no element's bits
    depend on how many there are or where it lies; a mean then divides in f64."""
    name = dtype_name.split(".")[-1]
    if name in _FLOAT_TYPES and op in ("sum", "prod", "mean") and not (exact and op in ("sum", "mean")):
        acc = cast(cols[0], None)
        for r in range(1, cols.shape[0]):
            acc = combine(acc, cast(cols[r], None))
        return cast(cast(acc, "float64") / cols.shape[0], None) if op == "mean" else acc
    if op in ("sum", "mean"):
        return (_api.sum if op == "sum" else _api.mean)(cols, axis=0, exact=exact and name in _EXACT_TYPES)
    return _FOLDS[op](cols, axis=0)


def _slices(flat, ranks: int, zeros):
    """(c, send): the length of each rank's slice, and the values padded to ranks * c elements
    (a copy, made by zeros(count), only where their count is not a multiple of ranks)."""
    n = flat.shape[0]
    c = -(-n // ranks)
    if c * ranks == n:
        return c, flat
    send = zeros(c * ranks)
    send[:n] = flat
    return c, send


# ---- torch.distributed -------------------------------------------------------------------------

def _torch_all_reduce(t, op: str, exact: bool, group):
    import torch
    import torch.distributed as dist
    ranks = dist.get_world_size(group)
    problem = _problem(str(t.dtype), t.is_contiguous(), op, exact)
    gloo = dist.get_backend(group) == "gloo"

    def codes_agree(codes) -> bool:
        mine = torch.tensor(codes, dtype=torch.int64, device=t.device)
        every = torch.empty(ranks * len(codes), dtype=torch.int64, device=t.device)
        if gloo:
            dist.all_gather(list(every.view(ranks, len(codes)).unbind(0)), mine, group=group)
        else:
            dist.all_gather_into_tensor(every, mine, group=group)
        every = every.view(ranks, len(codes)).cpu()
        return bool((every == every[0]).all()) and not bool(every[:, -1].any())

    _agree((t.numel(), str(t.dtype), op, bool(exact)), problem, lambda obj: _torch_gather_objects(obj, ranks, group),
           codes_agree)
    n = t.numel()
    if n == 0:
        return t
    flat = t.view(-1)
    c, send = _slices(flat, ranks, lambda k: torch.zeros(k, dtype=t.dtype, device=t.device))
    recv = torch.empty(c * ranks, dtype=t.dtype, device=t.device)
    # The values move as bytes: NCCL takes no 64-bit unsigned integers, and bytes are bytes.
    send, recv_values, recv = send.view(torch.uint8), recv, recv.view(torch.uint8)
    c_bytes = c * t.element_size()
    if gloo:
        # Gloo has no all-to-all: point to point, every pair at once.
        me = dist.get_rank(group)
        ops = []
        for r in range(ranks):
            peer = dist.get_global_rank(group, r) if group is not None else r
            mine = slice(r * c_bytes, (r + 1) * c_bytes)
            if r == me:
                recv[mine].copy_(send[mine])
                continue
            ops.append(dist.P2POp(dist.isend, send[mine], peer, group))
            ops.append(dist.P2POp(dist.irecv, recv[mine], peer, group))
        for w in dist.batch_isend_irecv(ops) if ops else []:
            w.wait()
    else:
        dist.all_to_all_single(recv, send, group=group)
    wide = torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype
    part = _column_results(recv_values.view(ranks, c), op, exact, str(t.dtype),
                           lambda row, to: row.to(torch.float64 if to else wide), torch.mul if op == "prod" else torch.add)
    if not isinstance(part, torch.Tensor):  # a CPU tensor was reduced as host memory: NumPy back
        part = torch.from_numpy(np.ascontiguousarray(part))
    part = part.to(device=t.device, dtype=t.dtype).contiguous().view(torch.uint8)
    gathered = flat if c * ranks == n else torch.empty(c * ranks, dtype=t.dtype, device=t.device)
    if gloo:
        dist.all_gather(list(gathered.view(torch.uint8).view(ranks, c_bytes).unbind(0)), part, group=group)
    else:
        dist.all_gather_into_tensor(gathered.view(torch.uint8), part, group=group)
    if gathered is not flat:
        flat.copy_(gathered[:n])
    return t


def _torch_gather_objects(obj, ranks: int, group) -> list:
    import torch.distributed as dist
    out = [None] * ranks
    dist.all_gather_object(out, obj, group=group)
    return out


# ---- mpi4py ------------------------------------------------------------------------------------

def _mpi_all_reduce(a: np.ndarray, op: str, exact: bool, comm):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD if comm is None else comm
    ranks = comm.Get_size()
    problem = _problem(a.dtype.name, a.flags.c_contiguous, op, exact)
    if problem is None and not a.flags.writeable:
        problem = (ValueError, "x is read-only: it is reduced in place")
    _agree((a.size, a.dtype.name, op, bool(exact)), problem, comm.allgather)
    n = a.size
    if n == 0:
        return a
    flat = a.reshape(-1)
    c, send = _slices(flat, ranks, lambda k: np.zeros(k, dtype=a.dtype))
    recv = np.empty(c * ranks, dtype=a.dtype)
    comm.Alltoall([send.view(np.uint8), MPI.BYTE], [recv.view(np.uint8), MPI.BYTE])
    wide = np.float32 if a.dtype.itemsize == 2 and a.dtype.kind in "fV" else a.dtype
    part = np.ascontiguousarray(_column_results(recv.reshape(ranks, c), op, exact, a.dtype.name,
                                                lambda row, to: row.astype(to or wide),
                                                np.multiply if op == "prod" else np.add))
    part = part.astype(a.dtype)
    gathered = flat if c * ranks == n else np.empty(c * ranks, dtype=a.dtype)
    comm.Allgather([part.view(np.uint8), MPI.BYTE], [gathered.view(np.uint8), MPI.BYTE])
    if gathered is not flat:
        flat[:] = gathered[:n]
    return a
