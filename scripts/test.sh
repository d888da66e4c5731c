#!/usr/bin/env bash
# Runs every test of the build in ${XR_BUILD_DIR:-build}, says which were skipped and why, then
# the sanitizer stages (scripts/sanitize.sh: ASan + UBSan + LSan, then TSan) in build-asan and
# build-tsan. XR_SANITIZE=0 leaves the sanitizer stages out.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${XR_BUILD_DIR:-build}
sanitize=${XR_SANITIZE:-1}
status=0
if [[ $sanitize != 0 ]]; then
  # The sanitizer builds go on beside the release suite at the lowest priority (nice 19), so that
  # they take the cores only where the suite leaves them idle: the suite keeps about 93% of two
  # cores busy, and the builds used to start only after its last test.
  mkdir -p "$build"
  sanitize_log=$build/sanitize-build.log
  nice -n 19 bash scripts/sanitize.sh --build-only >"$sanitize_log" 2>&1 &
  builder=$!
fi
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@" || status=1
echo "test: release tests: $((SECONDS - start)) s"
grep -h '^SKIP ' "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
if [[ $sanitize != 0 ]]; then
  start=$SECONDS
  if wait "$builder"; then
    echo "test: the sanitizer builds ended $((SECONDS - start)) s after the release tests"
    grep '^sanitize: ' "$sanitize_log"
    # After the release suite: it fills PoCL's kernel cache, which the ASan stage relies on.
    bash scripts/sanitize.sh --tests-only || status=1
  else
    echo "test: the sanitizer builds failed ($sanitize_log):" >&2
    tail -n 60 "$sanitize_log" >&2
    status=1
  fi
fi
exit $status
