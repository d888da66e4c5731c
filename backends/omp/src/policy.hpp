// Tuning of the OpenMP backend. Each constant's line gives the device and the figure it was chosen
// from, or the reason where none was measured; a quoted title is the section of
// docs/performance.md that holds the reasoning.
#pragma once

#include <cstdint>

namespace xr::omp::detail {

// 2-core EPYC, 2^27 f32: 128 bytes of lanes read 26.5 GB/s, stream_read 27.4 ("The OpenMP `vector` rung").
constexpr std::uint64_t kLaneBytes = 128;
// 2-core Xeon, one core, f16 minmax: 13.9 GB/s 4 KiB ahead, 8.6 with none ("OpenMP lane loops: packs and prefetch").
constexpr std::uint64_t kLanePrefetchBytes = 4096;
// Asks for the Bytes bytes from Ahead past p, a cache line at a time; a prefetch past the input's
// end does no harm.
template <std::uint64_t Bytes, std::uint64_t Ahead = kLanePrefetchBytes>
[[gnu::always_inline]] inline void prefetch_ahead(const void* p) {
  for (std::uint64_t b = 0; b < Bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + Ahead + b);
}
// No figure of its own: without F16C, f16 widens into 4 KiB of floats, L1-resident ("f16 and bf16 on the CPU").
constexpr std::uint64_t kHalfBlock = 1024;
// No figure of its own: min, max and pair ops check their lanes this often ("OpenMP lane loops: packs and prefetch").
constexpr std::uint64_t kScanBlockBytes = std::uint64_t{16} << 10;

// No figure of its own: one buffer is read on a second thread while the other is reduced ("Who reads the next chunk").
constexpr unsigned kStagingBuffers = 2;
// No figure of its own on the CPU: the GPU backends' 64 MiB chunks ("Who reads the next chunk").
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;

// Reasoned: a parallel region's few microseconds read 256 KiB at the 2-core EPYC's 27-45 GB/s ("OpenMP rows").
constexpr std::uint64_t kMinBytesPerThread = std::uint64_t{256} << 10;
// No figure of its own: /proc/loadavg and the process's threads read in 10-60 us, at most 1% of a 10 ms interval ("OpenMP under contention").
constexpr std::int64_t kLoadSampleNanoseconds = 10'000'000;
// 16-core Xeon, (2^25, 2) f32: the general per-segment loop read 20 GB/s, stream_read 124 ("OpenMP rows").
constexpr std::uint64_t kShortRow = 8;
// 2-core machine, one thread: (2^12, 128) f32 55 GB/s with the length fixed, 46 without; 256: 56, 54 ("OpenMP rows").
constexpr std::uint64_t kFixedRowMax = 128;
// 2-core machine, one thread, 2^13 segments: 27 GB/s in 64 B of lanes, 22 in 32, 20 in 128 ("OpenMP mixed lengths").
constexpr std::uint64_t kSegmentLaneBytes = 64;
// H100's 16-core Xeon, (2^25, 2) f32: non-temporal blocks 0.82-1.16 of stream_read, 0.67-0.86 without ("OpenMP rows").
constexpr std::uint64_t kOutputBlockBytes = 256;
// Reasoned: more than a core's share of a last-level cache ("OpenMP rows").
constexpr std::uint64_t kStreamOutputBytes = std::uint64_t{16} << 20;
// 16-core Xeon, (2^16, 1024) f32: columns split over threads read 23 GB/s, stream_read 76 ("OpenMP columns").
constexpr std::uint64_t kColumnPartialBytes = std::uint64_t{1} << 19;
// Reasoned: 4 KiB of f32 partials stay in L1 while the rows stream past ("OpenMP columns").
constexpr std::uint64_t kColumnBand = 1024;
// 2-core machine, one thread, (2^9, 1024) f32 in cache: 48 GB/s with 4 rows, 41 with 1, 46 with 8 ("OpenMP columns").
constexpr std::uint64_t kColumnRows = 4;

}  // namespace xr::omp::detail
