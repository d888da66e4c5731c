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

}  // namespace xr::omp::detail
