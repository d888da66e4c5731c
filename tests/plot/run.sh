#!/usr/bin/env bash
# The plots: scripts/plot.py draws a PNG from recorded JSON (omp_ladder.json, a real
# `reduce_cli -b omp --kernel all --n 2^25 --repeat 10 --json` run), headless; reduce_cli
# --kernel all --plot draws one end to end on OpenMP; misuse and a missing python3, matplotlib
# or plot.py each give one error line and exit 2. Skipped (77) only when python3 or matplotlib
# is missing, which scripts/setup.sh installs.
#   run.sh REDUCE_CLI PLOT_PY WORK_DIR [PYTHON]   (PYTHON: the one the build found with matplotlib)
set -uo pipefail
cli=$1 plot=$2 work=$3 py=${4:-python3}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
if ! command -v "$py" >/dev/null; then
  echo "SKIP plot: no python at '$py'"
  exit 77
fi
if ! "$py" -c "import matplotlib" 2>/dev/null; then
  echo "SKIP plot: $py ($(command -v "$py")) has no matplotlib (Debian: python3-matplotlib)"
  exit 77
fi
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# A PNG file: the 8-byte signature, and more than a header.
is_png() { [[ -f $1 && $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a && $(stat -c %s "$1") -gt 10000 ]]; }
# Exit code $1 and exactly one line on stderr that contains $2, from the command after them.
one_line_error() {
  local want=$1 text=$2
  shift 2
  "$@" >/dev/null 2>"$work/stderr"
  local rc=$?
  [[ $rc == "$want" ]] || fail "exit $rc, not $want: $* ($(head -c 300 "$work/stderr"))"
  [[ $(wc -l <"$work/stderr") == 1 ]] || fail "not one line on stderr: $*: $(cat "$work/stderr")"
  grep -qF -- "$text" "$work/stderr" || fail "stderr does not say '$text': $*: $(cat "$work/stderr")"
  echo "ok (exit $rc): $(cat "$work/stderr")"
}

"$py" "$plot" "$here/omp_ladder.json" -o "$work/recorded.png" || fail "plot.py on the recorded ladder"
is_png "$work/recorded.png" && echo "ok: plot.py drew the recorded ladder" || fail "no PNG from plot.py"
"$py" "$plot" "$here/omp_ladder.json" -o "$work/recorded.svg" --kind ladder --datasheet 10 &&
  grep -q "<svg" "$work/recorded.svg" && echo "ok: --kind ladder --datasheet, SVG by extension" || fail "SVG"
echo '{"kind": "segments", "rows": []}' >"$work/unknown.json"
one_line_error 2 "no plot for JSON of kind 'segments'" "$py" "$plot" "$work/unknown.json" -o "$work/x.png"
one_line_error 2 "not sweep JSON" "$py" "$plot" "$here/omp_ladder.json" -o "$work/x.png" --kind sweep
one_line_error 2 "invalid choice: 'bogus'" "$py" "$plot" "$here/omp_ladder.json" -o "$work/x.png" --kind bogus

"$cli" -b omp --kernel all --n 2^16 --repeat 1 --warmup 0 --plot "$work/cli.png" >"$work/stdout" ||
  fail "reduce_cli --plot exited $?"
is_png "$work/cli.png" && grep -qF "plot: $work/cli.png" "$work/stdout" && echo "ok: reduce_cli --kernel all --plot" ||
  fail "no PNG from reduce_cli --plot"
one_line_error 2 "--plot draws the ladder: it needs --kernel all" "$cli" -b omp --n 2^10 --plot "$work/x.png"
one_line_error 2 "no python at '/nonexistent/python3'" env XR_PYTHON=/nonexistent/python3 "$cli" -b omp \
  --kernel all --n 2^10 --repeat 1 --plot "$work/x.png"
one_line_error 2 "XR_PLOT_SCRIPT names" env XR_PLOT_SCRIPT="$work/none.py" "$cli" -b omp --kernel all --n 2^10 \
  --repeat 1 --plot "$work/x.png"
# A matplotlib that cannot be imported, ahead of the real one on the module path.
mkdir -p "$work/broken/matplotlib" && echo 'raise ImportError("hidden for the test")' >"$work/broken/matplotlib/__init__.py"
one_line_error 2 "matplotlib is not installed" env PYTHONPATH="$work/broken" "$cli" -b omp --kernel all --n 2^10 \
  --repeat 1 --plot "$work/x.png"
# A plot that fails loses no results: the JSON is printed before the plot is drawn.
env XR_PYTHON=/nonexistent/python3 "$cli" -b omp --kernel all --n 2^10 --repeat 1 --json --plot "$work/x.png" \
  >"$work/results.json" 2>/dev/null
"$py" -c "import json, sys; assert json.load(open(sys.argv[1]))" "$work/results.json" &&
  echo "ok: --json results printed before a failed plot" || fail "no JSON results before a failed plot"
one_line_error 2 "cannot write" "$cli" -b omp --kernel all --n 2^10 --repeat 1 --plot "$work/no/such/dir/x.png"
((failures == 0)) || exit 1
echo "plot: all passed"
