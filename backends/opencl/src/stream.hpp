// The OpenCL backend's device for the chunk pipeline (core/src/pipeline.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "internal.hpp"
#include "pipeline.hpp"
#include "xreduce/exact.hpp"

namespace xr::opencl::detail {

// Host data on one device, through the reducer's one in-order queue. A streamed chunk is read
// (while the queue writes and reduces the chunk before) into one of policy::kStagingBuffers
// pinned staging buffers, written into one of policy::kDeviceSlots device slots and reduced
// into its cell of a buffer of chunk results; the cells are reduced last, in order, on the device
// (a pair op's records, whose indices count from the input's first element, are combined in
// order on the host). A resident input is written once into slots of its own (one per chunk),
// then reduced as often as asked. Exact mode merges the chunks' exact states on the host.
// Buffers are kept between reductions.
class Chunks final : public xr::detail::ChunkDevice {
 public:
  Chunks(const DeviceCaps& caps, cl_context context, cl_command_queue queue);
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
  // A device buffer for one chunk, with the commands that use it until they are collected.
  struct Slot {
    Mem memory;
    Event written;         // the copy into the slot
    EventChain reduction;  // its reduction's commands, the copy of the result into its cell last
  };

  // A page-locked host buffer (CL_MEM_ALLOC_HOST_PTR) mapped once for writing; unmapped and
  // released when it goes.
  class StagingBuffer {
   public:
    StagingBuffer(cl_context context, cl_command_queue queue, std::size_t bytes);
    ~StagingBuffer();
    StagingBuffer(StagingBuffer&& o) noexcept;
    StagingBuffer& operator=(StagingBuffer&&) = delete;
    StagingBuffer(const StagingBuffer&) = delete;
    StagingBuffer& operator=(const StagingBuffer&) = delete;
    void* host() const { return host_; }

   private:
    Mem memory_;
    cl_command_queue queue_;
    void* host_ = nullptr;
  };

  Slot& slot(std::uint64_t k) { return slots_[k % slots_.size()]; }
  void reserve_slots(std::size_t count, std::size_t bytes, std::uint64_t limit);
  void reserve_staging(std::size_t bytes);
  void reserve_results(std::size_t bytes);
  void collect(Slot& slot);  // waits for the slot's commands, adds their times to the pass
  void start_pass();

  const DeviceCaps& caps_;
  cl_context context_;
  cl_command_queue queue_;  // the reducer's (profiling, in order)
  std::vector<Slot> slots_;
  std::size_t slot_bytes_ = 0;
  std::vector<StagingBuffer> staging_;
  std::size_t staging_bytes_ = 0;
  Mem results_;  // one cell per chunk
  std::size_t results_bytes_ = 0;
  ScratchBuffers scratch_;  // the chunk reductions' partials and cell

  // The reduction in progress, and what its pass has done so far.
  xr::detail::ChunkPlan plan_;
  DType cell_type_ = DType::F32;  // a fold's result type
  std::size_t cell_size_ = 0;     // xr::detail::cell_bytes of the plan
  Request chunk_;  // the chunk reduction; buffer, n and cell set per chunk
  double kernel_ms_ = 0, copy_ms_ = 0;
  int launches_ = 0;
  std::uint64_t depth_ = 0;
  ExactSum exact_;
  std::string kernel_, finish_;  // as the chunk reduction names them
};

}  // namespace xr::opencl::detail
