// The team of an OpenMP parallel region: sized to the work and to the cores the machine's other
// runnable threads leave, so that processes sharing the cores do not spin against each other
// (docs/performance.md, "OpenMP under contention").
#pragma once

#include <cstdint>
#include <string_view>

#include "xreduce/reducer.hpp"

namespace xr::omp::detail {

// RunOptions::threads where set, as given; OMP_NUM_THREADS where set, as given. Otherwise the
// runtime's team (omp_get_max_threads()) cut to one thread per kMinBytesPerThread of `bytes` and
// to the cores left free (free_cores()); at least one.
int team_size(const RunOptions& options, std::uint64_t bytes);

// The cores this process may use that no other process's runnable thread wants: its cores
// (omp_get_num_procs()) less the runnable threads of /proc/loadavg that are not its own (those of
// /proc/self/task in state R), at least one. Sampled at most every kLoadSampleNanoseconds; every
// core where /proc cannot be read.
int free_cores();

// free_cores() from the text of /proc/loadavg ("0.50 0.40 0.30 3/612 4242": 3 runnable threads),
// the process's cores and how many of the runnable threads are its own; -1 where the text does
// not parse.
int free_cores_of(std::string_view loadavg, int cores, int own_running);

}  // namespace xr::omp::detail
