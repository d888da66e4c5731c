// Switches for tests only. They carry no XR_API: libxreduce does not export them, and only code
// linked with the static xreduce_testing (tests, and the test build of reduce_cli) reaches them.
// enter_region() is the exception: every OpenMP parallel region of the library calls it
// (regions.hpp), and while nothing is armed it costs one relaxed atomic load per thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "xreduce/result.hpp"

namespace xr::detail::testing {

// From now on every result of `backend`'s kernel `kernel` is wrong, and so is auto's when it
// runs that kernel: an integer one more (wrapping), a float NaN, a NaN 1. An empty backend
// breaks nothing again.
void break_kernel(std::string backend, std::string kernel);

// What Reducer::reduce applies to each result before returning it.
void apply_broken_kernel(Result& result);

// Every OpenMP parallel region of the library, each entered through RegionErrors (regions.hpp).
// kRegions below names each one; a region added here is added there, and to the cases of
// tests/test_regions.cpp, which fails for a region it does not enter.
enum class Region : std::uint8_t {
  OmpClause,           // backends/omp/src/ladder.cpp: rung `clause`
  OmpVector,           // ladder.cpp: rung `vector` (and auto), the folds
  OmpVectorPairs,      // ladder.cpp: rung `vector`, argmin, argmax, minmax
  OmpStreamRead,       // ladder.cpp: probe `stream_read`
  OmpExactWiden,       // ladder.cpp: exact f16/bf16 sums, the widening to f32
  OmpExact,            // exact.cpp: exact f32/f64 sums
  OmpRowsFixed,        // segment_folds.hpp: dense rows of a length with a loop of its own
  OmpRows,             // segment_folds.hpp: rows and CSR segments of any length
  OmpColumns,          // segment_folds.hpp: columns, rows over threads into partials
  OmpColumnBands,      // segment_folds.hpp: columns of very wide arrays, columns over threads
  OmpSegmentsNarrow,   // segment_folds.hpp: f16/bf16 min and max of segments back to the input type
  OmpExactPieces,      // segments.cpp: exact segmented sums, piece states
  OmpExactShortSegments,  // segments.cpp: exact sums of short rows and columns in 128-bit integers
  OmpPairSegments,     // segment_pairs.cpp: strategy `pairs` on rows and segments
  OmpPairColumns,      // segment_pairs.cpp: strategy `pairs` on columns, the row bands
  OmpPairColumnMerge,  // segment_pairs.cpp: strategy `pairs` on columns, the bands combined
  CoreGenerate,        // core/src/buffer.cpp: generate(), generate_slice()
  CoreReferenceSum,    // core/src/reference.cpp: exact float sums of the reference
  CoreReferenceWide,   // reference.cpp: wide integer sums of the reference
  CoreSegmentPairs,    // core/src/segment_reference.cpp: the reference of pair ops
  CoreSegmentFolds,    // segment_reference.cpp: the reference of folds
  CoreCheckSegments,   // segment_reference.cpp: check_segments()
};

struct RegionInfo {
  Region region;
  std::string_view name;
};

inline constexpr std::array kRegions = {
    RegionInfo{Region::OmpClause, "omp.clause"},
    RegionInfo{Region::OmpVector, "omp.vector"},
    RegionInfo{Region::OmpVectorPairs, "omp.vector_pairs"},
    RegionInfo{Region::OmpStreamRead, "omp.stream_read"},
    RegionInfo{Region::OmpExactWiden, "omp.exact_widen"},
    RegionInfo{Region::OmpExact, "omp.exact"},
    RegionInfo{Region::OmpRowsFixed, "omp.rows_fixed"},
    RegionInfo{Region::OmpRows, "omp.rows"},
    RegionInfo{Region::OmpColumns, "omp.columns"},
    RegionInfo{Region::OmpColumnBands, "omp.column_bands"},
    RegionInfo{Region::OmpSegmentsNarrow, "omp.segments_narrow"},
    RegionInfo{Region::OmpExactPieces, "omp.exact_pieces"},
    RegionInfo{Region::OmpExactShortSegments, "omp.exact_short_segments"},
    RegionInfo{Region::OmpPairSegments, "omp.pair_segments"},
    RegionInfo{Region::OmpPairColumns, "omp.pair_columns"},
    RegionInfo{Region::OmpPairColumnMerge, "omp.pair_column_merge"},
    RegionInfo{Region::CoreGenerate, "core.generate"},
    RegionInfo{Region::CoreReferenceSum, "core.reference_sum"},
    RegionInfo{Region::CoreReferenceWide, "core.reference_wide"},
    RegionInfo{Region::CoreSegmentPairs, "core.segment_pairs"},
    RegionInfo{Region::CoreSegmentFolds, "core.segment_folds"},
    RegionInfo{Region::CoreCheckSegments, "core.check_segments"},
};

constexpr bool regions_in_order() {
  for (std::size_t i = 0; i < kRegions.size(); ++i)
    if (static_cast<std::size_t>(kRegions[i].region) != i) return false;
  return true;
}
static_assert(regions_in_order(), "kRegions lists every Region once, in the enum's order");

constexpr std::string_view region_name(Region r) { return kRegions[static_cast<std::size_t>(r)].name; }

// The region armed to fail (its index in kRegions), or -1 when none is.
extern std::atomic<int> armed_region;

// Throws the armed fault when `region` is the armed region and this thread is the first to
// enter it since it was armed.
void region_fault(Region region);

// Called by every thread of a region as it starts its share (RegionErrors::enter).
inline void enter_region(Region region) {
  if (armed_region.load(std::memory_order_relaxed) >= 0) [[unlikely]]
    region_fault(region);
}

// The next thread to enter `region` (any call, any thread) throws xr::DeviceError (code
// kInjectedFault, code_name "injected fault") naming it, from inside the region; then the region
// is disarmed. One region is armed at a time: arming another replaces it.
void arm_region(Region region);
// Nothing armed any more.
void disarm_regions();
// Faults thrown from inside `region` since the process started.
std::uint64_t region_faults(Region region);
// Whether `region` is still armed (no thread has entered it since).
bool region_armed(Region region);

inline constexpr int kInjectedFault = -77;

}  // namespace xr::detail::testing
