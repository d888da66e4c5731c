// Tuning of the OpenMP backend. Each constant names the measurement it was chosen from.
#pragma once

#include <cstdint>

namespace xr::omp::detail {

// Accumulator lanes per thread of the `vector` rung: 128 bytes, enough independent chains to
// hide the add latency and to fill two AVX-512 or four AVX2 registers (the rung reaches the
// stream_read probe's rate from 2^24 f32 on the 2-core development machine; bench/RESULTS.md).
constexpr std::uint64_t kLaneBytes = 128;
// The lane loops ask for the cache lines this far ahead of the ones they read (prefetch_ahead):
// a loop that does more per byte than stream_read's XOR issues its loads later, and the hardware
// prefetcher alone left it short of the memory's rate. One core of the 2-core Xeon development
// machine, 256 MiB, GB/s, AVX-512 copy, 4 KiB ahead against none (stream_read 11.8-12.6): f16
// minmax 13.9 against 8.6, f16 sum 17.3 against 10.3, bf16 minmax 13.9 against 9.1, f32 minmax
// 16.1 against 12.7; 2 KiB ahead read 13-14, 8 KiB the same as 4.
constexpr std::uint64_t kLanePrefetchBytes = 4096;
// Asks for the Bytes bytes from Ahead past p, a cache line at a time; a prefetch past the input's
// end does no harm.
template <std::uint64_t Bytes, std::uint64_t Ahead = kLanePrefetchBytes>
[[gnu::always_inline]] inline void prefetch_ahead(const void* p) {
  for (std::uint64_t b = 0; b < Bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + Ahead + b);
}
// On a CPU without F16C, f16 widens to float this many elements at a time (4 KiB of floats,
// which stay in L1) before a rung folds them as f32.
constexpr std::uint64_t kHalfBlock = 1024;
// Min, max and the pair ops of the `vector` rung look at their lanes every this many bytes of
// input (f16: every kHalfBlock): for a NaN, and for argmin and argmax, whether the block beats
// the record and must be searched for its index.
constexpr std::uint64_t kScanBlockBytes = std::uint64_t{16} << 10;

// A streamed input (a file) goes through this many host buffers of kChunkBytes: one is read on a
// second thread while the other is reduced.
constexpr unsigned kStagingBuffers = 2;
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;

// Segmented reductions: a thread gets at least this many elements (a parallel region costs a few
// microseconds, the time to read 256 KiB at the 2-core development machine's 27-45 GB/s).
constexpr std::uint64_t kMinSegmentElementsPerThread = std::uint64_t{1} << 16;
// Dense rows up to this length fold in a loop with the length a compile-time constant: rows
// shorter than two packs whole, the compiler vectorising across rows, longer ones 4 f32 rows at
// a time through fold_across (rows of 2 f32 at 2^25 rows: the general per-segment loop reached
// 20 GB/s against stream_read's 124 on a 16-core Xeon host).
constexpr std::uint64_t kShortRow = 8;
// Dense rows whose length is a power of two up to this many elements also have a loop with the
// length a constant, 4 f32 rows finished together (fold_across): one thread of the 2-core
// development machine read cache-resident (2^14, 32) f32 at 59 GB/s this way, 28 GB/s through the
// loop for any length, (2^13, 64) at 53 against 34, (2^12, 128) at 55 against 46; (2^11, 256)
// gains little (56 against 54).
constexpr std::uint64_t kFixedRowMax = 128;
// CSR segments fold in this many bytes of lanes (four packs of 16 bytes): 2^13 lognormal lengths
// of mean 64 f32, cache-resident, one thread of the 2-core development machine: 27 GB/s in 64
// bytes of lanes, 22 GB/s in 32, 20 GB/s in 128 (kLaneBytes); short segments waste less of
// their masked last block.
constexpr std::uint64_t kSegmentLaneBytes = 64;
// Rows of a fixed length write their values in blocks of this many bytes (four cache lines), past
// the caches with non-temporal stores once the values reach kStreamOutputBytes (more than a
// core's share of a last-level cache): rows of 2 f32 write half as many bytes as they read, and
// an ordinary store first reads the line it fills. (2^25, 2) f32 on the 16-core Xeon of the H100
// device machine: 0.82-1.16 of stream_read with them, 0.67-0.86 without.
constexpr std::uint64_t kOutputBlockBytes = 256;
constexpr std::uint64_t kStreamOutputBytes = std::uint64_t{16} << 20;
// Column reductions stream rows: each thread reads its rows in order into a partial row of its
// own, up to this size (half a typical per-core L2). Splitting columns over threads instead read
// (2^16, 1024) f32 at 23 GB/s against stream_read's 76 on a 16-core Xeon host, each thread
// striding 4 KiB from row to row; wider arrays still split their columns, in bands of
// kColumnBand (4 KiB of f32 partials, L1-resident) while the rows stream past.
constexpr std::uint64_t kColumnPartialBytes = std::uint64_t{1} << 19;
constexpr std::uint64_t kColumnBand = 1024;
// Column reductions fold this many rows together per column before adding them to the partial
// row, so the partials are loaded and stored once per this many rows: one thread of the 2-core
// development machine read cache-resident (2^9, 1024) f32 at 48 GB/s with 4 (41 a row at a
// time, 46 with 8) and (8, 2^16) at 42 (31, 39). Narrow dense arrays (a row of fewer than
// kLaneBytes) fold kLaneBytes of consecutive rows per step instead, element f into lane f, so the
// loop vectorises though a row holds only a few columns.
constexpr std::uint64_t kColumnRows = 4;

}  // namespace xr::omp::detail
