// Segmented reductions, the suite's second part (test_segments.cpp has its main() and the values of
// every layout and strategy): wide and native integer accumulators, exact sums per segment bit for
// bit, every bad-argument error, the pair ops refused, and the record.
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
#include "segment_suite.hpp"
#include "turning_ops.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
using namespace xr_seg;
using namespace xr_seg_suite;

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

// Exact means per segment: each segment's exact sum over its length, rounded once, every layout
// (part of the exact sums' case, whose shard it shares).
static void check_exact_means() {
  RunOptions exact;
  exact.exact = true;
  // Empty and single-element segments, one longer than a piece (its pieces' states merge before
  // the one division), rows and columns (strided and Fortran-order ones), wide values.
  const std::vector<i64> offsets = offsets_of({0, 1, 7, 300, 0, 65537, 2});
  const std::vector<Axis> axes = {{{300, 77, 80}, 0}, {{300, 77, 80}, 1}, {{40, 30, 0, Order::Fortran}, 0}, {{3, 5}, 1}};
  for (DType t : {DType::F32, DType::F64, DType::F16}) {
    const HostBuffer data = generate(t, static_cast<u64>(offsets.back()), Dist::Wide, 31);
    const SegmentReference ref = reference_of(data, offsets, Op::Mean);
    const SegmentedResult got = check_offsets_run(data, offsets, Op::Mean, "auto", "exact mean", exact, &ref);
    CHECK(std::isnan(got.value(0).to_double()));  // empty: 0 / 0
    CHECK(std::isnan(got.value(4).to_double()));
    for (const Axis& a : axes) check_axis(data, a.shape, a.axis, Op::Mean, "auto", exact);
  }
  CHECK_THROWS_WITH_AS(entry().reduce_segments(generate(DType::I32, 10, Dist::Uniform, 1), std::vector<i64>{0, 10}, Op::Mean, exact),
                       doctest::Contains("has no exact mode"), InvalidArgument);
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
    return every || kernels_ahead() ? strategies(kind) : std::vector<std::string>{"auto"};
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
  // Columns of at most 64 rows and rows of at most 64 columns (each summed in a 128-bit integer
  // where the backend can: those spanning too many binades, as most of Wide f64's do, through
  // pieces), and columns of 65 rows.
  const std::vector<Axis> auto_axes = {{{300, 70}, 1},   {{3, 140000}, 1}, {{70000, 3}, 0},          {{50, 60, 0, Order::Fortran}, 0},
                                       {{50, 60, 0, Order::Fortran}, 1}, {{1, 2000}, 0}, {{5, 3001}, 0}, {{64, 1500, 1501}, 0},
                                       {{65, 200}, 0}, {{1500, 64, 66}, 1}, {{200, 65}, 1}};
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
  // Columns whose sums lie on a tie of the result type or just beside one, from terms 24 to 60
  // binades apart: a short column's f32 terms summed in a double must not round there first
  // (2 + 2^-23 + 2^-52, from terms 29 binades apart, is 2 + 2^-22: the double would round it to
  // 2 + 2^-23, and that tie to 2), and the 128-bit sum rounds ties to even.
  const auto p2 = [](int e) { return std::ldexp(1.0, e); };
  const std::vector<std::vector<double>> f32_columns = {
      {1, 1 + p2(-23), -p2(-29), p2(-29) + p2(-52)},  // 2 + 2^-22
      {1, p2(-24)},                                   // a tie: 1
      {1 + p2(-23), p2(-24)},                         // a tie: 1 + 2^-22
      {1, p2(-24), p2(-60)},                          // above a tie: 1 + 2^-23
      {1, p2(-24), -p2(-60)},                         // below it: 1
      {-1, -p2(-24), -p2(-60)},                       // -(1 + 2^-23)
      {p2(127) * (2 - p2(-23)), p2(103)},             // FLT_MAX + half its ulp: inf
      {p2(127) * (2 - p2(-23)), p2(103) - p2(79)},    // just under: FLT_MAX
      {p2(-149), p2(-149), -p2(-149)},                // the smallest subnormal
  };
  const std::vector<std::vector<double>> f64_columns = {
      {1, p2(-53)}, {1 + p2(-52), p2(-53)}, {1, p2(-53), p2(-100)}, {1, p2(-53), -p2(-100)},
      {-1, p2(-53), -p2(-80)}, {p2(-1074), p2(-1074)}, {p2(1023) * (2 - p2(-52)), p2(970)},
  };
  for (const auto& [t, columns] : {std::pair{DType::F32, f32_columns}, std::pair{DType::F64, f64_columns}}) {
    const u64 rows = 4, cols = columns.size();
    // The same terms as columns of a 4-row matrix and as rows of 4 columns.
    HostBuffer data(t, rows * cols), transposed(t, rows * cols);
    for (u64 k = 0; k < cols; ++k)
      for (u64 r = 0; r < rows; ++r) {
        const double v = r < columns[k].size() ? columns[k][r] : -0.0;
        if (t == DType::F32) {
          data.as<float>()[r * cols + k] = static_cast<float>(v);
          transposed.as<float>()[k * rows + r] = static_cast<float>(v);
        } else {
          data.as<double>()[r * cols + k] = v;
          transposed.as<double>()[k * rows + r] = v;
        }
      }
    run_axis({{rows, cols}, 0}, data, Dist::Special, {"auto"});
    run_axis({{cols, rows}, 1}, transposed, Dist::Special, {"auto"});
  }
  check_exact_means();
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

TEST_CASE("a strategy that does not take an op: one clear error naming those that do") {
  const std::vector<i64> o{0, 2, 4};
  const HostBuffer data = generate(DType::F32, 4, Dist::Uniform, 1);
  // A fold strategy asked for a pair op, and a pair strategy asked for a fold.
  const std::string fold_strategy = strategies(SegmentKind::Offsets).at(1);
  const std::string pair_strategy = pair_strategies(SegmentKind::Offsets).at(1);
  for (Op op : all_ops) {
    RunOptions named;
    named.kernel = is_pair(op) ? fold_strategy : pair_strategy;
    const std::string message = "does not take " + std::string(to_string(op));
    CHECK_THROWS_WITH_AS(entry().reduce_segments(data, o, op, named), doctest::Contains(message.c_str()), InvalidArgument);
    CHECK_THROWS_WITH_AS(entry().reduce_axis(data, MatrixShape{2, 2}, 1, op, named), doctest::Contains(message.c_str()),
                         InvalidArgument);
    // ... and names a strategy that does, or says that none does (the mapped ops, where the
    // backend's strategies leave them out).
    const std::string taker = is_pair(op)                          ? pair_strategy
                              : is_mapped(op) && !segments_take(op) ? "no segment strategy does"
                                                                    : fold_strategy;
    CHECK_THROWS_WITH_AS(entry().reduce_segments(data, o, op, named), doctest::Contains(taker.c_str()), InvalidArgument);
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
      for (Op op : all_ops)
        for (bool exact : {false, true}) {
          if (exact && !(op == Op::Sum && is_float(t))) continue;
          if (!segments_take(op) || (is_mapped(op) && t != DType::F32)) continue;  // the maps: once
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

