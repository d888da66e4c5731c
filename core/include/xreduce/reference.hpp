// The host reference every backend is checked against, and the error bound of the check: the
// oracle of the tests and of reduce_cli's cross-check. Not part of xreduce/xreduce.hpp: include
// this header to use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xreduce/buffer.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/result.hpp"
#include "xreduce/segments.hpp"

namespace xr {

struct Reference {
  Scalar value;       // integers: exact (with the wrap of the semantics); float sums: the exact
                      // sum rounded once; float products: long double product; min/max: exact;
                      // minmax: the min
  std::int64_t index = -1;  // argmin, argmax: the index of the first occurrence
  Scalar maximum;           // minmax: the max
  double magnitude = 0;  // sum |x| for float sums, |value| for float products
  // Float products: some order of multiplication overflows the result type on its way where
  // another does not (a factor below 1 or a zero then comes before or after the overflow), so
  // the order decides between an infinity, NaN (inf x 0), a zero and the rounded product.
  bool order_dependent = false;
  // Float sums: the exact sum before its rounding (states of disjoint parts merge into the
  // whole's: a distributed reference, xr::mpi::reference_reduce).
  std::optional<ExactSum::Raw> exact_state;
  std::uint64_t n = 0;
  Op op = Op::Sum;
  DType type = DType::F32;
};

XR_API Reference reference_reduce(HostArray in, Op op, Accumulator acc = Accumulator::Wide);
// The same for a streamed source, read in chunks of `chunk_bytes` (memory stays bounded).
XR_API Reference reference_reduce(ChunkSource& source, Op op, Accumulator acc = Accumulator::Wide,
                                  std::uint64_t chunk_bytes = std::uint64_t{64} << 20);

struct Agreement {
  bool ok = false;
  double error = 0;   // |result - reference|
  double bound = 0;   // what the summation order allows; 0 for exact comparisons
  std::string detail; // one line for a report
  // A plain float sum that overflowed to +-inf (or NaN, from inf - inf) where the exact sum is
  // finite: not a rounding difference, so error and bound are inf; exact mode gives the sum.
  bool overflow = false;
};

// Integers, min, max and the pair ops compare exactly (NaN equals NaN; indices and the max too). Float sums allow
// (d + 1) * u * sum|x| + u * |ref|, with d the result's rounding_depth (n when unknown) and u
// the unit roundoff of the result type; float products (d + 1) * u * |ref|, and where the
// reference is order_dependent also an infinity, NaN or a zero (each is some order's product,
// rounded after every step as NumPy and every backend round it).
// A plain float sum that is not finite where the reference is finite: `overflow`.
// With `exact` (RunOptions::exact), float sums must match the reference bit for bit; the
// detail then says by how many ulps they differ.
XR_API Agreement check_result(const Result& result, const Reference& ref, bool exact = false);

// Distance in units in the last place between two finite values of one float type
// (0 for equal bits; +0 and -0 are 1 apart).
XR_API std::uint64_t ulp_distance(const Scalar& a, const Scalar& b);

// The host reference of a segmented reduction, one value per segment (float sums: the exact sum
// rounded once, with sum |x| per segment for the error bound; pair ops: their records, by PairFn,
// with indices within the segments).
struct SegmentReference {
  HostBuffer values;                  // argmin, argmax: the extreme values; minmax: the minima
  std::vector<std::int64_t> indices;  // argmin, argmax: each value's index within its segment (-1:
                                      // empty); else empty
  HostBuffer maxima;                  // minmax: the maxima; else empty
  std::vector<double> magnitude;      // float sums: sum |x|, float products: |product|; else empty
  std::vector<std::uint8_t> order_dependent;  // float products: Reference::order_dependent; else empty
  std::vector<std::uint64_t> length;  // elements of each segment
  Op op = Op::Sum;
  DType type = DType::F32;            // input type
};
XR_API SegmentReference reference_segments(HostArray data, const SegmentLayout& layout, Op op,
                                           Accumulator acc = Accumulator::Wide);
// The same values for a streamed source, read in chunks of about `chunk_bytes`: runs of whole rows
// or segments a chunk at a time, a longer segment in parts, columns in tiles of bands of rows (each
// column's state, an exact sum for float sums, open until its last row is in). Memory stays
// bounded by two chunks and the values, whatever the source's size. A source in host memory
// (ChunkSource::memory) is reduced in place, as the form above does.
XR_API SegmentReference reference_segments(ChunkSource& source, const SegmentLayout& layout, Op op,
                                           Accumulator acc = Accumulator::Wide,
                                           std::uint64_t chunk_bytes = std::uint64_t{64} << 20);

struct SegmentAgreement {
  std::uint64_t count = 0, agree = 0;
  std::uint64_t first_bad = 0;  // index of the first value that differs (when agree < count)
  std::string detail;           // check_result's line for it, or "all N agree"
  bool ok() const { return agree == count; }
};
// Every value against the reference, by check_result's rules (exact: float sums bit for bit; pair
// ops: the value and the index or the max exactly).
XR_API SegmentAgreement check_segments(const SegmentedResult& result, const SegmentReference& ref, bool exact);

}  // namespace xr
