// One factory and one status function per backend. Core declares them; each backend that is
// compiled in defines its own pair, and registry.cpp calls only those (XR_WITH_* definitions).
#pragma once

#include <memory>

#include "xreduce/registry.hpp"

namespace xr::detail {

std::unique_ptr<Reducer> make_omp_reducer(const BackendOptions& options);
BackendStatus omp_status();
std::unique_ptr<Reducer> make_cuda_reducer(const BackendOptions& options);
BackendStatus cuda_status();
std::unique_ptr<Reducer> make_opencl_reducer(const BackendOptions& options);
BackendStatus opencl_status();

}  // namespace xr::detail
