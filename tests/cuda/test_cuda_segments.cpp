// Segmented reductions of data on a CUDA device (xreduce/cuda.hpp), what only CUDA has: the
// strategy table, the launches each strategy makes and auto's choice by shape, block sizes,
// the asynchronous forms on a stream of the caller's, their clamping of offsets that the host
// never reads, host pointers refused, and more segments than one classification window. The
// values of every strategy, op and type, exact sums and argument errors are test_segments.cpp's,
// run on this API as segments.cuda_device. Exits 77 where no CUDA device is usable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "segment_entries.hpp"
#include "turning_ops.hpp"
#include "xreduce/cuda.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

namespace {

using namespace xr_seg;
using xr::DType;
using xr::HostBuffer;
using xr::MatrixShape;
using xr::Op;
using xr::RunOptions;
using xr::SegmentKind;
using xr::SegmentLayout;
using xr::SegmentedResult;

std::vector<std::string> strategies(SegmentKind kind) { return xr_seg::strategies(xr::cuda::segment_kernels(), kind); }

// reduce_axis_async on `stream` on a device copy of `data`, waited for; the values.
HostBuffer async_axis(const HostBuffer& data, const MatrixShape& shape, int axis, Op op, const RunOptions& o,
                      cudaStream_t stream) {
  const DevMem in(data.data(), data.bytes());
  const u64 count = values_of(shape, axis);
  const DType rt = xr::result_dtype(op, data.type(), o.accumulator);
  const DevMem out(count * xr::size_of(rt));
  xr::visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    xr::cuda::reduce_axis_async(in.as<const T>(), shape, axis, op, out.p, stream, o);
  });
  CK(cudaStreamSynchronize(stream));
  return read_back(out, rt, count);
}

// reduce_segments_async on `stream` on device copies of `data` and `offsets`, waited for; the values.
HostBuffer async_segments(const HostBuffer& data, const std::vector<i64>& offsets, Op op, const RunOptions& o,
                          cudaStream_t stream) {
  const DevMem in(data.data(), data.bytes());
  const DevMem off(offsets.data(), offsets.size() * sizeof(i64));
  const u64 count = offsets.size() - 1;
  const DType rt = xr::result_dtype(op, data.type(), o.accumulator);
  const DevMem out(count * xr::size_of(rt));
  xr::visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    xr::cuda::reduce_segments_async(in.as<const T>(), data.size(), off.as<const i64>(), count, op, out.p, stream, o);
  });
  CK(cudaStreamSynchronize(stream));
  return read_back(out, rt, count);
}

// Values against reference_segments (check_segments' rules).
void expect_reference(const HostBuffer& values, u64 depth, const HostBuffer& data, const SegmentLayout& layout, Op op,
                      const RunOptions& o, const std::string& what) {
  SegmentedResult got;
  got.values = HostBuffer(values.type(), values.size());
  std::memcpy(got.values.data(), values.data(), values.bytes());
  got.rounding_depth = depth;
  const xr::SegmentAgreement a = xr::check_segments(got, xr::reference_segments(data.view(), layout, op, o.accumulator), o.exact);
  CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
}

// A whole result (values, and a pair op's indices or maxima) against the host reference.
void expect_result(const SegmentedResult& got, const HostBuffer& data, const SegmentLayout& layout, Op op,
                   const RunOptions& o, const std::string& what) {
  const xr::SegmentAgreement a = xr::check_segments(got, xr::reference_segments(data.view(), layout, op, o.accumulator), o.exact);
  CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
}

bool same_bits(const HostBuffer& a, const HostBuffer& b) {
  return a.type() == b.type() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

struct Axis {
  MatrixShape shape;
  int axis;
};

// The shapes that take each path of the row and column strategies (test_segments.cpp checks their values).
const std::vector<Axis> kRows = {
    {{1000, 1}, 1},  {{777, 2}, 1},    {{513, 4}, 1},    {{500, 3}, 1},   {{300, 8}, 1},  {{257, 33}, 1},
    {{70, 1000}, 1}, {{3, 70000}, 1},  {{2, 300001}, 1}, {{100, 5, 7}, 1}, {{64, 2, 6}, 1},
    {{9, 129, 0, xr::Order::Fortran}, 0}, {{0, 10}, 1},  {{10, 0}, 1}};
const std::vector<Axis> kColumns = {
    {{1000, 3}, 0},  {{5000, 4}, 0},   {{3000, 16}, 0},  {{20000, 40}, 0}, {{100, 10, 13}, 0}, {{100, 100}, 0},
    {{50, 1001}, 0}, {{30000, 130}, 0}, {{3, 5}, 0},     {{8, 7000}, 0},   {{200, 33, 0, xr::Order::Fortran}, 1},
    {{0, 7}, 0},     {{7, 0}, 0}};

}  // namespace

TEST_CASE("segment strategies: names, order, kinds, types and layouts") {
  const auto list = xr::cuda::segment_kernels();
  std::vector<std::string> names;
  for (const auto& k : list) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"auto", "subwarp", "warp", "block", "multiblock", "binned", "balanced", "columns", "pairs", "cub"});
  for (const auto& k : list) {
    INFO(k.name);
    CHECK(k.types == xr::segment_dtypes());
  }
  CHECK(list.front().kind == xr::KernelKind::Auto);
  CHECK(list.back().kind == xr::KernelKind::Baseline);
  CHECK(strategies(SegmentKind::Columns) == std::vector<std::string>{"auto", "columns"});
  CHECK(strategies(SegmentKind::Offsets).size() == 8);
  CHECK(strategies(SegmentKind::Rows).size() == 7);
}

TEST_CASE("the record of each strategy: launches, balanced's fix-up, binned's bins, auto's choice, the exact path") {
  // Launches depend on the strategy, the shape and the element size: each (strategy, shape, type)
  // with one op, turning with the shape and strategy, so that every op meets each of them too.
  CudaEntry entry;
  for (const auto& [axes, kind] : {std::pair{kRows, SegmentKind::Rows}, std::pair{kColumns, SegmentKind::Columns}}) {
    const auto names = strategies(kind);
    for (std::size_t si = 0; si < names.size(); ++si)
      for (std::size_t k = 0; k < axes.size(); ++k)
        for (const auto& [t, op] : xr_test::turning_ops(xr::segment_dtypes(), si + k)) {
          const Axis& s = axes[k];
          const SegmentLayout l = xr::axis_layout(s.shape, s.axis);
          RunOptions o;
          o.kernel = names[si];
          const xr::Result r = entry.reduce_axis(xr::generate(t, std::max<u64>(l.span(), 1), dist_for(op), 11), s.shape,
                                                 s.axis, op, o).record;
          const std::string what = describe(names[si], op, t, shape_text(s.shape, s.axis));
          // balanced: one more launch (the fix-up) where the merge path takes more than one tile.
          if (names[si] == "balanced")
            CHECK_MESSAGE((l.count ? r.launches >= 1 && r.launches <= 2 : r.launches == 0), what, ": ", r.launches);
          else
            CHECK_MESSAGE(r.launches == (l.count ? 1 : 0), what, ": ", r.launches);
          // auto names what it chose (columns: always the columns strategy); with no rows nothing is chosen.
          if (names[si] == "auto")
            CHECK_MESSAGE((!l.count                        ? r.kernel == "auto"
                           : kind == SegmentKind::Columns ? r.kernel == "auto:columns"
                                                          : r.kernel.rfind("auto:", 0) == 0),
                          what, ": ", r.kernel);
          else
            CHECK_MESSAGE(r.kernel == names[si], what, ": ", r.kernel);
        }
  }
  // Offsets of every bin: one launch sorts the segments into bins, then one per bin that holds
  // any; the longest segment (200000 elements) reaches the bin of several blocks (from 256 KiB,
  // policy.hpp) only for elements of 2 bytes or more. auto takes balanced for the mix.
  const std::vector<i64> offsets = offsets_of(mixed_lengths(5), 3);
  const auto offset_strategies = strategies(SegmentKind::Offsets);
  for (std::size_t si = 0; si < offset_strategies.size(); ++si)
    for (const auto& [t, op] : xr_test::turning_ops(xr::segment_dtypes(), si)) {
      const std::string& strategy = offset_strategies[si];
      RunOptions o;
      o.kernel = strategy;
      const xr::Result r = entry.reduce_segments(xr::generate(t, static_cast<u64>(offsets.back()) + 5, dist_for(op), 13),
                                                 offsets, op, o).record;
      const std::string what = describe(strategy, op, t, "mixed lengths") + ": " + std::to_string(r.launches);
      const int bins_used = 200000 * xr::size_of(t) >= (std::size_t{256} << 10) ? 4 : 3;
      if (strategy == "auto") CHECK_MESSAGE(r.kernel == "auto:balanced", what);
      if (strategy == "binned") CHECK_MESSAGE(r.launches == 1 + bins_used, what);
      if (strategy == "balanced" || strategy == "auto" || strategy == "multiblock") CHECK_MESSAGE(r.launches == 2, what);
    }
  // Segments of one length: auto takes the strategy that suits every one.
  for (const auto& [lengths, chosen] : {std::pair{std::vector<u64>(5000, 7), "auto:subwarp"},
                                        std::pair{std::vector<u64>(800, 700), "auto:warp"},
                                        std::pair{std::vector<u64>(3, 500000), "auto:multiblock"}}) {
    const std::vector<i64> even = offsets_of(lengths);
    const xr::Result r =
        entry.reduce_segments(xr::generate(DType::F32, static_cast<u64>(even.back()), xr::Dist::Uniform, 14), even, Op::Sum).record;
    CHECK(r.kernel == chosen);
  }
  // Exact sums name the path they took.
  RunOptions exact;
  exact.exact = true;
  for (const char* strategy : {"auto", "multiblock", "cub"}) {
    exact.kernel = strategy;
    const xr::Result r = entry.reduce_segments(xr::generate(DType::F32, static_cast<u64>(offsets.back()), xr::Dist::Wide, 19),
                                               offsets, Op::Sum, exact).record;
    CHECK_MESSAGE(r.kernel.find(":exact") != std::string::npos, r.kernel);
  }
  // Rows by length: one launch of the strategy that suits them.
  const MatrixShape shapes[] = {{4096, 2}, {4096, 16}, {2048, 1000}, {1200, 5000}, {3, 400000}};
  const char* chosen[] = {"auto:subwarp", "auto:subwarp", "auto:warp", "auto:block", "auto:multiblock"};
  for (std::size_t k = 0; k < std::size(shapes); ++k) {
    const xr::Result r =
        entry.reduce_axis(xr::generate(DType::F32, shapes[k].rows * shapes[k].cols, xr::Dist::Uniform, 26), shapes[k], 1, Op::Sum)
            .record;
    INFO(shape_text(shapes[k], 1));
    CHECK(r.kernel == chosen[k]);
    CHECK(r.launches == 1);
  }
}

TEST_CASE("columns: block sizes the caller sets, narrow and wide, up to the largest") {
  // u8 sums keep 16 u64 partials a thread: 128 KiB of dynamic shared memory at 1024 threads.
  CudaEntry entry;
  for (const unsigned block : {64u, 1024u})
    for (const DType t : {DType::U8, DType::F64})
      for (const Axis& s : {kColumns[1], kColumns[7]}) {
        const SegmentLayout l = xr::axis_layout(s.shape, s.axis);
        const HostBuffer data = xr::generate(t, l.span(), dist_for(Op::Sum), 14);
        RunOptions o;
        o.kernel = "columns";
        o.block_size = block;
        const SegmentedResult got = entry.reduce_axis(data, s.shape, s.axis, Op::Sum, o);
        expect_reference(got.values, got.rounding_depth, data, l, Op::Sum, o,
                         describe("columns", Op::Sum, t, shape_text(s.shape, s.axis)) + " block " + std::to_string(block));
      }
}

TEST_CASE("every block size a strategy accepts; the ones it does not are rejected") {
  CudaEntry entry;
  const MatrixShape rows{300, 2000};
  const std::vector<i64> offsets = offsets_of(mixed_lengths(6));
  const HostBuffer data = xr::generate(DType::F64, static_cast<u64>(offsets.back()), xr::Dist::Uniform, 17);
  const HostBuffer matrix = xr::generate(DType::F64, rows.rows * rows.cols, xr::Dist::Uniform, 18);
  for (const auto& k : xr::cuda::segment_kernels()) {
    if (k.kind == xr::KernelKind::Baseline) continue;
    // The pair strategy with argmin on segments and minmax on rows and columns, the others sum and max.
    const bool pairs = !k.supports(Op::Sum, DType::F64);
    const Op seg_op = pairs ? Op::ArgMin : Op::Sum, axis_op = pairs ? Op::MinMax : Op::Max;
    for (unsigned block : {32u, 96u, 512u, 1024u}) {
      RunOptions o;
      o.kernel = k.name;
      o.block_size = block;
      const std::string what = k.name + " block " + std::to_string(block);
      if (!k.blocks.accepts(block)) {
        CHECK_THROWS_AS_MESSAGE(entry.reduce_segments(data, offsets, seg_op, o), xr::InvalidArgument, what);
        continue;
      }
      if (k.reduces(SegmentKind::Offsets)) {
        const SegmentedResult got = entry.reduce_segments(data, offsets, seg_op, o);
        expect_result(got, data, offsets_layout(offsets), seg_op, o, what);
      }
      for (int axis : {0, 1}) {
        const SegmentLayout l = xr::axis_layout(rows, axis);
        if (!k.reduces(l.kind)) continue;
        const SegmentedResult got = entry.reduce_axis(matrix, rows, axis, axis_op, o);
        expect_result(got, matrix, l, axis_op, o, what + " axis " + std::to_string(axis));
      }
    }
  }
  RunOptions o;
  o.kernel = "warp";
  o.block_size = 48;
  CHECK_THROWS_AS(entry.reduce_segments(data, offsets, Op::Sum, o), xr::InvalidArgument);
  o.kernel = "cub";
  o.block_size = 256;
  CHECK_THROWS_AS(entry.reduce_segments(data, offsets, Op::Sum, o), xr::InvalidArgument);
}

TEST_CASE("on a stream: every strategy, op and type, the values and bits of the synchronous form") {
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CudaEntry entry;
  // Offsets of every bin, the input starting 3 elements before the first segment.
  const std::vector<i64> offsets = offsets_of(mixed_lengths(5), 3);
  const u64 n = static_cast<u64>(offsets.back()) + 5;
  for (const auto& strategy : strategies(SegmentKind::Offsets))
    for (const Op op : xr::fold_ops)
      for (const DType t : xr::segment_dtypes()) {
        const HostBuffer data = xr::generate(t, n, dist_for(op), 13);
        RunOptions o;
        o.kernel = strategy;
        const std::string what = describe(strategy, op, t, "mixed lengths (async)");
        const HostBuffer values = async_segments(data, offsets, op, o, stream);
        expect_reference(values, 0, data, offsets_layout(offsets), op, o, what);
        CHECK_MESSAGE(same_bits(values, entry.reduce_segments(data, offsets, op, o).values), what);
      }
  // Rows and columns of every strategy.
  const MatrixShape shapes[] = {{5000, 6}, {333, 2222}, {2, 200000}, {40000, 5}};
  for (const MatrixShape& s : shapes) {
    const HostBuffer data = xr::generate(DType::F32, s.rows * s.cols, xr::Dist::Uniform, 27);
    for (int axis : {0, 1}) {
      const SegmentLayout l = xr::axis_layout(s, axis);
      for (const auto& strategy : strategies(l.kind)) {
        RunOptions o;
        o.kernel = strategy;
        const std::string what = describe(strategy, Op::Sum, DType::F32, shape_text(s, axis));
        const HostBuffer values = async_axis(data, s, axis, Op::Sum, o, stream);
        expect_reference(values, 0, data, l, Op::Sum, o, what + " (async)");
        // The same plan runs both: the same bits.
        CHECK_MESSAGE(same_bits(values, entry.reduce_axis(data, s, axis, Op::Sum, o).values), what);
      }
    }
  }
  CK(cudaStreamDestroy(stream));
}

TEST_CASE("errors of the device forms: exact sums on a stream, host memory for device memory") {
  const HostBuffer data = xr::generate(DType::F32, 10, xr::Dist::Uniform, 22);
  const std::vector<i64> good = {0, 4, 10};
  RunOptions exact;
  exact.exact = true;
  CHECK_THROWS_WITH_AS(async_segments(data, good, Op::Sum, exact, nullptr),
                       doctest::Contains("exact segmented sums round on the host"), xr::InvalidArgument);
  CHECK_THROWS_AS(async_axis(data, MatrixShape{2, 5}, 1, Op::Sum, exact, nullptr), xr::InvalidArgument);
  // Host memory where device memory is expected: the input, then the offsets.
  std::vector<float> host(10);
  const DevMem off(good.data(), good.size() * sizeof(i64));
  const DevMem in(data.data(), data.bytes());
  const DevMem out(2 * sizeof(float));
  CHECK_THROWS_AS(xr::cuda::reduce_segments(host.data(), 10, off.as<const i64>(), 2, Op::Sum, out.p), xr::DeviceError);
  CHECK_THROWS_AS(xr::cuda::reduce_segments(in.as<const float>(), 10, good.data(), 2, Op::Sum, out.p), xr::DeviceError);
}

namespace {

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

}  // namespace

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
  CudaEntry entry;
  for (const auto& strategy : strategies(SegmentKind::Offsets)) {
    if (strategy == "cub") continue;  // the baseline reads offsets as given
    RunOptions o;
    o.kernel = strategy;
    const HostBuffer got = async_segments(data, offsets, Op::Sum, o, nullptr);
    CK(cudaGetLastError());
    u64 bad = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i)
      bad += got.as<i64>()[i] != prefix[begins[i] + static_cast<u64>(lengths[i])] - prefix[begins[i]];
    CHECK_MESSAGE(bad == 0, strategy, ": ", bad, " clamped segments differ");
    // Tickets and counters are back at zero: a valid call after it is right.
    const SegmentedResult after = entry.reduce_segments(small, valid, Op::Sum, o);
    expect_reference(after.values, after.rounding_depth, small, offsets_layout(valid), Op::Sum, o, strategy + " after bad offsets");
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
  CudaEntry entry;
  for (const char* strategy : {"binned", "multiblock", "auto"}) {
    RunOptions o;
    o.kernel = strategy;
    const std::string what = std::string(strategy) + " 2^24 + 1000 segments";
    const SegmentedResult got = entry.reduce_segments(data, offsets, Op::Sum, o);
    expect_reference(got.values, got.rounding_depth, data, offsets_layout(offsets), Op::Sum, o, what);
    if (std::string(strategy) != "auto") CHECK_MESSAGE(got.record.launches >= 4, what);
    expect_reference(async_segments(data, offsets, Op::Max, o, nullptr), 0, data, offsets_layout(offsets), Op::Max, o,
                     what + " (async)");
  }
}

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
