#!/usr/bin/env bash
# A/B of auto on one GPU: the baseline source tree BASE (e.g. `git archive HEAD | tar -x -C
# .ab_base`) and this working tree, each built with CUDA; their xr_bench_auto_vs_cub sweeps run
# alternately ROUNDS times, so that both meet the same machine. Prints, per type and n, the
# median over rounds of each build's auto time and auto/CUB ratio, and new/old time.
#   bash bench/ab_sweep.sh BASE [ROUNDS=3] [sweep flags, default --types i32,f32,f64 --lo 12 --hi 28]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bash bench/ab_sweep.sh BASE_SOURCE_TREE [ROUNDS=3] [sweep flags]}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
flags=("$@")
((${#flags[@]})) || flags=(--types i32,f32,f64 --lo 12 --hi 28)
OUT=${OUT:-/tmp/xr_out}
mkdir -p "$OUT"
for side in old new; do
  src=.; [[ $side == old ]] && src=$base
  (cmake -S "$src" -B "build-ab-$side" -DCMAKE_BUILD_TYPE=Release -DXREDUCE_CUDA=ON -DXREDUCE_BUILD_TESTS=OFF -DXREDUCE_BUILD_BENCH=ON \
     >/dev/null && cmake --build "build-ab-$side" -j 8 --target xr_bench_auto_vs_cub >/dev/null) &
done
wait
for ((r = 0; r < rounds; r++)); do
  for side in old new; do
    "build-ab-$side/bench/xr_bench_auto_vs_cub" "${flags[@]}" >"$OUT/ab_${side}_$r.txt"
  done
done
python3 - "$OUT" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for side in ("old", "new"):
    for r in range(rounds):
        for line in open(f"{out}/ab_{side}_{r}.txt"):
            f = line.split()
            if len(f) > 4 and f[1].startswith("2^"):
                rows.setdefault((f[0], f[1]), {}).setdefault(side, []).append((float(f[2]), float(f[4])))
print(f"{'type':4} {'n':5} {'old us':>8} {'new us':>8} {'new/old':>7} {'old/cub':>7} {'new/cub':>7}   medians of {rounds} alternating sweeps")
for (t, n), d in rows.items():
    med = lambda side, i: statistics.median(x[i] for x in d[side])
    print(f"{t:4} {n:5} {med('old',0):8.2f} {med('new',0):8.2f} {med('new',0)/med('old',0):7.3f} {med('old',1):7.3f} {med('new',1):7.3f}")
PY
