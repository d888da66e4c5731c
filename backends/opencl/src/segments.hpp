// Segmented reductions on an OpenCL device (kernels_cl/segments.cl): the strategies, the one run
// every entry point goes through, exact piece states, and the SegmentDevice of the OpenCL Reducer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "internal.hpp"
#include "segment_device.hpp"
#include "xreduce/segments.hpp"

namespace xr::opencl::detail {

constexpr const char* kSegmentsSource = "reduce.cl+segments.cl";

// Device buffers of segmented reductions, one per role, each grown on demand and kept: a
// reducer's reductions on its in-order queue then create and release none while commands are
// queued (see ScratchBuffers).
struct SegmentBuffers {
  enum Role : int {
    Data,
    Offsets,
    Out,
    Partials,
    Lists,
    Tasks,
    Spans,
    Counters,
    Carry,
    CarrySeg,
    Pieces,
    Words,
    kRoles
  };
  Mem memory[kRoles];
  std::size_t bytes[kRoles] = {};
  // The buffer of `role`, of at least `bytes` (at least 1), replaced when smaller.
  cl_mem get(cl_context context, Role role, std::size_t bytes);
};

// Where a segmented reduction runs: a queue, its context and device, and whether it profiles.
struct SegmentQueue {
  cl_command_queue queue = nullptr;
  cl_context context = nullptr;
  const DeviceCaps* caps = nullptr;
  bool profiling = false;
};
SegmentQueue segment_queue(cl_command_queue queue);

// One segmented reduction of data on the device: every segment of `layout` over the n elements
// of `data` from element `offset`, into `out`.
struct SegmentCall {
  cl_mem data = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t n = 0;  // >= layout.span()
  DType type = DType::F32;
  Op op = Op::Sum;
  RunOptions options;        // options.kernel: one of segment_strategies' names
  SegmentLayout layout;      // Offsets: the offsets in host memory, relative to `offset`
  cl_mem offsets = nullptr;  // Offsets: the same count + 1 values on the device
  cl_mem out = nullptr;      // layout.count values of result_dtype(op, type, accumulator)
};

// What one call ran: options.warmup + options.repeat passes, kernel_ms their median.
struct SegmentRun {
  double kernel_ms = 0;
  int launches = 0;    // kernels of one pass
  std::string kernel;  // "lanes", "auto:binned"
  std::string finish;  // how the parts of one segment combine
  std::uint64_t depth = 0;
};

// The strategies on this device: auto first, then each strategy (f64 only with cl_khr_fp64).
std::vector<KernelInfo> segment_strategies(const DeviceCaps& caps);

// Runs options.warmup + options.repeat passes of the call (not exact sums: run_exact_pieces).
// InvalidArgument for an unknown strategy or one that does not reduce the layout.
SegmentRun run_segments(const SegmentQueue& q, const SegmentCall& call, SegmentBuffers& buffers);

// The exact states of `pieces` of the float input in `data` from element `offset` (n elements
// there), exact_piece_words(compute_dtype(type)) words each into `words` (f16 and bf16: the
// states of their values widened to f32): options.warmup + options.repeat passes, the states
// read back after the last. *read_ms: the time of that read.
SegmentRun run_exact_pieces(const SegmentQueue& q, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                            std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                            const RunOptions& options, SegmentBuffers& buffers, double* read_ms);

// The pieces of every segment of `layout` (at most kExactPieceElements elements each), in segment
// order; first[i] is segment i's first piece (first[count] the number of pieces).
struct ExactPieces {
  std::vector<xr::detail::ExactPiece> pieces;
  std::vector<std::uint64_t> first;
};
ExactPieces exact_pieces_of(const SegmentLayout& layout);

// The OpenCL Reducer's segmented reductions: host data copied into kept device buffers, reduced
// on the reducer's queue, read back.
class SegmentQueueDevice final : public xr::detail::SegmentDevice {
 public:
  SegmentQueueDevice(const DeviceCaps& caps, cl_context context, cl_command_queue queue);
  std::vector<KernelInfo> kernels() const override;
  std::uint64_t max_job_bytes(const RunOptions& options) const override;
  xr::detail::SegmentOutcome reduce(const xr::detail::SegmentJob& job) override;
  xr::detail::SegmentOutcome exact_pieces(const void* data, std::uint64_t n, DType type,
                                          std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) override;

 private:
  // Copies `bytes` from host memory into the buffer of `role`; returns the copy's time in ms.
  double upload(SegmentBuffers::Role role, const void* host, std::size_t bytes);

  SegmentQueue queue_;
  SegmentBuffers buffers_;
};

}  // namespace xr::opencl::detail
