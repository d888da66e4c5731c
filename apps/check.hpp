// reduce_cli check: the conformance matrix. Every usable backend and device, every kernel (auto
// and baselines included, probes left out), every op and type the kernel supports, sizes from 0
// to 2^20 + 7 (more with --full) and uniform, normal, cancelling and special inputs, plain and
// exact, each compared with the host reference; a report by device, op and type, and for each
// failure the reduce_cli command line that reproduces it.
#pragma once

namespace xr::cli {

// argv[0] is "check". Returns 0 when every case passes, 1 when one fails, 2 on bad flags and
// 3 when a backend asked for by name is unavailable.
int run_check(int argc, char** argv);

}  // namespace xr::cli
