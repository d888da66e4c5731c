#!/usr/bin/env bash
# Host backends under contention: N copies of reduce_cli at once against the same N copies one
# after another, for small, mid and large reductions, N = 1, 2, 4 and 8 x the cores, on OpenMP
# and OpenCL (PoCL). Then each size alone: the median time a call under auto with its default
# team and with --threads 1.
#
#   bash bench/contention.sh [BUILD_DIR] [BACKENDS] [MULTIPLES]
#     BUILD_DIR  where apps/reduce_cli is (default: build)
#     BACKENDS   comma-separated (default: omp,opencl; an unusable one is skipped)
#     MULTIPLES  comma-separated multiples of the cores (default: 1,2,4,8)
#
# ratio = concurrent wall time / sequential wall time: 1 means the processes shared the cores as
# well as taking turns would, above 1 they lost time to each other. A concurrent batch is stopped
# after XR_CONTENTION_LIMIT seconds (default 120) and its ratio shown as a lower bound (">").
# XR_CONTENTION_ARGS adds options to every reduce_cli run (e.g. --threads 16: a fixed team).
# XR_CONTENTION_SCALE multiplies the repeats (default 1): on a faster host, so that each process
# still reduces for a tenth of a second or more and starting processes is not what is measured.
set -uo pipefail
build=${1:-build}
backends=${2:-omp,opencl}
multiples=${3:-1,2,4,8}
cli="$build/apps/reduce_cli"
limit=${XR_CONTENTION_LIMIT:-120}
cores=$(nproc)
[[ -x $cli ]] || { echo "contention: no $cli (build first)" >&2; exit 2; }
[[ ${XR_CONTENTION_SCALE:-1} =~ ^[1-9][0-9]*$ ]] ||
  { echo "contention: XR_CONTENTION_SCALE must be a whole number from 1 ('${XR_CONTENTION_SCALE}')" >&2; exit 2; }

# size name, elements, repeats: each process reduces for roughly 0.1-0.3 s alone on a 2-core VM.
sizes=("small 2^14 4000" "mid 2^18 400" "large 2^22 40")

now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# One process: generate, reduce `repeat` times, cross-check once.
one() {  # backend n repeat
  "$cli" -b "$1" --n "$2" --repeat "$3" --warmup 1 --json ${XR_CONTENTION_ARGS:-} >/dev/null 2>&1
}

echo "contention on $cores cores${XR_CONTENTION_ARGS:+, reduce_cli $XR_CONTENTION_ARGS} ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(date -u +%F)"
printf '%-7s %-6s %5s %10s %10s %7s\n' backend size procs "seq s" "conc s" ratio
for backend in ${backends//,/ }; do
  if ! "$cli" -b "$backend" --n 16 --repeat 1 --warmup 0 >/dev/null 2>&1; then
    echo "$backend: not usable here, skipped"
    continue
  fi
  for s in "${sizes[@]}"; do
    read -r name n repeat <<<"$s"
    repeat=$((repeat * ${XR_CONTENTION_SCALE:-1}))
    for m in ${multiples//,/ }; do
      procs=$((m * cores))
      t0=$(now)
      for ((i = 0; i < procs; i++)); do one "$backend" "$n" "$repeat"; done
      seq_s=$(minus "$(now)" "$t0")
      t0=$(now)
      pids=()
      for ((i = 0; i < procs; i++)); do
        timeout "$limit" env cli="$cli" bash -c "$(declare -f one); one $backend $n $repeat" &
        pids+=($!)
      done
      stopped=0
      for p in "${pids[@]}"; do wait "$p" || stopped=1; done
      conc_s=$(minus "$(now)" "$t0")
      ratio=$(over "$conc_s" "$seq_s")
      printf '%-7s %-6s %5d %10.2f %10.2f %6s%.2f\n' "$backend" "$name" "$procs" "$seq_s" "$conc_s" \
        "$([[ $stopped == 1 ]] && echo '>' || echo ' ')" "$ratio"
    done
  done
done

echo
echo "alone: the median ms a call (reduce_cli's own timing), auto's team against --threads 1"
printf '%-7s %-6s %12s %12s\n' backend size "auto ms" "1 thread ms"
for backend in ${backends//,/ }; do
  "$cli" -b "$backend" --n 16 --repeat 1 --warmup 0 >/dev/null 2>&1 || continue
  for s in "${sizes[@]}"; do
    read -r name n repeat <<<"$s"
    ms() {
      "$cli" -b "$backend" --n "$n" --repeat "$repeat" --warmup 3 --json "$@" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["kernel_ms"])'
    }
    printf '%-7s %-6s %12.4f %12.4f\n' "$backend" "$name" "$(ms)" "$(ms --threads 1)"
  done
done
