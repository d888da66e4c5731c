// The OpenMP backend's segmented reductions (segments.cpp).
#pragma once

#include "segment_device.hpp"

namespace xr::omp::detail {

// Segmented reductions on the host CPU: jobs and exact pieces are reduced where they lie, and
// "device" memory is host memory.
class Segments final : public xr::detail::SegmentDevice {
 public:
  std::vector<KernelInfo> kernels() const override;
  std::uint64_t max_job_bytes(const RunOptions&) const override { return 0; }  // reduced where it lies
  xr::detail::SegmentOutcome reduce(const xr::detail::SegmentJob& job) override;
  xr::detail::SegmentOutcome exact_pieces(xr::detail::Memory data, std::uint64_t n, DType type,
                                          std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) override;
  std::optional<xr::detail::SegmentOutcome> exact_short_segments(xr::detail::Memory data, std::uint64_t n, DType type,
                                                                const SegmentLayout& layout, xr::detail::Memory out,
                                                                std::vector<std::uint64_t>& missed,
                                                                const RunOptions& options) override;
  // Host memory both ways: memcpy.
  double read(xr::detail::Memory from, void* to, std::uint64_t bytes) override;
  double write(const void* from, xr::detail::Memory to, std::uint64_t bytes) override;
};

// The pair ops (argmin, argmax, minmax) of a job, on `threads` threads: the records of
// segment_device.hpp (segment_pairs.cpp).
void reduce_pairs(const xr::detail::SegmentJob& job, int threads);

}  // namespace xr::omp::detail
