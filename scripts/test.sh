#!/usr/bin/env bash
# Runs every test of the build in ${XR_BUILD_DIR:-build}, says which were skipped and why, then
# the sanitizer stages (scripts/sanitize.sh: ASan + UBSan + LSan, then TSan) in build-asan and
# build-tsan. XR_SANITIZE=0 leaves the sanitizer stages out.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${XR_BUILD_DIR:-build}
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
status=$?
echo "test: release tests: $((SECONDS - start)) s"
grep -h '^SKIP ' "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
if [[ ${XR_SANITIZE:-1} != 0 ]]; then
  # After the release suite: it fills PoCL's kernel cache, which the ASan stage relies on.
  bash scripts/sanitize.sh || status=1
fi
exit $status
