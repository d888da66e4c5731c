// The CUDA backend's side of the chunk pipeline: the checked form of one reduction (Prepared)
// and the ChunkDevice.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ladder.hpp"
#include "pipeline.hpp"
#include "xreduce/exact.hpp"

namespace xr::cuda::detail {

// Everything one reduction needs, checked (reducer.cpp).
struct Prepared {
  const RungEntry* entry = nullptr;
  RunFn fn = nullptr;
  Launch launch;
  Op op = Op::Sum;
  DType type = DType::F32;
  DType result_type = DType::I64;
  bool exact = false;  // an f32/f64 sum in exact mode: the exact kernel (exact.cu) instead of fn
};
// The launch of op over n elements of `type` at `in` into `out`: checked as `op`, run as its
// kernel_op (a mean of floats as their sum, any and all as count_nonzero).
Prepared prepare(DeviceState& ds, Workspace& ws, const void* in, u64 n, DType type, Op op, const RunOptions& opt,
                 void* out);

// The CUDA device of the chunk pipeline (core/src/pipeline.hpp). Streamed chunks go through
// pinned staging buffers (or straight from page-locked memory) into device slots on a copy
// stream, while the reducer's stream reduces the chunk before into its cell of a device array
// of chunk results; that array is reduced last, in order. A resident input is copied once into
// slots of its own. Memory and events are kept between calls (grown on demand, shrunk when a
// smaller device_mem_limit asks for it).
class Chunks final : public xr::detail::ChunkDevice {
 public:
  Chunks(DeviceState& ds, Workspace& ws);
  ~Chunks() override;
  Chunks(const Chunks&) = delete;
  Chunks& operator=(const Chunks&) = delete;

  xr::detail::ChunkPolicy policy(DType type) const override;
  void begin(const xr::detail::ChunkPlan& plan) override;
  void* staging(std::uint64_t k) override;
  void stage(std::uint64_t k, const void* host, std::uint64_t len) override;
  double staged() override;
  void reduce(std::uint64_t k, std::uint64_t len) override;
  xr::detail::ChunkOutcome finish() override;
  void abandon() noexcept override;
  std::string describe(const xr::detail::ChunkPlan& plan) const override;

 private:
  struct Slot {
    cudaEvent_t copy_start = nullptr, copied = nullptr, kernel_start = nullptr, reduced = nullptr;
    bool reducing = false;     // a reduction recorded and not yet collected
    bool copy_timed = true;    // the copy's time was counted (or there was none)
  };
  Slot& slot(std::uint64_t k) { return slots_[k % active_slots_]; }
  unsigned char* slot_memory(std::uint64_t k) const;
  void reserve(unsigned slots, std::size_t slot_bytes, bool staging, std::size_t result_bytes, std::uint64_t limit);
  void collect(Slot& slot);
  void release() noexcept;

  DeviceState& ds_;
  Workspace& ws_;
  cudaStream_t copy_stream_ = nullptr;
  std::vector<Slot> slots_;      // events of every slot ever used
  std::size_t active_slots_ = 1;  // the slots of the plan in progress
  void* device_ = nullptr;        // slot_capacity_ x slot_bytes_
  std::size_t slot_capacity_ = 0, slot_bytes_ = 0;
  void* staging_ = nullptr;  // kStagingBuffers x staging_bytes_, page-locked
  std::size_t staging_bytes_ = 0;
  void* results_ = nullptr;  // one cell per chunk
  std::size_t results_bytes_ = 0;
  std::size_t cell_bytes_ = 8;  // one chunk's cell: a value, or a pair op's record

  // The plan of the reduction in progress, and what its pass has done so far.
  xr::detail::ChunkPlan plan_;
  bool direct_ = false;  // chunks copied straight from plan_.memory (page-locked, or resident)
  Prepared chunk_, combine_;
  double kernel_ms_ = 0, copy_ms_ = 0;
  int launches_ = 0;
  std::uint64_t depth_ = 0;
  Outcome last_;
  ExactSum exact_;
};

}  // namespace xr::cuda::detail
