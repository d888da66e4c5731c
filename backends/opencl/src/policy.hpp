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

}  // namespace xr::opencl::detail::policy
