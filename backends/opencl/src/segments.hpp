// Segmented reductions on an OpenCL device (kernels_cl/segments*.cl): the SegmentDevice of the
// OpenCL backend (core/src/segment_device.hpp), which the Reducer's host path and the cl_mem API
// (xreduce/opencl.hpp) both run through core's one segmented path. The strategies are the files
// of segments/, each one row (segment_plan.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "internal.hpp"
#include "segment_device.hpp"
#include "xreduce/segments.hpp"

namespace xr::opencl::detail {

// The program every segment kernel is built from: reduce.cl, then kernels_cl/segments.cl (the
// shared part) and each kernels_cl/segments_*.cl (generated with the list of strategies).
extern const char* const kSegmentsSource;

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
const char* segment_buffer_name(SegmentBuffers::Role role);

// The strategies on this device: auto first, then each strategy (f64 only with cl_khr_fp64).
std::vector<KernelInfo> segment_strategies(const DeviceCaps& caps);

// A queue's segmented reductions: jobs of host data (the Reducer's, copied into buffers kept
// between jobs) and of data in the caller's buffers (the cl_mem API), on one queue. Not thread
// safe: one call at a time.
class Segments final : public xr::detail::SegmentDevice {
 public:
  // On `queue`, of `context` and the device of `caps`; `profiling`: the queue has
  // CL_QUEUE_PROFILING_ENABLE (times from its events, else from the host's clock).
  Segments(const DeviceCaps& caps, cl_context context, cl_command_queue queue, bool profiling);
  // On `queue`, its context, device and profiling asked of it (InvalidArgument for a null queue).
  explicit Segments(cl_command_queue queue);
  // Buffers that asynchronous passes still use are released once the queue has run them.
  ~Segments() override;
  Segments(const Segments&) = delete;
  Segments& operator=(const Segments&) = delete;

  std::vector<KernelInfo> kernels() const override;
  std::uint64_t max_job_bytes(const RunOptions& options) const override;
  // Device jobs: data, offsets and out are cl_mem handles, data's offset a whole number of
  // elements, the offsets' and out's 0. Host jobs go through kept buffers.
  xr::detail::SegmentOutcome reduce(const xr::detail::SegmentJob& job) override;
  xr::detail::SegmentOutcome exact_pieces(xr::detail::Memory data, std::uint64_t n, DType type,
                                          std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) override;
  // A mean's division on the device takes double (the quotient as the host takes it); any's and
  // all's tests take long.
  bool finalizes_on_device(Finalize step) const override { return step != Finalize::DivideByCount || caps_->fp64; }
  void finalize(const xr::detail::SegmentJob& job, Finalize step) override;
  double read(xr::detail::Memory from, void* to, std::uint64_t bytes) override;
  double write(const void* from, xr::detail::Memory to, std::uint64_t bytes) override;

  const DeviceCaps& caps() const { return *caps_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }

 private:
  // Copies `bytes` from host memory into the buffer of `role`; the copy's time in ms.
  double upload(SegmentBuffers::Role role, const void* host, std::size_t bytes);
  // The time of a finished command: its event's where the queue profiles, else since t0.
  double command_ms(cl_event e, std::chrono::steady_clock::time_point t0) const;

  const DeviceCaps* caps_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool profiling_ = false;
  SegmentBuffers buffers_;
  cl_event pending_ = nullptr;  // the last asynchronous pass, until buffers_ may go
};

}  // namespace xr::opencl::detail
