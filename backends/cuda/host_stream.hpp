// The CUDA host path (HostPath::Stream): a ChunkSource streamed through pinned staging buffers
// into device slots on a copy stream, while the reducer's stream reduces the chunk before into
// its cell of a device array of chunk results; that array is reduced last, in order.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>

#include "ladder.hpp"
#include "xreduce/source.hpp"

namespace xr::cu::detail {

// Everything one reduction needs, checked (backend.cpp).
struct Prepared {
  const RungEntry* entry = nullptr;
  RunFn fn = nullptr;
  Launch launch;
  Op op = Op::Sum;
  DType type = DType::F32;
  DType result_type = DType::I64;
  bool exact = false;  // an f32/f64 sum in exact mode: cu_exact instead of fn
};
Prepared prepare(DeviceState& ds, Workspace& ws, const void* in, u64 n, DType type, Op op, const RunOptions& opt,
                 void* out);

// Chunks in flight. Measured on an H100 host (docs/performance.md, "Pageable host data"):
// pinned copies reach 52-54 GB/s from 4 MiB chunks up, so 64 MiB chunks cost nothing
// in link rate and make the last, unhidden kernel ~25 us; 2 staging buffers filled by 8
// threads beat 3 or 4 (15.1 vs 13.5 GB/s: more buffers only add cache and TLB misses); 3 device
// slots let a copy start while the slot before it is still being reduced.
constexpr unsigned kDeviceSlots = 3;
constexpr unsigned kStagingBuffers = 2;

// Memory and events of one reducer's host path, kept between calls (grown on demand, and
// shrunk when a smaller device_mem_limit asks for it). The current device must be the
// reducer's during every call.
class HostStreamer {
 public:
  HostStreamer(DeviceState& ds, Workspace& ws);
  ~HostStreamer();
  HostStreamer(const HostStreamer&) = delete;
  HostStreamer& operator=(const HostStreamer&) = delete;

  // Fills every Result field but backend/n/op/type. source.size() > 0.
  Result run(ChunkSource& source, Op op, const RunOptions& options);

 private:
  struct Slot {
    cudaEvent_t copy_start = nullptr, copied = nullptr, kernel_start = nullptr, reduced = nullptr;
    bool busy = false;  // events recorded and not yet collected
  };
  void reserve(std::size_t slot_bytes, bool staging, u64 chunks, std::size_t result_bytes, u64 limit);
  void collect(Slot& slot, double& kernel_ms, double& copy_ms);
  void release();

  DeviceState& ds_;
  Workspace& ws_;
  cudaStream_t copy_stream_ = nullptr;
  std::array<Slot, kDeviceSlots> slots_{};
  void* device_ = nullptr;  // kDeviceSlots x slot_bytes_
  std::size_t slot_bytes_ = 0;
  void* staging_ = nullptr;  // kStagingBuffers x staging_bytes_, page-locked
  std::size_t staging_bytes_ = 0;
  void* results_ = nullptr;  // one cell per chunk
  std::size_t results_bytes_ = 0;
};

}  // namespace xr::cu::detail
