#!/usr/bin/env bash
# The spread of auto/CUB over separate processes: CUB's per-call time on one GPU differs from
# process to process (on the H200: about 12 or 15 us at mid n, bench/RESULTS.md), so one
# sweep's ratio is one draw. Runs xr_bench_auto_vs_cub PROCS times and prints, per type and n,
# the min, median and max ratio and CUB's fastest and slowest median.
#   bash bench/sweep_spread.sh BUILD_DIR [PROCS=6] [sweep flags, default --types i32,f32,f64 --lo 10 --hi 22]
set -euo pipefail
build=${1:?usage: bash bench/sweep_spread.sh BUILD_DIR [PROCS=6] [sweep flags]}
procs=${2:-6}
shift $(($# < 2 ? $# : 2))
flags=("$@")
((${#flags[@]})) || flags=(--types i32,f32,f64 --lo 10 --hi 22)
OUT=${OUT:-/tmp/xr_out}
mkdir -p "$OUT"
for ((p = 0; p < procs; p++)); do "$build/bench/xr_bench_auto_vs_cub" "${flags[@]}" >"$OUT/spread_$p.txt"; done
python3 - "$OUT" "$procs" <<'PY'
import statistics, sys
out, procs = sys.argv[1], int(sys.argv[2])
rows = {}
for p in range(procs):
    for line in open(f"{out}/spread_{p}.txt"):
        f = line.split()
        if len(f) > 4 and f[1].startswith("2^"):
            rows.setdefault((f[0], f[1]), []).append((float(f[4]), float(f[3])))
print(f"{'type':4} {'n':5} {'min':>6} {'median':>6} {'max':>6}  {'cub us min':>10} {'max':>6}   auto/cub over {procs} processes")
for (t, n), v in rows.items():
    r = [a for a, _ in v]
    c = [b for _, b in v]
    print(f"{t:4} {n:5} {min(r):6.3f} {statistics.median(r):6.3f} {max(r):6.3f}  {min(c):10.2f} {max(c):6.2f}")
PY
