#!/usr/bin/env bash
# Build, tests and benchmarks on a machine with an NVIDIA GPU; full logs under $OUT (at most 8
# files), a short summary last.
# Stages (default all but check): build test ladder sweep types pairs layouts opencl exact host mpi segments;
# check runs reduce_cli check --full (about 10 minutes)
# Kernel comparisons (opencl, exact) use --host-path resident: the input is copied once and the
# kernels are timed; the host stage measures the streamed host path end to end.
#   bash bench/gpu_run.sh [stages]      (nvcc and nvidia-smi on the PATH; see bench/README.md)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/xr_out}
mkdir -p "$OUT"
B=${XR_BUILD_DIR:-build-gpu}
# XR_CTEST_JOBS runs that many test suites at once (default 1: suites timed alone).
stages=${*:-build test ladder sweep types pairs layouts opencl exact host mpi segments}
summary="$OUT/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $stages " == *" $1 "* ]]; }
cli="$B/apps/reduce_cli"

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >/tmp/gpu.txt 2>&1
say "gpu: $(cat /tmp/gpu.txt); $(date -u +%F)"

if has build; then
  start=$(date +%s)
  cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DXREDUCE_CUDA=ON -DXREDUCE_OPENCL=ON -DXREDUCE_MPI=ON -DXREDUCE_BUILD_BENCH=ON >"$OUT/build.log" 2>&1 ||
    { tail -20 "$OUT/build.log"; exit 1; }
  cmake --build "$B" -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { grep -m 30 -E "error|Error" "$OUT/build.log"; exit 1; }
  say "build: $(($(date +%s) - start)) s"
  grep -E "^-- +([A-Z]+|xreduce benchmarks|xreduce::mpi): " "$OUT/build.log" | tee -a "$summary"
fi

if has test; then
  "$cli" --list | tee -a "$summary"
  ctest --test-dir "$B" --output-on-failure --timeout 300 -j "${XR_CTEST_JOBS:-1}" >"$OUT/ctest.log" 2>&1
  say "ctest exit $?: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log")"
  grep -E "Failed|\*\*\*|SKIP" "$OUT/ctest.log" | head -20 | tee -a "$summary"
  grep -B2 -A12 "ERROR:" "$OUT/ctest.log" | head -80
  # ctest's OpenCL suites run on the default device (the GPU); cover every platform here.
  for p in 0 1; do
    for suite in backends threads; do
      "$B/tests/xr_test_$suite" --xr-backend=opencl --xr-platform=$p >/tmp/platform.log 2>&1
      say "$suite suite, OpenCL platform $p: exit $? $(head -1 /tmp/platform.log) $(grep -E 'test cases' /tmp/platform.log)"
      cat /tmp/platform.log >>"$OUT/ctest.log"
    done
  done
fi

# Segmented reductions, f32 sums of 256 MiB: every CUDA strategy beside cub's
# DeviceSegmentedReduce, then OpenCL auto on NVIDIA and OpenMP auto on the host CPU (with the
# stream_read probe over the same bytes). GB/s counts bytes read plus bytes written.
if has segments; then
  seg="$OUT/segments.txt"
  : >"$seg"
  run_seg() {  # label, then reduce_cli arguments
    local label=$1
    shift
    echo "== $label: $*" >>"$seg"
    "$cli" "$@" --repeat 10 --warmup 2 >>"$seg" 2>&1
    echo "exit $?" >>"$seg"
  }
  shapes="2^25x2 2^23x8 2^21x32 2^19x128 2^16x1024 2^12x2^14 2^6x2^20 1x2^26"
  for s in $shapes; do run_seg "rows $s" -b cuda --kernel all --shape "$s" --axis 1; done
  run_seg "lognormal" -b cuda --kernel all --segments 2^20 --seg-dist lognormal:64:65536
  for s in 2^16x1024 1024x2^16 2^24x4; do run_seg "columns $s" -b cuda --kernel all --shape "$s" --axis 0; done
  for s in $shapes; do run_seg "rows $s" -b opencl --device NVIDIA --shape "$s" --axis 1; done
  run_seg "lognormal" -b opencl --device NVIDIA --segments 2^20 --seg-dist lognormal:64:65536
  for s in 2^16x1024 1024x2^16 2^24x4; do run_seg "columns $s" -b opencl --device NVIDIA --shape "$s" --axis 0; done
  run_seg "stream_read 256 MiB" -b omp --kernel stream_read --n 2^26 --host-path resident
  for s in 2^25x2 2^21x32 2^16x1024 1x2^26; do run_seg "rows $s" -b omp --shape "$s" --axis 1; done
  run_seg "lognormal" -b omp --segments 2^20 --seg-dist lognormal:64:65536
  for s in 2^16x1024 1024x2^16 2^24x4; do run_seg "columns $s" -b omp --shape "$s" --axis 0; done
  run_seg "exact rows" -b all --shape 2^16x1024 --axis 1 --exact
  # label, backend, strategy, auto's GB/s, and cub's time over auto's where cub ran
  awk '/^== /{label=$0; sub(/^== /,"",label); sub(/:.*/,"",label)}
       / auto:/{for(i=1;i<=NF;i++) if($i ~ /^auto:/) k=$i;
                if($(NF-1) ~ /x$/){g=$(NF-2); r=$(NF-1)} else {g=$(NF-1); r="-"}
                printf "%-22s %-8s %-18s %8s GB/s  cub/auto %s\n", label, $1, k, g, r}
       /^omp +stream_read/{printf "%-22s %-8s %-18s %8s GB/s\n", label, "omp", "stream_read", $(NF-1)}' "$seg" | tee -a "$summary"
fi

if has ladder; then
  for n in 2^22 2^28; do
    "$cli" -b cuda --kernel all --type i32 --n "$n" --repeat 15 --warmup 2 >>"$OUT/ladder.txt" 2>&1
    echo "exit $?" >>"$OUT/ladder.txt"
  done
  cat "$OUT/ladder.txt" >>"$summary"
fi

if has sweep; then
  "$B/bench/xr_bench_auto_vs_cub" --types i32,f32,f64 --lo 10 --hi 30 >"$OUT/sweep.txt" 2>&1
  cat "$OUT/sweep.txt" >>"$summary"
fi

if has types; then
  # The narrow, unsigned and 16-bit float types: auto against CUB on the GPU (u8 sums up to 2^32
  # elements, f16 and bf16 up to 2^30), then OpenMP against stream_read on the host CPU over
  # 512 MiB of each type.
  {
    "$B/bench/xr_bench_auto_vs_cub" --types u8 --lo 28 --hi 32
    "$B/bench/xr_bench_auto_vs_cub" --types i8,u32,u64,i32 --lo 28 --hi 28 | tail -4
    "$B/bench/xr_bench_auto_vs_cub" --types u8,i8 --op max --lo 28 --hi 28 | tail -2
    "$B/bench/xr_bench_auto_vs_cub" --types f16,bf16 --lo 28 --hi 30
    "$B/bench/xr_bench_auto_vs_cub" --types f16,bf16 --op max --lo 28 --hi 28 | tail -2
    for type_n in u8:2^29 i8:2^29 u32:2^27 u64:2^26 i32:2^27 f16:2^28 bf16:2^28; do
      for op in sum max; do
        "$cli" -b omp --type "${type_n%:*}" --n "${type_n#*:}" --op $op --kernel all --repeat 10 --warmup 2
      done
    done
  } >"$OUT/types.txt" 2>&1
  grep -vE "^(clause|vector) " "$OUT/types.txt" >>"$summary"
fi

if has pairs; then
  # argmax and argmin of f32 against cub::DeviceReduce::ArgMax/ArgMin, minmax against auto's max,
  # integer argmax against the cub row; then OpenMP's pair ops and the narrow types' sums and max
  # on the host CPU against stream_read over 512 MiB.
  {
    "$B/bench/xr_bench_auto_vs_cub" --types f32 --op argmax --lo 22 --hi 30
    "$B/bench/xr_bench_auto_vs_cub" --types f32 --op argmin --lo 28 --hi 28 | tail -1
    "$B/bench/xr_bench_auto_vs_cub" --types f32 --op minmax --against max --lo 28 --hi 28 | tail -1
    "$B/bench/xr_bench_auto_vs_cub" --types i32,u8 --op argmax --lo 28 --hi 28 | tail -2
    for op in argmax minmax; do
      for type_n in f32:2^27 u8:2^29 f16:2^28; do
        "$cli" -b omp --type "${type_n%:*}" --n "${type_n#*:}" --op "$op" --kernel all --repeat 10 --warmup 2
      done
    done
  } >"$OUT/pairs.txt" 2>&1
  grep -vE "^(clause|vector) " "$OUT/pairs.txt" >>"$summary"
fi

if has layouts; then
  # auto's large-n choice: each streaming layout's time ratio to CUB, interleaved with auto.
  "$B/bench/xr_bench_auto_vs_cub" --types i32,f32,f64 --lo 24 --hi 30 \
    --kernels single_pass,dynamic_tiles,bulk_copy,bulk_tiles >"$OUT/layouts.txt" 2>&1
  cat "$OUT/layouts.txt" >>"$summary"
fi

if has opencl; then
  for t in i32 f32; do
    "$cli" -b all --host-path resident --type "$t" --n 2^28 --repeat 10 --warmup 2 >>"$OUT/backends.txt" 2>&1
    echo "exit $?" >>"$OUT/backends.txt"
    "$cli" -b opencl --kernel all --type "$t" --n 2^28 --repeat 10 >>"$OUT/backends.txt" 2>&1
  done
  for round in 1 2 3; do  # PoCL against the OpenMP backend on the same CPU, interleaved
    for t in f32 f64 i32; do
      "$cli" -b opencl --host-path resident --device Portable --type "$t" --n 2^26 --repeat 15 --warmup 3 >>"$OUT/backends.txt" 2>&1
      "$cli" -b omp --type "$t" --n 2^26 --repeat 15 --warmup 3 >>"$OUT/backends.txt" 2>&1
    done
  done
  for t in f32 f64 i32; do  # every PoCL rung, and OpenMP's ladder with its stream_read row
    "$cli" -b opencl --kernel all --host-path resident --device Portable --type "$t" --n 2^26 --repeat 15 --warmup 3 >>"$OUT/backends.txt" 2>&1
    "$cli" -b omp --kernel all --type "$t" --n 2^26 --repeat 15 --warmup 3 >>"$OUT/backends.txt" 2>&1
  done
  cat "$OUT/backends.txt" >>"$summary"
fi

if has exact; then
  # Plain auto then exact auto on the same data, per backend and device, 3 rounds: the exact/plain
  # rate ratio (GPUs at 2^28, the 16-core host's PoCL and OpenMP at 2^27), then the same for
  # f32 and f64 of a wider dynamic range: --dist spread (f64 1e-30 to 1e30, f32 2^-48 to 2^48)
  # and --dist wide (f64 1e-300 to 1e300, f32 1e-29 to 1e29).
  rows=("cuda:-b cuda:2^28" "opencl-nvidia:-b opencl --device NVIDIA:2^28"
        "opencl-pocl:-b opencl --device Portable:2^27" "omp:-b omp:2^27")
  rate() { "$cli" --host-path resident --repeat 15 --warmup 3 "$@" 2>&1 | awk '/ auto:/ {print $(NF-1); exit}'; }
  for round in 1 2 3; do
    for t in f32 f64; do
      for row in "${rows[@]}"; do
        IFS=: read -r name flags n <<<"$row"
        # shellcheck disable=SC2086
        p=$(rate $flags --type "$t" --n "$n"); e=$(rate $flags --exact --type "$t" --n "$n")
        echo "exact $name $t n=$n plain_GBs=$p exact_GBs=$e ratio=$(awk -v p="$p" -v e="$e" 'BEGIN{if (p > 0) printf "%.3f", e / p}')" | tee -a "$OUT/exact.txt"
      done
    done
  done
  for dist in spread wide; do
    for t in f32 f64; do
      for row in "${rows[@]}"; do
        IFS=: read -r name flags n <<<"$row"
        # shellcheck disable=SC2086
        p=$(rate $flags --type $t --dist $dist --n "$n"); e=$(rate $flags --exact --type $t --dist $dist --n "$n")
        echo "exact-$dist $name $t n=$n plain_GBs=$p exact_GBs=$e ratio=$(awk -v p="$p" -v e="$e" 'BEGIN{if (p > 0) printf "%.3f", e / p}')" | tee -a "$OUT/exact.txt"
      done
    done
  done
  cat "$OUT/exact.txt" >>"$summary"
fi
if has check; then
  # The conformance matrix with its large sizes, timed.
  start=$(date +%s)
  "$cli" check --full --json "$OUT/check.json" >"$OUT/check.txt" 2>&1
  echo "exit $? after $(($(date +%s) - start)) s" >>"$OUT/check.txt"
  cat "$OUT/check.txt" >>"$summary"
fi
if has host; then
  # The streamed host path: end-to-end rates against the link, fill and file-read rates.
  "$B/bench/xr_bench_host_path" --log2n 28 --repeat 7 >"$OUT/host.txt" 2>&1
  echo "exit $?" >>"$OUT/host.txt"
  # The CLI streaming a 1 GiB .npy file through a 256 MiB device budget, every backend.
  "$cli" -b omp --n 2^28 --type f32 --dist normal --repeat 1 --warmup 0 --save /tmp/xr_cli_stream.npy >/dev/null
  if [[ -f /tmp/xr_cli_stream.npy ]]; then
    "$cli" -b all --input /tmp/xr_cli_stream.npy --device-mem-limit 256M --repeat 3 >>"$OUT/host.txt" 2>&1
    echo "exit $?" >>"$OUT/host.txt"
    "$cli" -b all --input /tmp/xr_cli_stream.npy --exact --repeat 3 >>"$OUT/host.txt" 2>&1
    echo "exit $?" >>"$OUT/host.txt"
    rm -f /tmp/xr_cli_stream.npy
  fi
  cat "$OUT/host.txt" >>"$summary"
fi
if has mpi; then
  # 1 CUDA rank, 2 CUDA ranks on the one GPU with 2 OpenMP ranks, 4 OpenMP ranks: the same exact bits.
  OUT=/tmp/xr_mpi bash bench/mpi_run.sh "$B" gpu 3 >"$OUT/mpi.txt" 2>&1
  echo "exit $?" >>"$OUT/mpi.txt"
  cat "$OUT/mpi.txt" >>"$summary"
fi
echo "==== summary"
cat "$summary"
