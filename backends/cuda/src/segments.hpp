// The CUDA backend's segmented reductions (xreduce/segments.hpp): the kernels' launchers as run
// tables (segments_*.cu, one per kernel family), the scratch memory they use, and the
// SegmentDevice of the Reducer (segments.cpp, which also holds the strategies and the
// device-pointer API).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ladder.hpp"
#include "segment_device.hpp"

namespace xr::cuda::detail {

class SegmentScratch;

// One launch of a segmented kernel, its arguments type-erased (the run tables hold one launcher
// per (op, type, accumulator)).
struct SegmentLaunch {
  const void* in = nullptr;  // input elements on the device
  u64 n = 0;                 // elements at `in` (offsets are clamped to it)
  void* out = nullptr;       // one value per segment, of the result type
  // The segments: Rows (count, length, stride), Columns (count columns of length rows, stride),
  // or Offsets (count segments, offsets on the device; with `list`, the entries of a bin whose
  // packed counter is *entries).
  u64 count = 0, length = 0, stride = 0;
  const std::int64_t* offsets = nullptr;
  const unsigned* list = nullptr;
  const std::uint64_t* entries = nullptr;
  u64 grid = 0;  // 0: every block the device holds at once
  unsigned block = 256;
  cudaStream_t stream = nullptr;
  const DeviceCaps* caps = nullptr;
  SegmentScratch* scratch = nullptr;
  unsigned log_group = 0;                     // k_group: log2 of the lanes per segment; packed rows: of the length
  u64 chunk = 0, per_row = 0;                 // multiblock: elements per chunk, chunks per row
  const std::uint64_t* chunk_base = nullptr;  // multiblock over a list: each entry's first chunk
  void* partials = nullptr;                   // multiblock, columns: one value per chunk or band
  u64 capacity = 0;                           // multiblock over a list: chunks `partials` holds
  unsigned* tickets = nullptr;                // multiblock, columns: 0 between launches
  u64 tiles = 0, band_rows = 0;               // columns; balanced: tiles of elements
  std::uint64_t* carry_key = nullptr;         // balanced: the segment of each tile's part in `partials`
  unsigned* disorder = nullptr;               // balanced over offsets the host has not checked: set where they decrease
};

using SegmentFn = void (*)(const SegmentLaunch&);
// A launcher, and the kernel it launches with its dynamic shared memory per thread (for
// occupancy queries: blocks_per_sm); kernel is null where CUB chooses.
struct SegmentEntry {
  SegmentFn run = nullptr;
  const void* kernel = nullptr;
  std::size_t smem_per_thread = 0;
};
// [op][input type][accumulator], like the ladder's RunTable.
using SegmentTable = std::array<std::array<std::array<SegmentEntry, 2>, kDTypeCount>, kOpCount>;

// The kernel families, each a table.
enum class SegmentKernel : unsigned {
  GroupRows,         // k_group over rows (subwarp, warp)
  GroupOffsets,      // k_group over offsets or a bin
  PackedRows,        // k_packed_rows (subwarp on dense rows of 1, 2 or 4 elements)
  BlockRows,         // k_block
  BlockOffsets,
  MultiblockRows,    // k_multiblock over the chunks of rows
  MultiblockList,    // k_multiblock over the long bin
  ColumnsWide,       // k_columns_wide, one element per lane
  ColumnsWideVec,    // ... 16 bytes per lane
  ColumnsNarrow,     // k_columns_narrow
  ColumnsNarrowVec,
  BalancedRows,      // k_balanced (with k_balanced_fixup)
  BalancedOffsets,   // k_balanced (with k_balanced_order and k_balanced_fixup)
  CubRows,           // cub::DeviceSegmentedReduce::Reduce
  CubOffsets,
  Count
};
using SegmentTables = std::array<SegmentTable, static_cast<std::size_t>(SegmentKernel::Count)>;

// Each kernel family's .cu fills its tables.
void add_group_kernels(SegmentTables& t);    // segments_group.cu
void add_block_kernels(SegmentTables& t);    // segments_block.cu
void add_column_kernels(SegmentTables& t);   // segments_columns.cu
void add_balanced_kernels(SegmentTables& t); // segments_balanced.cu
void add_cub_kernels(SegmentTables& t);      // segments_cub.cu
const SegmentTables& segment_tables();       // segments.cpp: all of them, filled once

// binned: segment indices of the window [0, count) of `offsets` into four bins by length (below
// limit[0], limit[1], limit[2], the rest; segments_block.cu). lists[b] has room for the bin's
// entries, entries points to 4 counters that must be zero, chunk_base has room for the long
// bin's entries, whose chunks have `chunk` elements. count < kBinWindow.
struct ClassifyLaunch {
  const std::int64_t* offsets = nullptr;
  u64 n = 0, count = 0;
  std::array<u64, 3> limit{};
  std::array<unsigned*, 4> lists{};
  std::uint64_t* entries = nullptr;
  std::uint64_t* chunk_base = nullptr;
  u64 chunk = 0;
  cudaStream_t stream = nullptr;
  const DeviceCaps* caps = nullptr;
};
void launch_classify(const ClassifyLaunch& c);
// Segments classified per launch: the bins' counters keep 25 bits of entries.
inline constexpr u64 kBinWindow = u64{1} << 24;

// Exact states of `count` pieces (kern::seg::PieceRef on the device) of f32 or f64 data into
// `words` (exact_piece_words(type) each); segments_exact.cu.
void launch_exact_pieces(DType type, const void* data, const void* pieces, u64 count, std::int64_t* words,
                         cudaStream_t stream);

// Device memory of the segmented reductions issued on one stream of one device: the bins, the
// partials and tickets of the one-launch finishes, CUB's temp storage, and (for the Reducer)
// the job's input, offsets and values. Grown stream-ordered and kept; the current device must be
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
  // The four packed counters of k_classify (zeroed by the caller before each classification).
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

// The scratch of the device-pointer API for (device, stream), made on first use and kept.
SegmentScratch& segment_scratch(int device, cudaStream_t stream);

// The segment strategies, auto first, then ours, then the cub baseline (SegmentDevice::kernels).
std::vector<KernelInfo> segment_strategies();

// The Reducer's SegmentDevice: jobs of host data go to device buffers of its scratch (on the
// reducer's stream), then run like the device-pointer API.
class CudaSegments final : public xr::detail::SegmentDevice {
 public:
  CudaSegments(DeviceState& ds, cudaStream_t stream);
  std::vector<KernelInfo> kernels() const override { return segment_strategies(); }
  std::uint64_t max_job_bytes(const RunOptions& options) const override;
  xr::detail::SegmentOutcome reduce(const xr::detail::SegmentJob& job) override;
  xr::detail::SegmentOutcome exact_pieces(const void* data, std::uint64_t n, DType type,
                                          std::span<const xr::detail::ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) override;

 private:
  DeviceState& ds_;
  SegmentScratch scratch_;
};

}  // namespace xr::cuda::detail
