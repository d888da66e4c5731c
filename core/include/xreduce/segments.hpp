// Many reductions in one call: the rows or columns of a 2-D array, or the segments of a 1-D array
// cut by offsets (the rows of a CSR matrix).
//
//   xr::SegmentedResult r = reducer->reduce_axis(xr::HostMatrix::of(x.data(), rows, cols), 1, xr::Op::Sum);
//   const float* row_sums = r.values.as<float>();                 // rows values
//   std::vector<std::int64_t> offsets{0, 3, 3, 10};                // 3 segments, the second empty
//   r = reducer->reduce_segments(std::span<const float>(x), offsets, xr::Op::Max);
//
// | op     | value of an empty segment or row                         |
// |--------|----------------------------------------------------------|
// | sum    | +0 (floats), 0                                           |
// | prod   | 1                                                        |
// | min    | +inf (floats), the type's maximum                        |
// | max    | -inf (floats), the type's lowest                         |
// | argmin | min's value (+inf, the type's maximum), index -1         |
// | argmax | max's value (-inf, the type's lowest), index -1          |
// | minmax | min +inf / type maximum, max -inf / type lowest          |
// | mean   | NaN (0 / 0, as NumPy's mean of nothing)                  |
// | any    | 0 (no nonzero element)                                   |
// | all    | 1 (every element of none is nonzero, as NumPy's)         |
// (a mapped op's is its fold's: nanmin as min, count_nonzero 0)
//
// A non-empty segment's value is the whole-array reduction of its elements (xreduce/semantics.hpp):
// the same NaN rules, the same wrap, sums of narrow integers in 64 bits by default, f16 and bf16
// sums and products in f32 (returned as f32; their min, max and pair ops return the input type),
// and in exact mode (RunOptions::exact) every float sum is the correctly rounded exact sum of its
// segment (f16 and bf16 rounded to f32), the same bits on every backend.
//
// The pair ops (argmin, argmax, minmax) give a second thing per segment: argmin and argmax the
// index of the value WITHIN its segment (0 .. length - 1: the position in the row, the row of a
// column, the position from offsets[i]; as NumPy's argmin(axis=...)), ties to the smallest, the
// first NaN winning with its index; minmax the max beside the min. Exact mode does not apply to
// them (InvalidArgument). Device outputs (xreduce/cuda.hpp, xreduce/opencl.hpp) hold one record
// per segment, segment_record_bytes(op, type) bytes apart: xr::Located<T> (the value, then the
// int64 index) or xr::Bounds<T> (the min, then the max), as the whole-array reduce_async writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "xreduce/buffer.hpp"
#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/result.hpp"
#include "xreduce/types.hpp"

namespace xr {

// Element (r, c) of a C-order array lies at r * stride + c, of a Fortran-order one at c * stride + r.
enum class Order : std::uint8_t { C, Fortran };

struct MatrixShape {
  std::uint64_t rows = 0, cols = 0;
  // Elements from the start of one row (C) or column (Fortran) to the next; 0: dense (cols for C,
  // rows for Fortran). A stride below the row (column) length is InvalidArgument.
  std::uint64_t stride = 0;
  Order order = Order::C;
  std::uint64_t leading() const { return order == Order::C ? cols : rows; }  // the dense stride
  std::uint64_t step() const { return stride ? stride : leading(); }
};

// A 2-D array in host memory.
struct HostMatrix {
  const void* data = nullptr;
  DType type = DType::F32;
  MatrixShape shape;
  template <class T>
  static HostMatrix of(const T* data, std::uint64_t rows, std::uint64_t cols, std::uint64_t stride = 0,
                       Order order = Order::C) {
    return {data, dtype_of<T>, {rows, cols, stride, order}};
  }
};

// Where the elements of each output value lie. Every form of the API comes down to one of three:
//   Rows     value i: elements [i * stride, i * stride + length)       (contiguous runs, equal length)
//   Columns  value c: elements c + r * stride for r in [0, length)     (one element per row)
//   Offsets  value i: elements [offsets[i], offsets[i + 1])            (CSR; offsets has count + 1)
struct XR_API SegmentLayout {
  SegmentKind kind = SegmentKind::Offsets;
  std::uint64_t count = 0;                // values produced
  std::uint64_t length = 0;               // Rows, Columns: elements per value
  std::uint64_t stride = 0;               // Rows, Columns: see above
  const std::int64_t* offsets = nullptr;  // Offsets: count + 1 non-decreasing values, in host memory

  // Elements of the input the layout reaches: the input must hold at least this many.
  std::uint64_t span() const;
  // Elements reduced in total (a strided layout skips the gaps).
  std::uint64_t elements() const;
};

// The layout of `axis` (0: one value per column, 1: one value per row) of a matrix. InvalidArgument
// for an axis other than 0 or 1, rows x cols overflowing 64 bits, or a stride below the row
// (C) or column (Fortran) length.
XR_API SegmentLayout axis_layout(const MatrixShape& shape, int axis);

// InvalidArgument unless offsets has at least one value, starts at or above 0, never decreases
// and ends at or below n; the message names the first offending position and value.
XR_API void check_offsets(std::span<const std::int64_t> offsets, std::uint64_t n);

// The element types segmented reductions take, in table order: every element type.
XR_API std::vector<DType> segment_dtypes();

// "rows", "columns", "offsets".
XR_API std::string_view to_string(SegmentKind kind);

// What a segmented reduction returns: the values, and one record for the whole call.
struct XR_API SegmentedResult {
  // kernel, finish, launches, repeats, kernel_ms, transfer_ms, total_ms, chunks, path, n (elements
  // reduced), op, type; value is unused; bytes_per_s counts bytes read plus bytes written.
  Result record;
  SegmentKind kind = SegmentKind::Offsets;
  // layout.count values of result_dtype(op, type, accumulator): argmin's minima, argmax's maxima,
  // minmax's minima (of the input type).
  HostBuffer values;
  HostBuffer indices;              // argmin, argmax: layout.count i64 indices within the segments
                                   // (-1: empty); empty for the other ops
  HostBuffer maxima;               // minmax: layout.count maxima of the input type; else empty
  std::uint64_t bytes_read = 0;    // input elements and offsets
  std::uint64_t bytes_written = 0; // count() * segment_record_bytes(op, type, accumulator)
  // Float sums: the largest number of roundings any one value went through (0: unknown; checks
  // then assume the segment's length).
  std::uint64_t rounding_depth = 0;
  std::uint64_t count() const { return values.size(); }
  Scalar value(std::uint64_t i) const;
  // argmin, argmax: the index of value i within its segment (-1: an empty segment); -1 for other ops.
  std::int64_t index(std::uint64_t i) const;
  // minmax: the max of segment i; an unset Scalar (I64 0) for other ops.
  Scalar maximum(std::uint64_t i) const;
};

// The value of an empty segment of (op, type) (the table above), of result_dtype(op, type, acc);
// for minmax the min (its max is empty_segment_maximum).
XR_API Scalar empty_segment_value(Op op, DType type, Accumulator acc = Accumulator::Wide);
// minmax: the max of an empty segment (-inf, the type's lowest).
XR_API Scalar empty_segment_maximum(DType type);

// Bytes one segment's result takes in a device output (xreduce/cuda.hpp, xreduce/opencl.hpp):
// size_of(result_dtype(op, type, acc)) for the folds; sizeof(xr::Located<T>) (16) for argmin and
// argmax, sizeof(xr::Bounds<T>) (2 * size_of(type)) for minmax. Outputs are aligned to
// segment_record_align.
XR_API std::size_t segment_record_bytes(Op op, DType type, Accumulator acc = Accumulator::Wide);
XR_API std::size_t segment_record_align(Op op, DType type, Accumulator acc = Accumulator::Wide);

}  // namespace xr
