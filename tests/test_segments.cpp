// Segmented reductions, one test body for every backend and entry point
// (`xr_test_segments --xr-backend=NAME [--xr-entry=host|device]`; exit 77 with the reason where
// NAME has no usable device, or no such entry here). The host entry reduces host arrays through
// the backend's Reducer; the device entries reduce copies in CUDA device memory or in cl_mem
// buffers through xr::cuda and xr::opencl (segment_entries.hpp). The body: rows and columns of
// 2-D arrays in both orders and with strides, CSR segments of every mix of lengths, every
// strategy, op and type, empty segments and rows, NaN and -0, exact sums per segment bit for bit,
// every bad-argument error, and the record; on the host entry alone, inputs cut into jobs and
// streamed sources.
#define DOCTEST_CONFIG_IMPLEMENT
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

#include "backend_suite.hpp"
#include "segment_entries.hpp"
#include "turning_ops.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"
#ifdef XR_TEST_OPENCL_ENTRY
#include "internal.hpp"  // select_device: the device make_reducer("opencl", options) takes
#endif

using namespace xr;
using namespace xr_seg;

namespace {

std::string g_backend = "omp";
BackendOptions g_options;
std::unique_ptr<Reducer> g_reducer;
std::unique_ptr<Entry> g_entry;

Reducer& reducer() { return *g_reducer; }
Entry& entry() { return *g_entry; }

std::vector<std::string> strategies(SegmentKind kind) { return xr_seg::strategies(entry().segment_kernels(), kind); }

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

std::string what_of(const std::string& strategy, Op op, DType t, const std::string& shape) {
  return g_backend + " " + entry().name() + ": " + describe(strategy, op, t, shape);
}

// The types the loops below turn through: every type but f16 and bf16, which the test case "f16
// and bf16: ..." covers on its own shapes. Where kernels compile at run time (OpenCL on a CPU: PoCL
// takes about 0.5 s a kernel, cold cache), two more types in these loops would build a quarter
// more kernels for code paths that case reaches with fewer.
std::vector<DType> loop_dtypes() {
  std::vector<DType> types;
  for (DType t : segment_dtypes())
    if (!is_half(t)) types.push_back(t);
  return types;
}

// The (type, op) pairs a loop runs for one shape and strategy. CUDA compiles its kernels ahead:
// every type, f16 and bf16 included, with every op. Elsewhere each type of loop_dtypes() with one
// op turning with `turn` (turning_ops.hpp), at a quarter of the kernel builds; callers turn it
// with the shape and the strategy, so that every op still meets every type, shape and strategy.
bool every_pair() { return g_backend == "cuda"; }
std::vector<std::pair<DType, Op>> typed_ops(std::size_t turn) {
  if (!every_pair()) return xr_test::turning_ops(loop_dtypes(), turn);
  std::vector<std::pair<DType, Op>> all;
  for (DType t : segment_dtypes())
    for (Op op : fold_ops) all.emplace_back(t, op);
  return all;
}

// The pairs for a shape or mix of lengths that only its lengths make worth running: f32 sums,
// and on CUDA every pair. OpenCL builds a kernel for each plan (a row length, a team of lanes
// for a mean segment length), so each such shape with every type would add that many builds.
std::vector<std::pair<DType, Op>> length_ops() {
  if (every_pair()) return typed_ops(0);
  return {{DType::F32, Op::Sum}};
}

// The folds a float type takes on the si-th strategy of a layout where kernels compile at run
// time: auto takes every fold, each other strategy one, turning with the strategy and the type, so
// that on each strategy f16, f32, bf16 and f64 take the four folds between them (f16 and bf16 a sum
// or product, f32 values, on one strategy and a min or max, values of the input type, on the next).
// On CUDA every fold.
std::vector<Op> float_ops(DType t, std::size_t si) {
  if (every_pair() || si == 0) return {fold_ops.begin(), fold_ops.end()};
  const std::size_t place = t == DType::F16 ? 0 : t == DType::F32 ? 1 : t == DType::BF16 ? 2 : 3;
  return {fold_ops[(place + si) % kFoldCount]};
}

// The values of one call against the host reference (exact: float sums bit for bit), and the
// record's fields: elements, op, type, backend, repeats, and where there are elements to reduce,
// the strategy that ran, launches and the rounding depth of exact sums; where the entry returns a
// whole SegmentedResult, its kind and counts.
void check_result(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& layout, Op op,
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
    CHECK_MESSAGE(got.bytes_written == layout.count * size_of(got.values.type()), what);
  }
}

// One call of `strategy` through the entry, checked by check_result; against `ref` where the
// caller computed the reference once for several strategies (reference_segments of the same data,
// layout, op and accumulator), else against its own.
SegmentedResult check_axis(const HostBuffer& data, const MatrixShape& shape, int axis, Op op, const std::string& strategy,
                           const RunOptions& base = {}, const SegmentReference* ref = nullptr) {
  RunOptions o = base;
  o.kernel = strategy;
  SegmentedResult got = entry().reduce_axis(data, shape, axis, op, o);
  check_result(got, data, axis_layout(shape, axis), op, o, ref, what_of(strategy, op, data.type(), shape_text(shape, axis)));
  return got;
}

SegmentedResult check_offsets_run(const HostBuffer& data, const std::vector<i64>& offsets, Op op,
                                  const std::string& strategy, const std::string& name, const RunOptions& base = {},
                                  const SegmentReference* ref = nullptr) {
  RunOptions o = base;
  o.kernel = strategy;
  SegmentedResult got = entry().reduce_segments(data, offsets, op, o);
  check_result(got, data, offsets_layout(offsets), op, o, ref, what_of(strategy, op, data.type(), name));
  return got;
}

SegmentReference reference_of(const HostBuffer& data, const MatrixShape& shape, int axis, Op op,
                              Accumulator acc = Accumulator::Wide) {
  return reference_segments(data.view(), axis_layout(shape, axis), op, acc);
}
SegmentReference reference_of(const HostBuffer& data, const std::vector<i64>& offsets, Op op,
                              Accumulator acc = Accumulator::Wide) {
  return reference_segments(data.view(), offsets_layout(offsets), op, acc);
}

// An input for `shape` (at least one element).
HostBuffer matrix_data(DType t, const MatrixShape& shape, Op op, std::uint64_t seed) {
  return generate(t, std::max<std::uint64_t>(axis_layout(shape, 0).span(), 1), dist_for(op), seed);
}

struct Axis {
  MatrixShape shape;
  int axis;
};

// Every strategy of the layout of each (shape, axis): those of `typed` with typed_ops, turning
// with the shape and the strategy; those of `lengths` with length_ops.
void check_axes(const std::vector<Axis>& typed, const std::vector<Axis>& lengths, std::uint64_t seed) {
  for (std::size_t k = 0; k < typed.size(); ++k) {
    const Axis& a = typed[k];
    const auto names = strategies(axis_layout(a.shape, a.axis).kind);
    for (std::size_t si = 0; si < names.size(); ++si)
      for (const auto& [t, op] : typed_ops(k + si)) check_axis(matrix_data(t, a.shape, op, seed), a.shape, a.axis, op, names[si]);
  }
  for (const Axis& a : lengths)
    for (const auto& [t, op] : length_ops()) {
      const HostBuffer data = matrix_data(t, a.shape, op, seed);
      const SegmentReference ref = reference_of(data, a.shape, a.axis, op);
      for (const auto& s : strategies(axis_layout(a.shape, a.axis).kind)) check_axis(data, a.shape, a.axis, op, s, {}, &ref);
    }
}

const std::vector<MatrixShape> kSmallShapes = {
    {0, 5, 0, Order::C}, {5, 0, 0, Order::C},  {1, 1, 0, Order::C},    {1, 1000, 0, Order::C}, {1000, 1, 0, Order::C},
    {7, 33, 0, Order::C}, {7, 33, 40, Order::C}, {7, 33, 0, Order::Fortran}, {7, 33, 9, Order::Fortran},
    {33, 7, 7, Order::C}, {64, 32, 0, Order::C}};

}  // namespace

TEST_CASE("the strategies: auto first, each with a note, its layouts, every fold and exact sums; the Reducer's list") {
  const auto list = entry().segment_kernels();
  REQUIRE(!list.empty());
  CHECK(list.front().name == "auto");
  CHECK(list.front().kind == KernelKind::Auto);
  for (SegmentKind kind : {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets}) {
    CHECK(list.front().reduces(kind));
    CHECK(strategies(kind).size() >= 2);  // auto and at least one strategy of its own
  }
  const auto types = segment_dtypes();
  for (const auto& k : list) {
    INFO(k.name);
    CHECK(!k.note.empty());
    CHECK(!k.layouts.empty());
    CHECK(k.ops.size() == kFoldCount);
    for (Op op : fold_ops) CHECK(std::find(k.ops.begin(), k.ops.end(), op) != k.ops.end());
    for (DType t : k.types) CHECK(std::find(types.begin(), types.end(), t) != types.end());
    CHECK(k.exact);  // exact sums go through pieces, whatever the strategy
  }
  // The entry's list is the Reducer's: names, layouts and types.
  const auto from_reducer = reducer().segment_kernels();
  REQUIRE(from_reducer.size() == list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    CHECK(from_reducer[i].name == list[i].name);
    CHECK(from_reducer[i].layouts == list[i].layouts);
    CHECK(from_reducer[i].types == list[i].types);
  }
}

TEST_CASE("small shapes: every strategy, type, axis and order against the reference; every op with every type") {
  // Each (shape, axis, type) takes one op, turning with the shape, axis and type, so that every
  // op meets every type and every shape and axis. The whole product builds four times the
  // kernels: where they compile at run time it took 299 s (PoCL 3.1, cold kernel cache, a 2-core
  // EPYC) for no pair of (shape, op, type, strategy) that this does not hold.
  for (std::size_t k = 0; k < kSmallShapes.size(); ++k) {
    const MatrixShape& shape = kSmallShapes[k];
    for (int axis : {0, 1}) {
      const auto kind = axis_layout(shape, axis).kind;
      for (const auto& [t, op] : typed_ops(2 * k + static_cast<std::size_t>(axis))) {
        const HostBuffer data = matrix_data(t, shape, op, 7 + axis_layout(shape, 0).span());
        const SegmentReference ref = reference_of(data, shape, axis, op);
        for (const auto& s : strategies(kind)) check_axis(data, shape, axis, op, s, {}, &ref);
      }
    }
  }
}

TEST_CASE("rows: 1 to 300007 elements, packed, strided and Fortran-order rows, rows of nothing, no rows") {
  // Rows of 1, 2, 3, 4, 8 and 16 elements (one lane, vector loads, packed rows), lengths around
  // the group sizes, warp- and block-sized rows, rows of several blocks or work-groups, strides
  // that break alignment, contiguous columns of a Fortran-order matrix (axis 0), no rows, and
  // rows of no elements.
  check_axes({{{999, 4}, 1}, {{40, 517, 520}, 1}, {{2, 50000}, 1}},
             {{{1000, 1}, 1},     {{2000, 1}, 1},        {{777, 2}, 1},       {{3000, 2}, 1},   {{500, 3}, 1},
              {{1001, 3, 5}, 1},  {{513, 4}, 1},         {{300, 8}, 1},       {{700, 8}, 1},    {{513, 16}, 1},
              {{257, 33}, 1},     {{301, 33, 40}, 1},    {{129, 128}, 1},     {{70, 1000}, 1},  {{64, 1000}, 1},
              {{17, 4099, 4100}, 1}, {{3, 70000}, 1},    {{3, 70001}, 1},     {{2, 300001}, 1}, {{1, 300007}, 1},
              {{100, 5, 7}, 1},   {{64, 2, 6}, 1},       {{9, 129, 0, Order::Fortran}, 0}, {{0, 10}, 1}, {{10, 0}, 1}},
             11);
}

TEST_CASE("columns: narrow and wide, 16 bytes a lane, row bands, strided and Fortran-order, no columns") {
  // Narrow: 1, 2, 3, 4 and 13 columns (not dividing 32), 16 (shuffles), 40 (packs of 4); wide:
  // 100 to 100000 columns, tall ones split in bands; strides; rows of a Fortran-order matrix
  // (axis 1) are columns too; no columns; columns of no elements.
  check_axes({{{777, 4}, 0}, {{300, 301}, 0}},
             {{{2000, 1}, 0},     {{70000, 2}, 0},     {{1000, 3}, 0},   {{999, 3}, 0},     {{1000, 4}, 0},
              {{5000, 4}, 0},     {{100, 10, 13}, 0},  {{3000, 16}, 0},  {{20000, 40}, 0},  {{33, 7, 9}, 0},
              {{3, 5}, 0},        {{64, 64}, 0},       {{100, 100}, 0},  {{257, 1000, 1003}, 0},
              {{50, 1001}, 0},    {{8, 7000}, 0},      {{5, 100000}, 0}, {{30000, 130}, 0},
              {{200, 33, 0, Order::Fortran}, 1}, {{100, 130, 0, Order::Fortran}, 1}, {{0, 7}, 0}, {{7, 0}, 0}},
             12);
}

TEST_CASE("large shapes: 3x1000003, 1000003x3, 1024x1024 and a strided one, every strategy") {
  // Each shape with two (type, op) pairs, so that the shapes cover f32, i32 and f64 and sum and
  // max between them; the cases above take every op and type through every strategy. On OpenCL
  // each strategy but auto takes one pair of each shape, turning with the strategy and the entry,
  // so that the host and device entries between them run every pair with every strategy and each
  // runs every strategy on every shape: a work-group a row over 1000003 rows takes 9 s a call on
  // PoCL (2-core EPYC).
  struct Case {
    MatrixShape shape;
    std::pair<DType, Op> runs[2];
  };
  const Case cases[] = {{{3, 1000003, 0, Order::C}, {{DType::F32, Op::Sum}, {DType::I32, Op::Max}}},
                        {{1000003, 3, 0, Order::C}, {{DType::F64, Op::Sum}, {DType::F32, Op::Max}}},
                        {{1024, 1024, 0, Order::C}, {{DType::I32, Op::Sum}, {DType::F64, Op::Max}}},
                        {{1024, 1000, 1027, Order::Fortran}, {{DType::F32, Op::Sum}, {DType::I32, Op::Max}}}};
  const bool halve = g_backend == "opencl";
  const std::size_t turn = entry().name() == "host" ? 0 : 1;
  for (const auto& c : cases)
    for (std::size_t p = 0; p < 2; ++p) {
      const auto [t, op] = c.runs[p];
      const HostBuffer data = generate(t, axis_layout(c.shape, 0).span(), dist_for(op), 11);
      for (int axis : {0, 1}) {
        const SegmentReference ref = reference_of(data, c.shape, axis, op);
        const auto names = strategies(axis_layout(c.shape, axis).kind);
        for (std::size_t si = 0; si < names.size(); ++si)
          if (!halve || si == 0 || (si + p + turn) % 2 == 0) check_axis(data, c.shape, axis, op, names[si], {}, &ref);
      }
    }
}

TEST_CASE("segments: none, empty, single elements, even and lognormal lengths, empty beside huge, every bin") {
  struct Case {
    std::string name;
    std::vector<u64> lengths;
  };
  std::vector<u64> alternating;
  for (int i = 0; i < 8; ++i) alternating.insert(alternating.end(), {0, 0, 300001, 1, 0});
  const std::vector<Case> typed = {{"no segments", {}},
                                   {"all empty", std::vector<u64>(1000, 0)},
                                   {"all of one element", std::vector<u64>(5000, 1)},
                                   {"random 0..40", random_lengths(20000, 40, 1)},
                                   {"random 0..3000", random_lengths(700, 3000, 2)},
                                   {"empty alternating with huge", alternating}};
  std::vector<u64> huge(300, 3);
  huge[150] = (u64{1} << 20) + 3;
  std::vector<u64> tail = random_lengths(2000, 6, 4);
  tail.insert(tail.end(), {0, 0, 40000, 0, 1, 70001});
  const std::vector<Case> lengths = {{"all of 7", std::vector<u64>(5000, 7)},
                                     {"all of 700", std::vector<u64>(800, 700)},
                                     {"3 of 500000", std::vector<u64>(3, 500000)},
                                     {"lognormal, mean ~64", lognormal_lengths(4000, 3.66, 1.0, 3)},
                                     {"mixed: every bin", mixed_lengths(5)},
                                     {"one of 2^20+3 among short ones", huge},
                                     {"short ones, then 40000 and 70001", tail}};
  const auto names = strategies(SegmentKind::Offsets);
  const auto run = [&](const Case& c, const std::vector<std::pair<DType, Op>>& pairs) {
    const auto offsets = offsets_of(c.lengths, 3);  // the first segment starts past the input's start
    for (const auto& [t, op] : pairs) {
      const HostBuffer data = generate(t, static_cast<u64>(offsets.back()) + 5, dist_for(op), 3);
      const SegmentReference ref = reference_of(data, offsets, op);
      for (const auto& s : names) check_offsets_run(data, offsets, op, s, c.name, {}, &ref);
    }
  };
  // Each case of `typed` takes each type with one op, the op turning with the case: over the six
  // cases every (op, type) pair, and every case meets every type and op. Those of `lengths` take
  // length_ops.
  for (std::size_t k = 0; k < typed.size(); ++k) run(typed[k], typed_ops(k));
  for (const Case& c : lengths) run(c, length_ops());
  const auto longest = offsets_of({2, (1u << 24) + 3, 0, 5});
  for (DType t : {DType::F32, DType::I64}) {
    const HostBuffer data = generate(t, static_cast<u64>(longest.back()), Dist::Uniform, 5);
    const SegmentReference ref = reference_of(data, longest, Op::Sum);
    for (const auto& s : names) check_offsets_run(data, longest, Op::Sum, s, "2^24+3", {}, &ref);
  }
}

TEST_CASE("empty segments: the identity of every op; a sum of -0 terms is -0, an empty sum +0") {
  // Each strategy with the folds float_ops gives each type: every fold meets every strategy.
  const std::vector<i64> offsets = {0, 0, 3, 3, 5, 5, 5, 100000, 100000};
  const auto names = strategies(SegmentKind::Offsets);
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
  for (DType t : types) {
    HostBuffer data = generate(t, 100000, Dist::Uniform, 15);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* x = data.as<T>();
      x[3] = x[4] = -T(0);  // segment 3: two -0 terms
    });
    for (std::size_t si = 0; si < names.size(); ++si) {
      for (Op op : float_ops(t, si)) {
        const SegmentedResult got = check_offsets_run(data, offsets, op, names[si], "empty segments");
        const std::string what = what_of(names[si], op, t, "empty segments");
        for (u64 i : {0, 2, 4, 5, 7}) CHECK_MESSAGE(got.value(i).same_bits(empty_segment_value(op, t)), what, " ", i);
        if (op == Op::Sum) CHECK_MESSAGE(std::signbit(got.value(3).f), what);
      }
    }
  }
  // Segments of -0 terms alone, short and long, and an empty one between them.
  const std::vector<float> zeros(300, -0.0f);
  HostBuffer z(DType::F32, zeros.size());
  std::memcpy(z.data(), zeros.data(), z.bytes());
  for (const auto& s : names) {
    const SegmentedResult got = check_offsets_run(z, {0, 3, 3, 300}, Op::Sum, s, "-0 terms");
    CHECK_MESSAGE(std::signbit(got.values.as<float>()[0]), s);
    CHECK_MESSAGE((got.values.as<float>()[1] == 0.0f && !std::signbit(got.values.as<float>()[1])), s);
    CHECK_MESSAGE(std::signbit(got.values.as<float>()[2]), s);
  }
}

TEST_CASE("NaN in one segment makes its min and max NaN, and no other") {
  // Each strategy with min or max where float_ops gives them: min and max meet every strategy.
  const std::vector<i64> offsets = offsets_of({5, 40, 700, 9000, 80000});
  const auto names = strategies(SegmentKind::Offsets);
  for (const DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    HostBuffer data = generate(t, static_cast<u64>(offsets.back()), Dist::Uniform, 16);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* x = data.as<T>();
      for (std::size_t s = 0; s + 1 < offsets.size(); s += 2)
        x[offsets[s] + (offsets[s + 1] - offsets[s]) / 2] = std::numeric_limits<T>::quiet_NaN();
    });
    for (std::size_t si = 0; si < names.size(); ++si)
      for (const Op op : float_ops(t, si)) {
        if (op != Op::Min && op != Op::Max) continue;
        const SegmentedResult got = check_offsets_run(data, offsets, op, names[si], "NaN");
        for (u64 s = 0; s + 1 < offsets.size(); ++s)
          CHECK_MESSAGE(std::isnan(got.value(s).f) == (s % 2 == 0), what_of(names[si], op, t, "NaN"), " ", s);
      }
  }
}

TEST_CASE("special values per segment: NaN, infinities, -0, type limits") {
  const auto offsets = offsets_of(random_lengths(3000, 12, 9));
  const auto types = loop_dtypes();
  const auto names = strategies(SegmentKind::Offsets);
  for (std::size_t ti = 0; ti < types.size(); ++ti)
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const DType t = types[ti];
      const HostBuffer data = generate(t, static_cast<u64>(offsets.back()), Dist::Special, seed);
      const std::string name = "special seed " + std::to_string(seed);
      // The special families give every order one result over the whole input only: within a
      // segment, a plain float sum may overflow to -inf before it meets +inf, and a product may
      // overflow or meet 0 * inf in one order and not another. So float sums run in exact mode
      // (one answer in any order) and products are left out.
      RunOptions exact;
      exact.exact = true;
      const SegmentReference refs[] = {reference_of(data, offsets, Op::Sum), reference_of(data, offsets, Op::Min),
                                       reference_of(data, offsets, Op::Max)};
      for (std::size_t si = 0; si < names.size(); ++si) {
        if (is_float(t)) {
          // f32 and f64: min, max and the exact sum on every strategy.
          check_offsets_run(data, offsets, Op::Min, names[si], name, {}, &refs[1]);
          check_offsets_run(data, offsets, Op::Max, names[si], name, {}, &refs[2]);
          check_offsets_run(data, offsets, Op::Sum, names[si], name + ", exact", exact, &refs[0]);
        } else {
          // Integers: each (type, strategy) with one of sum, min and max, turning with both:
          // every pair of the three meets, at a third of the kernel builds.
          const std::size_t which = (ti + si) % 3;
          check_offsets_run(data, offsets, std::array{Op::Sum, Op::Min, Op::Max}[which], names[si], name, {}, &refs[which]);
        }
      }
    }
}

TEST_CASE("f16 and bf16: every strategy and fold on rows, columns and offsets; special values; exact sums") {
  // Sums and products of f16 and bf16 accumulate in f32 and return f32; min and max return the
  // input type. Each strategy takes the folds float_ops gives it (every fold on auto); where
  // kernels compile at run time (PoCL: about 0.5 s a kernel), every fold on every strategy would
  // build several times the kernels.
  // Offsets: short segments, empty ones, one for a work-group and one longer than an exact piece
  // (2^16 elements) that binned and multigroup split; the first starting past the input's start.
  std::vector<u64> lengths = random_lengths(600, 40, 30);
  const std::vector<u64> long_ones{0, 5000, 0, 70001, 0};
  lengths.insert(lengths.begin() + 300, long_ones.begin(), long_ones.end());
  const auto offsets = offsets_of(lengths, 3);
  const auto n = static_cast<u64>(offsets.back()) + 2;
  // Dense rows of 8 (16-byte loads, packed rows, rows folded together on CPUs), rows of 3, long
  // strided rows (split over blocks and work-groups), 24 columns (16-byte loads across them), and
  // rows of no elements.
  const Axis axes[] = {{{64, 8}, 1}, {{200, 3}, 1}, {{3, 40001, 40003}, 1}, {{300, 24}, 0}, {{6, 0}, 1}};
  const auto run = [&](DType t, SegmentKind kind, Op op, const std::string& strategy) {
    const HostBuffer data = generate(t, n, dist_for(op), 40);
    if (kind == SegmentKind::Offsets) {
      check_offsets_run(data, offsets, op, strategy, "short, empty and long");
      return;
    }
    for (const Axis& a : axes) {
      if (axis_layout(a.shape, a.axis).kind != kind) continue;
      check_axis(matrix_data(t, a.shape, op, 41), a.shape, a.axis, op, strategy);
    }
  };
  const DType halves[] = {DType::F16, DType::BF16};
  for (std::size_t ti = 0; ti < std::size(halves); ++ti) {
    const DType t = halves[ti];
    for (SegmentKind kind : {SegmentKind::Offsets, SegmentKind::Rows, SegmentKind::Columns}) {
      const auto names = strategies(kind);
      for (std::size_t si = 0; si < names.size(); ++si)
        for (Op op : float_ops(t, si)) run(t, kind, op, names[si]);
    }
    // Special values (NaN, infinities, -0, subnormals, the largest finite values): min and max by
    // the strategies that take them above, and sums in exact mode (the one answer in any order;
    // products have none).
    const auto offset_strategies = strategies(SegmentKind::Offsets);
    RunOptions exact;
    exact.exact = true;
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const HostBuffer data = generate(t, n, Dist::Special, seed);
      const std::string name = "special seed " + std::to_string(seed);
      for (std::size_t si = 0; si < offset_strategies.size(); ++si)
        for (Op op : float_ops(t, si))
          if (op == Op::Min || op == Op::Max) check_offsets_run(data, offsets, op, offset_strategies[si], name);
      check_offsets_run(data, offsets, Op::Sum, "auto", name + ", exact", exact);
    }
    // Exact sums per segment: bit for bit, rows, columns and offsets.
    std::uint64_t most = n;
    for (const Axis& a : axes) most = std::max(most, axis_layout(a.shape, 0).span());
    for (Dist d : {Dist::Wide, Dist::Cancel}) {
      const HostBuffer data = generate(t, most, d, 42);
      check_offsets_run(data, offsets, Op::Sum, "auto", "exact " + std::string(to_string(d)), exact);
      for (const Axis& a : axes) check_axis(data, a.shape, a.axis, Op::Sum, "auto", exact);
    }
    // The result types; a segment of -0 terms sums to -0, an empty one to +0, and the min and max
    // of an empty one are the input type's infinities.
    const HostBuffer zeros = generate(t, 3, Dist::Special, 4);  // family 4: -0 alone
    const std::vector<i64> o{0, 3, 3};
    for (Op op : fold_ops) {
      const SegmentedResult z = entry().reduce_segments(zeros, o, op);
      REQUIRE(z.values.type() == (op == Op::Sum || op == Op::Prod ? DType::F32 : t));
      CHECK(z.value(1).same_bits(empty_segment_value(op, t)));
      if (op == Op::Sum) CHECK(std::signbit(z.values.as<float>()[0]));
    }
    CHECK(std::isinf(empty_segment_value(Op::Min, t).f));
    // f16 and bf16 have no native accumulator.
    RunOptions native;
    native.accumulator = Accumulator::Native;
    CHECK_THROWS_WITH_AS(entry().reduce_segments(zeros, o, Op::Sum, native),
                         doctest::Contains("native accumulator does not apply"), InvalidArgument);
  }
}

TEST_CASE("i32 sums accumulate in i64 by default; the native accumulator wraps; every strategy") {
  HostBuffer big(DType::I32, 64);
  std::fill_n(big.as<std::int32_t>(), 64, 2000000000);
  const std::vector<i64> o{0, 32, 64};
  const SegmentedResult wide = entry().reduce_segments(big, o, Op::Sum);
  REQUIRE(wide.values.type() == DType::I64);
  CHECK(wide.values.as<std::int64_t>()[0] == 64000000000LL);
  RunOptions native;
  native.accumulator = Accumulator::Native;
  const SegmentedResult wrapped = entry().reduce_segments(big, o, Op::Sum, native);
  REQUIRE(wrapped.values.type() == DType::I32);
  CHECK(wrapped.values.as<std::int32_t>()[1] == static_cast<std::int32_t>(static_cast<std::uint32_t>(64000000000ULL)));
  // Every strategy, both accumulators: rows of 3000 times the largest i32, and segments of i32
  // values of every magnitude.
  const MatrixShape shape{40, 3000};
  HostBuffer largest(DType::I32, shape.rows * shape.cols);
  std::fill_n(largest.as<std::int32_t>(), largest.size(), std::numeric_limits<std::int32_t>::max());
  const auto offsets = offsets_of(random_lengths(1500, 70, 8));
  const HostBuffer spread = generate(DType::I32, static_cast<u64>(offsets.back()), Dist::Wide, 10);
  for (const Accumulator acc : {Accumulator::Wide, Accumulator::Native}) {
    RunOptions a;
    a.accumulator = acc;
    const DType want = acc == Accumulator::Wide ? DType::I64 : DType::I32;
    const SegmentReference rows = reference_of(largest, shape, 1, Op::Sum, acc);
    const SegmentReference segments = reference_of(spread, offsets, Op::Sum, acc);
    for (const auto& s : strategies(SegmentKind::Rows))
      CHECK(check_axis(largest, shape, 1, Op::Sum, s, a, &rows).values.type() == want);
    for (const auto& s : strategies(SegmentKind::Offsets))
      CHECK(check_offsets_run(spread, offsets, Op::Sum, s, "wide i32", a, &segments).values.type() == want);
  }
}

TEST_CASE("exact sums per segment: bit for bit the host ExactSum, rows, columns and offsets, every strategy") {
  // Each value is checked twice: against reference_segments (check_segments, exact), and against
  // ExactSum over its segment on the host (exact_sums), bit for bit.
  RunOptions exact;
  exact.exact = true;
  const auto expect_exact = [](const SegmentedResult& got, const HostBuffer& want, const std::string& what) {
    REQUIRE(got.values.type() == want.type());
    REQUIRE(got.count() == want.size());
    u64 bad = 0;
    for (u64 i = 0; i < want.size(); ++i)
      if (!got.value(i).same_bits(element(want, i)) && bad++ == 0)
        FAIL_CHECK(what, ": value ", i, " is ", got.value(i).to_string(), ", the exact sum ", element(want, i).to_string());
    CHECK_MESSAGE(bad == 0, what, ": ", bad, " values differ");
  };
  // Strategies: in exact mode each runs the same pieces and names itself, so where kernels
  // compile at run time every strategy runs on the cases marked `every` (f32 and f64 on short
  // segments, strided rows and columns and a Fortran-order matrix; wide values in long segments),
  // auto on the others. On CUDA every strategy everywhere.
  const auto run_on = [&](SegmentKind kind, bool every) {
    return every || every_pair() ? strategies(kind) : std::vector<std::string>{"auto"};
  };
  // Segments of up to 200 elements; segments longer than a piece (2^16 elements), whose pieces'
  // states merge, among empty and short ones.
  struct OffsetsCase {
    std::string name;
    std::vector<i64> offsets;
  };
  const OffsetsCase offset_cases[] = {{"random 0..200", offsets_of(random_lengths(2000, 200, 4))},
                                      {"pieces", offsets_of({0, 1, 7, 65536, 65537, 200003, 3, 0, 1000}, 1)},
                                      {"pieces 2", offsets_of({0, 1, 2, 31, 500, 70000, 0, 140001, 3})}};
  // Strided rows and columns and a Fortran-order matrix (every strategy), rows, rows and columns
  // longer than a piece, a small Fortran-order matrix.
  const std::vector<Axis> every_axes = {{{300, 77, 80}, 0}, {{300, 77, 80}, 1}, {{77, 300, 0, Order::Fortran}, 0},
                             {{77, 300, 0, Order::Fortran}, 1}};
  const std::vector<Axis> auto_axes = {{{300, 70}, 1}, {{3, 140000}, 1}, {{70000, 3}, 0}, {{50, 60, 0, Order::Fortran}, 0},
                            {{50, 60, 0, Order::Fortran}, 1}};
  // 140000 columns of 3 and 70000 rows of 3: many short values, each rounded once; auto on
  // cancelling sums.
  const std::vector<Axis> many = {{{3, 140000}, 0}, {{70000, 3}, 1}};
  // One input per type and distribution, as long as the longest case needs: each case reads its
  // first elements.
  u64 most = 0;
  for (const auto& c : offset_cases) most = std::max(most, static_cast<u64>(c.offsets.back()));
  for (const auto* axes : {&every_axes, &auto_axes, &many})
    for (const Axis& a : *axes) most = std::max(most, axis_layout(a.shape, 0).span());
  const auto run_axis = [&](const Axis& a, const HostBuffer& data, Dist d, const std::vector<std::string>& names) {
    const DType t = data.type();
    const SegmentReference ref = reference_of(data, a.shape, a.axis, Op::Sum);
    const HostBuffer want = exact_sums(data, axis_layout(a.shape, a.axis));
    for (const auto& s : names)
      expect_exact(check_axis(data, a.shape, a.axis, Op::Sum, s, exact, &ref), want,
                   what_of(s, Op::Sum, t, "exact " + std::string(to_string(d)) + " " + shape_text(a.shape, a.axis)));
  };
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (Dist d : {Dist::Wide, Dist::Cancel, Dist::Special, Dist::Uniform}) {
      // f16 and bf16: Uniform adds nothing that Wide and Cancel do not.
      if (is_half(t) && d == Dist::Uniform) continue;
      const std::string name = "exact " + std::string(to_string(d));
      const HostBuffer data = generate(t, most, d, 21);
      for (const auto& c : offset_cases) {
        const bool every = c.name == "random 0..200" ? !is_half(t) : c.name == "pieces" && d == Dist::Wide;
        const SegmentReference ref = reference_of(data, c.offsets, Op::Sum);
        const HostBuffer want = exact_sums(data, offsets_layout(c.offsets));
        for (const auto& s : run_on(SegmentKind::Offsets, every))
          expect_exact(check_offsets_run(data, c.offsets, Op::Sum, s, name + " " + c.name, exact, &ref), want,
                       what_of(s, Op::Sum, t, name + " " + c.name));
      }
      for (const Axis& a : every_axes) run_axis(a, data, d, run_on(axis_layout(a.shape, a.axis).kind, !is_half(t)));
      for (const Axis& a : auto_axes) run_axis(a, data, d, run_on(axis_layout(a.shape, a.axis).kind, false));
      if (d == Dist::Cancel)
        for (const Axis& a : many) run_axis(a, data, d, {"auto"});
    }
  }
}

TEST_CASE("bad arguments: one InvalidArgument naming the problem and its position") {
  const HostBuffer x = generate(DType::F32, 10, Dist::Uniform, 22);
  const auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no exception";
  };
  const auto segments = [&](std::vector<i64> offsets, const RunOptions& o = {}, Op op = Op::Sum) {
    return message([&] { entry().reduce_segments(x, offsets, op, o); });
  };
  const auto axis = [&](const MatrixShape& shape, int a, const RunOptions& o = {}, Op op = Op::Sum) {
    return message([&] { entry().reduce_axis(x, shape, a, op, o); });
  };
  RunOptions exact;
  exact.exact = true;
  // Offsets that decrease, start below 0 or end past the input, in plain and exact mode.
  for (const RunOptions& o : {RunOptions{}, exact}) {
    CAPTURE(o.exact);
    CHECK(segments({0, 5, 3, 10}, o).find("position 2") != std::string::npos);
    CHECK(segments({0, 5, 11}, o).find("offsets[2] is 11") != std::string::npos);
    CHECK(segments({0, 5, 11}, o).find("past") != std::string::npos);
    CHECK(segments({-1, 5}, o).find("offsets[0] is -1") != std::string::npos);
    CHECK(segments({-1, 5}, o).find("negative") != std::string::npos);
  }
  // Shapes: a stride below the row length, a size that overflows, an axis other than 0 and 1.
  CHECK(axis({2, 5, 4}, 1).find("stride") != std::string::npos);
  CHECK(axis({2, 5, 3}, 1).find("stride") != std::string::npos);
  CHECK(axis({1ull << 40, 1ull << 40}, 1).find("overflows") != std::string::npos);
  CHECK(axis({2, 5}, 2).find("axis 2") != std::string::npos);
  CHECK(axis({2, 5}, -1).find("axis -1") != std::string::npos);
  // An unknown strategy: the message lists the known ones.
  RunOptions unknown;
  unknown.kernel = "no_such_strategy";
  const std::string known = axis({2, 5}, 1, unknown);
  CHECK(known.find("known") != std::string::npos);
  for (const auto& k : entry().segment_kernels()) CHECK_MESSAGE(known.find(k.name) != std::string::npos, known);
  CHECK(segments({0, 4, 10}, unknown).find("no_such_strategy") != std::string::npos);
  // A strategy named for a layout it does not reduce.
  int refused = 0;
  for (const auto& k : entry().segment_kernels()) {
    RunOptions o;
    o.kernel = k.name;
    for (SegmentKind kind : {SegmentKind::Columns, SegmentKind::Rows, SegmentKind::Offsets}) {
      if (k.reduces(kind)) continue;
      ++refused;
      const std::string m = kind == SegmentKind::Offsets ? segments({0, 4, 10}, o)
                                                         : axis({2, 5}, kind == SegmentKind::Rows ? 1 : 0, o);
      CHECK_MESSAGE(m.find("does not reduce") != std::string::npos, k.name, ": ", m);
    }
  }
  CHECK(refused > 0);  // the column strategies reduce no rows, at least
  // A float product has no exact mode.
  CHECK_THROWS_AS(entry().reduce_segments(x, std::vector<i64>{0, 4, 10}, Op::Prod, exact), InvalidArgument);
  CHECK_THROWS_AS(entry().reduce_axis(x, MatrixShape{2, 5}, 1, Op::Prod, exact), InvalidArgument);
}

TEST_CASE("the pair ops have no segmented kernels: one clear error") {
  const std::vector<i64> o{0, 2, 4};
  const HostBuffer data = generate(DType::F32, 4, Dist::Uniform, 1);
  for (Op op : pair_ops) {
    const std::string message = "does not support " + std::string(to_string(op)) + " on f32";
    CHECK_THROWS_WITH_AS(entry().reduce_segments(data, o, op), doctest::Contains(message.c_str()), InvalidArgument);
    CHECK_THROWS_WITH_AS(entry().reduce_axis(data, MatrixShape{2, 2}, 1, op), doctest::Contains(message.c_str()),
                         InvalidArgument);
  }
}

TEST_CASE("the record: elements, op, type, strategy, launches, repeats, times, bytes per second, rounding depth") {
  const MatrixShape shapes[] = {{64, 64}, {4096, 2}, {4096, 16}, {2048, 1000}, {1200, 5000}, {3, 400000}};
  for (const MatrixShape& shape : shapes) {
    const HostBuffer data = generate(DType::F32, shape.rows * shape.cols, Dist::Uniform, 26);
    RunOptions o;
    o.warmup = 1;
    o.repeat = 3;
    const SegmentedResult s = check_axis(data, shape, 1, Op::Sum, "auto", o);
    const Result& r = s.record;
    INFO(shape_text(shape, 1));
    CHECK(r.device == reducer().device());
    CHECK(r.kernel_ms > 0);
    CHECK(r.bytes_per_s > 0);
    CHECK(s.rounding_depth > 0);
    CHECK(!r.finish.empty());
    // Bytes per second: the input read once and the values written, over the time.
    const double ms = r.total_ms > 0 ? r.total_ms : r.kernel_ms;
    const double bytes = static_cast<double>(shape.rows * shape.cols * 4 + shape.rows * 4);
    CHECK(r.bytes_per_s * ms * 1e-3 == doctest::Approx(bytes).epsilon(1e-9));
  }
}

TEST_SUITE("host entry") {
  TEST_CASE("inputs cut into jobs, and streamed sources, give the whole input's values") {
    RunOptions small;
    small.chunk_elements = 1000;  // every job at most 1000 elements: long segments split, columns in tiles
    const auto offsets = offsets_of({5, 0, 2500, 999, 1000, 1001, 0, 3, 4000});
    const MatrixShape tall{5000, 3, 4, Order::C}, wide{3, 5000, 0, Order::C};
    for (DType t : {DType::F32, DType::I32, DType::F64})
      for (Op op : fold_ops)
        for (bool exact : {false, true}) {
          if (exact && !(op == Op::Sum && is_float(t))) continue;
          RunOptions o = small;
          o.exact = exact;
          const HostBuffer data = generate(t, 20000, dist_for(op), 17);
          check_offsets_run(data, offsets, op, "auto", "jobs of 1000", o);
          for (const auto& shape : {tall, wide})
            for (int axis : {0, 1}) check_axis(data, shape, axis, op, "auto", o);
          // The same through ChunkSource::read alone.
          ReadOnlySource stream(data);
          const SegmentedResult got = reducer().reduce_segments(stream, offsets, op, o);
          CHECK(check_segments(got, reference_segments(data.view(), offsets_layout(offsets), op), exact).ok());
          CHECK(got.record.total_ms > 0);
          for (int axis : {0, 1}) {
            const SegmentedResult a = reducer().reduce_axis(stream, tall, axis, op, o);
            CHECK_MESSAGE(check_segments(a, reference_segments(data.view(), axis_layout(tall, axis), op), exact).ok(),
                          "streamed axis ", axis);
          }
        }
  }

  TEST_CASE("bad host arguments: no offsets, null data") {
    const std::vector<float> x(10, 1.0f);
    CHECK_THROWS_WITH_AS(reducer().reduce_segments(HostArray::of(std::span<const float>(x)), std::vector<i64>{}, Op::Sum),
                         doctest::Contains("at least one"), InvalidArgument);
    CHECK_THROWS_AS(reducer().reduce_segments(HostArray{nullptr, 10, DType::F32}, std::vector<i64>{0, 10}, Op::Sum),
                    InvalidArgument);
    CHECK_THROWS_AS(reducer().reduce_axis(HostMatrix{nullptr, DType::F32, {2, 5}}, 1, Op::Sum), InvalidArgument);
  }
}

// The entry named by --xr-entry (host: the backend's Reducer on host arrays; device: the backend's
// device-memory API), opened around the doctest run; the host-entry suite runs on the host entry alone.
int main(int argc, char** argv) {
  std::string entry_name = "host";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--xr-entry=", 11) == 0) entry_name = argv[i] + 11;
    else args.push_back(argv[i]);
  }
  if (entry_name != "host" && entry_name != "device") {
    std::printf("--xr-entry=%s: host or device\n", entry_name.c_str());
    return 2;
  }
  return xr_suite::run(static_cast<int>(args.size()), args.data(), g_backend, g_options, [&](doctest::Context& context) {
    g_reducer = make_reducer(g_backend, g_options);
    const auto skip = [&](const char* why) {
      std::printf("SKIP %s %s entry: %s\n", g_backend.c_str(), entry_name.c_str(), why);
      return 77;
    };
    if (entry_name == "host") {
      g_entry = std::make_unique<HostEntry>(*g_reducer);
      const int rc = context.run();
      g_entry.reset();
      g_reducer.reset();
      return rc;
    }
    context.addFilter("test-suite-exclude", "host entry");
    if (g_backend == "cuda") {
#ifdef XR_TEST_CUDA_ENTRY
      // The device make_reducer("cuda", options) takes: by index, or the first whose name holds the text.
      const std::string& want = g_options.device;
      int device = 0;
      if (!want.empty() && std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        device = std::atoi(want.c_str());
      } else if (!want.empty()) {
        const auto devices = backend_status("cuda").devices;
        for (std::size_t d = devices.size(); d-- > 0;)
          if (devices[d].name.find(want) != std::string::npos) device = static_cast<int>(d);
      }
      if (cudaSetDevice(device) != cudaSuccess) return skip("cudaSetDevice failed");
      g_entry = std::make_unique<CudaEntry>();
      const int rc = context.run();
      g_entry.reset();
      g_reducer.reset();
      return rc;
#else
      return skip("built without the CUDA entry");
#endif
    }
    if (g_backend == "opencl") {
#ifdef XR_TEST_OPENCL_ENTRY
      // Buffers in a context of the device the Reducer took, calls on a profiling queue.
      const cl_device_id device = xr::ocl::detail::select_device(g_options).caps.device;
      cl_int rc = CL_SUCCESS;
      const cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
      cl_check(rc, "clCreateContext");
      const cl_command_queue queue = clCreateCommandQueue(ctx, device, CL_QUEUE_PROFILING_ENABLE, &rc);
      cl_check(rc, "clCreateCommandQueue");
      g_entry = std::make_unique<OpenclEntry>(ctx, queue, device);
      const int result = context.run();
      g_entry.reset();
      g_reducer.reset();
      clReleaseCommandQueue(queue);
      clReleaseContext(ctx);
      return result;
#else
      return skip("built without the OpenCL entry");
#endif
    }
    return skip("its reductions read host memory: no device entry");
  });
}
