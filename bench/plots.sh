#!/usr/bin/env bash
# The measurements behind the README's figures, as JSON, on a machine with an NVIDIA GPU. It
# builds nothing: BUILD_DIR is a build with CUDA and -DXREDUCE_BUILD_BENCH=ON.
#   bash bench/plots.sh BUILD_DIR OUTDIR
# Writes to OUTDIR (the commands, their text output and exit codes in plots.log):
#   ladder.json  reduce_cli -b cuda --kernel all --type i32 --n 2^28 --json
#   sweep.json   xr_bench_auto_vs_cub --types f32 --lo 10 --hi 30 --json (one type only, to stay
#                under two minutes on an H100)
#   host.json    xr_bench_host_path --log2n 28 --repeat 7 --json
# and, where python3 has matplotlib, ladder.png, sweep.png and host.png drawn from them by
# scripts/plot.py (the ladder with the datasheet line that sweep.json records). The README's
# figures are these PNGs, copied to docs/img/ as <kind>-<gpu>.png (ladder-h100.png, ...).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: bash bench/plots.sh BUILD_DIR OUTDIR" >&2
  exit 2
fi
build=$1 out=$2
plot=$(cd "$(dirname "$0")/.." && pwd)/scripts/plot.py
mkdir -p "$out"
log="$out/plots.log"
: >"$log"
status=0
# run NAME STDOUT COMMAND...: the command's standard output to STDOUT (appended), its errors to
# the log, its exit code checked.
run() {
  local name=$1 stdout=$2
  shift 2
  echo "== $name: $*" | tee -a "$log"
  "$@" >>"$stdout" 2>>"$log"
  local rc=$?
  echo "== $name: exit $rc" | tee -a "$log"
  ((rc == 0)) || status=1
}

rm -f "$out"/{ladder,sweep,host}.{json,png}
run ladder "$out/ladder.json" "$build/apps/reduce_cli" -b cuda --kernel all --type i32 --n 2^28 --json
run sweep "$log" "$build/bench/xr_bench_auto_vs_cub" --types f32 --lo 10 --hi 30 --json "$out/sweep.json"
run host "$log" "$build/bench/xr_bench_host_path" --log2n 28 --repeat 7 --json "$out/host.json"

if python3 -c "import matplotlib" 2>/dev/null; then
  datasheet=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['datasheet_gbps'])" "$out/sweep.json" 2>/dev/null)
  for kind in ladder sweep host; do
    [[ -s $out/$kind.json ]] || continue
    extra=()
    [[ $kind == ladder && -n $datasheet ]] && extra=(--datasheet "$datasheet")
    run "$kind.png" "$log" python3 "$plot" "$out/$kind.json" -o "$out/$kind.png" "${extra[@]}"
  done
else
  echo "no matplotlib for python3: JSON only; draw with scripts/plot.py elsewhere" | tee -a "$log"
fi
ls -l "$out"
exit $status
