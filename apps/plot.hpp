// reduce_cli --plot: the ladder drawn by scripts/plot.py (python3 with matplotlib), run as a
// child process on the JSON that --json prints.
#pragma once

#include <string>

namespace xr::cli {

// Where plot.py is: $XR_PLOT_SCRIPT when set; else share/xreduce/plot.py beside an installed
// reduce_cli (bin/../share/xreduce), the source tree's scripts/plot.py (a build tree), or the
// installed path compiled in. Throws xr::Error when none exists.
std::string plot_script();

// Writes `ladder_json` to a temporary file, runs `PYTHON plot.py FILE -o output --kind ladder`
// and removes the file; returns the plot.py that drew it. PYTHON is $XR_PYTHON when set, else
// the python3 with matplotlib that the build found. Throws xr::Error with one line saying why no
// plot was written: no such python, plot.py is missing, or plot.py's own error (matplotlib
// missing, a file that cannot be written).
std::string plot_ladder(const std::string& ladder_json, const std::string& output);

}  // namespace xr::cli
