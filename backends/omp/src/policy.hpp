// Tuning of the OpenMP backend. Each constant names the measurement it was chosen from.
#pragma once

#include <cstdint>

namespace xr::omp::detail {

// Accumulator lanes per thread of the `vector` rung: 128 bytes, enough independent chains to
// hide the add latency and to fill two AVX-512 or four AVX2 registers (the rung reaches the
// stream_read probe's rate from 2^24 f32 on the 2-core development machine; bench/RESULTS.md).
constexpr std::uint64_t kLaneBytes = 128;

// A streamed input (a file) goes through this many host buffers of kChunkBytes: one is read on a
// second thread while the other is reduced.
constexpr unsigned kStagingBuffers = 2;
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;

// Segmented reductions: a thread gets at least this many elements (a parallel region costs a few
// microseconds, the time to read 256 KiB at the 2-core development machine's 27-45 GB/s).
constexpr std::uint64_t kMinSegmentElementsPerThread = std::uint64_t{1} << 16;
// Dense rows up to this length fold in a loop with the length a compile-time constant, which
// the compiler unrolls and vectorises across rows (rows of 2 f32 at 2^25 rows: the general
// per-segment loop reached 20 GB/s against stream_read's 124 on a 16-core Xeon host).
constexpr std::uint64_t kShortRow = 8;
// Column reductions stream rows: each thread reads its rows in order into a partial row of its
// own, up to this size (half a typical per-core L2). Splitting columns over threads instead read
// (2^16, 1024) f32 at 23 GB/s against stream_read's 76 on a 16-core Xeon host, each thread
// striding 4 KiB from row to row; wider arrays still split their columns, in bands of
// kColumnBand (4 KiB of f32 partials, L1-resident) while the rows stream past.
constexpr std::uint64_t kColumnPartialBytes = std::uint64_t{1} << 19;
constexpr std::uint64_t kColumnBand = 1024;
// Narrow dense column reductions fold this many consecutive elements (several rows) per step,
// element f into lane f, so the loop vectorises though a row holds only a few columns ((2^24, 4)
// f32 read at 20 GB/s row by row on the same host).
constexpr std::uint64_t kNarrowWidth = 64;

}  // namespace xr::omp::detail
