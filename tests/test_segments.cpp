// Segmented reductions, one test body for every backend and entry point
// (`xr_test_segments --xr-backend=NAME [--xr-entry=host|device]`; exit 77 with the reason where
// NAME has no usable device, or no such entry here). The host entry reduces host arrays through
// the backend's Reducer; the device entries reduce copies in CUDA device memory or in cl_mem
// buffers through xr::cuda and xr::opencl (segment_entries.hpp). The body: rows and columns of
// 2-D arrays in both orders and with strides, CSR segments of every mix of lengths, every
// strategy, op and type, empty segments and rows, NaN and -0, exact sums per segment bit for bit,
// every bad-argument error, and the record; on the host entry alone, inputs cut into jobs and
// streamed sources. This file holds main() and the values of every layout; accumulators, exact
// sums, bad arguments and the record are in test_segments_contract.cpp; the checks both share
// in segment_suite.hpp.
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
#include "segment_suite.hpp"
#include "turning_ops.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"
#ifdef XR_TEST_OPENCL_ENTRY
#include "internal.hpp"  // select_device: the device make_reducer("opencl", options) takes
#endif

using namespace xr;
using namespace xr_seg;
using namespace xr_seg_suite;

TEST_CASE("the strategies: auto first, each with a note, its layouts, the folds or the pair ops; the Reducer's list") {
  const auto list = entry().segment_kernels();
  REQUIRE(!list.empty());
  CHECK(list.front().name == "auto");
  CHECK(list.front().kind == KernelKind::Auto);
  for (SegmentKind kind : {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets}) {
    CHECK(list.front().reduces(kind));
    CHECK(strategies(kind).size() >= 2);       // auto and at least one fold strategy of its own
    CHECK(pair_strategies(kind).size() >= 2);  // auto and one that takes the pair ops
  }
  const auto types = segment_dtypes();
  for (const auto& k : list) {
    INFO(k.name);
    CHECK(!k.note.empty());
    CHECK(!k.layouts.empty());
    // auto takes every op; each other strategy the folds (exact sums through pieces, whatever the
    // strategy) and the mapped ops, or the pair ops. A backend may leave the mapped ops out.
    const bool folds = std::find(k.ops.begin(), k.ops.end(), Op::Sum) != k.ops.end();
    const bool maps = std::find(k.ops.begin(), k.ops.end(), Op::SumSq) != k.ops.end();
    std::vector<Op> want;
    if (k.kind == KernelKind::Auto) want.assign(unmapped_ops.begin(), unmapped_ops.end());
    else if (folds) want.assign(fold_ops.begin(), fold_ops.end());
    else want.assign(pair_ops.begin(), pair_ops.end());
    if (maps) want.insert(want.end(), mapped_ops.begin(), mapped_ops.end());
    CHECK(k.ops.size() == want.size());
    for (Op op : want) CHECK(std::find(k.ops.begin(), k.ops.end(), op) != k.ops.end());
    for (DType t : k.types) CHECK(std::find(types.begin(), types.end(), t) != types.end());
    CHECK(k.exact == folds);
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
  for (std::size_t k = 0; k < lengths.size(); ++k) run(lengths[k], length_ops(k));
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

// Each segment's pair op against the whole-array reduction of its elements (reference_reduce, the
// oracle of the whole-array pair ops): the value, and the index or the max, bit for bit (-0 and +0
// differ); an empty segment has the identity and index -1.
void check_by_whole(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& l, Op op,
                    const std::string& what) {
  visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = data.as<T>();
    std::vector<T> seg;
    for (u64 i = 0; i < l.count; ++i) {
      seg.clear();
      if (l.kind == SegmentKind::Columns) {
        for (u64 r = 0; r < l.length; ++r) seg.push_back(x[i + r * l.stride]);
      } else {
        const u64 b = l.kind == SegmentKind::Rows ? i * l.stride : static_cast<u64>(l.offsets[i]);
        const u64 e = l.kind == SegmentKind::Rows ? b + l.length : static_cast<u64>(l.offsets[i + 1]);
        seg.assign(x + b, x + e);
      }
      INFO(what, ", segment ", i, " of ", seg.size());
      if (seg.empty()) {
        CHECK(got.value(i).same_bits(empty_segment_value(op, data.type())));
        if (is_indexed(op)) CHECK(got.index(i) == -1);
        else CHECK(got.maximum(i).same_bits(empty_segment_maximum(data.type())));
        continue;
      }
      const Reference whole = reference_reduce(HostArray::of(std::span<const T>(seg)), op);
      CHECK(got.value(i).same_bits(whole.value));
      if (is_indexed(op)) CHECK(got.index(i) == whole.index);
      else CHECK(got.maximum(i).same_bits(whole.maximum));
    }
  });
}

TEST_CASE("pair ops: argmin, argmax, minmax on rows and columns of every shape, order and stride; every type") {
  // Each (shape, axis, type) takes one pair op, turning with the shape, axis and type, so that
  // every pair op meets every type and every shape and axis, on each strategy that takes them
  // (auto and pairs): one program per (op, type) where kernels compile at run time.
  const auto types = segment_dtypes();
  for (std::size_t k = 0; k < kSmallShapes.size(); ++k) {
    const MatrixShape& shape = kSmallShapes[k];
    for (int axis : {0, 1}) {
      const SegmentLayout l = axis_layout(shape, axis);
      for (std::size_t ti = 0; ti < types.size(); ++ti) {
        const Op op = pair_ops[(2 * k + static_cast<std::size_t>(axis) + ti) % pair_ops.size()];
        // Integers in [-1000, 1000]: ties in every long row or column.
        const HostBuffer data = matrix_data(types[ti], shape, op, 50 + k);
        const SegmentReference ref = reference_of(data, shape, axis, op);
        for (const auto& s : pair_strategies(l.kind)) {
          const SegmentedResult got = check_axis(data, shape, axis, op, s, {}, &ref);
          check_by_whole(got, data, l, op, what_of(s, op, types[ti], shape_text(shape, axis)));
        }
      }
    }
  }
  // Longer rows and columns: several loads a lane, work-groups and warps, row bands.
  const Axis longer[] = {{{3, 70001}, 1}, {{300, 517, 520}, 1}, {{2000, 33}, 0}, {{70001, 3, 4}, 0}, {{40, 3000, 0, Order::Fortran}, 0}};
  for (std::size_t k = 0; k < std::size(longer); ++k)
    for (Op op : pair_ops) {
      const Axis& a = longer[k];
      const DType t = k % 2 ? DType::I32 : DType::F32;
      const HostBuffer data = matrix_data(t, a.shape, op, 60 + k);
      const SegmentReference ref = reference_of(data, a.shape, a.axis, op);
      for (const auto& s : pair_strategies(axis_layout(a.shape, a.axis).kind)) check_axis(data, a.shape, a.axis, op, s, {}, &ref);
    }
}

TEST_CASE("pair ops on CSR segments: empty segments, ties, the first NaN, -0 and +0, type limits") {
  // Segments (from element 2): empty, three zeros (+0, -0, +0), NaNs at 1 and 3, ties of the
  // least and the greatest value, -0 before +0, empty, one element, a long one with ties and a NaN
  // near its end, empty last.
  const std::vector<u64> lengths = {0, 3, 5, 12, 40, 0, 1, 5000, 0};
  const auto offsets = offsets_of(lengths, 2);
  const auto n = static_cast<u64>(offsets.back()) + 3;
  const SegmentLayout l = offsets_layout(offsets);
  const auto at = [&](std::size_t segment, u64 k) { return static_cast<u64>(offsets[segment]) + k; };
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::U8, DType::I64, DType::U64}) {
    HostBuffer data = generate(t, n, Dist::Uniform, 70);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* x = data.as<T>();
      const T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      x[at(3, 2)] = x[at(3, 7)] = lo;  // ties: the first of each extreme wins
      x[at(3, 4)] = x[at(3, 9)] = hi;
      x[at(7, 10)] = x[at(7, 4000)] = lo;
      x[at(7, 20)] = x[at(7, 4500)] = hi;
      if constexpr (is_float_v<T>) {
        x[at(1, 0)] = T(0.0f);
        x[at(1, 1)] = T(-0.0f);
        x[at(1, 2)] = T(0.0f);
        x[at(2, 1)] = x[at(2, 3)] = std::numeric_limits<T>::quiet_NaN();
        for (u64 k = 0; k < 40; ++k) x[at(4, k)] = T(k == 0 ? -0.0f : 0.0f);
        x[at(7, 4990)] = std::numeric_limits<T>::quiet_NaN();
      }
    });
    for (Op op : pair_ops) {
      const SegmentReference ref = reference_of(data, offsets, op);
      for (const auto& s : pair_strategies(SegmentKind::Offsets)) {
        const std::string what = what_of(s, op, t, "pair cases");
        const SegmentedResult got = check_offsets_run(data, offsets, op, s, "pair cases", {}, &ref);
        check_by_whole(got, data, l, op, what);
        if (!is_indexed(op)) continue;
        CHECK_MESSAGE(got.index(3) == (op == Op::ArgMin ? 2 : 4), what);
        CHECK_MESSAGE(got.index(7) == (is_float(t) ? 4990 : op == Op::ArgMin ? 10 : 20), what);
        if (is_float(t)) {
          CHECK_MESSAGE(got.index(1) == 0, what);
          CHECK_MESSAGE(!std::signbit(got.value(1).f), what);  // +0 first; -0 ties it
          CHECK_MESSAGE(got.index(2) == 1, what);              // the first NaN
          CHECK_MESSAGE(std::signbit(got.value(4).f), what);   // -0 first
        }
      }
    }
  }
  // Exact mode has nothing to do for the pair ops.
  RunOptions exact;
  exact.exact = true;
  const HostBuffer data = generate(DType::F32, 10, Dist::Uniform, 71);
  for (Op op : pair_ops)
    CHECK_THROWS_WITH_AS(entry().reduce_segments(data, std::vector<i64>{0, 4, 10}, op, exact),
                         doctest::Contains("exact mode covers sums"), InvalidArgument);
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

// The mapped ops per segment, on rows, columns and CSR segments, against the reference: a row, a
// column and a segment wholly NaN (nanmin and nanmax give NaN there, as NumPy's, nansum +0,
// count_nonzero its length, any and all 1), NaN and -0 elsewhere, empty segments (the fold's empty value).
// Floats from Dist::Uniform (a special family may overflow a sum in one order and not another);
// integers from Dist::Special (squares and |lowest| wrap, in any order alike). nanmin and nanmax of floats in device memory are refused: the all-NaN pass runs on the host.
TEST_CASE("mapped ops per segment: NaN, all-NaN, -0 and empty segments, on every strategy that takes them") {
  const MatrixShape shape{97, 13, 0, Order::C};
  const std::vector<i64> offsets{0, 0, 1, 4, 4, 37, 1000, 1003, 1261};
  const std::vector<DType> turning{DType::F32, DType::F64, DType::I8, DType::U8, DType::I32, DType::BF16};
  const auto data_of = [&](DType t) {
    HostBuffer data = generate(t, 97 * 13, is_float(t) ? Dist::Uniform : Dist::Special, 31);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (is_float_v<T>) {
        T* x = data.as<T>();
        const T nan = std::numeric_limits<T>::quiet_NaN();
        for (u64 c = 0; c < 13; ++c) x[5 * 13 + c] = nan;  // row 5
        for (u64 r = 0; r < 97; ++r) x[r * 13 + 3] = nan;   // column 3
        for (u64 i = 1; i < 4; ++i) x[i] = nan;             // segment 2, [1, 4)
        x[40] = nan;
        x[41] = T(-0.0f);
        x[1001] = T(-0.0f);
      }
    });
    return data;
  };
  const auto refused = [&](Op op, DType t) { return entry().name() != "host" && may_be_all_nan(op, t); };
  // The (op, type) pairs of a strategy: auto every mapped op with f32 and i32 (and f16 where
  // kernels compile ahead); each other strategy every mapped op with a type turning where kernels
  // compile ahead, else one (op, type), both turning (PoCL builds a program for each).
  std::size_t turn = 0;
  const auto runs_of = [&](std::size_t si) {
    std::vector<std::pair<Op, DType>> runs;
    for (std::size_t k = 0; k < mapped_ops.size(); ++k) {
      if (si == 0) {
        for (DType t : {DType::F32, DType::I32}) runs.emplace_back(mapped_ops[k], t);
        if (kernels_ahead()) runs.emplace_back(mapped_ops[k], DType::F16);
      } else if (kernels_ahead()) {
        runs.emplace_back(mapped_ops[k], turning[(turn + k) % turning.size()]);
      }
    }
    if (si > 0 && !kernels_ahead()) runs.emplace_back(mapped_ops[turn % mapped_ops.size()], turning[turn % turning.size()]);
    ++turn;
    return runs;
  };
  for (SegmentKind kind : {SegmentKind::Rows, SegmentKind::Columns, SegmentKind::Offsets}) {
    const auto names = xr_seg::strategies(entry().segment_kernels(), kind, Op::SumSq);
    for (std::size_t si = 0; si < names.size(); ++si)
      for (const auto& [op, t] : runs_of(si)) {
        const HostBuffer data = data_of(t);
        const std::string what = what_of(names[si], op, t, std::string(to_string(kind)));
        if (refused(op, t)) {
          const RunOptions named{.kernel = names[si]};
          const auto call = [&] {
            if (kind == SegmentKind::Offsets) return entry().reduce_segments(data, offsets, op, named);
            return entry().reduce_axis(data, shape, kind == SegmentKind::Rows ? 1 : 0, op, named);
          };
          CHECK_THROWS_WITH_AS(call(), doctest::Contains("may be all NaN"), InvalidArgument);
          continue;
        }
        SegmentedResult got;
        u64 nan_one = 0;  // the wholly NaN row, column or segment
        if (kind == SegmentKind::Offsets) {
          got = check_offsets_run(data, offsets, op, names[si], "mapped");
          nan_one = 2;
        } else {
          const int axis = kind == SegmentKind::Rows ? 1 : 0;
          got = check_axis(data, shape, axis, op, names[si]);
          nan_one = axis == 1 ? 5 : 3;
        }
        if (!is_float(t)) continue;
        const double v = got.value(nan_one).f;
        const u64 length = kind == SegmentKind::Offsets ? 3 : kind == SegmentKind::Rows ? 13 : 97;
        if (fold_of(op) != Op::Sum || map_of(op) != ElementMap::SkipNaN) {
          if (map_of(op) == ElementMap::NonZero)  // every element counts: the count, any and all 1
            CHECK_MESSAGE(got.value(nan_one).i == finalize_value(op, static_cast<i64>(length), length), what);
          else CHECK_MESSAGE(std::isnan(v), what, ": ", v);
        } else {
          CHECK_MESSAGE(v == 0, what, ": ", v);
        }
        if (kind == SegmentKind::Offsets) {  // segments 0 and 3 are empty: the fold's empty value
          for (u64 empty : {0, 3})
            CHECK_MESSAGE(got.value(empty).same_bits(empty_segment_value(op, t)), what, ": ", got.value(empty).f, " ",
                          got.value(empty).i);
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
      const cl_device_id device = xr::opencl::detail::select_device(g_options).caps.device;
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
