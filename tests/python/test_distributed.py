"""xreduce.distributed.all_reduce across 1 to 4 processes (distributed_check.py under mpiexec):
exact sums against the exact rational sum rounded once, with the data rotated over the ranks;
the other ops against xreduce's own results; errors raised on every rank. Torch tensors too
(Gloo, or NCCL where every rank has a GPU) where torch is installed."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import xreduce

HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = shutil.which("mpiexec")


def _reason_missing():
    if MPIEXEC is None:
        return "no mpiexec on the PATH (apt-get install openmpi-bin)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install mpi4py)"
    # Imported in a process of its own: mpi4py.MPI initialises MPI, which this one should not.
    probe = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return "mpi4py does not load an MPI library: " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    return None


MISSING = _reason_missing()


@pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_all_reduce_across_ranks(ranks):
    env = dict(os.environ)
    # The xreduce this test imported, for the ranks too; Open MPI as root and past the core count.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(xreduce.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_NUM_THREADS="1")
    args = [MPIEXEC, "-n", str(ranks), sys.executable, os.path.join(HERE, "distributed_check.py")]
    if importlib.util.find_spec("torch") is not None:
        args.append("--torch")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    summary = [line for line in proc.stdout.splitlines() if line.startswith(("rank ", "distributed_check"))]
    assert proc.returncode == 0 and f"{ranks} ranks, 0 failures" in proc.stdout, \
        "\n".join(summary) + "\n" + proc.stderr[-3000:]
