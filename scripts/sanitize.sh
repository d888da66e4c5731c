#!/usr/bin/env bash
# The sanitizer stages of the test suite (scripts/test.sh runs them after the release tests):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer with LeakSanitizer on, in build-asan
#         (g++, no CUDA): the library, reduce_cli, and the core, OpenMP, OpenCL, exact, thread,
#         segmented, region, CLI, plot and fuzz suites. The OpenCL program-cache and exact-kernel
#         suites and the shared segmented suite on OpenCL run in the release stage only: the
#         OpenCL backend suite and the OpenCL segments suite drive the same host code here. Any
#         report fails the stage.
#   tsan  ThreadSanitizer in build-tsan: the core, OpenMP and region suites, built with clang
#         against LLVM's OpenMP runtime, whose Archer tool tells TSan about OpenMP's barriers and
#         reductions (libgomp is not instrumented: every parallel region would be reported).
# Usage: bash scripts/sanitize.sh [asan] [tsan]    (no argument: both)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/generator.sh
stages=("$@")
((${#stages[@]})) || stages=(asan tsan)
jobs=$(nproc)
# -O1, as the sanitizers' own documentation advises: it keeps their reports exact and takes a
# fraction of -O2's compile time under instrumentation. -g1: line tables, all a report needs.
# No CUDA (no GPU to run it) and no MPI layer: no suite of these stages runs under mpirun.
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DXREDUCE_CUDA=OFF -DXREDUCE_MPI=OFF)
# Prints how long the step took: "asan build: 123 s".
timed() {
  local what=$1 start=$SECONDS
  shift
  "$@"
  local rc=$?
  echo "sanitize: $what: $((SECONDS - start)) s"
  return $rc
}

asan() {
  # shellcheck disable=SC2046
  cmake -S . -B build-asan $(generator_flags build-asan) "${flags[@]}" -DXREDUCE_SANITIZE=address,undefined >/dev/null || return 1
  timed "asan build" cmake --build build-asan -j "$jobs" --target reduce_cli xr_test_core xr_test_backends xr_test_threads \
    xr_test_exact_device xr_test_cli xr_test_fuzz xr_test_segments xr_test_opencl_segments xr_test_regions || return 1
  # use_sigaltstack=0: LLVM inside PoCL gives its threads alternate signal stacks, which ASan
  # would unmap as its own when those threads end (a CHECK failure, not a finding).
  # PoCL's compiler leaks when it builds a kernel missing from its cache (stacks end in
  # libpocl, which keeps no frame pointers, so no suppression can name them without slow
  # unwinding, 7x slower here): run after the release suite, which builds every kernel these
  # suites use into PoCL's cache. scripts/test.sh does.
  ASAN_OPTIONS=detect_leaks=1:use_sigaltstack=0:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    timed "asan tests" ctest --test-dir build-asan --output-on-failure -j "$jobs" \
    -R '^(core|backends\.(omp|opencl)|threads\.(omp|opencl)|segments\.omp\.[0-9]+|opencl_segments|exact_device|regions|cli|plot|fuzz_inputs)$'
}

tsan() {
  local clang archer
  clang=$(command -v clang++) || { echo "sanitize: tsan needs clang++ (apt-get install clang)" >&2; return 1; }
  archer=$(dirname "$(dirname "$(readlink -f "$clang")")")/lib/libarcher.so
  [[ -f $archer ]] || { echo "sanitize: tsan needs LLVM's OpenMP runtime with Archer (apt-get install libomp-dev)" >&2; return 1; }
  # shellcheck disable=SC2046
  CC=clang CXX=clang++ cmake -S . -B build-tsan $(generator_flags build-tsan) "${flags[@]}" -DXREDUCE_OPENCL=OFF \
    -DXREDUCE_SANITIZE=thread >/dev/null || return 1
  timed "tsan build" cmake --build build-tsan -j "$jobs" --target xr_test_core xr_test_backends xr_test_threads xr_test_regions || return 1
  # Archer reports through TSan; the suppressions file is for the runtime's own false positives
  # (see its comments).
  OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS=verbose=0 \
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 suppressions=$root/tests/sanitizers/tsan.supp" \
    timed "tsan tests" ctest --test-dir build-tsan --output-on-failure -R '^(core|backends\.omp|threads\.omp|regions)$'
}

status=0
for stage in "${stages[@]}"; do
  case $stage in
    asan | tsan) echo "== sanitize: $stage"; "$stage" || status=1 ;;
    *) echo "sanitize: unknown stage '$stage' (asan, tsan)" >&2; exit 2 ;;
  esac
done
exit $status
