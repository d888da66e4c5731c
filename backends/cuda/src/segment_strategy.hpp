// The CUDA segment strategies' interface. A strategy is one file of segments/ (its KernelInfo row,
// its plan, the scratch it takes and its launches); CMake lists that folder into
// segment_strategy_list.inc, one XR_SEGMENT_STRATEGY(<file name>) line a file, and the file
// segments/<name>.cu defines strategy_<name>(). Segments (segments.hpp) resolves each call into a
// Task, asks the strategy for its Plan, and runs the plan's pass as often as the call times it.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ladder.hpp"
#include "policy.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/segments.hpp"

namespace xr::cuda::detail {

// Device memory of the segmented reductions issued on one stream of one device: the bins, the
// partials and tickets of the one-launch finishes, CUB's temp storage, and (for host jobs) the
// job's input, offsets and values. Grown stream-ordered and kept; the current device must be
// `device` when it is used.
class SegmentScratch {
 public:
  enum Slot : unsigned { Lists, ChunkBase, Partials, CubTemp, Data, Offsets, Values, Pieces, Words, kSlots };
  SegmentScratch(int device, cudaStream_t stream);
  ~SegmentScratch();
  SegmentScratch(const SegmentScratch&) = delete;
  SegmentScratch& operator=(const SegmentScratch&) = delete;

  // At least `bytes` (1 at least) in `slot`; the contents are not kept when it grows.
  void* buffer(Slot slot, std::size_t bytes);
  // `count` ticket counters, zero between launches (zeroed when allocated; every kernel that
  // draws from them leaves them at zero).
  unsigned* tickets(u64 count);
  // The four packed counters of k_classify (zeroed before each classification).
  std::uint64_t* bin_entries() const { return entries_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  cudaEvent_t start_event() const { return start_; }
  cudaEvent_t stop_event() const { return stop_; }
  std::size_t held_bytes() const;  // device memory this scratch holds
  // The temp-storage size CUB gave for the last (instantiation, segments) it was asked for.
  struct CubSize {
    const void* instantiation = nullptr;
    u64 count = 0;
    std::size_t bytes = 0;
  };
  CubSize& cub_size() { return cub_size_; }

 private:
  int device_;
  cudaStream_t stream_;
  std::array<void*, kSlots> slot_{};
  std::array<std::size_t, kSlots> slot_bytes_{};
  unsigned* tickets_ = nullptr;
  u64 ticket_count_ = 0;
  std::uint64_t* entries_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  CubSize cub_size_;
};

// Segments by length, in elements of `type`: below limit[0] tiny, below limit[1] short, below
// limit[2] medium, else long (binned's bins and auto's statistics).
inline std::array<u64, 3> bin_limits(DType type) {
  const u64 e = size_of(type);
  return {policy::kTinyBinBytes / e, policy::kShortBinBytes / e, policy::kMediumBinBytes / e};
}
inline unsigned bin_of(u64 length, const std::array<u64, 3>& limit) {
  return length < limit[0] ? 0 : length < limit[1] ? 1 : length < limit[2] ? 2 : 3;
}

// Segment lengths, where the host knows them (rows and columns always; offsets when the host has
// read them), clamped as the kernels clamp offsets.
struct LengthStats {
  bool known = false;
  u64 longest = 0, total = 0;
  std::array<u64, 4> bins{};  // segments per bin of bin_limits
};

// One segmented reduction on the device, its arguments resolved: what a strategy plans for.
struct Task {
  const void* in = nullptr;  // n elements of `type` on the device
  u64 n = 0;
  DType type = DType::F32;
  Op op = Op::Sum;
  Accumulator acc = Accumulator::Wide;
  // The segments: Rows (count, length, stride), Columns (count columns of length rows, stride),
  // or Offsets (count segments, count + 1 offsets on the device; host_offsets their host copy, or
  // null where the host has not read them).
  SegmentKind kind = SegmentKind::Offsets;
  u64 count = 0, length = 0, stride = 0;
  const std::int64_t* offsets = nullptr;
  const std::int64_t* host_offsets = nullptr;
  LengthStats stats;
  void* out = nullptr;  // count records of segment_record_bytes(op, type, acc) on the device
  unsigned block = policy::kSegmentBlock;
  bool block_given = false;  // the caller chose `block` (RunOptions::block_size)
  cudaStream_t stream = nullptr;
  const DeviceCaps* caps = nullptr;
  SegmentScratch* scratch = nullptr;

  std::size_t elem() const { return size_of(type); }
  std::size_t result_size() const { return size_of(result_dtype(op, type, acc)); }
  unsigned pack() const { return static_cast<unsigned>(16 / elem()); }  // elements per 16-byte pack
  bool aligned() const { return reinterpret_cast<std::uintptr_t>(in) % 16 == 0; }
};

// One step of a pass, its arguments bound: a kernel launch, with the memset it needs before it.
using Step = std::function<void()>;

// What one pass of a strategy runs, and what the record says of it.
struct Plan {
  std::string kernel;  // the strategy that runs ("warp"; auto: "auto:warp")
  std::string finish;  // how the parts of a segment combine
  int launches = 0;    // kernel launches of one pass
  u64 depth = 0;       // float sums: the most roundings behind one value (0: unknown)
  std::vector<Step> pass;
};

// Enqueues every launch of the plan, in order, on the task's stream.
inline void run_pass(const Plan& p) {
  for (const Step& step : p.pass) step();
}

struct Strategy {
  int order = 0;  // place in kernels(): auto first, then the ladder, the baseline last
  KernelInfo info;
  // The plan of a task with count > 0 whose layout info.layouts holds and whose block info.blocks
  // accepts: its numbers, the scratch it takes, and the launches of one pass.
  Plan (*plan)(const Task&) = nullptr;
};

// A strategy's KernelInfo: every fold, every mapped op and every element type, exact sums through
// pieces (a strategy of other ops sets its own: pairs takes the pair ops alone, cub the folds,
// auto every op).
KernelInfo strategy_info(std::string name, KernelKind kind, std::vector<SegmentKind> layouts, BlockRule blocks,
                         std::string note);
// Block sizes in multiples of 32 up to `max`, policy::kSegmentBlock by default.
inline BlockRule segment_blocks(unsigned max) { return BlockRule{32, max, 32, {}, policy::kSegmentBlock}; }
// InvalidArgument: a strategy or kernel was given a layout it does not reduce (core's checks
// exclude it).
[[noreturn]] void layout_not_reduced(const char* what, SegmentKind kind);

#define XR_SEGMENT_STRATEGY(name) const Strategy& strategy_##name();
#include "segment_strategy_list.inc"
#undef XR_SEGMENT_STRATEGY

// Every strategy of segment_strategy_list.inc, by order.
const std::vector<const Strategy*>& strategies();
// The strategy named `name`; InvalidArgument listing the names.
const Strategy& find_strategy(std::string_view name);
// `block`, or the strategy's default for 0; InvalidArgument where the strategy does not accept it.
unsigned checked_block(const Strategy& s, unsigned block);

}  // namespace xr::cuda::detail
