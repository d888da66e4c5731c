// Tuning of the CUDA backend: every constant auto, the rungs and the host path choose from, with
// the device and the figure it was chosen from (ratios are times against CUB in the same
// process; bench/RESULTS.md and docs/performance.md hold the tables).
#pragma once

#include <cstdint>

namespace xr::cuda::detail::policy {

// Packs of 16 bytes each thread of the vector kernels loads per iteration: 4 x 16 B in flight
// per thread, 8 blocks of 256 per SM where occupancy allows (128 KiB per SM). The launch-shape
// scan at 2^16-2^23 on an H100 found nothing better than this default.
constexpr unsigned kUnroll = 4;

// The pair ops (rungs_pairs.cu): no fewer packs per thread than this, so small inputs take
// fewer, fuller blocks. kTileThreadsPerSM threads an SM draw tiles of at most kPairTilePacks
// packs (64 KB) at every size. On an H100, f32 argmax against cub::DeviceReduce::ArgMax in one
// process: 1.005 at 2^24, 0.963 at 2^28, 0.936 at 2^30 (argmin 0.971 at 2^28), where the fixed
// grid it replaced (grid-stride below 64 MB, block segments above) took 1.154, 1.006-1.018 and
// 0.962 in processes of its own.
constexpr std::uint64_t kPairPacksPerThread = 4;
constexpr std::uint64_t kPairTilePacks = 4096;

// dynamic_tiles: tiles of 16384 packs (256 KB) at 1024 threads per SM: on an H100, 256 KB at 4
// blocks of 256 threads per SM ran at 0.975-0.980 of CUB at 2^29-2^30 i32 (64 KB and 1 MB
// tiles, 8 blocks per SM, and static segments at 0.983-0.991 did worse). Smaller tiles where n
// makes fewer than kTargetTiles (a fine tail); the tile depends on n and the block only, so the
// bits do not depend on the grid or the GPU.
constexpr std::uint64_t kTilePacks = 16384;
constexpr std::uint64_t kTargetTiles = 8192;
constexpr unsigned kTileThreadsPerSM = 1024;

// bulk_copy's shared-memory ring: 4 stages of 16 KB per block (64 KB: 3 blocks of 256 threads
// per SM): on an H200 0.954-0.986 of CUB at 2^27-2^30 i32, where every 16-byte-load layout took
// 1.01-1.10.
constexpr unsigned kBulkStages = 4;
constexpr unsigned kBulkStageBytes = 16384;
// bulk_tiles: tiles of 16 stages (256 KB), as dynamic_tiles'.
constexpr std::uint64_t kBulkTileStages = 16;

// auto streams inputs of at least this many bytes from HBM in block segments with streaming
// loads; smaller ones stay in the L2 between calls (H100: 50 MB), where the grid-stride layout
// is faster. H100: from 64 MB segments 0.81-0.999 of CUB against grid-stride 0.90-1.005; at
// 8 MB (f64 2^20) grid-stride 0.64 against segments 0.75.
constexpr std::uint64_t kStreamingBytes = std::uint64_t{64} << 20;

// From this many bytes auto draws tiles (dynamic_tiles, or bulk_tiles with the copy engine).
// H200: bulk_tiles and bulk_copy within about 1% from 1 GiB (0.975-0.996 and 0.963-1.012), and
// the tiles' bits do not depend on the grid. H100: tiles led in 6 of 6 sweeps at 1 GiB
// (0.979-0.985 against 0.985-0.988); at 512 MB segments led (0.953-0.964 against 0.968-0.977).
constexpr std::uint64_t kTilesBytes = std::uint64_t{1} << 30;

// Where the HBM's peak is at least this (GB/s), auto lets the copy engine stream every input of
// kStreamingBytes or more. H200 (4.8 TB/s): bulk_copy 0.854-0.966 of CUB from 64 MB to 512 MB,
// where single_pass took 0.875-0.988 and dynamic_tiles 0.92-1.05. H100 (3.35 TB/s): bulk copies
// level with segments or behind (0.956-0.989 against 0.872-0.991), so the 16-byte loads stay.
constexpr double kBulkCopyGBps = 4000;

// The host path. H100 host: pinned copies reach 52-54 GB/s from 4 MiB chunks up, so 64 MiB
// chunks cost nothing in link rate and leave the last, unhidden kernel at ~25 us; 2 staging
// buffers beat 3 or 4 (15.1 against 13.5 GB/s: more buffers add cache and TLB misses); 3 device
// slots let a copy start while the slot before it is still being reduced.
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;
constexpr unsigned kDeviceSlots = 3;
constexpr unsigned kStagingBuffers = 2;

// ---- Segmented reductions (segments.cpp, kernels_cu/segments*.cuh) ----
// Each constant follows from the reasoning it states. An H100 SXM streams 3.35 TB/s with about
// 0.8 us of load latency: 3.35 TB/s x 0.8 us / 132 SMs is about 20 KiB that each SM must keep in
// flight, which the choices below exceed about threefold.

// Threads per block of every segmented kernel by default: 8 blocks of 256 fill an SM's 2048
// threads, and a block reduction is 3 shuffle-and-share levels deep.
constexpr unsigned kSegmentBlock = 256;

// Segments each group of k_group (subwarp, warp) holds in flight: its lanes issue this many
// loads before the first combine, 4 x 16 B = 64 B a thread, 64 KiB an SM at 1024 threads.
constexpr unsigned kSegmentsInFlight = 4;

// k_packed_rows: whole 16-byte packs each thread loads before combining (64 B a thread).
constexpr unsigned kPackedRowsInFlight = 4;

// Columns: bytes of loads each thread issues before combining (16 elements of f32 per lane, or
// four 16-byte packs).
constexpr unsigned kColumnBytesInFlight = 64;
// Narrow columns (a row of at most 32 packs) in blocks of this many threads, one wave of them,
// unless the caller sets the block size. H100, (2^24, 4) f32, GB/s over processes of three runs:
// median 2677 (2499-2725, fifteen) at 512 against 2657 (2474-2704, nineteen) at kSegmentBlock
// (256) and 2649-2665 at 1024: within the noise of one another, 79-81% of the datasheet; 128
// bytes in flight a thread instead of kColumnBytesInFlight read the same (2637). Bands of whole
// rounds (only the last band ends in part of one): median 2700 against 2683 (ten processes each,
// interleaved, 8 of 10 pairs ahead).
constexpr unsigned kColumnsNarrowBlock = 512;

// auto on rows: subwarp while a row is at most this many 16-byte packs (128 f32), in groups of
// one lane per pack up to kGroupTwoPacksFrom packs a row and one lane per two packs from there:
// fewer shuffles per byte. H100, f32 rows, GB/s with one pack a lane against two:
// (2^23, 8) 2705 against 1602-1607 (one lane a row), (2^21, 32) 2664-2691 against 2662-2698,
// (2^20, 64) 2522-2551 against 2691-2715, (2^19, 128) 2433-2448 (a warp) against 2858-2885.
constexpr std::uint64_t kSubwarpMaxPacks = 32;
constexpr std::uint64_t kGroupTwoPacksFrom = 16;
// ... warp while a row is at most 8 KiB: 16 packs a lane, 4 rows in flight per warp; longer rows
// give each thread of a 256-thread block at least two packs.
constexpr std::uint64_t kWarpMaxBytes = std::uint64_t{8} << 10;

// multiblock: a long segment in chunks of 64 KiB, one block each: a block of 256 threads with
// 4 x 16 B in flight per thread covers 16 KiB a round, so 4 rounds amortise its block reduction,
// its partial and its ticket. auto takes multiblock for rows of at least two chunks when there
// are fewer rows than resident blocks (one block per row would leave SMs idle).
constexpr std::uint64_t kSegmentChunkBytes = std::uint64_t{64} << 10;

// binned: segments below 128 B go to groups of 8 lanes (a 16-byte pack each), below 8 KiB to a
// warp (as kWarpMaxBytes), below 256 KiB to a block (64 packs a thread at 256 threads), longer
// ones to multiblock (at least 4 chunks a segment).
constexpr std::uint64_t kTinyBinBytes = 128;
constexpr unsigned kTinyBinLogLanes = 3;
constexpr std::uint64_t kShortBinBytes = kWarpMaxBytes;
constexpr std::uint64_t kMediumBinBytes = std::uint64_t{256} << 10;

// balanced: the elements each thread of k_balanced adds: 128 bytes, at most 32 (a thread's end
// marks lie in one 32-bit word), so a 256-thread tile holds 8192 f32 (32 KiB) and takes 66 KiB of
// shared memory with its marks and the segment of each mark. Every tile pays for a block
// segmented scan and 3 or more barriers, and larger tiles pay for them less often. A thread's
// rounding chain grows with the elements it adds.
constexpr unsigned kBalancedThreadBytes = 128;
constexpr unsigned kBalancedMaxItems = 32;
constexpr unsigned balanced_items(std::uint64_t elem) {
  return static_cast<unsigned>(kBalancedThreadBytes / elem < kBalancedMaxItems ? kBalancedThreadBytes / elem
                                                                               : kBalancedMaxItems);
}
// ... in blocks of at most 256 threads, 2 an SM (k_balanced's launch bounds), each holding the
// loads of its next tile in registers while it adds the current one. H100, 2^20 segments of
// lognormal lengths (mean 64), f32: 2348-2399 GB/s with 32 elements a thread at 2 blocks an SM;
// 2077-2082 at 3 blocks; with 16 elements a thread, 2201-2204 at 3 blocks and 2126-2139 at 4.
// auto with larger blocks takes binned where it would take balanced.
constexpr unsigned kBalancedMaxBlock = 256;

}  // namespace xr::cuda::detail::policy
