// The CUDA backend's segmented reductions, host side: the strategies and how auto chooses among
// them, one pass of a strategy (the kernels' launchers are in segments_*.cu), the scratch
// memory, the Reducer's SegmentDevice and the device-pointer API (xreduce/cuda.hpp).
#include "segments.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "pipeline.hpp"
#include "policy.hpp"
#include "xreduce/cuda.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

using xr::detail::ExactPiece;
using xr::detail::SegmentJob;
using xr::detail::SegmentOutcome;

const SegmentTables& segment_tables() {
  static const SegmentTables tables = [] {
    SegmentTables t{};
    add_group_kernels(t);
    add_block_kernels(t);
    add_column_kernels(t);
    add_balanced_kernels(t);
    add_cub_kernels(t);
    return t;
  }();
  return tables;
}

// ---- scratch -------------------------------------------------------------------------------

SegmentScratch::SegmentScratch(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  DeviceGuard guard(device);
  try {
    check(cudaMalloc(reinterpret_cast<void**>(&entries_), 4 * sizeof(std::uint64_t)), "cudaMalloc of the bin counters");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  } catch (...) {
    if (start_) cudaEventDestroy(start_);
    cudaFree(entries_);
    throw;
  }
}

SegmentScratch::~SegmentScratch() {
  // Errors are ignored: a destructor cannot report them.
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  for (void* p : slot_)
    if (p) cudaFree(p);
  cudaFree(tickets_);
  cudaFree(entries_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaGetLastError();
  cudaSetDevice(previous);
}

namespace {
// Stream-ordered: work already queued on the stream still sees the old allocation.
void* regrow(void* old, std::size_t bytes, cudaStream_t stream, const char* what) {
  if (old) check(cudaFreeAsync(old, stream), std::string("cudaFreeAsync (") + what + ")");
  void* p = nullptr;
  check(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync of " + format_bytes(bytes) + " (" + what + ")");
  return p;
}
constexpr const char* kSlotNames[] = {"bin lists", "chunk bases", "partials", "CUB temp storage", "segment input",
                                      "segment offsets", "segment values", "exact pieces", "exact states"};
}  // namespace

void* SegmentScratch::buffer(Slot slot, std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (slot_bytes_[slot] >= bytes) return slot_[slot];
  slot_bytes_[slot] = 0;
  slot_[slot] = regrow(std::exchange(slot_[slot], nullptr), bytes, stream_, kSlotNames[slot]);
  slot_bytes_[slot] = bytes;
  return slot_[slot];
}

unsigned* SegmentScratch::tickets(u64 count) {
  count = std::max<u64>(count, 1);
  if (ticket_count_ >= count) return tickets_;
  ticket_count_ = 0;
  tickets_ = static_cast<unsigned*>(regrow(std::exchange(tickets_, nullptr), count * sizeof(unsigned), stream_, "tickets"));
  check(cudaMemsetAsync(tickets_, 0, count * sizeof(unsigned), stream_), "cudaMemsetAsync (tickets)");
  ticket_count_ = count;
  return tickets_;
}

std::size_t SegmentScratch::held_bytes() const {
  std::size_t b = ticket_count_ * sizeof(unsigned);
  for (std::size_t s : slot_bytes_) b += s;
  return b;
}

SegmentScratch& segment_scratch(int device, cudaStream_t stream) {
  static std::mutex mutex;
  // Never destroyed: CUDA calls from static destructors at exit are unsafe.
  static auto* scratch = new std::map<std::pair<int, cudaStream_t>, std::unique_ptr<SegmentScratch>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = (*scratch)[{device, stream}];
  if (!s) {
    try {
      s = std::make_unique<SegmentScratch>(device, stream);
    } catch (...) {
      scratch->erase({device, stream});
      throw;
    }
  }
  return *s;
}

namespace {

// ---- the strategies ----------------------------------------------------------------------

enum class Strategy : std::uint8_t { Auto, Subwarp, Warp, Block, Multiblock, Binned, Balanced, Columns, Cub };

struct StrategyRow {
  Strategy strategy;
  const char* name;
  KernelKind kind;
  std::vector<SegmentKind> layouts;
  BlockRule blocks;
  const char* note;
};

constexpr SegmentKind kRows = SegmentKind::Rows, kColumns = SegmentKind::Columns, kOffsets = SegmentKind::Offsets;

const std::vector<StrategyRow>& strategy_rows() {
  // Block sizes: multiples of 32; k_group's registers allow 512 threads a block.
  const auto blocks = [](unsigned max) { return BlockRule{32, max, 32, {}, policy::kSegmentBlock}; };
  static const std::vector<StrategyRow> rows = {
      {Strategy::Auto, "auto", KernelKind::Auto, {kRows, kColumns, kOffsets}, blocks(512),
       "chooses by layout and shape: rows by length, offsets balanced or the one strategy that suits every "
       "segment, columns by columns"},
      {Strategy::Subwarp, "subwarp", KernelKind::Rung, {kRows, kOffsets}, blocks(512),
       "groups of 1-32 lanes per segment (from the mean length), 4 segments in flight per group: a warp's loads "
       "cover several short segments; lanes idle where lengths vary"},
      {Strategy::Warp, "warp", KernelKind::Rung, {kRows, kOffsets}, blocks(512),
       "one warp per segment, 16-byte loads, 4 segments in flight: coalesced runs of hundreds of elements; "
       "segments shorter than 32 packs leave lanes idle"},
      {Strategy::Block, "block", KernelKind::Rung, {kRows, kOffsets}, blocks(1024),
       "one block per segment, 16-byte loads, 4 in flight per thread: segments of thousands of elements; "
       "fewer segments than resident blocks leave SMs idle"},
      {Strategy::Multiblock, "multiblock", KernelKind::Rung, {kRows, kOffsets}, blocks(1024),
       "64 KiB chunks of a segment on as many blocks, the last block of each segment combining its chunks in "
       "the same launch: a few long segments fill the GPU; a partial and a ticket per chunk, offsets classified first"},
      {Strategy::Binned, "binned", KernelKind::Rung, {kOffsets}, blocks(512),
       "segments binned by length on the device, one launch per bin (subwarp, warp, block, multiblock): mixed "
       "lengths each get their strategy; a classification pass and bin lists cost 12 bytes a segment"},
      {Strategy::Balanced, "balanced", KernelKind::Rung, {kRows, kOffsets}, BlockRule{32, policy::kBalancedMaxBlock, 32, {}, policy::kSegmentBlock},
       "equal tiles of elements per block whatever the segments, staged in shared memory, each thread's run cut "
       "at marked ends, a block segmented scan and a fixup of parts across tiles: any mix of lengths at one rate; "
       "a search of the offsets per tile, shared memory and 2 launches"},
      {Strategy::Columns, "columns", KernelKind::Rung, {kColumns}, blocks(1024),
       "lanes across columns, row bands over blocks finished by the last block of each column tile, narrow "
       "arrays with lanes over whole rows: one launch; band partials"},
      {Strategy::Cub, "cub", KernelKind::Baseline, {kRows, kOffsets}, BlockRule{0, 0, 0, {0}},
       "cub::DeviceSegmentedReduce::Reduce with xreduce's NaN-propagating ops: the baseline, not ours"},
  };
  return rows;
}

const StrategyRow& strategy_row(std::string_view name) {
  for (const auto& r : strategy_rows())
    if (name == r.name) return r;
  std::string known;
  for (const auto& r : strategy_rows()) known += (known.empty() ? "" : ", ") + std::string(r.name);
  throw InvalidArgument("cuda: unknown segment strategy '" + std::string(name) + "' (known: " + known + ")");
}

const char* strategy_name(Strategy s) {
  for (const auto& r : strategy_rows())
    if (r.strategy == s) return r.name;
  return "auto";
}

KernelInfo info_of(const StrategyRow& r) {
  KernelInfo k;
  k.name = r.name;
  k.note = r.note;
  k.kind = r.kind;
  k.ops.assign(fold_ops.begin(), fold_ops.end());
  k.types = segment_dtypes();
  k.exact = true;  // exact sums go through pieces (exact_pieces), whatever the strategy
  k.blocks = r.blocks;
  k.layouts = r.layouts;
  return k;
}

unsigned checked_block(const StrategyRow& r, unsigned block) {
  const unsigned b = block ? block : r.blocks.preferred;
  if (!r.blocks.accepts(b))
    throw InvalidArgument("cuda: segment strategy " + std::string(r.name) + " accepts block sizes " + r.blocks.describe() +
                          ", not " + std::to_string(b));
  return b;
}

// ---- one segmented reduction on the device ---------------------------------------------

// Everything a strategy needs, on the device (host_offsets: the offsets on the host, when the
// caller has them: auto's statistics and the rounding depth use them).
struct SegmentTask {
  const void* in = nullptr;
  u64 n = 0;
  DType type = DType::F32;
  Op op = Op::Sum;
  Accumulator acc = Accumulator::Wide;
  SegmentKind kind = SegmentKind::Offsets;
  u64 count = 0, length = 0, stride = 0;
  const std::int64_t* offsets = nullptr;
  const std::int64_t* host_offsets = nullptr;
  void* out = nullptr;
  unsigned block = policy::kSegmentBlock;
  bool block_given = false;  // the caller chose `block` (RunOptions::block_size)
  cudaStream_t stream = nullptr;
  const DeviceCaps* caps = nullptr;
  SegmentScratch* scratch = nullptr;

  std::size_t elem() const { return size_of(type); }
  std::size_t result_size() const { return size_of(result_dtype(op, type, acc)); }
  unsigned pack() const { return static_cast<unsigned>(16 / elem()); }  // elements per 16-byte pack
  bool aligned() const { return reinterpret_cast<std::uintptr_t>(in) % 16 == 0; }
  const SegmentEntry& entry(SegmentKernel k) const {
    return segment_tables()[static_cast<std::size_t>(k)][static_cast<std::size_t>(op)][static_cast<std::size_t>(type)]
                           [static_cast<std::size_t>(acc)];
  }
  SegmentFn fn(SegmentKernel k) const { return entry(k).run; }
  // Blocks of kernel k (of `threads` threads) the device holds at once (one wave).
  u64 resident_blocks(SegmentKernel k) const { return resident_blocks(k, block); }
  u64 resident_blocks(SegmentKernel k, unsigned threads) const {
    const SegmentEntry& e = entry(k);
    return u64(caps->sm_count) * u64(blocks_per_sm(e.kernel, threads, e.smem_per_thread * threads, caps->device));
  }
};

// Bins of binned (and auto's statistics), in elements: below limit[0] tiny, below limit[1]
// short, below limit[2] medium, else long.
std::array<u64, 3> bin_limits(DType type) {
  const u64 e = size_of(type);
  return {policy::kTinyBinBytes / e, policy::kShortBinBytes / e, policy::kMediumBinBytes / e};
}
unsigned bin_of(u64 length, const std::array<u64, 3>& limit) {
  return length < limit[0] ? 0 : length < limit[1] ? 1 : length < limit[2] ? 2 : 3;
}
u64 clamp_offset(std::int64_t v, u64 lo, u64 hi) {
  return v <= static_cast<std::int64_t>(lo) ? lo : std::min(static_cast<u64>(v), hi);
}

// Segment lengths, where the host knows them (rows and columns always).
struct LengthStats {
  bool known = false;
  u64 longest = 0, total = 0;
  std::array<u64, 4> bins{};  // segments per bin
};

LengthStats length_stats(const SegmentTask& t) {
  LengthStats s;
  const auto limit = bin_limits(t.type);
  if (t.kind != SegmentKind::Offsets) {
    s.known = true;
    s.longest = t.length;
    s.total = t.count * t.length;
    s.bins[bin_of(t.length, limit)] = t.count;
  } else if (t.host_offsets) {
    s.known = true;
    for (u64 i = 0; i < t.count; ++i) {  // clamped as the kernels clamp
      const u64 b = clamp_offset(t.host_offsets[i], 0, t.n), e = clamp_offset(t.host_offsets[i + 1], b, t.n);
      s.longest = std::max(s.longest, e - b);
      s.total += e - b;
      ++s.bins[bin_of(e - b, limit)];
    }
  }
  return s;
}

unsigned log2_ceil(u64 x) { return ceil_log2(std::max<u64>(x, 1)); }

// The lanes per segment of subwarp for segments of `length` elements: about one pack a lane.
// k_group's lanes (log2) for segments of `length` elements: a 16-byte pack a lane, two from
// policy::kGroupTwoPacksFrom packs a segment on; at most a warp.
unsigned group_log_for(u64 length, unsigned pack) {
  const u64 packs = ceil_div(length, pack);
  return std::min(5u, log2_ceil(packs >= policy::kGroupTwoPacksFrom ? ceil_div(packs, 2) : packs));
}

// What one pass of a strategy runs, resolved once per call.
struct SegmentPlan {
  Strategy strategy = Strategy::Warp;
  bool automatic = false;
  unsigned block = policy::kSegmentBlock;
  SegmentKernel kernel = SegmentKernel::GroupRows;  // the kernel of single-launch strategies
  unsigned log_group = 5;                           // k_group's lanes (log2), k_packed_rows' row length (log2)
  u64 grid = 0;
  u64 chunk = 0, per_row = 0;                       // multiblock
  u64 tiles = 0, bands = 1, band_rows = 0;         // columns
  std::array<bool, 4> bins{true, true, true, true};  // binned: bins that may hold segments
  std::array<u64, 3> limits{};
  LengthStats stats;
  std::string finish;
  int launches = 0;
  u64 depth = 0;  // 0: unknown
  // Device memory, from reserve().
  void* partials = nullptr;
  u64 capacity = 0;  // chunks `partials` holds (multiblock over offsets)
  unsigned* tickets = nullptr;
  std::array<unsigned*, 4> lists{};
  std::uint64_t* chunk_base = nullptr;
  std::uint64_t* carry_key = nullptr;  // balanced
  unsigned* disorder = nullptr;        // balanced over offsets the host has not checked

  std::string name() const { return (automatic ? std::string("auto:") : std::string()) + strategy_name(strategy); }
};

Strategy choose(const SegmentTask& t, const LengthStats& s) {
  if (t.kind == SegmentKind::Columns) return Strategy::Columns;
  const SegmentKernel block_kernel = t.kind == SegmentKind::Rows ? SegmentKernel::BlockRows : SegmentKernel::BlockOffsets;
  const auto by_length = [&](u64 length, u64 segments) {
    if (ceil_div(length, t.pack()) <= policy::kSubwarpMaxPacks) return Strategy::Subwarp;
    if (length * t.elem() <= policy::kWarpMaxBytes) return Strategy::Warp;
    if (segments >= t.resident_blocks(block_kernel) || length * t.elem() < 2 * policy::kSegmentChunkBytes)
      return Strategy::Block;
    return Strategy::Multiblock;
  };
  if (t.kind == SegmentKind::Rows) return by_length(t.length, t.count);
  // Lengths unknown or mixed: balanced, whose rate does not depend on them (H100, 2^20 segments
  // of lognormal lengths, mean 64, f32: balanced 2353-2379 GB/s in 2 launches, binned 1026-1032
  // in 4, subwarp 1121-1125, warp 817-821); binned where the block is too large for balanced.
  const Strategy mixed = t.block <= policy::kBalancedMaxBlock ? Strategy::Balanced : Strategy::Binned;
  if (!s.known) return mixed;
  const auto used = std::count_if(s.bins.begin(), s.bins.end(), [](u64 c) { return c > 0; });
  if (used > 1) return mixed;
  // Every segment in one bin: that bin's strategy alone.
  if (s.bins[0] == t.count) return Strategy::Subwarp;
  if (s.bins[1] == t.count) return Strategy::Warp;
  if (s.bins[2] == t.count) return t.count >= t.resident_blocks(block_kernel) ? Strategy::Block : Strategy::Multiblock;
  return Strategy::Multiblock;
}

// Rounding chains (float sums), from each kernel's structure: the values one thread adds in
// sequence, then the trees.
u64 group_depth(u64 length, unsigned log_group, unsigned pack) {
  const u64 g = u64{1} << log_group;
  return ceil_div(2 * pack, g) + ceil_div(length / pack, g) + log2_ceil(pack) + log_group + 1;
}
u64 block_depth(u64 length, unsigned block, unsigned pack) {
  return 1 + ceil_div(ceil_div(length, pack), block) + log2_ceil(u64(policy::kUnroll) * pack) + log2_ceil(block) + 1;
}
u64 multiblock_depth(u64 length, u64 chunk, unsigned block, unsigned pack) {
  return block_depth(std::min(length, chunk), block, pack) + ceil_div(ceil_div(length, chunk), block) +
         log2_ceil(block) + 1;
}

SegmentPlan plan_segments(Strategy requested, const SegmentTask& t) {
  SegmentPlan p;
  p.block = t.block;
  p.strategy = requested;
  p.automatic = requested == Strategy::Auto;
  p.stats = length_stats(t);
  if (p.automatic) p.strategy = choose(t, p.stats);
  if (t.count == 0) {
    p.finish = "none (no segments)";
    return p;
  }
  const bool rows = t.kind == SegmentKind::Rows;
  const unsigned pack = t.pack();
  unsigned warps = p.block / 32;
  const u64 longest = p.stats.longest;
  const bool known = p.stats.known;
  p.limits = bin_limits(t.type);
  p.launches = 1;
  p.chunk = std::max<u64>(1, policy::kSegmentChunkBytes / t.elem());
  const auto group_grid = [&](unsigned log_group) {
    const u64 per_warp = u64(policy::kSegmentsInFlight) * (32u >> log_group);
    return std::clamp<u64>(ceil_div(ceil_div(t.count, per_warp), warps), 1, INT_MAX);
  };
  // Offsets in windows of kBinWindow segments, each classified then reduced per bin.
  const u64 windows = ceil_div(t.count, kBinWindow);
  switch (p.strategy) {
    case Strategy::Subwarp: {
      const bool packed = rows && t.length >= 1 && t.length <= pack && pack % t.length == 0 && t.stride == t.length &&
                          t.aligned();
      if (packed) {
        p.kernel = SegmentKernel::PackedRows;
        p.log_group = log2_ceil(t.length);
        const u64 packs = t.count * t.length / pack;
        p.grid = std::clamp<u64>(ceil_div(packs, u64(p.block) * policy::kPackedRowsInFlight), 1, INT_MAX);
        p.finish = "one thread per pack of " + std::to_string(pack / t.length) + " rows";
        p.depth = t.length;
        break;
      }
      const u64 mean = rows ? t.length : known ? p.stats.total / std::max<u64>(t.count, 1) : t.n / std::max<u64>(t.count, 1);
      p.kernel = rows ? SegmentKernel::GroupRows : SegmentKernel::GroupOffsets;
      p.log_group = group_log_for(mean, pack);
      p.grid = group_grid(p.log_group);
      p.finish = "shuffles within groups of " + std::to_string(1u << p.log_group) + " lanes";
      if (known) p.depth = group_depth(longest, p.log_group, pack);
      break;
    }
    case Strategy::Warp:
      p.kernel = rows ? SegmentKernel::GroupRows : SegmentKernel::GroupOffsets;
      p.log_group = 5;
      p.grid = group_grid(5);
      p.finish = "warp shuffles";
      if (known) p.depth = group_depth(longest, 5, pack);
      break;
    case Strategy::Block:
      p.kernel = rows ? SegmentKernel::BlockRows : SegmentKernel::BlockOffsets;
      p.grid = std::clamp<u64>(t.count, 1, INT_MAX);
      p.finish = "one block per segment";
      if (known) p.depth = block_depth(longest, p.block, pack);
      break;
    case Strategy::Multiblock:
      p.finish = "last block of each segment combines its chunks in order";
      if (known) p.depth = multiblock_depth(longest, p.chunk, p.block, pack);
      if (rows) {
        p.kernel = SegmentKernel::MultiblockRows;
        p.per_row = std::max<u64>(1, ceil_div(t.length, p.chunk));
        p.grid = std::clamp<u64>(t.count * p.per_row, 1, INT_MAX);
      } else {
        p.kernel = SegmentKernel::MultiblockList;
        p.limits = {0, 0, 0};  // every segment in the long bin
        p.bins = {false, false, false, true};
        p.launches = static_cast<int>(2 * windows);
        p.finish = "offsets classified, then " + p.finish;
      }
      break;
    case Strategy::Binned: {
      if (known)
        for (unsigned b = 0; b < 4; ++b) p.bins[b] = p.stats.bins[b] > 0;
      const int used = static_cast<int>(std::count(p.bins.begin(), p.bins.end(), true));
      p.launches = static_cast<int>(windows) * (1 + used);
      p.finish = "binned by length: groups of " + std::to_string(1u << policy::kTinyBinLogLanes) +
                 " lanes, warps, blocks, last block of each long segment";
      if (known) {
        const u64 tiny = std::min(longest, p.limits[0]), shorter = std::min(longest, p.limits[1]);
        const u64 medium = std::min(longest, p.limits[2]);
        p.depth = std::max({p.bins[0] ? group_depth(tiny, policy::kTinyBinLogLanes, pack) : 0,
                            p.bins[1] ? group_depth(shorter, 5, pack) : 0,
                            p.bins[2] ? block_depth(medium, p.block, pack) : 0,
                            p.bins[3] ? multiblock_depth(longest, p.chunk, p.block, pack) : 0});
      }
      break;
    }
    case Strategy::Balanced: {
      p.kernel = rows ? SegmentKernel::BalancedRows : SegmentKernel::BalancedOffsets;
      const u64 tile = u64(p.block) * policy::balanced_items(t.elem());
      // Elements: at most the input's n (what the host cannot see lies within it); the tiles
      // past the end exit at once. One tile more than whole tiles: the end of the input lies in one.
      const u64 elements = rows ? t.count * t.length : known ? p.stats.total : t.n;
      p.tiles = elements / tile + 1;
      if (p.tiles > INT_MAX)
        throw InvalidArgument("cuda: balanced: " + std::to_string(elements) + " elements is too many");
      // Persistent blocks: one wave, each block a run of consecutive tiles.
      const SegmentEntry& e = t.entry(p.kernel);
      allow_dynamic_smem(e.kernel, e.smem_per_thread * t.block, t.caps->device, "balanced");
      p.grid = std::min(p.tiles, t.resident_blocks(p.kernel));
      const bool check_order = t.kind == kOffsets && !t.host_offsets;
      p.launches = 1 + (check_order ? 1 : 0) + (p.grid > 1 ? 1 : 0);
      p.finish = "runs of tiles of " + std::to_string(tile) + " elements, a block segmented scan" +
                 (p.grid > 1 ? ", parts across blocks combined by a fixup launch" : "");
      // A segment's part carried from tile to tile in a block, then the blocks' parts combined.
      if (known) {
        const u64 spanned = ceil_div(longest, tile) + 1;
        p.depth = policy::balanced_items(t.elem()) + log2_ceil(p.block) + 1 +
                  (p.grid > 1 ? spanned + ceil_div(spanned, 32) + 6 : spanned);
      }
      break;
    }
    case Strategy::Columns: {
      const bool vec = t.aligned() && t.stride % pack == 0 && t.count % pack == 0;
      const unsigned w = vec ? pack : 1;
      const u64 in_flight = std::max<u64>(1, policy::kColumnBytesInFlight / (w * t.elem()));
      const u64 rows_n = t.length;
      const u64 units = t.stride / w;
      u64& bands = p.bands;
      u64 band_multiple = 1;  // narrow: bands of whole rounds, so only the last band ends in part of one
      // Partials of W accumulators a thread in dynamic shared memory: past the default 48 KiB
      // (u8 sums, 16 u64 a thread, at 512 threads and more) only once allowed.
      const auto allow_partials = [&] {
        const SegmentEntry& e = t.entry(p.kernel);
        allow_dynamic_smem(e.kernel, e.smem_per_thread * p.block, t.caps->device, "columns");
      };
      const bool narrow = units <= 32 && t.count < 32u * w;
      const u64 used = 32 / units * units;  // narrow: lanes of a warp that hold a column set
      if (narrow) {
        // Narrow: lanes over whole rows; one block per band of rows, one wave of blocks.
        p.kernel = vec ? SegmentKernel::ColumnsNarrowVec : SegmentKernel::ColumnsNarrow;
        if (!t.block_given) {
          p.block = policy::kColumnsNarrowBlock;
          warps = p.block / 32;
        }
        allow_partials();
        const u64 resident = t.resident_blocks(p.kernel, p.block);
        const u64 rows_per_round = std::max<u64>(1, used * warps * in_flight / units);
        bands = std::clamp<u64>(ceil_div(rows_n, rows_per_round), 1, resident);
        band_multiple = rows_per_round;
        p.tiles = 1;
        p.finish = "lanes over whole rows, ";
      } else {
        // Wide: column tiles of 32 lanes, row bands to fill one wave of blocks.
        p.kernel = vec ? SegmentKernel::ColumnsWideVec : SegmentKernel::ColumnsWide;
        allow_partials();
        const u64 resident = t.resident_blocks(p.kernel);
        p.tiles = ceil_div(t.count, 32u * w);
        if (p.tiles > INT_MAX) throw InvalidArgument("cuda: columns: " + std::to_string(t.count) + " columns is too many");
        bands = std::clamp<u64>(resident / p.tiles, 1, std::max<u64>(1, ceil_div(rows_n, warps * in_flight)));
        bands = std::min<u64>(bands, INT_MAX / p.tiles);
        p.finish = "lanes across columns, ";
        if (known) p.depth = ceil_div(ceil_div(rows_n, bands), warps) + warps;
      }
      p.band_rows = rows_n ? ceil_div(ceil_div(rows_n, bands), band_multiple) * band_multiple : 0;
      bands = rows_n ? ceil_div(rows_n, p.band_rows) : 1;
      if (known && narrow) p.depth = ceil_div(p.band_rows * units, used * warps) + 5 + 32 / units + warps;
      p.grid = p.tiles * bands;
      p.finish += bands > 1 ? std::to_string(bands) + " row bands finished by the last block of each column tile"
                            : "one block per column tile";
      if (known && bands > 1) p.depth += ceil_div(bands, warps) + warps + 1;
      break;
    }
    case Strategy::Cub:
      p.kernel = rows ? SegmentKernel::CubRows : SegmentKernel::CubOffsets;
      p.finish = "cub";
      // Estimated from CUB's structure (its order is not exposed): one block per segment, each
      // thread reduces its items of every tile in sequence, then a block tree.
      if (known) p.depth = ceil_div(longest, 128) + 32 + 10;
      break;
    case Strategy::Auto:
      break;
  }
  return p;
}

// The device memory a plan uses, taken before the passes are timed.
void reserve(SegmentPlan& p, const SegmentTask& t) {
  if (t.count == 0) return;  // nothing runs (plan_segments sized nothing)
  SegmentScratch& s = *t.scratch;
  const std::size_t rsize = t.result_size();
  switch (p.strategy) {
    case Strategy::Balanced: {
      // Each tile's part and its segment, and the disorder flag.
      auto* words = static_cast<std::uint64_t*>(s.buffer(SegmentScratch::ChunkBase, (p.tiles + 1) * sizeof(std::uint64_t)));
      p.carry_key = words;
      p.disorder = t.kind == kOffsets && !t.host_offsets ? reinterpret_cast<unsigned*>(words + p.tiles) : nullptr;
      p.partials = s.buffer(SegmentScratch::Partials, p.tiles * rsize);
      break;
    }
    case Strategy::Multiblock:
      if (t.kind == SegmentKind::Rows) {
        if (p.per_row > 1) {
          p.partials = s.buffer(SegmentScratch::Partials, t.count * p.per_row * rsize);
          p.tickets = s.tickets(t.count);
        }
        break;
      }
      [[fallthrough]];
    case Strategy::Binned: {
      // Room for a window's entries in each bin (valid offsets, where known, tell how many),
      // the long bin's chunk bases and tickets, and the partials of its chunks: at most one chunk
      // per entry beyond input / chunk where segments do not overlap (see ListChunks).
      const u64 window = std::min(t.count, kBinWindow);
      std::array<u64, 4> room{};
      for (unsigned b = 0; b < 4; ++b)
        room[b] = !p.bins[b] ? 0 : p.strategy == Strategy::Binned && p.stats.known ? std::min(window, p.stats.bins[b]) : window;
      auto* lists = static_cast<unsigned*>(
          s.buffer(SegmentScratch::Lists, (room[0] + room[1] + room[2] + room[3]) * sizeof(unsigned)));
      for (unsigned b = 0; b < 4; ++b) {
        p.lists[b] = lists;
        lists += room[b];
      }
      p.chunk_base = static_cast<std::uint64_t*>(s.buffer(SegmentScratch::ChunkBase, room[3] * sizeof(std::uint64_t)));
      p.tickets = s.tickets(room[3]);
      p.capacity = t.n / p.chunk + room[3] + 1;
      p.partials = s.buffer(SegmentScratch::Partials, p.capacity * rsize);
      break;
    }
    case Strategy::Columns: {
      if (p.bands > 1) {
        p.partials = s.buffer(SegmentScratch::Partials, p.bands * t.count * rsize);
        p.tickets = s.tickets(p.tiles);
      }
      break;
    }
    default:
      break;
  }
}

SegmentLaunch base_launch(const SegmentPlan& p, const SegmentTask& t) {
  SegmentLaunch L;
  L.in = t.in;
  L.n = t.n;
  L.out = t.out;
  L.count = t.count;
  L.length = t.length;
  L.stride = t.stride;
  L.offsets = t.offsets;
  L.grid = p.grid;
  L.block = p.block;
  L.stream = t.stream;
  L.caps = t.caps;
  L.scratch = t.scratch;
  L.log_group = p.log_group;
  L.chunk = p.chunk;
  L.per_row = p.per_row;
  L.partials = p.partials;
  L.capacity = p.capacity;
  L.tickets = p.tickets;
  L.tiles = p.tiles;
  L.band_rows = p.band_rows;
  L.carry_key = p.carry_key;
  L.disorder = p.disorder;
  return L;
}

// One pass: every launch of the plan, enqueued on the task's stream.
void run_pass(const SegmentPlan& p, const SegmentTask& t) {
  if (t.count == 0) return;
  SegmentLaunch L = base_launch(p, t);
  const bool classified = p.strategy == Strategy::Binned || (p.strategy == Strategy::Multiblock && t.kind == kOffsets);
  if (!classified) {
    t.fn(p.kernel)(L);
    return;
  }
  std::uint64_t* entries = t.scratch->bin_entries();
  for (u64 first = 0; first < t.count; first += kBinWindow) {
    const u64 window = std::min(kBinWindow, t.count - first);
    check(cudaMemsetAsync(entries, 0, 4 * sizeof(std::uint64_t), t.stream), "cudaMemsetAsync (bin counters)");
    ClassifyLaunch c;
    c.offsets = t.offsets + first;
    c.n = t.n;
    c.count = window;
    c.limit = p.limits;
    c.lists = p.lists;
    c.entries = entries;
    c.chunk_base = p.chunk_base;
    c.chunk = p.chunk;
    c.stream = t.stream;
    c.caps = t.caps;
    launch_classify(c);
    L.offsets = c.offsets;
    L.count = window;
    L.out = static_cast<unsigned char*>(t.out) + first * t.result_size();
    L.grid = 0;  // the bins' sizes are on the device: every resident block strides over them
    L.chunk_base = p.chunk_base;
    constexpr SegmentKernel kBinKernel[4] = {SegmentKernel::GroupOffsets, SegmentKernel::GroupOffsets,
                                             SegmentKernel::BlockOffsets, SegmentKernel::MultiblockList};
    for (unsigned b = 0; b < 4; ++b) {
      if (!p.bins[b]) continue;
      L.list = p.lists[b];
      L.entries = entries + b;
      L.log_group = b == 0 ? policy::kTinyBinLogLanes : 5;
      t.fn(kBinKernel[b])(L);
    }
  }
}

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  check(cudaEventSynchronize(to), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return ms;
}

// options.warmup untimed calls of `pass`, then options.repeat timed ones: the median ms.
template <class Pass> double median_ms(SegmentScratch& s, const RunOptions& options, Pass pass) {
  for (int i = 0; i < options.warmup; ++i) pass();
  std::vector<double> times;
  for (int i = 0; i < std::max(1, options.repeat); ++i) {
    check(cudaEventRecord(s.start_event(), s.stream()), "cudaEventRecord");
    pass();
    check(cudaEventRecord(s.stop_event(), s.stream()), "cudaEventRecord");
    times.push_back(elapsed_ms(s.start_event(), s.stop_event()));
  }
  return median(times);
}

// `copies` (cudaMemcpyAsync calls on the scratch's stream), timed and waited for.
template <class Copies> double timed_copies(SegmentScratch& s, Copies copies) {
  check(cudaEventRecord(s.start_event(), s.stream()), "cudaEventRecord");
  copies();
  check(cudaEventRecord(s.stop_event(), s.stream()), "cudaEventRecord");
  return elapsed_ms(s.start_event(), s.stop_event());
}

void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream, const char* what) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, kind, stream), std::string("cudaMemcpyAsync of the ") + what);
}

// ---- exact sums per segment --------------------------------------------------------------

// The pieces of every segment, in segment order: f(segment, piece).
template <class F> void for_each_piece(const SegmentTask& t, F f) {
  const auto most = static_cast<u64>(xr::detail::kExactPieceElements);
  const auto piece = [](u64 first, u64 count, u64 step) {
    return ExactPiece{static_cast<std::int64_t>(first), static_cast<std::int64_t>(count), static_cast<std::int64_t>(step)};
  };
  for (u64 i = 0; i < t.count; ++i) {
    u64 b = 0, e = 0, step = 1;
    if (t.kind == SegmentKind::Rows) {
      b = i * t.stride;
      e = b + t.length;
    } else if (t.kind == SegmentKind::Offsets) {
      b = static_cast<u64>(t.host_offsets[i]);
      e = static_cast<u64>(t.host_offsets[i + 1]);
    } else {
      for (u64 r = 0; r < t.length; r += most) f(i, piece(i + r * t.stride, std::min(most, t.length - r), t.stride));
      continue;
    }
    for (; b < e; b += most) f(i, piece(b, std::min(most, e - b), step));
  }
}

// Pieces per launch of k_exact_pieces (and so their states on the host): 2^18 pieces are
// 46 MiB of f32 states, 145 MiB of f64.
constexpr std::size_t kExactBatch = std::size_t{1} << 18;

struct ExactRun {
  double kernel_ms = 0, transfer_ms = 0;
  int launches = 0;
};

// The exact states of pieces of device data: each batch of pieces goes up, is reduced
// (options.warmup + options.repeat times, timed) and its states come down into `words` (f16 and
// bf16: the states of their values widened to f32, exact_piece_words(compute_dtype(type)) words).
ExactRun exact_states(SegmentScratch& s, const void* data, DType type, std::span<const ExactPiece> pieces,
                      std::int64_t* words, const RunOptions& options) {
  ExactRun run;
  const auto per_piece = static_cast<std::size_t>(xr::detail::exact_piece_words(compute_dtype(type)));
  for (std::size_t first = 0; first < pieces.size(); first += kExactBatch) {
    const std::size_t count = std::min(kExactBatch, pieces.size() - first);
    void* d_pieces = s.buffer(SegmentScratch::Pieces, count * sizeof(ExactPiece));
    auto* d_words = static_cast<std::int64_t*>(s.buffer(SegmentScratch::Words, count * per_piece * sizeof(std::int64_t)));
    run.transfer_ms += timed_copies(s, [&] {
      copy(d_pieces, pieces.data() + first, count * sizeof(ExactPiece), cudaMemcpyHostToDevice, s.stream(), "exact pieces");
    });
    run.kernel_ms += median_ms(s, options, [&] { launch_exact_pieces(type, data, d_pieces, count, d_words, s.stream()); });
    ++run.launches;
    run.transfer_ms += timed_copies(s, [&] {
      copy(words + first * per_piece, d_words, count * per_piece * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
           s.stream(), "exact states");
    });
  }
  return run;
}

// Every segment's exact sum, rounded once, into `values` (host, count values of the sum's result
// type: the input type, f32 for f16 and bf16).
ExactRun exact_segments(const SegmentTask& t, void* values, const RunOptions& options) {
  ExactRun run;
  const DType state = compute_dtype(t.type), result = result_dtype(Op::Sum, t.type);
  const auto per_piece = static_cast<std::size_t>(xr::detail::exact_piece_words(state));
  std::vector<ExactPiece> pieces;
  std::vector<u64> owner;
  std::vector<std::int64_t> words;
  ExactSum sum;
  u64 open = 0;  // the segment `sum` belongs to
  const auto close = [&](u64 until) {  // rounds segments [open, until): only `open` has terms
    for (; open < until; ++open) {
      auto* dst = static_cast<unsigned char*>(values) + open * size_of(result);
      if (result == DType::F32) {
        const float v = sum.to_float();
        std::memcpy(dst, &v, sizeof v);
      } else {
        const double v = sum.to_double();
        std::memcpy(dst, &v, sizeof v);
      }
      sum.clear();
    }
  };
  const auto flush = [&] {
    words.resize(pieces.size() * per_piece);
    const ExactRun r = exact_states(*t.scratch, t.in, t.type, pieces, words.data(), options);
    run.kernel_ms += r.kernel_ms;
    run.transfer_ms += r.transfer_ms;
    run.launches += r.launches;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      close(owner[p]);
      xr::detail::merge_piece(sum, words.data() + p * per_piece, state);
    }
    pieces.clear();
    owner.clear();
  };
  for_each_piece(t, [&](u64 segment, const ExactPiece& piece) {
    pieces.push_back(piece);
    owner.push_back(segment);
    if (pieces.size() == kExactBatch) flush();
  });
  if (!pieces.empty()) flush();
  close(t.count);
  return run;
}

// ---- the device-pointer API ------------------------------------------------------------

struct DeviceCall {
  const void* data = nullptr;
  u64 n = 0;
  DType type = DType::F32;
  SegmentKind kind = SegmentKind::Offsets;
  u64 count = 0, length = 0, stride = 0;
  const std::int64_t* offsets = nullptr;
  Op op = Op::Sum;
  void* out = nullptr;
  cudaStream_t stream = nullptr;
  bool sync = true;
};

Result run_device_call(const DeviceCall& c, const RunOptions& options) {
  check_options(options);
  const StrategyRow& row = strategy_row(options.kernel);
  const KernelInfo info = info_of(row);
  check_request(info, c.op, c.type, 1, "cuda", options);
  if (std::find(row.layouts.begin(), row.layouts.end(), c.kind) == row.layouts.end())
    throw InvalidArgument("cuda: segment strategy " + std::string(row.name) + " does not reduce " +
                          std::string(to_string(c.kind)));
  const bool exact = options.exact && exact_applies(c.op, c.type);
  if (exact && !c.sync) throw InvalidArgument("cuda: exact segmented sums round on the host: use the synchronous form");
  const unsigned block = checked_block(row, options.block_size);
  const DType result_type = result_dtype(c.op, c.type, options.accumulator);
  if (c.kind == SegmentKind::Offsets && !c.offsets) throw InvalidArgument("cuda: the offsets pointer is null");

  // Every pointer on one device, aligned to its element.
  int device = -1;
  const auto place = [&](const void* p, std::size_t align, const char* what) {
    const int d = device_of(p, what);
    require_aligned(p, align, what);
    if (device >= 0 && d != device)
      throw InvalidArgument("cuda: the " + std::string(what) + " pointer is on device " + std::to_string(d) +
                            ", the others on device " + std::to_string(device));
    device = d;
  };
  if (c.count) place(c.out, size_of(result_type), "output");
  if (c.kind == SegmentKind::Offsets) place(c.offsets, sizeof(std::int64_t), "offsets");
  if (c.n) place(c.data, size_of(c.type), "input");
  if (device < 0) check(cudaGetDevice(&device), "cudaGetDevice");
  DeviceGuard guard(device);
  DeviceState& ds = device_state(device);
  SegmentScratch& s = segment_scratch(device, c.stream);

  Result r;
  std::vector<std::int64_t> host_offsets;
  u64 elements = c.count * c.length;
  if (c.kind == SegmentKind::Offsets && c.sync) {
    host_offsets.resize(c.count + 1);
    r.transfer_ms += timed_copies(s, [&] {
      copy(host_offsets.data(), c.offsets, host_offsets.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost, c.stream,
           "offsets");
    });
    check_offsets(host_offsets, c.n);
    elements = static_cast<u64>(host_offsets.back() - host_offsets.front());
  }

  SegmentTask t;
  t.in = c.data;
  t.n = c.n;
  t.type = c.type;
  t.op = c.op;
  t.acc = options.accumulator;
  t.kind = c.kind;
  t.count = c.count;
  t.length = c.length;
  t.stride = c.stride;
  t.offsets = c.offsets;
  t.host_offsets = host_offsets.empty() ? nullptr : host_offsets.data();
  t.out = c.out;
  t.block = block;
  t.block_given = options.block_size != 0;
  t.stream = c.stream;
  t.caps = &ds.caps();
  t.scratch = &s;

  if (exact) {
    std::vector<unsigned char> values(c.count * size_of(result_type));
    const ExactRun e = exact_segments(t, values.data(), options);
    r.transfer_ms += e.transfer_ms + timed_copies(s, [&] {
      copy(c.out, values.data(), values.size(), cudaMemcpyHostToDevice, c.stream, "exact values");
    });
    r.kernel_ms = e.kernel_ms;
    r.launches = e.launches;
    r.kernel = std::string(row.name) + ":exact";
    r.finish = "exact pieces (one warp each), merged and rounded once on the host";
    r.rounding_depth = 1;
  } else {
    SegmentPlan p = plan_segments(row.strategy, t);
    reserve(p, t);
    if (!c.sync) {
      run_pass(p, t);
      return r;
    }
    r.kernel_ms = median_ms(s, options, [&] { run_pass(p, t); });
    r.kernel = p.name();
    r.finish = p.finish;
    r.launches = p.launches;
    r.rounding_depth = p.depth;
  }
  r.device = ds.caps().name;
  r.repeats = std::max(1, options.repeat);
  r.path = "in place";
  r.value = Scalar::of<std::int64_t>(0);
  xr::detail::fill_identity(r, "cuda", elements, c.op, c.type);
  const u64 bytes = elements * size_of(c.type) + c.count * size_of(result_type) +
                    (c.kind == SegmentKind::Offsets ? (c.count + 1) * sizeof(std::int64_t) : 0);
  r.bytes_per_s = r.kernel_ms > 0 ? static_cast<double>(bytes) / (r.kernel_ms * 1e-3) : 0;
  return r;
}

DeviceCall axis_call(const void* data, DType type, const MatrixShape& shape, int axis, Op op, void* out,
                     cudaStream_t stream, bool sync) {
  const SegmentLayout l = axis_layout(shape, axis);
  DeviceCall c;
  c.data = data;
  c.n = l.span();
  c.type = type;
  c.kind = l.kind;
  c.count = l.count;
  c.length = l.length;
  c.stride = l.stride;
  c.op = op;
  c.out = out;
  c.stream = stream;
  c.sync = sync;
  return c;
}

DeviceCall offsets_call(const void* data, u64 n, DType type, const std::int64_t* offsets, u64 segments, Op op, void* out,
                        cudaStream_t stream, bool sync) {
  DeviceCall c;
  c.data = data;
  c.n = n;
  c.type = type;
  c.kind = SegmentKind::Offsets;
  c.count = segments;
  c.offsets = offsets;
  c.op = op;
  c.out = out;
  c.stream = stream;
  c.sync = sync;
  return c;
}

}  // namespace

std::vector<KernelInfo> segment_strategies() {
  std::vector<KernelInfo> out;
  for (const auto& r : strategy_rows()) out.push_back(info_of(r));
  return out;
}

// ---- the Reducer's SegmentDevice -----------------------------------------------------------

CudaSegments::CudaSegments(DeviceState& ds, cudaStream_t stream) : ds_(ds), scratch_(ds.caps().device, stream) {}

std::uint64_t CudaSegments::max_job_bytes(const RunOptions& options) const {
  // Device memory per input byte, at worst: f32 segments of one element hold the input (4
  // bytes), an offset and a value of 8 bytes each, and 4 bytes of bin list: 6 bytes per byte.
  constexpr u64 kBytesPerInputByte = 6;
  if (options.device_mem_limit) return std::max<u64>(1, options.device_mem_limit / kBytesPerInputByte);
  DeviceGuard guard(ds_.caps().device);
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  // A tenth left to the runtime and other users.
  return std::max<u64>(1, (u64(free_bytes) + scratch_.held_bytes()) / 10 * 9 / kBytesPerInputByte);
}

SegmentOutcome CudaSegments::reduce(const SegmentJob& job) {
  DeviceGuard guard(ds_.caps().device);
  const StrategyRow& row = strategy_row(job.options.kernel);
  const SegmentLayout& l = job.layout;
  SegmentScratch& s = scratch_;
  const std::size_t elem = size_of(job.type), rsize = size_of(job.result_type);
  const bool offsets = l.kind == SegmentKind::Offsets;

  SegmentTask t;
  t.n = job.n;
  t.type = job.type;
  t.op = job.op;
  t.acc = job.options.accumulator;
  t.kind = l.kind;
  t.count = l.count;
  t.length = l.length;
  t.stride = l.stride;
  t.host_offsets = l.offsets;
  t.block = checked_block(row, job.options.block_size);
  t.block_given = job.options.block_size != 0;
  t.stream = s.stream();
  t.caps = &ds_.caps();
  t.scratch = &s;
  t.in = s.buffer(SegmentScratch::Data, job.n * elem);
  t.offsets = offsets ? static_cast<const std::int64_t*>(s.buffer(SegmentScratch::Offsets, (l.count + 1) * sizeof(std::int64_t)))
                      : nullptr;
  t.out = s.buffer(SegmentScratch::Values, l.count * rsize);

  SegmentOutcome o;
  o.transfer_ms = timed_copies(s, [&] {
    copy(const_cast<void*>(t.in), job.data, job.n * elem, cudaMemcpyHostToDevice, t.stream, "segment input");
    if (offsets)
      copy(const_cast<std::int64_t*>(t.offsets), l.offsets, (l.count + 1) * sizeof(std::int64_t), cudaMemcpyHostToDevice,
           t.stream, "segment offsets");
  });
  SegmentPlan p = plan_segments(row.strategy, t);
  reserve(p, t);
  o.kernel_ms = median_ms(s, job.options, [&] { run_pass(p, t); });
  o.transfer_ms += timed_copies(s, [&] { copy(job.out, t.out, l.count * rsize, cudaMemcpyDeviceToHost, t.stream, "segment values"); });
  o.kernel = p.name();
  o.finish = p.finish;
  o.launches = p.launches;
  o.depth = p.depth;
  return o;
}

SegmentOutcome CudaSegments::exact_pieces(const void* data, std::uint64_t n, DType type,
                                          std::span<const ExactPiece> pieces, std::int64_t* words,
                                          const RunOptions& options) {
  if (!is_float(type))
    throw InvalidArgument("cuda: exact pieces are of float types, not " + std::string(to_string(type)));
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const ExactPiece& p = pieces[i];
    const std::int64_t last = p.count > 0 ? p.first + (p.count - 1) * p.step : p.first;
    if (p.count < 0 || p.count > xr::detail::kExactPieceElements || p.first < 0 || last < 0 ||
        (p.count > 0 && static_cast<u64>(std::max(p.first, last)) >= n))
      throw InvalidArgument("cuda: exact piece " + std::to_string(i) + " (first " + std::to_string(p.first) + ", count " +
                            std::to_string(p.count) + ", step " + std::to_string(p.step) + ") lies outside the " +
                            std::to_string(n) + " elements");
  }
  DeviceGuard guard(ds_.caps().device);
  SegmentScratch& s = scratch_;
  void* d_data = s.buffer(SegmentScratch::Data, n * size_of(type));
  SegmentOutcome o;
  o.transfer_ms = timed_copies(s, [&] { copy(d_data, data, n * size_of(type), cudaMemcpyHostToDevice, s.stream(), "segment input"); });
  const ExactRun run = exact_states(s, d_data, type, pieces, words, options);
  o.kernel_ms = run.kernel_ms;
  o.transfer_ms += run.transfer_ms;
  o.launches = run.launches;
  o.kernel = options.kernel + ":exact";
  o.finish = "exact pieces (one warp each), merged and rounded once on the host";
  o.depth = 1;
  return o;
}

}  // namespace xr::cuda::detail

// ---- the device-pointer API ---------------------------------------------------------------

namespace xr::cuda {

std::vector<KernelInfo> segment_kernels() { return detail::segment_strategies(); }

template <class T>
Result reduce_segments(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets, std::uint64_t n_segments, Op op,
                       void* d_out, cudaStream_t stream, const RunOptions& options) {
  return detail::run_device_call(
      detail::offsets_call(d_data, n, dtype_of<T>, d_offsets, n_segments, op, d_out, stream, true), options);
}

template <class T>
void reduce_segments_async(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets, std::uint64_t n_segments,
                           Op op, void* d_out, cudaStream_t stream, const RunOptions& options) {
  detail::run_device_call(detail::offsets_call(d_data, n, dtype_of<T>, d_offsets, n_segments, op, d_out, stream, false),
                          options);
}

template <class T>
Result reduce_axis(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out, cudaStream_t stream,
                   const RunOptions& options) {
  return detail::run_device_call(detail::axis_call(d_data, dtype_of<T>, shape, axis, op, d_out, stream, true), options);
}

template <class T>
void reduce_axis_async(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out, cudaStream_t stream,
                       const RunOptions& options) {
  detail::run_device_call(detail::axis_call(d_data, dtype_of<T>, shape, axis, op, d_out, stream, false), options);
}

#define XR_CUDA_SEGMENT_DEFINE(e, T, ...) XR_CUDA_SEGMENT_ENTRY_POINTS(, T)
XR_ELEMENT_TYPES(XR_CUDA_SEGMENT_DEFINE)
#undef XR_CUDA_SEGMENT_DEFINE

}  // namespace xr::cuda
