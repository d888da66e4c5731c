// Tuning of the OpenCL backend: the constants the rungs, auto and the host path choose from. Each
// line gives the device and the figure the value was chosen from, or the reason where none was
// measured; a quoted title is the section of docs/performance.md that holds the reasoning.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xr::opencl::detail::policy {

// No figure of its own: the default work-group, lowered to what the kernel and the device allow.
constexpr std::size_t kWorkGroup = 256;

// Reasoned: enough work-items to fill a GPU's compute unit ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kGpuWorkItemsPerComputeUnit = 2048;
// Reasoned: a few work-groups a CPU core, one running on each core ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kCpuGroupsPerComputeUnit = 4;

// H100, 2^28 f32: cascade's 8 coalesced elements 2807-2826 GB/s, coarse's 16 2814-2829 ("OpenCL `auto` on GPUs").
constexpr unsigned kCascadeKGpu = 8;
// PoCL, 2-core Xeon, 2^26 f32: cascade's 32 neighbours a tile 4.8 GB/s, vector_runs 25.2 ("OpenCL on CPU devices").
constexpr unsigned kCascadeKCpu = 32;
// H100, 2^28 u8 sums: four 16-byte packs 1755-1768 GB/s, coarse's 16-32 B 761-763 ("OpenCL `auto` on GPUs").
constexpr unsigned kVectorPacks = 4;

// PoCL, 2-core Xeon, 2^26: one-item runs 5.3x (f32) faster than cascade's 256-item groups ("OpenCL on CPU devices").
constexpr std::size_t kRunsWorkGroup = 1;
// PoCL, 2 compute units: 1 group a compute unit took twice as long while a core was held ("OpenCL on CPU devices").
constexpr std::uint64_t kRunsGroupsPerComputeUnit = 4;
// PoCL, 2 compute units: vload8 and vload16 within the noise of each other ("OpenCL on CPU devices").
constexpr unsigned kRunsVectorWidth = 16;
// PoCL, 2 compute units: 2, 4 and 8 accumulators within the noise; 16-core Xeon 146 GB/s ("OpenCL on CPU devices").
constexpr unsigned kRunsAccumulators = 4;

// H100, 2^28 i32: coarse 2843-2869 GB/s, vector 2815-2822, cascade 2669-2691 ("OpenCL `auto` on GPUs").
constexpr const char* kAutoRungGpu = "coarse";
// PoCL, 2^26: OpenMP's auto takes 1.05-1.49x vector_runs' time, 0.15-0.22x cascade's ("OpenCL on CPU devices").
constexpr const char* kAutoRungCpu = "vector_runs";
// H100, 2^28 f16 sums: vector 2573-2588 GB/s, coarse 2037-2040 ("OpenCL `auto` on GPUs").
constexpr const char* kAutoRungGpuNarrow = "vector";
// H100, 2^28 i32 and f32: coarse 2795-2878 GB/s, vector 2762-2809 ("OpenCL `auto` on GPUs").
constexpr std::size_t kAutoNarrowBytes = 4;

// PoCL, 2-core EPYC: argmin f32 13.7 GB/s at 2^26, coarse's tiles 1.4 at 2^24 ("Pair ops on PoCL").
constexpr const char* kPairRungCpu = "vector_runs";
// H100, 2^28: argmin f32 2488 GB/s (min 3030), f64 3024 (min 3096), minmax f32 2987 ("OpenCL `auto` on GPUs").
constexpr const char* kPairRungGpu = "coarse";

// H100, 2^28 i32: coarse (16 a work-item) 2843-2869 GB/s, coarse8 2223-2229 ("OpenCL `auto` on GPUs").
constexpr unsigned kRuntimeCoarsening = 16;

// H100, exact 2^28: f32 2614 GB/s with 64, 2571 with 128, 2311 with 256 ("Exact sums on NVIDIA's OpenCL").
constexpr std::size_t kExactWorkGroup = 64;
// No figure of its own: the work-items of the exact column merge's work-groups.
constexpr std::size_t kExactMergeWorkGroup = 256;
// The exact tile kernel's grid on GPUs, in halves of the work-groups the device holds at once:
// H200, 2^28, exact over plain, f64 0.938-0.942x with 1 (0.857-0.860 with 4), f32 0.919-0.920x
// with 2 (0.906-0.909 with 4), f16 and bf16 0.433 and 0.446 with 4 (0.422 and 0.444 with 2); f32
// and f64 from 2^20 to 2^26 as fast or faster (2^22 f32 0.392 against 0.250, f64 0.371 against
// 0.226). On the H100 the grid moved neither f32 nor f64 ("Exact sums on NVIDIA's OpenCL").
constexpr std::uint64_t kExactGpuGridHalvesF64 = 1;
constexpr std::uint64_t kExactGpuGridHalvesF32 = 2;
constexpr std::uint64_t kExactGpuGridHalvesF16 = 4;  // f16 and bf16

// H100 host: 64 MiB writes from mapped buffers at 53.8-54.3 GB/s, the link's rate ("OpenCL streaming on NVIDIA").
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;
// No figure of its own: as on CUDA, a copy starts while the slot before is reduced ("OpenCL streaming on NVIDIA").
constexpr unsigned kDeviceSlots = 3;
// No figure of its own: the reader waits for the chunk before last's copy ("OpenCL streaming on NVIDIA").
constexpr unsigned kStagingBuffers = 3;
static_assert(kStagingBuffers <= kDeviceSlots, "a staging buffer's copy event lives in a slot");

// Segmented reductions (kernels_cl/segments.cl).

// Reasoned: a team of G lanes serves segments of about 4G units ("Constants reasoned from the H100's limits").
constexpr unsigned kLanesUnitsPerLane = 4;
// Reasoned: at most a warp (32 on NVIDIA) a segment ("Constants reasoned from the H100's limits").
constexpr unsigned kLanesMaxTeam = 32;
// Reasoned: NVIDIA's L1 and L2 move 32-byte sectors ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kSectorBytes = 32;
// Reasoned: 256 KiB in flight an H100 SM, far above the ~25 KiB it needs ("Constants reasoned from the H100's limits").
constexpr unsigned kSegLoadsInFlight = 8;
// Reasoned: loads a lane in flight over the rest of a long segment ("Constants reasoned from the H100's limits").
constexpr unsigned kSegUnroll = 4;
// Reasoned: two waves keep the last from idling half the device ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kSegWaves = 2;
// Reasoned: a group's tree and partial paid for by 16 loads a work-item ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kPartMinLoadsPerItem = 16;
// H100, f32 rows of 2 to 1024 under 1 MiB: auto's call as fast with the team at run time (1 us steps);
// 2 MiB up to 14% slower, 8 MiB of rows of 2 1.6x ("Team shapes at run time on NVIDIA's OpenCL").
constexpr std::uint64_t kSegShapedMinBytes = std::uint64_t{1} << 20;
// H100, f32: lanes read rows of 1024 (256 units) at 2938 GB/s ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kAutoLanesMaxUnits = kLanesMaxTeam * 8;
// H100, 2^20 lognormal f32: lanes 1644-1657 GB/s, binned 884-885 ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kAutoLanesMaxRounds = 1024;
// H100: uniform lengths lanes 2676 GB/s, balanced 2571; lognormal 1644 and 2122 ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kAutoLanesMaxSpread = 4;

// Reasoned: one round of 4 loads a lane for a team of 8 ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kBinShortLength = 32;
// Reasoned: 8 lanes cover a 32-byte sector per instruction ("Constants reasoned from the H100's limits").
constexpr unsigned kBinShortTeam = 8;
// Reasoned: a warp's team reads at most 32 loads a lane ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kBinMediumLength = 1024;
// Reasoned: a work-group reads at most 128 loads a work-item ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kBinLongLength = 32768;
// Reasoned: longer segments in parts over several work-groups ("Constants reasoned from the H100's limits").
constexpr std::uint64_t kBinPartLength = 16384;
// Reasoned: two segments' first loads issued together ("Constants reasoned from the H100's limits").
constexpr unsigned kBinnedSegs = 2;

// As CUDA's kBalancedThreadBytes: 128 bytes a work-item, halved until the tile fits ("Segments on NVIDIA's OpenCL").
constexpr unsigned kBalancedItemBytes = 128;
// As CUDA's kBalancedMaxItems: a work-item's end marks lie in one 32-bit word ("Segments on NVIDIA's OpenCL").
constexpr unsigned kBalancedMaxItems = 32;
// No figure of its own: the kernel's own local memory, taken off before the tile is sized.
constexpr std::uint64_t kBalancedStaticLocal = 64;
// H100, 2^20 lognormal f32: 2122-2151 GB/s at 128, 2196 at 64, 1319 at 256 ("Segments on NVIDIA's OpenCL").
constexpr std::size_t kBalancedWorkGroup = 128;
// H100, 2^20 lognormal f32: 2122-2151 GB/s at 528 groups, 1459 at 264, 2040 at 1056 ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kBalancedItemsPerComputeUnit = 512;

// H100, (2^16, 1024) f32: 2653 GB/s as 512 bands of 128 rows, partials 0.8% ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kColumnsMinRowsPerItem = 128;
// Reasoned: 512 bands of 1024 columns combine in 64 groups, not one ("Segments on NVIDIA's OpenCL").
constexpr std::uint64_t kColumnsCombineWidth = 4;

// PoCL 3.1 compiles a kernel once more for a grid of 65536 work-items or more (without its
// "smallgrid" specialisation): team launches on CPU devices stay below, each team looping over
// more rounds ("PoCL's builds in the test stages").
constexpr std::uint64_t kCpuMaxTeamGridItems = 65535;

// PoCL: as kRunsGroupsPerComputeUnit, for a core held by another process ("OpenCL on CPU devices").
constexpr std::uint64_t kSerialItemsPerComputeUnit = 4;
// PoCL, 2-core EPYC, (1024, 2^16) f32: 8.3-8.5 ms with 4096 columns, 9.2-11.9 with 1024 ("Columns on PoCL").
constexpr std::uint64_t kCpuColumnBlock = 4096;
// PoCL, 2-core EPYC, (1024, 2^16) f32: 8.3-9.9 ms with 4 rows a pass, 12.5 without ("Columns on PoCL").
constexpr unsigned kCpuColumnRows = 4;

}  // namespace xr::opencl::detail::policy
