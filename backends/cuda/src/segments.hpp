// The CUDA backend's segmented reductions (xreduce/segments.hpp): its SegmentDevice, which core's
// one segmented path drives for host input (the Reducer's, on the reducer's stream) and for device
// memory (the device-pointer API of xreduce/cuda.hpp, on the caller's stream). The strategies are
// in segments/ (segment_strategy.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "ladder.hpp"
#include "segment_device.hpp"
#include "segment_strategy.hpp"

namespace xr::cuda::detail {

// Segmented reductions on one stream of one device, with the scratch memory they use. Host jobs
// and host pieces go up to the scratch first and their values come back; device jobs run where
// they lie. Calls on one object are ordered by its stream.
class Segments final : public xr::detail::SegmentDevice {
 public:
  Segments(DeviceState& ds, cudaStream_t stream);
  const DeviceCaps& caps() const { return ds_.caps(); }
  std::vector<KernelInfo> kernels() const override;
  std::uint64_t max_job_bytes(const RunOptions& options) const override;
  xr::detail::SegmentOutcome reduce(const xr::detail::SegmentJob& job) override;
  xr::detail::SegmentOutcome exact_pieces(xr::detail::Memory data, std::uint64_t n, DType type,
                                          std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) override;
  // Device data and values only (host data goes through pieces, copied in jobs).
  std::optional<xr::detail::SegmentOutcome> exact_short_segments(xr::detail::Memory data, std::uint64_t n, DType type,
                                                                const SegmentLayout& layout, xr::detail::Memory out,
                                                                std::vector<std::uint64_t>& missed,
                                                                const RunOptions& options) override;
  bool finalizes_on_device(Finalize) const override { return true; }
  void finalize(const xr::detail::SegmentJob& job, Finalize step) override;
  double read(xr::detail::Memory from, void* to, std::uint64_t bytes) override;
  double write(const void* from, xr::detail::Memory to, std::uint64_t bytes) override;

 private:
  DeviceState& ds_;
  SegmentScratch scratch_;
};

// Exact states of `count` pieces (kern::seg::PieceRef on the device, ExactPiece on the host) of
// float data into `words` (exact_piece_words(compute_dtype(type)) each); segments_exact.cu.
void launch_exact_pieces(DType type, const void* data, const void* pieces, u64 count, std::int64_t* words,
                         cudaStream_t stream);

// Exact sums of the columns (cols of `rows` <= kShortExactTerms, `stride` apart) of float data into
// out (compute_t values), the columns it cannot sum that way counted in *missed_count and the
// first `capacity` of them listed in missed; segments_exact.cu.
void launch_exact_short_segments(DType type, const void* data, u64 count, u64 length, u64 first_step, u64 term_step, void* out,
                                unsigned long long* missed_count, unsigned long long* missed, u64 capacity,
                                cudaStream_t stream);

// A mapped op's last step (Finalize) on the device: `count` values (a mean's f32 or f64, any's
// and all's i64), each through finalize_folded with its segment's length (`length`, or the
// difference of the device's `offsets`, clamped to [0, n] as the segment kernels clamp them);
// finalize.cu.
void launch_finalize(Finalize step, DType type, void* values, u64 count, u64 length, const std::int64_t* offsets, u64 n,
                     cudaStream_t stream);

// The Segments of the device-pointer API for (device, stream), made on first use and kept.
Segments& segment_device(int device, cudaStream_t stream);

// The segment strategies, auto first, then ours, then the cub baseline (SegmentDevice::kernels).
std::vector<KernelInfo> segment_strategies();

}  // namespace xr::cuda::detail
