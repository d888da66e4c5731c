// Tuning of the CUDA backend: the constants auto, the rungs and the host path choose from. Each
// line gives the device and the figure the value was chosen from (ratios: time against CUB's, in
// one process); a quoted title is the section of docs/performance.md that holds the reasoning.
#pragma once

#include <cstdint>

namespace xr::cuda::detail::policy {

// H100: no launch shape beat 4 packs of 16 B a thread at 2^16-2^23; 8 read no faster ("The ratio at 8 MB").
constexpr unsigned kUnroll = 4;

// H100, f32 argmax at 2^24 (fewer, fuller blocks): 1.005 of ArgMax, a fixed grid 1.154 ("argmin and argmax on CUDA").
constexpr std::uint64_t kPairPacksPerThread = 4;
// H100, f32 argmax: 0.936 of ArgMax at 2^30 drawing 64 KB tiles, 0.962 dealt fixed ("argmin and argmax on CUDA").
constexpr std::uint64_t kPairTilePacks = 4096;

// H100, i32 2^29-2^30: 256 KB tiles 0.975-0.980 of CUB; 64 KB, 1 MB and static segments worse ("Tiles from 1 GiB").
constexpr std::uint64_t kTilePacks = 16384;
// No figure of its own: tiles shrink where n makes fewer than this, for a fine tail ("Tiles from 1 GiB").
constexpr std::uint64_t kTargetTiles = 8192;
// H100, i32 2^29-2^30: 4 blocks of 256 an SM 0.975-0.980 of CUB, 8 blocks 0.980-0.994 ("Tiles from 1 GiB").
constexpr unsigned kTileThreadsPerSM = 1024;

// H200, i32 2^27-2^30: a ring of 4 x 16 KB 0.954-0.986 of CUB, 16-byte loads 1.01-1.10 ("Bulk copies on the H200").
constexpr unsigned kBulkStages = 4;
// H100, 2^26-2^30: 4 x 16 KB 0.956-0.989 of CUB, 8 x 8 KB and 6 x 32 KB 0.979-0.992 ("Bulk copies on the H200").
constexpr unsigned kBulkStageBytes = 16384;
// No figure of its own: 16 stages make 256 KB tiles, as dynamic_tiles' ("Bulk copies on the H200").
constexpr std::uint64_t kBulkTileStages = 16;

// H100: from 64 MB segments 0.81-0.999 of CUB, grid-stride 0.90-1.005 ("Streaming loads from 64 MB").
constexpr std::uint64_t kStreamingBytes = std::uint64_t{64} << 20;

// H100, 1 GiB: tiles 0.979-0.985 of CUB, segments 0.985-0.988; at 512 MB segments led ("Tiles from 1 GiB").
constexpr std::uint64_t kTilesBytes = std::uint64_t{1} << 30;

// H200: bulk_copy 0.854-0.966 of CUB at 64-512 MB; an H100 (3.35 TB/s) gains nothing ("Bulk copies on the H200").
constexpr double kBulkCopyGBps = 4000;

// H100 host: pinned copies 52.3 GB/s in 4 MiB chunks, 52.4 in 64 MiB ("Pageable host data").
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;
// No figure of its own: a copy starts while the slot before it is still being reduced ("Pageable host data").
constexpr unsigned kDeviceSlots = 3;
// H100 host, 8 fill threads: 2 staging buffers 15.1 GB/s, 3 13.5, 4 12.8 ("Pageable host data").
constexpr unsigned kStagingBuffers = 2;

// Segmented reductions (segments.cpp, kernels_cu/segments*.cuh).

// Reasoned: 8 blocks of 256 fill an H100 SM's 2048 threads ("Constants reasoned from the H100's limits").
constexpr unsigned kSegmentBlock = 256;
// Reasoned: 4 x 16 B a thread, 64 KiB an SM, thrice the ~20 KiB it needs ("Constants reasoned from the H100's limits").
constexpr unsigned kSegmentsInFlight = 4;
// Reasoned: 4 packs of 16 B a thread, as kSegmentsInFlight ("Constants reasoned from the H100's limits").
constexpr unsigned kPackedRowsInFlight = 4;
// H100, (2^24, 4) f32: 128 bytes in flight a thread read 2637 GB/s, no more than 64 ("Columns on CUDA").
constexpr unsigned kColumnBytesInFlight = 64;
// H100, (2^24, 4) f32: median 2677 GB/s at 512 threads, 2657 at 256, 2649-2665 at 1024 ("Columns on CUDA").
constexpr unsigned kColumnsNarrowBlock = 512;

// H100, rows of 128 f32: 2858-2885 GB/s in groups of 16 lanes, 2433-2448 a warp a row ("Rows on CUDA").
constexpr std::uint64_t kSubwarpMaxPacks = 32;
// H100, rows of 64 f32: 2691-2715 GB/s at two packs a lane, 2522-2551 at one ("Rows on CUDA").
constexpr std::uint64_t kGroupTwoPacksFrom = 16;
// H100, rows (2^16, 1024) f32 on a warp: 2778 GB/s, 1.43x cub; 16 packs a lane ("Rows on CUDA").
constexpr std::uint64_t kWarpMaxBytes = std::uint64_t{8} << 10;

// H100, rows (2^6, 2^20) f32: 2765 GB/s; 4 rounds of 16 KiB amortise a block's partial ("Rows on CUDA").
constexpr std::uint64_t kSegmentChunkBytes = std::uint64_t{64} << 10;

// H100, 2^20 lognormal segments f32: binned 1026-1032 GB/s with these bins ("Mixed lengths on CUDA").
constexpr std::uint64_t kTinyBinBytes = 128;
// Reasoned: groups of 8 lanes, a 16-byte pack each, for segments below kTinyBinBytes ("Mixed lengths on CUDA").
constexpr unsigned kTinyBinLogLanes = 3;
// Reasoned: below 8 KiB a warp, as kWarpMaxBytes ("Mixed lengths on CUDA").
constexpr std::uint64_t kShortBinBytes = kWarpMaxBytes;
// Reasoned: below 256 KiB a block, 64 packs a thread at 256 threads ("Mixed lengths on CUDA").
constexpr std::uint64_t kMediumBinBytes = std::uint64_t{256} << 10;

// H100, 2^20 lognormal f32: 32 f32 a thread 2348-2399 GB/s, 16 at most 2201-2204 ("Mixed lengths on CUDA").
constexpr unsigned kBalancedThreadBytes = 128;
// Reasoned: a thread's end marks lie in one 32-bit word ("Mixed lengths on CUDA").
constexpr unsigned kBalancedMaxItems = 32;
constexpr unsigned balanced_items(std::uint64_t elem) {
  return static_cast<unsigned>(kBalancedThreadBytes / elem < kBalancedMaxItems ? kBalancedThreadBytes / elem
                                                                               : kBalancedMaxItems);
}
// H100, 2^20 lognormal f32: 2 blocks of 256 an SM 2348-2399 GB/s, 3 blocks 2077-2082 ("Mixed lengths on CUDA").
constexpr unsigned kBalancedMaxBlock = 256;

}  // namespace xr::cuda::detail::policy
