// The CUDA ladder as data: one RungEntry per rung, each with a run function per
// (op, input type, accumulator), plus the per-device and per-stream caches they use.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "arith.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/types.hpp"

namespace xr::cuda::detail {

class ExactAccumulator;  // exact.hpp

using u64 = std::uint64_t;

struct DeviceCaps {
  int device = 0;
  std::string name;
  int sm_count = 1;
  int max_threads_per_sm = 2048;
  int cc_major = 0, cc_minor = 0;
  std::size_t total_mem = 0;
  double dram_gbps = 0;  // peak DRAM bandwidth: 2 x memory clock x bus width (0 if unknown)
};

// Temporary storage for reductions issued on one stream of one device. Everything a call
// needs is either allocated here once (the one-launch finish's slots, ticket counter and epoch,
// the result slot of the synchronous API, timing events) or grown stream-ordered and kept
// (multi-pass ping-pong partials, CUB temp storage). Two streams never share one: the finish
// state is per stream.
class Workspace {
 public:
  static constexpr u64 kMaxSinglePassGrid = 65536;

  Workspace(int device, cudaStream_t stream);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A buffer of at least `bytes` for slot 0..2 (0, 1: multi-pass partials; 2: CUB temp).
  void* scratch(int slot, std::size_t bytes);
  // The one-launch finish (kernels_cu/finish.cuh): kMaxSinglePassGrid published slots of 16
  // bytes and the last epoch; kMaxSinglePassGrid ticket partials of 8 bytes and the ticket
  // counter (0 between launches); dynamic_tiles' tile counter. All zero when allocated.
  void* finish_slots() const { return slots_; }
  std::uint64_t* finish_epoch() const { return epoch_; }
  void* ticket_partials() const { return partials_; }
  unsigned* counter() const { return counter_; }
  unsigned* tile_counter() const { return tile_counter_; }  // dynamic_tiles' draws (0 between launches)
  void* result_slot() const { return result_; }  // 16 bytes: a value, or a pair op's record
  cudaStream_t stream() const { return stream_; }
  cudaEvent_t start_event() const { return start_; }
  cudaEvent_t stop_event() const { return stop_; }
  // The exact-sum accumulator of this stream, allocated on first use.
  ExactAccumulator& exact_accumulator();
  // The cub row's temp-storage size for the last (instantiation, n) it ran: CUB is asked once
  // per size, as a caller reducing that size again would, not before every call.
  struct CubTempSize {
    const void* instantiation = nullptr;
    u64 n = 0;
    std::size_t bytes = 0;
  };
  CubTempSize& cub_temp_size() { return cub_temp_size_; }

 private:
  int device_;
  cudaStream_t stream_;
  void* slots_ = nullptr;
  std::uint64_t* epoch_ = nullptr;
  void* partials_ = nullptr;
  unsigned* counter_ = nullptr;
  unsigned* tile_counter_ = nullptr;
  void* result_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::unique_ptr<ExactAccumulator> exact_;
  CubTempSize cub_temp_size_;
  std::array<void*, 3> slot_{};
  std::array<std::size_t, 3> slot_bytes_{};
};

// Caps (queried once) and the workspaces of one device, keyed by stream. Lives until exit.
class DeviceState {
 public:
  explicit DeviceState(int device);
  const DeviceCaps& caps() const { return caps_; }
  Workspace& workspace(cudaStream_t stream);
  void release(cudaStream_t stream);  // frees that stream's workspace (before destroying it)

 private:
  DeviceCaps caps_;
  std::mutex mutex_;
  std::map<cudaStream_t, std::unique_ptr<Workspace>> ws_;
};

DeviceState& device_state(int device);  // throws DeviceError for a bad index

// Resident blocks per SM of `kernel` at this block size (cached per kernel, block, device).
int blocks_per_sm(const void* kernel, unsigned block, std::size_t dyn_smem, int device);
// Lets `kernel` take `bytes` of dynamic shared memory on `device` (once per kernel, size and
// device: the attribute call costs host time on every launch otherwise).
void allow_dynamic_smem(const void* kernel, std::size_t bytes, int device, const char* rung);
// The virtual architecture the kernel's code was compiled for (90: compute_90), cached; it
// decides what #if __CUDA_ARCH__ picked in the kernel that runs.
int ptx_version(const void* kernel, int device);

// One reduction, arguments resolved. `in` has n elements of the input type, `out` receives
// one value of the result type; both on caps->device. grid == 0: the rung's default.
struct Launch {
  const void* in = nullptr;
  u64 n = 0;
  void* out = nullptr;
  unsigned block = 0;
  u64 grid = 0;
  std::int64_t first = 0;  // the pair ops: the index of in[0] in the whole input
  cudaStream_t stream = nullptr;
  Workspace* ws = nullptr;
  const DeviceCaps* caps = nullptr;
};

// What one reduction did. Both strings are literals (static storage): a launch allocates
// nothing on the host between the events that time it.
struct Outcome {
  int launches = 0;
  const char* finish = "";   // "multi-pass", "last block", "atomic", "tail launch", "cub"
  u64 depth = 0;             // rounding chain bound (Result::rounding_depth)
  const char* variant = "";  // what ran, e.g. "auto:single_pass"
};

using RunFn = Outcome (*)(const Launch&);

// A rung's run functions, [op][input type][accumulator]: one instantiation per (op, type,
// accumulator_t), generated from core's op and type tables (drivers.cuh: fill_runs); the
// mapped ops on the rungs that map elements. Wide and Native differ only for sums (sumsq, asum
// and nansum included) of integers narrower than 64 bits.
using RunTable = std::array<std::array<std::array<RunFn, 2>, kDTypeCount>, kOpCount>;

struct RungEntry {
  KernelInfo info;  // info.blocks: the block sizes it accepts and its default
  RunTable fn{};  // null where unsupported
  RunFn find(Op op, DType in, Accumulator acc) const {
    return fn[static_cast<std::size_t>(op)][static_cast<std::size_t>(in)][static_cast<std::size_t>(acc)];
  }
};

// The ladder, in kernels() order. Rung families define their entries in their own .cu files.
const std::vector<RungEntry>& ladder();
const RungEntry& rung(const std::string& name);  // InvalidArgument listing the names

// Entry factories, one per rung family (each in its own translation unit).
std::vector<RungEntry> tree_rungs();     // rungs_tree.cu: interleaved_divergent .. unroll_complete
std::vector<RungEntry> grid_rungs();     // rungs_grid.cu: cascade .. single_pass, dynamic_tiles, bulk_copy
std::vector<RungEntry> atomic_rungs();   // rungs_atomic.cu
std::vector<RungEntry> nested_rungs();   // nested.cu (separable compilation): the CDP2 rungs
RungEntry cub_rung();                    // cub_baseline.cu
RungEntry auto_rung();                   // rungs_grid.cu
// Adds the pair ops (argmin, argmax, minmax) to an entry: rungs_pairs.cu. auto runs them.
void add_pair_runs(RungEntry& e);
const RungEntry& empty_input_entry();    // rungs_atomic.cu: n = 0 on every rung

using ::xr::detail::ceil_div;
using ::xr::detail::ceil_log2;

}  // namespace xr::cuda::detail
