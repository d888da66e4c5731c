// Tuning of the OpenCL backend: every constant the rungs, auto and the host path choose from,
// with the device and the figure it was chosen from where one was measured (bench/RESULTS.md
// holds the tables).
#pragma once

#include <cstddef>
#include <cstdint>

namespace xr::opencl::detail::policy {

// Work-items of a work-group when RunOptions::block_size is 0 (lowered to what the kernel and
// the device allow).
constexpr std::size_t kWorkGroup = 256;

// The grid of the grid-stride rungs (cascade, vector): enough work-items to fill every compute
// unit of a GPU, a few work-groups per compute unit of a CPU (one work-group runs on one core).
constexpr std::uint64_t kGpuWorkItemsPerComputeUnit = 2048;
constexpr std::uint64_t kCpuGroupsPerComputeUnit = 4;

// cascade's independent accumulators per work-item: K coalesced elements per tile on a GPU;
// K neighbouring elements on a CPU (XR_CONTIG, one SIMD load per tile).
constexpr unsigned kCascadeKGpu = 8;
constexpr unsigned kCascadeKCpu = 32;
// The vector rung's 16-byte packs per work-item per tile (64 bytes in flight, as CUDA's vector).
constexpr unsigned kVectorPacks = 4;

// The vector_runs rung (CPU devices): work-groups of kRunsWorkGroup work-items,
// kRunsGroupsPerComputeUnit of them per compute unit, each work-item reading its run with
// vload<kRunsVectorWidth> into kRunsAccumulators vector accumulators. On PoCL 3.1
// (pthread-skylake-avx512, 2 compute units) auto with these read 2^26 f32 at 25.8 GB/s,
// 1.19-1.28x OpenMP's auto in the same process; widths 8 and 16 with 2 to 8 accumulators were
// within the noise, and 1 group per compute unit took twice as long whenever another process
// held a core (4 let the other thread take over the slowed one's groups). On a 16-core Xeon host
// (PoCL, 16 compute units) auto read 2^26 f32 at 146 GB/s: 1.05x OpenMP's auto (f64 1.25x, i32
// 1.31x).
constexpr std::size_t kRunsWorkGroup = 1;
constexpr std::uint64_t kRunsGroupsPerComputeUnit = 4;
constexpr unsigned kRunsVectorWidth = 16;
constexpr unsigned kRunsAccumulators = 4;

// The rung auto takes: coarse on GPUs; vector_runs on CPU devices (CL_DEVICE_TYPE_CPU), where
// cascade's 256-item work-groups and local tree reached 0.22x of OpenMP's auto (2^24 f32,
// PoCL on the 2-core machine) and 0.15x on a 16-core host, and vector_runs 1.17-2.01x (2^26).
// On an H100 (NVIDIA's OpenCL, 2^28, the rungs round-robin in one process, 2 processes) coarse
// read i32 at 2863-2869 GB/s, f32 at 2816-2829 and f64 at 2996-3003, against cascade's
// 2685-2691, 2813-2824 and 2885-2889 and vector's 2815-2822, 2805-2807 and 2916-2923.
constexpr const char* kAutoRungGpu = "coarse";
constexpr const char* kAutoRungCpu = "vector_runs";
// On GPUs, elements narrower than kAutoNarrowBytes go to vector: coarse's 16 loads in flight
// carry 16 to 32 bytes a work-item, vector's four 16-byte loads 64. On an H100 (2^28, every rung
// in one process, 2 processes) vector read u8 sums at 1755-1768 GB/s against coarse's 761-763,
// i8 sums at 1653-1725 against 976-992, u8 max at 1987-2227 against 1030-1092, f16 sums at
// 2573-2588 against 2037-2040 and bf16 max at 2515-2524 against 1918-1926; for i32 and f32
// coarse stays ahead (2795-2878 against 2762-2809).
constexpr const char* kAutoRungGpuNarrow = "vector";
constexpr std::size_t kAutoNarrowBytes = 4;

// The rung of the pair ops (argmin, argmax, minmax: kernels_cl/pairs.cl), auto's choice for
// them, and the only rung besides auto that declares them. CPU devices: vector_runs, whose blocks
// of K elements are folded in vectors and looked at one by one only where they may improve the
// record. On PoCL (the 2-core EPYC, pthread-haswell; 2^26 resident) argmin read f32 at 13.7 GB/s
// (min 18.1, OpenMP's argmin 3.5), i32 at 14.0 (min 20.4), u8 at 12.0 (min 10.8), f16 at 11.7
// (min 11.7) and f64 at 16.4 (min 16.4); minmax f32 at 16.4; coarse's tiles there read argmin f32
// at 1.4 GB/s (2^24). GPUs: coarse, each work-item stepping through its coalesced elements in
// index order, a compare and two selects each. On an H100 (NVIDIA's OpenCL, 2^28 resident, one
// run of 10 each) argmin read f32 at 2488 GB/s (min 3030), i32 at 2321 (min 2985) and f64 at 3024
// (min 3096); minmax f32 at 2987. Narrow elements lag, one short load per element: argmin u8 at
// 736 GB/s and f16 at 1372, minmax u8 at 1062, where min on vector's 16-byte packs reads 2293 and
// 2791.
constexpr const char* kPairRungCpu = "vector_runs";
constexpr const char* kPairRungGpu = "coarse";

// Elements per work-item of the `coarse` rung when RunOptions::coarsening is 0.
constexpr unsigned kRuntimeCoarsening = 16;

// Exact sums: work-items of the exact kernel's work-groups (RunOptions::block_size 0) and of the
// column merge. On a GPU the grid holds twice the work-items the device holds at once, so that
// the last wave is short even where registers allow fewer resident work-groups (OpenCL has no
// occupancy query). Work-groups of 64: every work-item of a group flushes into the same few
// local limbs at about the same time, and fewer of them contend. NVIDIA's OpenCL on an H100,
// 2^28 (block x default grid): f32 2614 GB/s with 64, 2571 with 128, 2311 with 256; f64
// 1896-1907 GB/s with each.
constexpr std::size_t kExactWorkGroup = 64;
constexpr std::size_t kExactMergeWorkGroup = 256;
constexpr std::uint64_t kExactGpuGridFactor = 2;

// The host path. Chunks of 64 MiB: NVIDIA's OpenCL writes 64 MiB chunks from mapped
// CL_MEM_ALLOC_HOST_PTR buffers at 54.3-54.7 GB/s, the link's rate, on an H100 host (CUDA's
// pinned copies there are flat from 4 MiB chunks up), and the one unhidden kernel at the end
// stays short.
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;
// 3 device slots, as on CUDA: a copy starts while the slot before it is still being reduced.
constexpr unsigned kDeviceSlots = 3;
// 3 page-locked staging buffers (CL_MEM_ALLOC_HOST_PTR, mapped once), so that the reading thread
// waits for the copy of the chunk before last, not for the last one.
constexpr unsigned kStagingBuffers = 3;
static_assert(kStagingBuffers <= kDeviceSlots, "a staging buffer's copy event lives in a slot");

// ---- segmented reductions (kernels_cl/segments.cl) ------------------------------------------
// The GPU figures below are reasoned from the H100's limits, not measured with these kernels on
// one (the machine they were written on has no GPU); the CPU figures were measured with PoCL on
// the 2-core EPYC (pthread-haswell) and are cited where they decided.

// lanes: units (loads) each lane of a team reads per segment: a team of G lanes serves segments
// of about 4G units, so that a lane's loads of one segment go out together and the team's tree
// (log2 G local steps) is spread over several loads.
constexpr unsigned kLanesUnitsPerLane = 4;
// lanes: at most a warp (32 on NVIDIA) per segment; longer segments are workgroup's.
constexpr unsigned kLanesMaxTeam = 32;
// lanes: a team's neighbouring loads of one instruction cover at least this many bytes of a
// segment (NVIDIA's L1 and L2 move 32-byte sectors): one lane per row of two 16-byte loads read
// half of every sector per instruction, twice the sector requests of two lanes per row.
constexpr std::uint64_t kSectorBytes = 32;
// Loads each work-item has in flight at the start of a round (segments per team x loads per
// lane): 8 x 16 bytes per work-item at 2048 work-items per SM is 256 KiB per SM, far above the
// ~25 KiB an H100 SM needs in flight (3.35 TB/s x ~1 us / 132 SMs); fewer would leave short rows
// (2 to 8 elements) with one load of 4 to 16 bytes per work-item.
constexpr unsigned kSegLoadsInFlight = 8;
// Loads per lane in flight in the loop over the rest of a long segment (or column).
constexpr unsigned kSegUnroll = 4;
// multigroup and columns cut long segments (or tall columns) into parts so that a launch has
// kSegWaves times the work-groups the device holds at once (kGpuWorkItemsPerComputeUnit per
// compute unit): two waves keep the last one from idling half the device.
constexpr std::uint64_t kSegWaves = 2;
// multigroup: a part is at least this many loads per work-item, so that a work-group's tree
// and partial are paid for by at least 16 loads of each work-item.
constexpr std::uint64_t kPartMinLoadsPerItem = 16;
// auto on GPUs, rows: lanes up to this many units per row (a warp of 8 loads each); longer rows
// go to workgroup when there are enough of them to fill the device, else to multigroup.
constexpr std::uint64_t kAutoLanesMaxUnits = kLanesMaxTeam * 8;
// auto on GPUs, offsets: lanes while the longest segment takes a team at most this many rounds
// of kSegUnroll loads per lane, else binned, whose bins bound every segment's rounds (one segment
// of 2^24 among short ones would keep one team busy long after the rest). NVIDIA's OpenCL on an
// H100, f32, lanes against binned: 2^20 segments of lognormal lengths (mean 64)
// 1644-1657 GB/s against 884-885; 2^16 of them 895-905 against 486-492; 2^16 of uniform
// lengths 0 to 8192 2663-2665 against 2385-2386; 2^20 of 0 to 512 2681-2684 against
// 1685-1693.
constexpr std::uint64_t kAutoLanesMaxRounds = 1024;
// auto on GPUs, offsets: lanes only while the longest segment is at most this many times the
// mean length, else balanced, whose rate does not depend on the lengths. Lanes read uniform
// lengths (longest about twice the mean) at 2663-2684 GB/s in the figures above, and lognormal
// ones (longest hundreds of times the mean) at 1644-1657, where CUDA's balanced reads the same
// 2^20 lognormal segments at 2353-2379 (H100). NVIDIA's OpenCL on the H100, GB/s, lanes against
// balanced: uniform 0 to 512 (2^20) 2681 against 2571, 0 to 8192 (2^16) 2642 against 2639,
// lognormal (2^20) 1644 against 2122. The factor between 2 and those hundreds is not measured: 4
// keeps lanes for every uniform mix.
constexpr std::uint64_t kAutoLanesMaxSpread = 4;

// binned: segments up to kBinShortLength elements go to teams of kBinShortTeam (at most 4 loads
// a lane: one round; a sector per instruction), up to kBinMediumLength to teams of a warp (at
// most 32 loads a lane), up to kBinLongLength to a work-group each (at most 128 loads a
// work-item), and longer ones to parts of kBinPartLength elements, several work-groups each,
// their partials combined by a second kernel.
constexpr std::uint64_t kBinShortLength = 32;
constexpr unsigned kBinShortTeam = 8;
constexpr std::uint64_t kBinMediumLength = 1024;
constexpr std::uint64_t kBinLongLength = 32768;
constexpr std::uint64_t kBinPartLength = 16384;
// binned: segments each team takes per round (the first loads of both issued together).
constexpr unsigned kBinnedSegs = 2;

// balanced: the elements each work-item of xr_seg_balanced adds per tile: 128 bytes, at most 32
// (a work-item's end marks lie in one 32-bit word), as CUDA's kBalancedThreadBytes and
// kBalancedMaxItems; halved while the tile, its marks, the segment of each mark and the scan
// would not fit the device's local memory (less the kernel's own kBalancedStaticLocal bytes).
constexpr unsigned kBalancedItemBytes = 128;
constexpr unsigned kBalancedMaxItems = 32;
constexpr std::uint64_t kBalancedStaticLocal = 64;
// ... in work-groups of 128 work-items (RunOptions::block_size 0): a tile of 4096 f32 then takes
// 35 KiB of local memory, within the 48 KiB NVIDIA's OpenCL gives a work-group, where CUDA's
// 256 threads of 32 elements take 66 KiB of shared memory. NVIDIA's OpenCL on the H100, 2^20
// lognormal segments f32: 2122-2151 GB/s at 128, 2196 at 64, 1319 at 256 (K halved to 16).
constexpr std::size_t kBalancedWorkGroup = 128;
// ... and persistent work-groups, kBalancedItemsPerComputeUnit work-items of them per compute
// unit (RunOptions::grid_size overrides), each a run of consecutive tiles holding the loads of
// its next tile in registers. Chosen from CUDA's balanced on an H100 (2^20 lognormal segments,
// mean 64, f32): 2348-2399 GB/s at 2 blocks of 256 threads an SM, 2077-2082 at 3; 4 groups of
// 128 have the same 64 KiB of loads in flight per SM, and their 140 KiB of local memory fit
// one. OpenCL has no occupancy query: more groups than fit at once would start a second wave
// of whole runs. NVIDIA's OpenCL on the H100, same input, 128 work-items: 2122-2151 GB/s at 528
// groups (4 an SM), 1459 at 264, 1776 at 792, 2040 at 1056.
constexpr std::uint64_t kBalancedItemsPerComputeUnit = 512;

// columns: each work-item of a row band reads at least this many rows (kSegUnroll at a time), so
// that a band's local tree and partials stay a small share of its loads, and more bands than that
// only while the device is not yet full (kSegWaves). (2^16, 1024) f32 on an H100: 512 bands of 128
// rows, 512 work-groups (4 per SM, 64 KiB of loads in flight each SM: the device's bandwidth),
// 2 MiB of partials (0.8% of the input).
constexpr std::uint64_t kColumnsMinRowsPerItem = 128;
// columns: the combining launch is at least this many units (16-byte loads) wide, with as many
// row lanes as there are bands (up to L / 4): 512 bands of 1024 f32 columns are 64 work-groups of
// 64 row lanes, 8 rows each, where work-groups as wide as the first launch's (256 units) were one,
// reading 512 rows.
constexpr std::uint64_t kColumnsCombineWidth = 4;

// serial (CPU devices): work-groups of one work-item each, kSerialItemsPerComputeUnit per compute
// unit, every work-item a contiguous block of the input read with vload<kRunsVectorWidth> into
// kRunsAccumulators vector accumulators (the vector_runs loop). Several per compute unit for the
// reason kRunsGroupsPerComputeUnit gives (a core held by another process).
constexpr std::uint64_t kSerialItemsPerComputeUnit = 4;
// serial columns (CPU devices): a work-item's columns at most, so that the values it keeps
// (16 KiB of f32) stay in the L1 cache while its rows stream past. Column sums of (1024, 2^16)
// f32 on PoCL (2-core EPYC, three runs each, the whole array read in 8.1-9.8 ms): 9.2-11.9 ms
// with blocks of 1024 columns, 8.3-8.5 (once 11.7) with 4096, 8.0-12.5 with 65536; (2^16, 1024)
// was 9.3-12.6 with each.
constexpr std::uint64_t kCpuColumnBlock = 4096;
// serial columns: rows combined per pass over a block's values (each pass loads and stores them):
// 4 took (1024, 2^16) f32 from 12.5 ms to 8.3-9.9 (the whole array read in 8.1-9.1).
constexpr unsigned kCpuColumnRows = 4;

}  // namespace xr::opencl::detail::policy
