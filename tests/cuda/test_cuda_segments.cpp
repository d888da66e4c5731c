// Segmented reductions of data already on a CUDA device (xreduce/cuda.hpp): reduce_axis and
// reduce_segments, synchronous and on a stream, every strategy on the shapes that make it take
// each of its paths, against core's reference (reference_segments, check_segments); exact sums
// bit for bit against ExactSum on the host; and every argument error.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "xreduce/cuda.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

namespace {

using xr::Accumulator;
using xr::DType;
using xr::HostBuffer;
using xr::MatrixShape;
using xr::Op;
using xr::RunOptions;
using xr::SegmentKind;
using xr::SegmentLayout;
using xr::SegmentedResult;
using u64 = std::uint64_t;
using i64 = std::int64_t;

#define CK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)

// Device memory of `bytes` (at least 1), freed at the end of the scope.
struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t bytes) { CK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1))); }
  DevMem(const void* host, std::size_t bytes) : DevMem(bytes) {
    if (bytes) CK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
  }
  ~DevMem() { cudaFree(p); }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p); }
};

xr::Dist dist_for(Op op) { return op == Op::Prod ? xr::Dist::ExactProduct : xr::Dist::Uniform; }

std::vector<std::string> strategies(SegmentKind kind) {
  std::vector<std::string> names;
  for (const auto& k : xr::cuda::segment_kernels())
    if (std::find(k.layouts.begin(), k.layouts.end(), kind) != k.layouts.end()) names.push_back(k.name);
  return names;
}

// The values a device-pointer reduction wrote to `out`, as a SegmentedResult that check_segments reads.
SegmentedResult collect(const DevMem& out, DType result_type, u64 count, const xr::Result& record) {
  SegmentedResult r;
  r.record = record;
  r.values = HostBuffer(result_type, count);
  if (count) CK(cudaMemcpy(r.values.data(), out.p, r.values.bytes(), cudaMemcpyDeviceToHost));
  r.rounding_depth = record.rounding_depth;
  return r;
}

// reduce_axis (or reduce_axis_async on `stream`, then waited for) on a device copy of `data`.
SegmentedResult device_axis(const HostBuffer& data, const MatrixShape& shape, int axis, Op op, const RunOptions& o,
                            bool async = false, cudaStream_t stream = nullptr) {
  const SegmentLayout l = xr::axis_layout(shape, axis);
  const DevMem in(data.data(), data.bytes());
  const DType rt = xr::result_dtype(op, data.type(), o.accumulator);
  const DevMem out(l.count * xr::size_of(rt));
  xr::Result record;
  xr::visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    if (async) {
      xr::cuda::reduce_axis_async(in.as<const T>(), shape, axis, op, out.p, stream, o);
      CK(cudaStreamSynchronize(stream));
    } else {
      record = xr::cuda::reduce_axis(in.as<const T>(), shape, axis, op, out.p, stream, o);
    }
  });
  return collect(out, rt, l.count, record);
}

// reduce_segments (or reduce_segments_async on `stream`) on device copies of `data` and `offsets`.
SegmentedResult device_segments(const HostBuffer& data, const std::vector<i64>& offsets, Op op, const RunOptions& o,
                                bool async = false, cudaStream_t stream = nullptr) {
  const DevMem in(data.data(), data.bytes());
  const DevMem off(offsets.data(), offsets.size() * sizeof(i64));
  const u64 count = offsets.size() - 1;
  const DType rt = xr::result_dtype(op, data.type(), o.accumulator);
  const DevMem out(count * xr::size_of(rt));
  xr::Result record;
  xr::visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    if (async) {
      xr::cuda::reduce_segments_async(in.as<const T>(), data.size(), off.as<const i64>(), count, op, out.p, stream, o);
      CK(cudaStreamSynchronize(stream));
    } else {
      record = xr::cuda::reduce_segments(in.as<const T>(), data.size(), off.as<const i64>(), count, op, out.p, stream, o);
    }
  });
  return collect(out, rt, count, record);
}

SegmentLayout offsets_layout(const std::vector<i64>& offsets) {
  SegmentLayout l;
  l.kind = SegmentKind::Offsets;
  l.count = offsets.size() - 1;
  l.offsets = offsets.data();
  return l;
}

void expect_reference(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& layout, Op op,
                      const RunOptions& o, const std::string& what) {
  const xr::SegmentReference ref = xr::reference_segments(data.view(), layout, op, o.accumulator);
  const xr::SegmentAgreement a = xr::check_segments(got, ref, o.exact);
  CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
}

std::string describe(const std::string& strategy, Op op, DType t, const std::string& shape) {
  return strategy + " " + std::string(xr::to_string(op)) + " " + std::string(xr::to_string(t)) + " " + shape;
}

std::string shape_text(const MatrixShape& s, int axis) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + (s.order == xr::Order::C ? " C" : " F") +
         " stride " + std::to_string(s.stride) + " axis " + std::to_string(axis);
}

// Offsets of segments with the given lengths.
std::vector<i64> offsets_of(const std::vector<u64>& lengths, u64 start = 0) {
  std::vector<i64> off{static_cast<i64>(start)};
  for (u64 l : lengths) off.push_back(off.back() + static_cast<i64>(l));
  return off;
}

// Lengths of every bin of binned, for both element sizes: empty, tiny, short, medium, and one
// long segment of several 64 KiB chunks (f32: from 2^16 elements; f64: from 2^15).
std::vector<u64> mixed_lengths(u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> l;
  for (int i = 0; i < 300; ++i) {
    const auto pick = rng() % 16;
    if (pick < 3) l.push_back(0);
    else if (pick < 10) l.push_back(1 + rng() % 30);
    else if (pick < 14) l.push_back(30 + rng() % 3000);
    else l.push_back(3000 + rng() % 40000);
  }
  l.insert(l.begin() + 37, 200000);
  l.push_back(70001);
  return l;
}

TEST_CASE("segment strategies: names, order, layouts and notes") {
  const auto list = xr::cuda::segment_kernels();
  std::vector<std::string> names;
  for (const auto& k : list) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"auto", "subwarp", "warp", "block", "multiblock", "binned", "balanced", "columns", "cub"});
  for (const auto& k : list) {
    INFO(k.name);
    CHECK(!k.note.empty());
    CHECK(!k.layouts.empty());
    CHECK(k.ops.size() == xr::kFoldCount);
    CHECK(k.types == xr::segment_dtypes());
    CHECK(k.exact);  // exact sums go through pieces, whatever the strategy
  }
  CHECK(list.front().kind == xr::KernelKind::Auto);
  CHECK(list.back().kind == xr::KernelKind::Baseline);
  CHECK(strategies(SegmentKind::Columns) == std::vector<std::string>{"auto", "columns"});
  CHECK(strategies(SegmentKind::Offsets).size() == 8);
  CHECK(strategies(SegmentKind::Rows).size() == 7);
}

TEST_CASE("rows: every strategy, op and type; short, medium and long rows; strides; packed rows") {
  struct Shape {
    MatrixShape shape;
    int axis;
  };
  // Rows of 1, 2 and 4 elements (packed rows), lengths around the group sizes, warp-sized and
  // block-sized rows, rows of several multiblock chunks, strided and Fortran-order rows, and no rows.
  const std::vector<Shape> shapes = {
      {{1000, 1}, 1},           {{777, 2}, 1},  {{513, 4}, 1},      {{500, 3}, 1},      {{300, 8}, 1},
      {{257, 33}, 1},           {{70, 1000}, 1}, {{3, 70000}, 1},   {{2, 300001}, 1},   {{100, 5, 7}, 1},
      {{64, 2, 6}, 1},          {{9, 129, 0, xr::Order::Fortran}, 0}, {{0, 10}, 1},     {{10, 0}, 1}};
  for (const auto& strategy : strategies(SegmentKind::Rows)) {
    for (const Op op : xr::fold_ops) {
      for (const DType t : xr::segment_dtypes()) {
        for (const auto& s : shapes) {
          const SegmentLayout l = xr::axis_layout(s.shape, s.axis);
          const HostBuffer data = xr::generate(t, std::max<u64>(l.span(), 1), dist_for(op), 11);
          RunOptions o;
          o.kernel = strategy;
          const std::string what = describe(strategy, op, t, shape_text(s.shape, s.axis));
          const SegmentedResult got = device_axis(data, s.shape, s.axis, op, o);
          expect_reference(got, data, l, op, o, what);
          CHECK_MESSAGE(got.record.n == l.elements(), what);
          // balanced: one more launch (the fixup) where the merge path takes more than one tile.
          if (strategy == "balanced")
            CHECK_MESSAGE((l.count ? got.record.launches >= 1 && got.record.launches <= 2 : got.record.launches == 0), what);
          else CHECK_MESSAGE(got.record.launches == (l.count ? 1 : 0), what);
          // auto names what it chose; with no rows nothing is chosen.
          if (strategy == "auto")
            CHECK_MESSAGE((l.count ? got.record.kernel.rfind("auto:", 0) == 0 : got.record.kernel == "auto"), what);
          else CHECK_MESSAGE(got.record.kernel == strategy, what);
        }
      }
    }
  }
}

TEST_CASE("rows: the native i32 accumulator wraps, the wide one does not") {
  const MatrixShape shape{40, 3000};
  std::vector<std::int32_t> x(shape.rows * shape.cols, std::numeric_limits<std::int32_t>::max());
  HostBuffer data(DType::I32, x.size());
  std::memcpy(data.data(), x.data(), x.size() * sizeof x[0]);
  for (const auto& strategy : strategies(SegmentKind::Rows)) {
    for (const Accumulator acc : {Accumulator::Wide, Accumulator::Native}) {
      RunOptions o;
      o.kernel = strategy;
      o.accumulator = acc;
      const SegmentedResult got = device_axis(data, shape, 1, Op::Sum, o);
      expect_reference(got, data, xr::axis_layout(shape, 1), Op::Sum, o, strategy);
      CHECK(got.values.type() == (acc == Accumulator::Wide ? DType::I64 : DType::I32));
    }
  }
}

TEST_CASE("columns: narrow and wide, one element or 16 bytes a lane, row bands, strides") {
  struct Shape {
    MatrixShape shape;
    int axis;
  };
  // Narrow: 3 and 13 units (not dividing 32), 4 and 16 (shuffles), 10 packs of 4; wide: 100 and
  // 1001 columns, tall ones split in bands; Fortran rows (axis 1) are columns too; no rows.
  const std::vector<Shape> shapes = {
      {{1000, 3}, 0},    {{5000, 4}, 0},   {{3000, 16}, 0},   {{20000, 40}, 0}, {{100, 10, 13}, 0},
      {{100, 100}, 0},   {{50, 1001}, 0},  {{30000, 130}, 0}, {{3, 5}, 0},      {{8, 7000}, 0},
      {{200, 33, 0, xr::Order::Fortran}, 1}, {{0, 7}, 0},     {{7, 0}, 0}};
  for (const auto& strategy : strategies(SegmentKind::Columns)) {
    for (const Op op : xr::fold_ops) {
      for (const DType t : xr::segment_dtypes()) {
        for (const auto& s : shapes) {
          const SegmentLayout l = xr::axis_layout(s.shape, s.axis);
          const HostBuffer data = xr::generate(t, std::max<u64>(l.span(), 1), dist_for(op), 12);
          RunOptions o;
          o.kernel = strategy;
          const std::string what = describe(strategy, op, t, shape_text(s.shape, s.axis));
          const SegmentedResult got = device_axis(data, s.shape, s.axis, op, o);
          expect_reference(got, data, l, op, o, what);
          CHECK_MESSAGE(got.record.launches == (l.count ? 1 : 0), what);
          if (strategy == "auto") CHECK_MESSAGE(got.record.kernel == (l.count ? "auto:columns" : "auto"), what);
        }
      }
    }
  }
  // Block sizes the caller sets, narrow and wide, up to the largest: u8 sums keep 16 u64 partials
  // a thread, 128 KiB of dynamic shared memory at 1024 threads.
  for (const unsigned block : {64u, 1024u})
    for (const DType t : {DType::U8, DType::F64})
      for (const Shape& s : {shapes[1], shapes[7]}) {
        const SegmentLayout l = xr::axis_layout(s.shape, s.axis);
        const HostBuffer data = xr::generate(t, l.span(), dist_for(Op::Sum), 14);
        RunOptions o;
        o.kernel = "columns";
        o.block_size = block;
        const std::string what = describe("columns", Op::Sum, t, shape_text(s.shape, s.axis)) + " block " + std::to_string(block);
        expect_reference(device_axis(data, s.shape, s.axis, Op::Sum, o), data, l, Op::Sum, o, what);
      }
}

TEST_CASE("offsets: every strategy, op and type on mixed lengths, synchronous and on a stream") {
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<u64> lengths = mixed_lengths(5);
  const std::vector<i64> offsets = offsets_of(lengths, 3);  // the input starts 3 elements before
  const u64 n = static_cast<u64>(offsets.back()) + 5;
  for (const auto& strategy : strategies(SegmentKind::Offsets)) {
    for (const Op op : xr::fold_ops) {
      for (const DType t : xr::segment_dtypes()) {
        const HostBuffer data = xr::generate(t, n, dist_for(op), 13);
        RunOptions o;
        o.kernel = strategy;
        const std::string what = describe(strategy, op, t, "mixed lengths");
        const SegmentedResult got = device_segments(data, offsets, op, o);
        expect_reference(got, data, offsets_layout(offsets), op, o, what);
        CHECK_MESSAGE(got.record.n == static_cast<u64>(offsets.back() - offsets.front()), what);
        if (strategy == "auto") CHECK_MESSAGE(got.record.kernel == "auto:balanced", what);
        // One launch sorts the segments into bins, then one per bin that holds any: the longest
        // segment (200000 elements) reaches the bin of several blocks (from 256 KiB, policy.hpp)
        // only for elements of 2 bytes or more.
        const int bins_used = 200000 * xr::size_of(t) >= (std::size_t{256} << 10) ? 4 : 3;
        if (strategy == "binned") CHECK_MESSAGE(got.record.launches == 1 + bins_used, what);
        if (strategy == "balanced" || strategy == "auto") CHECK_MESSAGE(got.record.launches == 2, what);
        if (strategy == "multiblock") CHECK_MESSAGE(got.record.launches == 2, what);
        expect_reference(device_segments(data, offsets, op, o, true, stream), data, offsets_layout(offsets), op, o,
                         what + " (async)");
      }
    }
  }
  CK(cudaStreamDestroy(stream));
}

TEST_CASE("offsets: auto takes the one strategy that suits every segment, and each bin alone") {
  struct Mix {
    std::vector<u64> lengths;
    const char* chosen;
  };
  std::vector<Mix> mixes;
  mixes.push_back({std::vector<u64>(5000, 7), "auto:subwarp"});
  mixes.push_back({std::vector<u64>(800, 700), "auto:warp"});
  mixes.push_back({std::vector<u64>(3, 500000), "auto:multiblock"});
  mixes.push_back({{}, nullptr});  // no segments
  for (const auto& m : mixes) {
    const std::vector<i64> offsets = offsets_of(m.lengths);
    const HostBuffer data = xr::generate(DType::F32, std::max<i64>(offsets.back(), 1), xr::Dist::Uniform, 14);
    for (const auto& strategy : strategies(SegmentKind::Offsets)) {
      RunOptions o;
      o.kernel = strategy;
      const SegmentedResult got = device_segments(data, offsets, Op::Sum, o);
      expect_reference(got, data, offsets_layout(offsets), Op::Sum, o, strategy);
      if (strategy == "auto" && m.chosen) CHECK(got.record.kernel == m.chosen);
      if (m.lengths.empty()) CHECK(got.record.launches == 0);
    }
  }
}

TEST_CASE("empty segments: +0 sums, 1 products, the identity for min and max; sums of -0 stay -0") {
  const std::vector<i64> offsets = {0, 0, 3, 3, 5, 5, 5, 100000, 100000};
  for (const DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    HostBuffer data = xr::generate(t, 100000, xr::Dist::Uniform, 15);
    xr::visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* x = data.as<T>();
      x[3] = x[4] = -T(0);  // segment 3: two -0 terms
    });
    for (const auto& strategy : strategies(SegmentKind::Offsets)) {
      for (const Op op : xr::fold_ops) {
        RunOptions o;
        o.kernel = strategy;
        const SegmentedResult got = device_segments(data, offsets, op, o);
        const std::string what = describe(strategy, op, t, "empty segments");
        expect_reference(got, data, offsets_layout(offsets), op, o, what);
        for (u64 i : {0, 2, 4, 5, 7}) CHECK_MESSAGE(got.value(i).same_bits(xr::empty_segment_value(op, t)), what, " ", i);
        if (op == Op::Sum) CHECK_MESSAGE(std::signbit(got.value(3).f), what);
      }
    }
  }
}

TEST_CASE("NaN in one segment makes its min and max NaN, and no other") {
  const std::vector<i64> offsets = offsets_of({5, 40, 700, 9000, 80000});
  for (const DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    HostBuffer data = xr::generate(t, static_cast<u64>(offsets.back()), xr::Dist::Uniform, 16);
    xr::visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* x = data.as<T>();
      for (std::size_t s = 0; s + 1 < offsets.size(); s += 2) x[offsets[s] + (offsets[s + 1] - offsets[s]) / 2] = std::numeric_limits<T>::quiet_NaN();
    });
    for (const auto& strategy : strategies(SegmentKind::Offsets))
      for (const Op op : {Op::Min, Op::Max}) {
        RunOptions o;
        o.kernel = strategy;
        const SegmentedResult got = device_segments(data, offsets, op, o);
        const std::string what = describe(strategy, op, t, "NaN");
        expect_reference(got, data, offsets_layout(offsets), op, o, what);
        for (u64 s = 0; s + 1 < offsets.size(); ++s) CHECK_MESSAGE(std::isnan(got.value(s).f) == (s % 2 == 0), what, " ", s);
      }
  }
}

TEST_CASE("every block size a strategy accepts; the ones it does not are rejected") {
  const MatrixShape rows{300, 2000};
  const std::vector<i64> offsets = offsets_of(mixed_lengths(6));
  const HostBuffer data = xr::generate(DType::F64, static_cast<u64>(offsets.back()), xr::Dist::Uniform, 17);
  const HostBuffer matrix = xr::generate(DType::F64, rows.rows * rows.cols, xr::Dist::Uniform, 18);
  for (const auto& k : xr::cuda::segment_kernels()) {
    if (k.kind == xr::KernelKind::Baseline) continue;
    for (unsigned block : {32u, 96u, 512u, 1024u}) {
      RunOptions o;
      o.kernel = k.name;
      o.block_size = block;
      const std::string what = k.name + " block " + std::to_string(block);
      if (!k.blocks.accepts(block)) {
        CHECK_THROWS_AS_MESSAGE(device_segments(data, offsets, Op::Sum, o), xr::InvalidArgument, what);
        continue;
      }
      if (std::find(k.layouts.begin(), k.layouts.end(), SegmentKind::Offsets) != k.layouts.end())
        expect_reference(device_segments(data, offsets, Op::Sum, o), data, offsets_layout(offsets), Op::Sum, o, what);
      for (int axis : {0, 1}) {
        const SegmentLayout l = xr::axis_layout(rows, axis);
        if (std::find(k.layouts.begin(), k.layouts.end(), l.kind) == k.layouts.end()) continue;
        expect_reference(device_axis(matrix, rows, axis, Op::Max, o), matrix, l, Op::Max, o, what + " axis " + std::to_string(axis));
      }
    }
  }
  RunOptions o;
  o.kernel = "warp";
  o.block_size = 48;
  CHECK_THROWS_AS(device_segments(data, offsets, Op::Sum, o), xr::InvalidArgument);
  o.kernel = "cub";
  o.block_size = 256;
  CHECK_THROWS_AS(device_segments(data, offsets, Op::Sum, o), xr::InvalidArgument);
}

// The exact sum of each segment on the host, rounded once to the sum's type R (the input type;
// f32 for f16 and bf16, whose every value f32 holds exactly).
template <class T, class R = xr::compute_t<T>> std::vector<R> host_exact(const T* x, const SegmentLayout& l) {
  std::vector<R> out(l.count);
  for (u64 i = 0; i < l.count; ++i) {
    xr::ExactSum s;
    if (l.kind == SegmentKind::Columns) {
      for (u64 r = 0; r < l.length; ++r) s.add(static_cast<R>(x[i + r * l.stride]));
    } else {
      const u64 b = l.kind == SegmentKind::Rows ? i * l.stride : static_cast<u64>(l.offsets[i]);
      const u64 e = l.kind == SegmentKind::Rows ? b + l.length : static_cast<u64>(l.offsets[i + 1]);
      for (u64 k = b; k < e; ++k) s.add(static_cast<R>(x[k]));
    }
    if constexpr (sizeof(R) == 4) out[i] = s.to_float();
    else out[i] = s.to_double();
  }
  return out;
}

template <class T> void expect_exact(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& l,
                                     const std::string& what) {
  using R = xr::compute_t<T>;
  const std::vector<R> want = host_exact(data.as<T>(), l);
  REQUIRE(got.values.size() == want.size());
  u64 bad = 0;
  for (u64 i = 0; i < want.size(); ++i) {
    const R v = got.values.as<R>()[i];
    const bool same = (std::isnan(v) && std::isnan(want[i])) || std::memcmp(&v, &want[i], sizeof v) == 0;
    if (!same && bad++ == 0) FAIL_CHECK(what, ": value ", i, " is ", v, ", the exact sum ", want[i]);
  }
  CHECK_MESSAGE(bad == 0, what, ": ", bad, " values differ");
  CHECK(got.record.rounding_depth == 1);
  CHECK(got.record.kernel.find(":exact") != std::string::npos);
}

TEST_CASE("exact sums per segment: bit for bit the host ExactSum, rows, columns and offsets") {
  // Segments past 2^16 elements go in several pieces; special values and cancellation.
  const std::vector<i64> offsets = offsets_of({0, 1, 2, 31, 500, 70000, 0, 140001, 3});
  const MatrixShape matrix{300, 70};
  const MatrixShape tall{70000, 3};
  for (const DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (const xr::Dist dist : {xr::Dist::Cancel, xr::Dist::Wide, xr::Dist::Special}) {
      RunOptions o;
      o.exact = true;
      for (const char* strategy : {"auto", "multiblock", "cub"}) {
        o.kernel = strategy;
        const std::string what = describe(strategy, Op::Sum, t, std::string("exact ") + std::string(xr::to_string(dist)));
        const HostBuffer data = xr::generate(t, static_cast<u64>(offsets.back()), dist, 19);
        const SegmentedResult got = device_segments(data, offsets, Op::Sum, o);
        const HostBuffer m = xr::generate(t, tall.rows * tall.cols, dist, 20);
        const SegmentedResult rows = device_axis(m, matrix, 1, Op::Sum, o);
        xr::visit_dtype(t, [&](auto zero) {
          using T = decltype(zero);
          if constexpr (xr::is_float_v<T>) {
            expect_exact<T>(got, data, offsets_layout(offsets), what + " offsets");
            expect_exact<T>(rows, m, xr::axis_layout(matrix, 1), what + " rows");
          }
        });
        expect_reference(got, data, offsets_layout(offsets), Op::Sum, o, what);
      }
      o.kernel = "columns";
      const HostBuffer m = xr::generate(t, tall.rows * tall.cols, dist, 21);
      const SegmentedResult cols = device_axis(m, tall, 0, Op::Sum, o);
      xr::visit_dtype(t, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (xr::is_float_v<T>) expect_exact<T>(cols, m, xr::axis_layout(tall, 0), "exact columns");
      });
    }
  }
}

TEST_CASE("argument errors: bad offsets name their position; async exact; layouts a strategy lacks") {
  const HostBuffer data = xr::generate(DType::F32, 10, xr::Dist::Uniform, 22);
  const auto message = [&](const std::vector<i64>& offsets, const RunOptions& o = {}) {
    try {
      device_segments(data, offsets, Op::Sum, o);
    } catch (const xr::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  CHECK(message({0, 5, 3, 10}).find("position 2") != std::string::npos);
  CHECK(message({0, 5, 11}).find("offsets[2]") != std::string::npos);
  CHECK(message({-1, 5}).find("offsets[0]") != std::string::npos);
  RunOptions exact;
  exact.exact = true;
  CHECK(message({0, 5, 3, 10}, exact).find("position 2") != std::string::npos);

  const std::vector<i64> good = {0, 4, 10};
  CHECK_THROWS_AS(device_segments(data, good, Op::Sum, exact, true), xr::InvalidArgument);
  CHECK_THROWS_AS(device_axis(data, MatrixShape{2, 5}, 1, Op::Sum, exact, true), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(device_segments(data, good, Op::Sum, exact, true),
                       doctest::Contains("exact segmented sums round on the host"), xr::InvalidArgument);
  RunOptions prod = exact;
  CHECK_THROWS_AS(device_segments(data, good, Op::Prod, prod), xr::InvalidArgument);
  RunOptions cub;
  cub.kernel = "cub";
  CHECK_THROWS_AS(device_axis(data, MatrixShape{2, 5}, 0, Op::Sum, cub), xr::InvalidArgument);
  RunOptions columns;
  columns.kernel = "columns";
  CHECK_THROWS_AS(device_segments(data, good, Op::Sum, columns), xr::InvalidArgument);
  RunOptions unknown;
  unknown.kernel = "no_such_strategy";
  CHECK_THROWS_WITH_AS(device_segments(data, good, Op::Sum, unknown), doctest::Contains("subwarp"), xr::InvalidArgument);
  CHECK_THROWS_AS(device_axis(data, MatrixShape{2, 5}, 2, Op::Sum, {}), xr::InvalidArgument);
  CHECK_THROWS_AS(device_axis(data, MatrixShape{2, 5, 3}, 1, Op::Sum, {}), xr::InvalidArgument);
  // Host memory where device memory is expected.
  std::vector<float> host(10);
  const DevMem off(good.data(), good.size() * sizeof(i64));
  const DevMem out(2 * sizeof(float));
  CHECK_THROWS_AS(xr::cuda::reduce_segments(host.data(), 10, off.as<const i64>(), 2, Op::Sum, out.p), xr::DeviceError);
  CHECK_THROWS_AS(xr::cuda::reduce_segments(host.data(), 10, good.data(), 2, Op::Sum, out.p), xr::DeviceError);
}

// Segment i of `offsets` as the kernels clamp it: [clamp(o[i], 0, n), clamp(o[i + 1], begin, n)).
std::vector<i64> clamped(const std::vector<i64>& offsets, u64 n, std::vector<u64>& begins) {
  std::vector<i64> lengths;
  const auto clamp = [](i64 v, i64 lo, i64 hi) { return std::min(std::max(v, lo), hi); };
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    const i64 b = clamp(offsets[i], 0, static_cast<i64>(n)), e = clamp(offsets[i + 1], b, static_cast<i64>(n));
    begins.push_back(static_cast<u64>(b));
    lengths.push_back(e - b);
  }
  return lengths;
}

TEST_CASE("async with bad offsets: each segment clamped to the input, and the next call is right") {
  // Offsets that decrease, run past n, go negative, and long segments that overlap so that their
  // chunks outnumber multiblock's room for partials.
  const u64 n = u64{1} << 20;
  std::vector<i64> offsets = {0, 100, 50, 5000000, -5, 20, 20, 10, static_cast<i64>(n) + 7};
  for (int i = 0; i < 3000; ++i) offsets.push_back(i % 2 ? 0 : static_cast<i64>(n));
  std::vector<u64> begins;
  const std::vector<i64> lengths = clamped(offsets, n, begins);
  HostBuffer data(DType::I64, n);
  std::mt19937_64 rng(23);
  for (u64 i = 0; i < n; ++i) data.as<i64>()[i] = static_cast<i64>(rng() % 1000) - 500;
  std::vector<i64> prefix(n + 1, 0);
  for (u64 i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + data.as<i64>()[i];
  const std::vector<i64> valid = offsets_of(mixed_lengths(7));
  const HostBuffer small = xr::generate(DType::I64, static_cast<u64>(valid.back()), xr::Dist::Uniform, 24);
  for (const auto& strategy : strategies(SegmentKind::Offsets)) {
    if (strategy == "cub") continue;  // the baseline reads offsets as given
    RunOptions o;
    o.kernel = strategy;
    const SegmentedResult got = device_segments(data, offsets, Op::Sum, o, true, nullptr);
    CK(cudaGetLastError());
    u64 bad = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i)
      bad += got.value(i).i != prefix[begins[i] + static_cast<u64>(lengths[i])] - prefix[begins[i]];
    CHECK_MESSAGE(bad == 0, strategy, ": ", bad, " clamped segments differ");
    // Tickets and counters are back at zero: a valid call after it is right.
    expect_reference(device_segments(small, valid, Op::Sum, o), small, offsets_layout(valid), Op::Sum, o,
                     strategy + " after bad offsets");
  }
}

TEST_CASE("more segments than one classification window (2^24): binned and multiblock in windows") {
  const u64 count = (u64{1} << 24) + 1000;
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < (u64{1} << 30)) {
    MESSAGE("skipped: needs 1 GiB of device memory, " << (free_b >> 20) << " MiB free");
    return;
  }
  std::vector<u64> lengths(count);
  for (u64 i = 0; i < count; ++i) lengths[i] = (i * 7) % 5;
  lengths[count - 10] = 100000;
  const std::vector<i64> offsets = offsets_of(lengths);
  const HostBuffer data = xr::generate(DType::I32, static_cast<u64>(offsets.back()), xr::Dist::Uniform, 25);
  for (const char* strategy : {"binned", "multiblock", "auto"}) {
    RunOptions o;
    o.kernel = strategy;
    const std::string what = std::string(strategy) + " 2^24 + 1000 segments";
    const SegmentedResult got = device_segments(data, offsets, Op::Sum, o);
    expect_reference(got, data, offsets_layout(offsets), Op::Sum, o, what);
    if (std::string(strategy) != "auto") CHECK_MESSAGE(got.record.launches >= 4, what);
    expect_reference(device_segments(data, offsets, Op::Max, o, true), data, offsets_layout(offsets), Op::Max, o,
                     what + " (async)");
  }
}

TEST_CASE("rows and columns on a stream: every strategy, the values of the synchronous form") {
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const MatrixShape shapes[] = {{5000, 6}, {333, 2222}, {2, 200000}, {40000, 5}};
  for (const MatrixShape& s : shapes) {
    const HostBuffer data = xr::generate(DType::F32, s.rows * s.cols, xr::Dist::Uniform, 27);
    for (int axis : {0, 1}) {
      const SegmentLayout l = xr::axis_layout(s, axis);
      for (const auto& strategy : strategies(l.kind)) {
        RunOptions o;
        o.kernel = strategy;
        const std::string what = describe(strategy, Op::Sum, DType::F32, shape_text(s, axis));
        const SegmentedResult sync = device_axis(data, s, axis, Op::Sum, o);
        const SegmentedResult async = device_axis(data, s, axis, Op::Sum, o, true, stream);
        expect_reference(async, data, l, Op::Sum, o, what + " (async)");
        // The same plan runs both: the same bits.
        CHECK_MESSAGE(std::memcmp(sync.values.data(), async.values.data(), sync.values.bytes()) == 0, what);
      }
    }
  }
  CK(cudaStreamDestroy(stream));
}

TEST_CASE("the record: auto's choice by shape, launches, elements, bytes per second, repeats") {
  const MatrixShape shapes[] = {{4096, 2}, {4096, 16}, {2048, 1000}, {1200, 5000}, {3, 400000}};
  const char* chosen[] = {"auto:subwarp", "auto:subwarp", "auto:warp", "auto:block", "auto:multiblock"};
  for (std::size_t k = 0; k < std::size(shapes); ++k) {
    const MatrixShape& s = shapes[k];
    const HostBuffer data = xr::generate(DType::F32, s.rows * s.cols, xr::Dist::Uniform, 26);
    RunOptions o;
    o.warmup = 1;
    o.repeat = 3;
    const SegmentedResult got = device_axis(data, s, 1, Op::Sum, o);
    INFO(shape_text(s, 1));
    expect_reference(got, data, xr::axis_layout(s, 1), Op::Sum, o, chosen[k]);
    CHECK(got.record.kernel == chosen[k]);
    CHECK(got.record.backend == "cuda");
    CHECK(got.record.launches == 1);
    CHECK(got.record.repeats == 3);
    CHECK(got.record.n == s.rows * s.cols);
    CHECK(got.record.kernel_ms > 0);
    CHECK(got.record.bytes_per_s > 0);
    CHECK(got.record.rounding_depth > 0);
    CHECK(!got.record.finish.empty());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const xr::BackendStatus s = xr::backend_status("cuda");
  if (!s.usable) {
    std::printf("SKIP cuda: %s\n", s.reason.c_str());
    return 77;
  }
  for (const auto& d : s.devices) std::printf("cuda device: %s (%s)\n", d.name.c_str(), d.detail.c_str());
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
