// The state and checks the segment suites share (test_segments.cpp, test_segments_contract.cpp):
// the backend and entry under test, the strategies of a layout, the (type, op) pairs each loop
// runs, and one call checked against the host reference and its record.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "segment_entries.hpp"
#include "turning_ops.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"


namespace xr_seg_suite {

using namespace xr;
using namespace xr_seg;

inline std::string g_backend = "omp";
inline BackendOptions g_options;
inline std::unique_ptr<Reducer> g_reducer;
inline std::unique_ptr<Entry> g_entry;

inline Reducer& reducer() { return *g_reducer; }
inline Entry& entry() { return *g_entry; }

// The strategies of a layout that take the folds; pair_strategies: those that take the pair ops.
inline std::vector<std::string> strategies(SegmentKind kind) { return xr_seg::strategies(entry().segment_kernels(), kind); }
inline std::vector<std::string> pair_strategies(SegmentKind kind) {
  return xr_seg::strategies(entry().segment_kernels(), kind, Op::ArgMin);
}

// Whether the entry's segment strategies take op (the mapped ops: where the backend's do).
inline bool segments_take(Op op) { return !xr_seg::strategies(entry().segment_kernels(), SegmentKind::Rows, op).empty(); }

// A host array read through ChunkSource::read only (no memory()): the streamed path.
class ReadOnlySource final : public ChunkSource {
 public:
  explicit ReadOnlySource(const HostBuffer& b) : b_(b) {}
  DType type() const override { return b_.type(); }
  std::uint64_t size() const override { return b_.size(); }
  std::string name() const override { return "test stream"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override {
    std::memcpy(dst, static_cast<const unsigned char*>(b_.data()) + first * size_of(b_.type()), count * size_of(b_.type()));
  }

 private:
  const HostBuffer& b_;
};

inline std::string what_of(const std::string& strategy, Op op, DType t, const std::string& shape) {
  return g_backend + " " + entry().name() + ": " + describe(strategy, op, t, shape);
}

// The types the loops below turn through: every type but f16 and bf16, which the test case "f16
// and bf16: ..." covers on its own shapes. Where kernels compile at run time (OpenCL on a CPU: PoCL
// takes about 0.5 s a kernel, cold cache), two more types in these loops would build a quarter
// more kernels for code paths that case reaches with fewer.
inline std::vector<DType> loop_dtypes() {
  std::vector<DType> types;
  for (DType t : segment_dtypes())
    if (!is_half(t)) types.push_back(t);
  return types;
}

// The (type, op) pairs a loop runs for one shape and strategy: each type with one op turning with
// `turn` (turning_ops.hpp); callers turn it with the shape and the strategy, so that every op
// meets every type, shape and strategy. CUDA compiles its kernels ahead, so its loops take f16
// and bf16 too; where kernels compile at run time, loop_dtypes(). Every pair of every shape and
// strategy (four times these) held no more: on CUDA the host's references took more than 400 s
// (16-core host of an H100).
inline bool kernels_ahead() { return g_backend == "cuda"; }
inline std::vector<std::pair<DType, Op>> typed_ops(std::size_t turn) {
  return xr_test::turning_ops(kernels_ahead() ? segment_dtypes() : loop_dtypes(), turn);
}

// The pairs for a shape or mix of lengths that only its lengths make worth running: f32 sums,
// and on CUDA typed_ops(turn). OpenCL builds a kernel for each plan (a row length, a team of
// lanes for a mean segment length), so each such shape with every type would add that many builds.
inline std::vector<std::pair<DType, Op>> length_ops(std::size_t turn) {
  if (kernels_ahead()) return typed_ops(turn);
  return {{DType::F32, Op::Sum}};
}

// The folds a float type takes on the si-th strategy of a layout where kernels compile at run
// time: auto takes every fold, each other strategy one, turning with the strategy and the type, so
// that on each strategy f16, f32, bf16 and f64 take the four folds between them (f16 and bf16 a sum
// or product, f32 values, on one strategy and a min or max, values of the input type, on the next).
// On CUDA every fold.
inline std::vector<Op> float_ops(DType t, std::size_t si) {
  if (kernels_ahead() || si == 0) return {fold_ops.begin(), fold_ops.end()};
  const std::size_t place = t == DType::F16 ? 0 : t == DType::F32 ? 1 : t == DType::BF16 ? 2 : 3;
  return {fold_ops[(place + si) % kFoldCount]};
}

// The values of one call against the host reference (exact: float sums bit for bit), and the
// record's fields: elements, op, type, backend, repeats, and where there are elements to reduce,
// the strategy that ran, launches and the rounding depth of exact sums; where the entry returns a
// whole SegmentedResult, its kind and counts.
inline void check_result(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& layout, Op op,
                  const RunOptions& o, const SegmentReference* ref, const std::string& what) {
  const SegmentReference own = ref ? SegmentReference{} : reference_segments(data.view(), layout, op, o.accumulator);
  const SegmentAgreement a = check_segments(got, ref ? *ref : own, o.exact);
  CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
  const Result& r = got.record;
  CHECK_MESSAGE(r.n == layout.elements(), what, ": n ", r.n);
  CHECK_MESSAGE(r.op == op, what);
  CHECK_MESSAGE(r.type == data.type(), what);
  CHECK_MESSAGE(r.backend == g_backend, what, ": ", r.backend);
  CHECK_MESSAGE(r.repeats == o.repeat, what);
  if (layout.count == 0) {
    CHECK_MESSAGE(r.launches == 0, what, ": ", r.launches, " launches");
    CHECK_MESSAGE(r.kernel.rfind(o.kernel, 0) == 0, what, ": ", r.kernel);  // the strategy named, nothing run
  } else if (layout.elements()) {
    CHECK_MESSAGE(r.launches >= 1, what, ": ", r.launches, " launches");
    if (o.exact && exact_applies(op, data.type())) {
      // Exact sums round each value once, whatever ran them.
      CHECK_MESSAGE(got.rounding_depth == 1, what);
    } else {
      // auto names its choice ("auto:warp"); a named strategy runs itself.
      const std::string prefix = o.kernel == "auto" ? "auto:" : o.kernel;
      CHECK_MESSAGE(r.kernel.rfind(prefix, 0) == 0, what, ": ", r.kernel);
    }
  }
  if (entry().whole_result()) {
    CHECK_MESSAGE(got.count() == layout.count, what);
    CHECK_MESSAGE(got.kind == layout.kind, what);
    const u64 offsets_bytes = layout.kind == SegmentKind::Offsets ? (layout.count + 1) * 8 : 0;
    CHECK_MESSAGE(got.bytes_read == layout.elements() * size_of(data.type()) + offsets_bytes, what);
    CHECK_MESSAGE(got.bytes_written == layout.count * segment_record_bytes(op, data.type(), o.accumulator), what);
    CHECK_MESSAGE(got.indices.size() == (is_indexed(op) ? layout.count : 0), what);
    CHECK_MESSAGE(got.maxima.size() == (op == Op::MinMax ? layout.count : 0), what);
  }
}

// One call of `strategy` through the entry, checked by check_result; against `ref` where the
// caller computed the reference once for several strategies (reference_segments of the same data,
// layout, op and accumulator), else against its own.
inline SegmentedResult check_axis(const HostBuffer& data, const MatrixShape& shape, int axis, Op op, const std::string& strategy,
                           const RunOptions& base = {}, const SegmentReference* ref = nullptr) {
  RunOptions o = base;
  o.kernel = strategy;
  SegmentedResult got = entry().reduce_axis(data, shape, axis, op, o);
  check_result(got, data, axis_layout(shape, axis), op, o, ref, what_of(strategy, op, data.type(), shape_text(shape, axis)));
  return got;
}

inline SegmentedResult check_offsets_run(const HostBuffer& data, const std::vector<i64>& offsets, Op op,
                                  const std::string& strategy, const std::string& name, const RunOptions& base = {},
                                  const SegmentReference* ref = nullptr) {
  RunOptions o = base;
  o.kernel = strategy;
  SegmentedResult got = entry().reduce_segments(data, offsets, op, o);
  check_result(got, data, offsets_layout(offsets), op, o, ref, what_of(strategy, op, data.type(), name));
  return got;
}

inline SegmentReference reference_of(const HostBuffer& data, const MatrixShape& shape, int axis, Op op,
                              Accumulator acc = Accumulator::Wide) {
  return reference_segments(data.view(), axis_layout(shape, axis), op, acc);
}
inline SegmentReference reference_of(const HostBuffer& data, const std::vector<i64>& offsets, Op op,
                              Accumulator acc = Accumulator::Wide) {
  return reference_segments(data.view(), offsets_layout(offsets), op, acc);
}

// An input for `shape` (at least one element).
inline HostBuffer matrix_data(DType t, const MatrixShape& shape, Op op, std::uint64_t seed) {
  return generate(t, std::max<std::uint64_t>(axis_layout(shape, 0).span(), 1), dist_for(op), seed);
}

struct Axis {
  MatrixShape shape;
  int axis;
};

// Every strategy of the layout of each (shape, axis): those of `typed` with typed_ops, turning
// with the shape and the strategy; those of `lengths` with length_ops.
inline void check_axes(const std::vector<Axis>& typed, const std::vector<Axis>& lengths, std::uint64_t seed) {
  for (std::size_t k = 0; k < typed.size(); ++k) {
    const Axis& a = typed[k];
    const auto names = strategies(axis_layout(a.shape, a.axis).kind);
    for (std::size_t si = 0; si < names.size(); ++si)
      for (const auto& [t, op] : typed_ops(k + si)) check_axis(matrix_data(t, a.shape, op, seed), a.shape, a.axis, op, names[si]);
  }
  for (std::size_t k = 0; k < lengths.size(); ++k)
    for (const auto& [t, op] : length_ops(k)) {
      const Axis& a = lengths[k];
      const HostBuffer data = matrix_data(t, a.shape, op, seed);
      const SegmentReference ref = reference_of(data, a.shape, a.axis, op);
      for (const auto& s : strategies(axis_layout(a.shape, a.axis).kind)) check_axis(data, a.shape, a.axis, op, s, {}, &ref);
    }
}

inline const std::vector<MatrixShape> kSmallShapes = {
    {0, 5, 0, Order::C}, {5, 0, 0, Order::C},  {1, 1, 0, Order::C},    {1, 1000, 0, Order::C}, {1000, 1, 0, Order::C},
    {7, 33, 0, Order::C}, {7, 33, 40, Order::C}, {7, 33, 0, Order::Fortran}, {7, 33, 9, Order::Fortran},
    {33, 7, 7, Order::C}, {64, 32, 0, Order::C}};

}  // namespace xr_seg_suite
