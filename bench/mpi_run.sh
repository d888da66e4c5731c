#!/usr/bin/env bash
# Distributed reductions through reduce_cli under mpirun (xreduce::mpi).
#
#   bash bench/mpi_run.sh BUILD_DIR [cpu|gpu] [PROCS=3]
#
# cpu: 2 OpenMP ranks of 1 thread against 1 rank of 2 threads, the same 2^27 f32 (plain and exact
#      sums), PROCS launches of each, alternated; the ratio is the 2-rank throughput over the
#      1-rank one (end to end: the slowest rank's reduction plus the combine).
# gpu: the exact sum of 2^28 f32 on 1 CUDA rank, on 2 CUDA ranks sharing the GPU plus 2 OpenMP
#      ranks (MPMD), and on 4 OpenMP ranks: the bits must be identical. Also the combine step's
#      median time for exact states, over 101 combines per launch.
# Every launch's JSON is kept in $OUT (default /tmp/xr_out) as mpi_<name>_<p>.json.
set -euo pipefail
build=${1:?usage: mpi_run.sh BUILD_DIR [cpu|gpu] [PROCS]}
mode=${2:-cpu}
procs=${3:-3}
out=${OUT:-/tmp/xr_out}
mkdir -p "$out"
cli=$build/apps/reduce_cli
# Open MPI refuses root and more ranks than cores unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# run NAME MPIRUN-ARGS...: one launch, its JSON kept; prints the JSON's path.
run() {
  local name=$1
  shift
  mpirun "$@" >"$out/mpi_$name.json"
  echo "$out/mpi_$name.json"
}

summary() {
  python3 - "$@" <<'PY'
import json, statistics, sys
rows = {}
for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    g = json.loads(text[text.index('{'):])["result"]
    key = path.rsplit('/', 1)[1].rsplit('_', 1)[0]
    rows.setdefault(key, []).append(g)
print(f"{'launch':34} {'value':>22} {'GB/s median [min-max]':>26} {'combine us median [min-max]':>30}")
for key, gs in rows.items():
    rate = [g["bytes_per_s"] / 1e9 for g in gs]
    comb = [g["combine_ms"] * 1e3 for g in gs]
    values = sorted({g["value"] for g in gs})
    print(f"{key:34} {','.join(values):>22} {statistics.median(rate):8.2f} [{min(rate):.2f}-{max(rate):.2f}]"
          f"       {statistics.median(comb):8.1f} [{min(comb):.1f}-{max(comb):.1f}]")
    if not all(g["agrees"] for g in gs):
        print(f"  {key}: a result disagrees with the reference")
PY
}

files=()
if [[ $mode == cpu ]]; then
  common=(--n 2^27 --type f32 --repeat 9 --warmup 2 --json)
  for p in $(seq 1 "$procs"); do
    for exact in "" --exact; do
      tag=${exact:+exact}
      files+=("$(run "2x1_${tag:-plain}_$p" -n 2 --bind-to core "$cli" -b omp --threads 1 $exact "${common[@]}")")
      files+=("$(run "1x2_${tag:-plain}_$p" -n 1 --bind-to none "$cli" -b omp --threads 2 $exact "${common[@]}")")
    done
  done
  summary "${files[@]}"
  python3 - "${files[@]}" <<'PY'
import json, statistics, sys
rate = {}
for path in sys.argv[1:]:
    text = open(path).read()
    g = json.loads(text[text.index('{'):])["result"]
    name = path.rsplit('/', 1)[1]
    shape, kind = name.split('_')[1], name.split('_')[2]
    rate.setdefault((kind, shape), []).append(g["bytes_per_s"])
for kind in ("plain", "exact"):
    two, one = rate[(kind, "2x1")], rate[(kind, "1x2")]
    ratios = [a / b for a, b in zip(two, one)]
    print(f"{kind}: 2 ranks x 1 thread / 1 rank x 2 threads = {statistics.median(ratios):.3f} "
          f"[{min(ratios):.3f}-{max(ratios):.3f}] over {len(ratios)} alternated pairs")
PY
else
  common=(--n 2^28 --type f32 --exact --repeat 101 --warmup 5 --json)
  for p in $(seq 1 "$procs"); do
    files+=("$(run "cuda1_$p" -n 1 --bind-to none "$cli" -b cuda "${common[@]}")")
    files+=("$(run "cuda2+omp2_$p" --bind-to none -n 2 "$cli" -b cuda "${common[@]}" : -n 2 "$cli" -b omp --threads 4 "${common[@]}")")
    files+=("$(run "omp4_$p" -n 4 --bind-to none "$cli" -b omp --threads 4 "${common[@]}")")
  done
  summary "${files[@]}"
fi
