// The folds of a segmented job (rows, columns or CSR segments) on the host CPU, one instantiation
// an element type, each in a translation unit of its own (segment_folds.hpp, segment_folds.cpp.in).
#pragma once

#include <cstdint>

#include "segment_device.hpp"
#include "xreduce/types.hpp"

namespace xr::omp::detail {

// The job's fold (or mapped op) of elements of type D into job.out, on `threads` threads; the most
// roundings behind a float sum.
template <DType D> std::uint64_t fold_segments(const xr::detail::SegmentJob& job, int threads);

}  // namespace xr::omp::detail
