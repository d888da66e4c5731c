// OpenCL segmented reductions (kernels_cl/segments.cl): the cl_mem entry points on rows, columns
// and offsets with every strategy, on shapes that exercise each (short, medium and long segments,
// empty ones, strides, an offset into the buffer), exact sums bit for bit against the host
// xr::ExactSum, exact piece states word for word against exact_piece_state, bad arguments, and
// offsets on the device that the host did not plan from. Runs on the default device of every
// OpenCL platform (exit 77 when there is none).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../turning_ops.hpp"
#include "internal.hpp"
#include "segments.hpp"
#include "targets.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
namespace od = xr::opencl::detail;
using namespace xr::ocl_test;
using u64 = std::uint64_t;

namespace {

// A device buffer of `bytes` (at least 1), optionally filled from host memory; released at scope exit.
struct DeviceBuffer {
  cl_mem mem = nullptr;
  DeviceBuffer(const Target& t, std::size_t bytes, const void* host = nullptr) {
    cl_int rc = CL_SUCCESS;
    mem = clCreateBuffer(t.context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0),
                         std::max<std::size_t>(1, bytes), const_cast<void*>(host), &rc);
    od::check(rc, "clCreateBuffer");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { clReleaseMemObject(mem); }
};

// The device's types for the loops that turn through types: every one but f16 and bf16, which
// test_segments.cpp's case for them and the cases here that name them cover with fewer kernel
// builds (PoCL compiles each at run time, about 0.5 s).
std::vector<DType> types_of(const Target& t) {
  std::vector<DType> out;
  for (DType d : segment_dtypes())
    if ((t.caps.fp64 || d != DType::F64) && !is_half(d)) out.push_back(d);
  return out;
}

// The strategies of this device that reduce `kind`, auto first.
std::vector<std::string> strategies(const Target& t, SegmentKind kind) {
  std::vector<std::string> out;
  for (const auto& k : opencl::segment_kernels(t.caps.device))
    if (std::find(k.layouts.begin(), k.layouts.end(), kind) != k.layouts.end()) out.push_back(k.name);
  return out;
}

Dist dist_for(Op op) { return op == Op::Prod ? Dist::ExactProduct : Dist::Uniform; }

// The device's types, each with one op turning with `turn` (turning_ops.hpp).
std::vector<std::pair<DType, Op>> turning_ops(const Target& t, std::size_t turn) {
  return xr_test::turning_ops(types_of(t), turn);
}

// Element i of a buffer.
Scalar element(const HostBuffer& b, u64 i) {
  return visit_dtype(b.type(), [&](auto zero) { return Scalar::of(b.as<decltype(zero)>()[i]); });
}

HostBuffer read_back(const Target& t, cl_mem mem, DType type, u64 count) {
  HostBuffer b(type, count);
  if (count)
    od::check(clEnqueueReadBuffer(t.queue, mem, CL_TRUE, 0, b.bytes(), b.data(), 0, nullptr, nullptr),
              "clEnqueueReadBuffer");
  return b;
}

// The values in `out` against reference_segments over the input from element `offset` of `data`.
void expect_agrees(const Target& t, const Result& r, cl_mem out, const HostBuffer& data, u64 offset,
                   const SegmentLayout& layout, Op op, const RunOptions& o, const std::string& what) {
  SegmentedResult got;
  got.record = r;
  got.kind = layout.kind;
  got.values = read_back(t, out, result_dtype(op, data.type(), o.accumulator), layout.count);
  got.rounding_depth = r.rounding_depth;
  const HostArray view{static_cast<const unsigned char*>(data.data()) + offset * size_of(data.type()),
                       data.size() - offset, data.type()};
  const SegmentReference ref = reference_segments(view, layout, op, o.accumulator);
  const SegmentAgreement a = check_segments(got, ref, o.exact);
  CHECK_MESSAGE(a.ok(), t.label(), " ", what, ": ", a.detail);
  CHECK_MESSAGE(r.n == layout.elements(), what);
  CHECK_MESSAGE(r.backend == "opencl", what);
}

// A job of `kernel` (f32 sums unless told) on cl_mem buffers: n elements in `in`, the values into
// `out`, an Offsets layout's offsets in `offsets` beside their host copy in layout.offsets.
xr::detail::SegmentJob job_on(cl_mem in, u64 n, const SegmentLayout& layout, cl_mem offsets, cl_mem out,
                              const std::string& kernel = "auto", DType type = DType::F32, Op op = Op::Sum) {
  xr::detail::SegmentJob job;
  job.op = op;
  job.type = type;
  job.result_type = result_dtype(op, type);
  job.options.kernel = kernel;
  job.layout = layout;
  job.data = xr::detail::Memory::device(in);
  job.n = n;
  job.offsets = xr::detail::Memory::device(offsets);
  job.out = xr::detail::Memory::device(out);
  return job;
}

std::string name_of(const std::string& strategy, Op op, DType type, const std::string& shape) {
  return strategy + " " + std::string(to_string(op)) + " " + std::string(to_string(type)) + " " + shape;
}

// One reduce_axis call on `data` (offset elements in) against the reference.
void check_axis(const Target& t, const HostBuffer& data, u64 offset, const MatrixShape& shape, int axis, Op op,
                const RunOptions& o, const std::string& what) {
  const SegmentLayout layout = axis_layout(shape, axis);
  DeviceBuffer in(t, data.bytes(), data.data());
  DeviceBuffer out(t, layout.count * size_of(result_dtype(op, data.type(), o.accumulator)));
  const Result r = opencl::reduce_axis(t.queue, in.mem, offset, data.type(), shape, axis, op, out.mem, o);
  expect_agrees(t, r, out.mem, data, offset, layout, op, o, what);
}

// The Offsets layout of host offsets.
SegmentLayout offsets_layout(const std::vector<std::int64_t>& offsets) {
  SegmentLayout l;
  l.kind = SegmentKind::Offsets;
  l.count = offsets.size() - 1;
  l.offsets = offsets.data();
  return l;
}

void check_offsets_call(const Target& t, const HostBuffer& data, u64 offset, const std::vector<std::int64_t>& offsets,
                        Op op, const RunOptions& o, const std::string& what) {
  const SegmentLayout layout = offsets_layout(offsets);
  DeviceBuffer in(t, data.bytes(), data.data());
  DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
  DeviceBuffer out(t, layout.count * size_of(result_dtype(op, data.type(), o.accumulator)));
  const Result r = opencl::reduce_segments(t.queue, in.mem, offset, data.size() - offset, data.type(), offs.mem,
                                        layout.count, op, out.mem, o);
  expect_agrees(t, r, out.mem, data, offset, layout, op, o, what);
}

std::vector<std::int64_t> offsets_of(const std::vector<u64>& lengths, u64 start = 0) {
  std::vector<std::int64_t> o{static_cast<std::int64_t>(start)};
  for (u64 len : lengths) o.push_back(o.back() + static_cast<std::int64_t>(len));
  return o;
}

std::vector<u64> random_lengths(u64 count, u64 max, u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> l(count);
  for (auto& x : l) x = rng() % (max + 1);
  return l;
}

// Lengths whose logarithm is normal: most short, a long tail (the CSR rows of real matrices).
std::vector<u64> lognormal_lengths(u64 count, double mean_log, double sigma, u64 seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(mean_log, sigma);
  std::vector<u64> l(count);
  for (auto& x : l) x = static_cast<u64>(d(rng));
  return l;
}

struct Lengths {
  std::string name;
  std::vector<u64> lengths;
};

std::vector<Lengths> offset_cases() {
  std::vector<u64> huge(300, 3);
  huge[150] = (u64{1} << 20) + 3;
  std::vector<u64> tail = random_lengths(2000, 6, 4);
  tail.insert(tail.end(), {0, 0, 40000, 0, 1, 70001});
  return {{"all empty", std::vector<u64>(50, 0)},
          {"one element each", std::vector<u64>(3000, 1)},
          {"random 0..40", random_lengths(5000, 40, 1)},
          {"random 0..3000", random_lengths(300, 3000, 2)},
          {"lognormal, mean ~64", lognormal_lengths(4000, 3.66, 1.0, 3)},
          {"one of 2^20+3 among short ones", huge},
          {"short ones, then 40000 and 70001", tail}};
}

}  // namespace

TEST_CASE("the strategies: auto first, each with its layouts, f64 only with cl_khr_fp64") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto list = opencl::segment_kernels(t.caps.device);
    std::vector<std::string> names;
    for (const auto& k : list) names.push_back(k.name);
    CHECK(names == std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "binned", "balanced",
                                            "columns", "serial"});
    CHECK(list[0].kind == KernelKind::Auto);
    for (const auto& k : list) {
      CAPTURE(k.name);
      CHECK(!k.layouts.empty());
      CHECK(!k.note.empty());
      CHECK(k.exact);
      CHECK(k.ops.size() == fold_ops.size());
      const bool lists_f64 = std::find(k.types.begin(), k.types.end(), DType::F64) != k.types.end();
      CHECK(lists_f64 == t.caps.fp64);
    }
    CHECK(strategies(t, SegmentKind::Rows) ==
          std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "serial"});
    CHECK(strategies(t, SegmentKind::Columns) == std::vector<std::string>{"auto", "columns", "serial"});
    CHECK(strategies(t, SegmentKind::Offsets) ==
          std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "binned", "balanced", "serial"});
    // The Reducer lists the same table.
    std::vector<std::string> from_reducer;
    for (const auto& k : t.reducer->segment_kernels()) from_reducer.push_back(k.name);
    CHECK(from_reducer == names);
  }
}

TEST_CASE("rows through cl_mem: every strategy on short to long rows, strides and an offset") {
  // rows x cols with a stride (0: dense): lengths 1 to 300007 (one lane, vector loads of 2 and
  // 4, teams up to a work-group, several work-groups per row), and strides that break alignment.
  const std::vector<MatrixShape> shapes = {{2000, 1, 0},     {3000, 2, 0},  {1001, 3, 5},  {700, 8, 0},
                                           {513, 16, 0},     {301, 33, 40}, {129, 128, 0}, {64, 1000, 0},
                                           {17, 4099, 4100}, {3, 70001, 0}, {1, 300007, 0}};
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto row_strategies = strategies(t, SegmentKind::Rows);
    for (std::size_t si = 0; si < row_strategies.size(); ++si) {
      const std::string& s = row_strategies[si];
      RunOptions o;
      o.kernel = s;
      for (const MatrixShape& shape : shapes)
        for (u64 offset : {u64{0}, u64{3}}) {
          const SegmentLayout layout = axis_layout(shape, 1);
          const HostBuffer data = generate(DType::F32, layout.span() + offset, Dist::Uniform, shape.cols);
          check_axis(t, data, offset, shape, 1, Op::Sum, o,
                     name_of(s, Op::Sum, DType::F32,
                             std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + " stride " +
                                 std::to_string(shape.stride) + " offset " + std::to_string(offset)));
        }
      // Every type on three shapes, with ops turning over the shapes and strategies.
      const MatrixShape typed[] = {{999, 4, 0}, {40, 517, 520}, {2, 50000, 0}};
      for (std::size_t k = 0; k < std::size(typed); ++k)
        for (const auto& [type, op] : turning_ops(t, si + k)) {
          const MatrixShape& shape = typed[k];
          const SegmentLayout layout = axis_layout(shape, 1);
          const HostBuffer data = generate(type, layout.span() + 4, dist_for(op), 7);
          check_axis(t, data, 4, shape, 1, op, o,
                     name_of(s, op, type, std::to_string(shape.rows) + "x" + std::to_string(shape.cols)));
        }
    }
  }
}

TEST_CASE("columns through cl_mem: narrow, wide, strided and Fortran-order matrices") {
  const std::vector<MatrixShape> shapes = {
      {1000, 4, 0},  {999, 3, 0},   {2000, 1, 0}, {257, 1000, 1003}, {5, 100000, 0},
      {70000, 2, 0}, {3000, 16, 0}, {33, 7, 9},   {64, 64, 0},       {100, 130, 0, Order::Fortran}};
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto column_strategies = strategies(t, SegmentKind::Columns);
    for (std::size_t si = 0; si < column_strategies.size(); ++si) {
      const std::string& s = column_strategies[si];
      RunOptions o;
      o.kernel = s;
      for (const MatrixShape& shape : shapes) {
        // Columns of a C-order matrix are axis 0; of a Fortran-order one, rows are contiguous
        // and axis 1 reads across them.
        const int axis = shape.order == Order::C ? 0 : 1;
        const SegmentLayout layout = axis_layout(shape, axis);
        REQUIRE(layout.kind == SegmentKind::Columns);
        for (u64 offset : {u64{0}, u64{2}}) {
          const HostBuffer data = generate(DType::F32, layout.span() + offset, Dist::Uniform, shape.rows);
          check_axis(t, data, offset, shape, axis, Op::Sum, o,
                     name_of(s, Op::Sum, DType::F32,
                             std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + " stride " +
                                 std::to_string(shape.stride) + " offset " + std::to_string(offset)));
        }
      }
      const MatrixShape typed[] = {{777, 4, 0}, {300, 301, 0}};
      for (std::size_t k = 0; k < std::size(typed); ++k)
        for (const auto& [type, op] : turning_ops(t, si + 2 * k)) {
          const MatrixShape& shape = typed[k];
          const SegmentLayout layout = axis_layout(shape, 0);
          const HostBuffer data = generate(type, layout.span(), dist_for(op), 11);
          check_axis(t, data, 0, shape, 0, op, o,
                     name_of(s, op, type, std::to_string(shape.rows) + "x" + std::to_string(shape.cols)));
        }
    }
  }
}

TEST_CASE("offsets through cl_mem: every strategy on empty, short, long and mixed segments") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto offset_strategies = strategies(t, SegmentKind::Offsets);
    for (std::size_t si = 0; si < offset_strategies.size(); ++si) {
      const std::string& s = offset_strategies[si];
      RunOptions o;
      o.kernel = s;
      for (const auto& c : offset_cases()) {
        // The segments start at element 5 of the input, which starts at element 3 of the buffer.
        const auto offsets = offsets_of(c.lengths, 5);
        const HostBuffer data = generate(DType::F32, static_cast<u64>(offsets.back()) + 3 + 7, Dist::Uniform, 5);
        check_offsets_call(t, data, 3, offsets, Op::Sum, o, name_of(s, Op::Sum, DType::F32, c.name));
      }
      const auto offsets = offsets_of(random_lengths(1500, 70, 8));
      for (const auto& [type, op] : turning_ops(t, si)) {
        const HostBuffer data = generate(type, static_cast<u64>(offsets.back()), dist_for(op), 9);
        check_offsets_call(t, data, 0, offsets, op, o, name_of(s, op, type, "random 0..70"));
      }
      // i32 sums: in i64 by default, wrapping in i32 with the native accumulator.
      const HostBuffer big = generate(DType::I32, static_cast<u64>(offsets.back()), Dist::Wide, 10);
      RunOptions native = o;
      native.accumulator = Accumulator::Native;
      check_offsets_call(t, big, 0, offsets, Op::Sum, o, name_of(s, Op::Sum, DType::I32, "wide, i64 accumulator"));
      check_offsets_call(t, big, 0, offsets, Op::Sum, native, name_of(s, Op::Sum, DType::I32, "wide, native"));
    }
  }
}

TEST_CASE("special values: NaN, infinities, -0 and empty segments per strategy") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto offsets = offsets_of(random_lengths(2000, 12, 12));
    for (const auto& s : strategies(t, SegmentKind::Offsets))
      for (DType type : {DType::F32, DType::F64}) {
        if (type == DType::F64 && !t.caps.fp64) continue;
        for (u64 seed = 0; seed < 5; ++seed) {
          const HostBuffer data = generate(type, static_cast<u64>(offsets.back()), Dist::Special, seed);
          RunOptions o;
          o.kernel = s;
          for (Op op : {Op::Min, Op::Max})
            check_offsets_call(t, data, 0, offsets, op, o, name_of(s, op, type, "special " + std::to_string(seed)));
          o.exact = true;
          check_offsets_call(t, data, 0, offsets, Op::Sum, o, name_of(s, Op::Sum, type, "special, exact"));
        }
      }
    // A sum of -0 terms is -0, an empty sum +0, with every strategy.
    const std::vector<float> zeros(300, -0.0f);
    const std::vector<std::int64_t> o{0, 3, 3, 300};
    for (const auto& s : strategies(t, SegmentKind::Offsets)) {
      CAPTURE(s);
      DeviceBuffer in(t, zeros.size() * sizeof(float), zeros.data());
      DeviceBuffer offs(t, o.size() * sizeof(std::int64_t), o.data());
      DeviceBuffer out(t, 3 * sizeof(float));
      RunOptions opt;
      opt.kernel = s;
      opencl::reduce_segments(t.queue, in.mem, 0, zeros.size(), DType::F32, offs.mem, 3, Op::Sum, out.mem, opt);
      const HostBuffer v = read_back(t, out.mem, DType::F32, 3);
      CHECK(std::signbit(v.as<float>()[0]));
      CHECK((v.as<float>()[1] == 0.0f && !std::signbit(v.as<float>()[1])));
      CHECK(std::signbit(v.as<float>()[2]));
    }
  }
}

TEST_CASE("exact sums through cl_mem: every value the host ExactSum of its segment, rounded once") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    for (DType type : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      if (type == DType::F64 && !t.caps.fp64) continue;
      CAPTURE(to_string(type));
      RunOptions o;
      o.exact = true;
      // Offsets, with segments longer than one piece (2^16 elements).
      const auto offsets = offsets_of({0, 1, 7, 65536, 65537, 200003, 3, 0, 1000});
      const HostBuffer wide = generate(type, static_cast<u64>(offsets.back()) + 1, Dist::Wide, 21);
      for (const auto& s : strategies(t, SegmentKind::Offsets)) {
        o.kernel = s;
        check_offsets_call(t, wide, 1, offsets, Op::Sum, o, name_of(s, Op::Sum, type, "wide, exact"));
      }
      o.kernel = "auto";
      // Rows and columns, strided, and a Fortran-order matrix.
      for (const MatrixShape& shape : {MatrixShape{300, 77, 80}, MatrixShape{3, 140000, 0}, MatrixShape{70000, 3, 0},
                                       MatrixShape{50, 60, 0, Order::Fortran}})
        for (int axis : {0, 1}) {
          const SegmentLayout layout = axis_layout(shape, axis);
          const HostBuffer data = generate(type, layout.span(), Dist::Cancel, 22);
          check_axis(t, data, 0, shape, axis, Op::Sum, o,
                     name_of("auto", Op::Sum, type,
                             std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + " axis " +
                                 std::to_string(axis) + ", exact"));
        }
      // Independently of the reference: each value is ExactSum over its segment (f16 and bf16
      // through f32, which holds each exactly), rounded once to the result type, bit for bit.
      const HostBuffer special = generate(type, static_cast<u64>(offsets.back()), Dist::Special, 0);
      const DType result = result_dtype(Op::Sum, type);
      DeviceBuffer in(t, special.bytes(), special.data());
      DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
      DeviceBuffer out(t, (offsets.size() - 1) * size_of(result));
      const Result r = opencl::reduce_segments(t.queue, in.mem, 0, special.size(), type, offs.mem, offsets.size() - 1,
                                            Op::Sum, out.mem, o);
      CHECK(r.rounding_depth == 1);
      const HostBuffer got = read_back(t, out.mem, result, offsets.size() - 1);
      for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
        ExactSum sum;
        for (auto k = static_cast<std::size_t>(offsets[i]); k < static_cast<std::size_t>(offsets[i + 1]); ++k)
          sum.add(element(special, k).to_double());
        const Scalar want = result == DType::F32 ? Scalar::of(sum.to_float()) : Scalar::of(sum.to_double());
        const Scalar have = element(got, i);
        CHECK_MESSAGE(have.same_bits(want), "segment ", i, ": ", have.to_string(), " vs ", want.to_string());
      }
    }
  }
}

TEST_CASE("exact piece states: word for word exact_piece_state, any step, empty pieces, special values") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::Segments device(t.caps, t.context, t.queue, true);
    for (DType type : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      if (type == DType::F64 && !t.caps.fp64) continue;
      for (Dist dist : {Dist::Wide, Dist::Special, Dist::Cancel}) {
        const u64 n = 200000;
        const HostBuffer data = generate(type, n, dist, 31);
        std::vector<xr::detail::ExactPiece> pieces = {{0, 0, 1},      {0, 1, 1},       {5, 65536, 1}, {7, 1000, 3},
                                                      {199999, 1, 1}, {100, 65536, 2}, {3, 17, 11001}};
        for (u64 k = 0; k < 300; ++k) pieces.push_back({static_cast<std::int64_t>(k * 613), 37, 1});
        // f16 and bf16 pieces have the states of their values widened to f32 (the f32 window).
        const int words = xr::detail::exact_piece_words(compute_dtype(type));
        std::vector<std::int64_t> got(pieces.size() * words), want(pieces.size() * words);
        RunOptions o;
        o.repeat = 2;
        device.exact_pieces(xr::detail::Memory::host(data.data()), n, type, pieces, got.data(), o);
        std::vector<float> wide;
        if (is_half(type))
          for (u64 i = 0; i < n; ++i) wide.push_back(static_cast<float>(element(data, i).to_double()));
        for (std::size_t p = 0; p < pieces.size(); ++p) {
          if (type == DType::F64)
            xr::detail::exact_piece_state(data.as<double>(), pieces[p], want.data() + p * words);
          else
            xr::detail::exact_piece_state(is_half(type) ? wide.data() : data.as<float>(), pieces[p], want.data() + p * words);
        }
        for (std::size_t p = 0; p < pieces.size(); ++p)
          CHECK_MESSAGE(std::equal(got.begin() + p * words, got.begin() + (p + 1) * words, want.begin() + p * words),
                        "piece ", p, " of ", to_string(type));
      }
      // A piece outside the input is refused.
      const HostBuffer data = generate(type, 100, Dist::Uniform, 1);
      std::vector<xr::detail::ExactPiece> bad = {{90, 11, 1}};
      std::vector<std::int64_t> w(xr::detail::exact_piece_words(compute_dtype(type)));
      CHECK_THROWS_AS(device.exact_pieces(xr::detail::Memory::host(data.data()), 100, type, bad, w.data(), {}),
                      InvalidArgument);
    }
  }
}

TEST_CASE("bad arguments: InvalidArgument naming the problem, before anything runs") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const std::vector<float> x(100, 1.0f);
    DeviceBuffer in(t, x.size() * sizeof(float), x.data());
    DeviceBuffer out(t, 100 * sizeof(double));
    auto segments = [&](const std::vector<std::int64_t>& o, u64 n = 100, const RunOptions& opt = {}) {
      DeviceBuffer offs(t, o.size() * sizeof(std::int64_t), o.data());
      return opencl::reduce_segments(t.queue, in.mem, 0, n, DType::F32, offs.mem, o.size() - 1, Op::Sum, out.mem, opt);
    };
    auto message = [&](const std::vector<std::int64_t>& o) -> std::string {
      try {
        segments(o);
      } catch (const InvalidArgument& e) {
        return e.what();
      }
      return "no exception";
    };
    // Offsets that decrease, start below 0 or run past the input: the message names the position.
    CHECK(message({0, 5, 3, 10}).find("position 2") != std::string::npos);
    CHECK(message({-1, 5}).find("offsets[0] is -1") != std::string::npos);
    CHECK(message({0, 50, 101}).find("offsets[2] is 101") != std::string::npos);
    CHECK_THROWS_AS(segments({0, 10}, 101), InvalidArgument);  // n beyond the buffer
    CHECK_NOTHROW(segments({0, 10, 100}));
    // The offsets buffer holds fewer than n_segments + 1 values; the values buffer too few.
    {
      DeviceBuffer offs(t, 2 * sizeof(std::int64_t));
      CHECK_THROWS_AS(opencl::reduce_segments(t.queue, in.mem, 0, 100, DType::F32, offs.mem, 2, Op::Sum, out.mem),
                      InvalidArgument);
      DeviceBuffer small(t, 2 * sizeof(float));
      const std::vector<std::int64_t> o{0, 1, 2, 3};
      DeviceBuffer offs3(t, o.size() * sizeof(std::int64_t), o.data());
      CHECK_THROWS_AS(opencl::reduce_segments(t.queue, in.mem, 0, 100, DType::F32, offs3.mem, 3, Op::Sum, small.mem),
                      InvalidArgument);
    }
    // Unknown strategies, a strategy for other layouts, exact products, a matrix beyond the buffer.
    RunOptions bad;
    bad.kernel = "no_such_strategy";
    CHECK_THROWS_AS(segments({0, 10}, 100, bad), InvalidArgument);
    RunOptions cols;
    cols.kernel = "columns";
    CHECK_THROWS_AS(segments({0, 10}, 100, cols), InvalidArgument);
    RunOptions lanes;
    lanes.kernel = "lanes";
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 0, DType::F32, MatrixShape{10, 10}, 0, Op::Sum, out.mem, lanes),
                    InvalidArgument);
    RunOptions exact_prod;
    exact_prod.exact = true;
    DeviceBuffer offs(t, 2 * sizeof(std::int64_t), std::vector<std::int64_t>{0, 10}.data());
    CHECK_THROWS_AS(
        opencl::reduce_segments(t.queue, in.mem, 0, 100, DType::F32, offs.mem, 1, Op::Prod, out.mem, exact_prod),
        InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 0, DType::F32, MatrixShape{11, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 1, DType::F32, MatrixShape{10, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 0, DType::F32, MatrixShape{10, 10}, 2, Op::Sum, out.mem),
                    InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce_axis(nullptr, in.mem, 0, DType::F32, MatrixShape{10, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    // A buffer of another context.
    cl_int rc = CL_SUCCESS;
    cl_mem foreign = clCreateBuffer(od::shared_context(t.caps), CL_MEM_READ_WRITE, 400, nullptr, &rc);
    od::check(rc, "clCreateBuffer");
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, foreign, 0, DType::F32, MatrixShape{10, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    clReleaseMemObject(foreign);
  }
}

TEST_CASE("offsets on the device that the host did not plan from: nothing read or written out of bounds") {
  // A job plans from the host's offsets; here the device holds others (huge, negative,
  // decreasing). The kernels clamp every segment into [0, n) and every list entry into the
  // buffers, so the call completes (its values are whatever the clamped segments give).
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::Segments device(t.queue);
    const std::vector<float> x(20000, 1.0f);
    const auto planned = offsets_of(lognormal_lengths(400, 2.0, 1.5, 5));
    REQUIRE(static_cast<u64>(planned.back()) <= x.size());
    std::vector<std::int64_t> wild(planned.size());
    std::mt19937_64 rng(3);
    for (auto& v : wild) v = static_cast<std::int64_t>(rng()) >> (rng() % 60);
    DeviceBuffer in(t, x.size() * sizeof(float), x.data());
    DeviceBuffer offs(t, wild.size() * sizeof(std::int64_t), wild.data());
    DeviceBuffer out(t, planned.size() * sizeof(float));
    for (const auto& s : strategies(t, SegmentKind::Offsets)) {
      CAPTURE(s);
      const xr::detail::SegmentJob job = job_on(in.mem, x.size(), offsets_layout(planned), offs.mem, out.mem, s);
      CHECK_NOTHROW(device.reduce(job));
      const HostBuffer v = read_back(t, out.mem, DType::F32, job.layout.count);
      for (u64 i = 0; i < job.layout.count; ++i) CHECK(v.as<float>()[i] <= static_cast<float>(x.size()));
    }
  }
}

// This device's capabilities as auto sees an H100's: a GPU of 132 compute units, so that its
// plans for a GPU run here.
od::DeviceCaps as_h100(od::DeviceCaps caps) {
  caps.type = CL_DEVICE_TYPE_GPU;
  caps.compute_units = 132;
  return caps;
}

TEST_CASE("auto as on a GPU: the strategy each shape gets, and its values, run on this device") {
  // The plans auto makes for an H100 (132 compute units of a GPU), run here: the choice by shape
  // and every GPU plan's values, wherever the tests run.
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const od::DeviceCaps gpu = as_h100(t.caps);
    od::Segments device(gpu, t.context, t.queue, true);
    const u64 n = u64{1} << 22;
    const HostBuffer data = generate(DType::F32, n, Dist::Uniform, 18);
    DeviceBuffer in(t, data.bytes(), data.data());
    DeviceBuffer out(t, n * sizeof(float));
    auto run = [&](const SegmentLayout& layout, cl_mem offsets, const std::string& want, const std::string& what) {
      const xr::detail::SegmentOutcome r = device.reduce(job_on(in.mem, n, layout, offsets, out.mem));
      CHECK_MESSAGE(r.kernel == "auto:" + want, what, ": ", r.kernel, " (", r.finish, ")");
      SegmentedResult got;
      got.kind = layout.kind;
      got.values = read_back(t, out.mem, DType::F32, layout.count);
      got.rounding_depth = r.depth;
      const SegmentAgreement a = check_segments(got, reference_segments(data.view(), layout, Op::Sum), false);
      CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
    };
    struct Case {
      MatrixShape shape;
      int axis;
      const char* want;
    };
    for (const Case& c :
         {Case{{n / 2, 2}, 1, "lanes"}, Case{{n / 32, 32}, 1, "lanes"}, Case{{n / 1024, 1024}, 1, "lanes"},
          Case{{2200, 1900}, 1, "workgroup"}, Case{{16, n / 16}, 1, "multigroup"}, Case{{1, n}, 1, "multigroup"},
          Case{{n / 4, 4}, 0, "columns"}, Case{{1024, n / 1024}, 0, "columns"}})
      run(axis_layout(c.shape, c.axis), nullptr, c.want,
          std::to_string(c.shape.rows) + "x" + std::to_string(c.shape.cols) + " axis " + std::to_string(c.axis));
    std::vector<u64> one_long(30000, 40);
    one_long[15000] = u64{1} << 21;  // a team of lanes would read it for 2^14 rounds or more
    // Even lengths to lanes; a long tail, or one long segment, to balanced.
    for (const auto& [lengths, want] : {std::pair{random_lengths(40000, 60, 19), "lanes"},
                                        std::pair{lognormal_lengths(40000, 3.66, 1.0, 20), "balanced"},
                                        std::pair{one_long, "balanced"}}) {
      auto offsets = offsets_of(lengths);
      while (static_cast<u64>(offsets.back()) > n) offsets.pop_back();
      DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
      const SegmentLayout layout = offsets_layout(offsets);
      run(layout, offs.mem, want, std::string("offsets for ") + want);
    }
  }
}

TEST_CASE("f16 and bf16 in the plans of a GPU: their bits loaded 16 bytes at a time, values as f32 or the input type") {
  // The plans auto makes for an H100, as above, for f16 maxima (values stored as f16) and bf16
  // sums (f32 values): fitted rows of 32 in teams, columns 8 a load with a second kernel for the
  // bands, segments of even lengths in teams and of mixed lengths balanced. Two (type, op) pairs keep
  // the kernel builds few.
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const od::DeviceCaps gpu = as_h100(t.caps);
    od::Segments device(gpu, t.context, t.queue, true);
    const u64 n = u64{1} << 18;
    const auto offsets = offsets_of(lognormal_lengths(3000, 3.66, 1.0, 23));
    const auto even_offsets = offsets_of(random_lengths(3000, 60, 25));
    REQUIRE(static_cast<u64>(offsets.back()) <= n);
    DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
    DeviceBuffer even_offs(t, even_offsets.size() * sizeof(std::int64_t), even_offsets.data());
    SegmentLayout segments = offsets_layout(offsets);
    SegmentLayout even = segments;
    even.count = even_offsets.size() - 1;
    even.offsets = even_offsets.data();
    for (const auto& [type, op] : {std::pair{DType::F16, Op::Max}, std::pair{DType::BF16, Op::Sum}}) {
      const HostBuffer data = generate(type, n, Dist::Uniform, 24);
      DeviceBuffer in(t, data.bytes(), data.data());
      const DType result = result_dtype(op, type);
      DeviceBuffer out(t, n * size_of(result));
      for (const auto& [layout, want] :
           {std::pair{axis_layout({n / 32, 32}, 1), "lanes"}, std::pair{axis_layout({n / 24, 24}, 0), "columns"},
            std::pair{even, "lanes"}, std::pair{segments, "balanced"}}) {
        const std::string what = name_of("auto", op, type, std::string(to_string(layout.kind)));
        const cl_mem offsets_mem = layout.kind != SegmentKind::Offsets ? nullptr
                                   : layout.offsets == even.offsets   ? even_offs.mem
                                                                      : offs.mem;
        const xr::detail::SegmentOutcome r =
            device.reduce(job_on(in.mem, n, layout, offsets_mem, out.mem, "auto", type, op));
        CHECK_MESSAGE(r.kernel == std::string("auto:") + want, what, ": ", r.kernel);
        SegmentedResult got;
        got.kind = layout.kind;
        got.values = read_back(t, out.mem, result, layout.count);
        got.rounding_depth = r.depth;
        const SegmentAgreement a = check_segments(got, reference_segments(data.view(), layout, op), false);
        CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
      }
    }
  }
}

// ---- balanced ----------------------------------------------------------------------------------

// balanced named, with a work-group size and a grid (0: its defaults, 128 work-items and 4
// work-groups of them per compute unit). At 32 work-items a tile is 1024 elements of f32 and u8
// (512 of f64), so that small inputs span many tiles and work-groups; at 16, narrower than the
// 30 edge elements a tile of u8 may have, some work-items load more than one.
namespace {

RunOptions balanced(unsigned block = 0, u64 grid = 0) {
  RunOptions o;
  o.kernel = "balanced";
  o.block_size = block;
  o.grid_size = grid;
  return o;
}

std::string shape_of(const std::string& what, unsigned block, u64 grid) {
  return what + ", work-groups of " + std::to_string(block) + ", grid " + std::to_string(grid);
}

}  // namespace

TEST_CASE("balanced: lognormal lengths, every op and type, work-groups of 16 to 128, one to one per tile") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    // The segments start at element 5 of the input, which starts at element 3 of the buffer: no
    // tile starts on a 16-byte boundary.
    const auto offsets = offsets_of(lognormal_lengths(3000, 3.66, 1.2, 31), 5);
    const u64 n = static_cast<u64>(offsets.back()) + 7;
    std::vector<DType> types{DType::F32, DType::I32, DType::U8, DType::F16, DType::BF16};
    if (t.caps.fp64) types.push_back(DType::F64);
    for (DType type : types)
      for (Op op : fold_ops) {
        const HostBuffer data = generate(type, n + 3, dist_for(op), 32);
        check_offsets_call(t, data, 3, offsets, op, balanced(), name_of("balanced", op, type, "lognormal"));
      }
    // i32 sums: in i64 by default, wrapping in i32 with the native accumulator.
    const HostBuffer wide = generate(DType::I32, n, Dist::Wide, 33);
    RunOptions native = balanced(32);
    native.accumulator = Accumulator::Native;
    check_offsets_call(t, wide, 0, offsets, Op::Sum, balanced(32), name_of("balanced", Op::Sum, DType::I32, "wide"));
    check_offsets_call(t, wide, 0, offsets, Op::Sum, native, name_of("balanced", Op::Sum, DType::I32, "wide, native"));
    // Work-group sizes and grids: one work-group for every tile, a few, one per tile.
    for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::U8, Op::Max}}) {
      const HostBuffer data = generate(type, n + 3, Dist::Uniform, 34);
      for (unsigned block : {16u, 32u, 64u, 128u})
        for (u64 grid : {u64{1}, u64{3}, u64{0}, u64{1} << 20})
          check_offsets_call(t, data, 3, offsets, op, balanced(block, grid),
                             name_of("balanced", op, type, shape_of("lognormal", block, grid)));
    }
  }
}

TEST_CASE("balanced: empty segments, alone, alternating with long ones, leading and trailing") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    std::vector<u64> alternating;
    for (u64 i = 0; i < 400; ++i) alternating.push_back(i % 2 ? 0 : i % 3 ? 1500 : 3);
    std::vector<u64> around(500, 0);
    around.push_back(5000);
    around.insert(around.end(), 700, 0);
    std::vector<u64> one(1000, 0);
    one[999] = 1;
    const std::vector<Lengths> cases = {{"all empty", std::vector<u64>(3000, 0)},
                                        {"empty alternating with long", alternating},
                                        {"500 empty, 5000, 700 empty", around},
                                        {"999 empty, then 1", one}};
    for (const auto& c : cases) {
      const auto offsets = offsets_of(c.lengths, 2);
      const u64 n = static_cast<u64>(offsets.back()) + 4;
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::F32, Op::Max},
                                     std::pair{DType::I32, Op::Min}, std::pair{DType::I32, Op::Prod}}) {
        const HostBuffer data = generate(type, n, dist_for(op), 41);
        for (unsigned block : {32u, 128u})
          for (u64 grid : {u64{0}, u64{1} << 20})
            check_offsets_call(t, data, 0, offsets, op, balanced(block, grid),
                               name_of("balanced", op, type, shape_of(c.name, block, grid)));
      }
    }
  }
}

TEST_CASE("balanced: one segment across many tiles and work-groups") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    std::vector<u64> huge(300, 3);
    huge[150] = (u64{1} << 20) + 3;
    const std::vector<Lengths> cases = {{"one of 2^20+3 among short ones", huge},
                                        {"one segment of 2^20+3", {(u64{1} << 20) + 3}},
                                        {"2^20+3, then short ones", {(u64{1} << 20) + 3, 1, 0, 2, 5}}};
    for (const auto& c : cases) {
      const auto offsets = offsets_of(c.lengths, 1);
      const u64 n = static_cast<u64>(offsets.back()) + 1;
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::I32, Op::Sum},
                                     std::pair{t.caps.fp64 ? DType::F64 : DType::F32, Op::Max}}) {
        const HostBuffer data = generate(type, n, Dist::Uniform, 51);
        // Default groups; 300 and 5000 work-groups of 32 (tiles of 1024), so that the fix-up
        // combines runs of parts longer than its work-group.
        for (const auto& [block, grid] : {std::pair{0u, u64{0}}, std::pair{32u, u64{300}}, std::pair{32u, u64{5000}}})
          check_offsets_call(t, data, 0, offsets, op, balanced(block, grid),
                             name_of("balanced", op, type, shape_of(c.name, block, grid)));
      }
    }
  }
}

TEST_CASE("balanced: segments ending at, before and after tile and work-group boundaries") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    // Work-groups of 32: tiles of 1024 elements (f32, u8), 512 (f64). Lengths around multiples of
    // those, so that segments end on, one before and one after the edges of tiles, and cross them.
    std::vector<u64> lengths;
    for (u64 tile : {u64{512}, u64{1024}})
      for (u64 m : {u64{1}, u64{2}, u64{3}})
        for (u64 d : {u64{0}, u64{1}, u64{2}}) {
          lengths.push_back(m * tile - 1 + d);
          lengths.push_back(d);
        }
    std::mt19937_64 rng(61);
    std::shuffle(lengths.begin(), lengths.end(), rng);
    for (u64 start : {u64{0}, u64{1023}}) {
      const auto offsets = offsets_of(lengths, start);
      const u64 n = static_cast<u64>(offsets.back());
      std::vector<std::pair<DType, Op>> typed{{DType::F32, Op::Sum}, {DType::U8, Op::Sum}, {DType::BF16, Op::Min}};
      if (t.caps.fp64) typed.emplace_back(DType::F64, Op::Sum);
      for (const auto& [type, op] : typed) {
        const HostBuffer data = generate(type, n, dist_for(op), 62);
        // One tile per work-group, two or three, and the default grid.
        for (u64 grid : {u64{1} << 20, u64{40}, u64{0}})
          check_offsets_call(t, data, 0, offsets, op, balanced(32, grid),
                             name_of("balanced", op, type, shape_of("start " + std::to_string(start), 32, grid)));
      }
    }
  }
}

TEST_CASE("balanced: the plan of a GPU (132 compute units), run on this device") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::DeviceCaps gpu = t.caps;
    gpu.type = CL_DEVICE_TYPE_GPU;
    gpu.compute_units = 132;
    od::Segments device(gpu, t.context, t.queue, true);
    const auto offsets = offsets_of(lognormal_lengths(40000, 3.66, 1.0, 71));
    const u64 n = static_cast<u64>(offsets.back());
    const HostBuffer data = generate(DType::F32, n, Dist::Uniform, 72);
    DeviceBuffer in(t, data.bytes(), data.data());
    DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
    DeviceBuffer out(t, (offsets.size() - 1) * sizeof(float));
    const xr::detail::SegmentJob job = job_on(in.mem, n, offsets_layout(offsets), offs.mem, out.mem, "balanced");
    const xr::detail::SegmentOutcome r = device.reduce(job);
    CHECK(r.kernel == "balanced");
    CHECK(r.launches == 2);
    CHECK_MESSAGE(r.finish.find("528 work-groups") != std::string::npos, r.finish);
    SegmentedResult got;
    got.kind = SegmentKind::Offsets;
    got.values = read_back(t, out.mem, DType::F32, job.layout.count);
    got.rounding_depth = r.depth;
    const SegmentAgreement a = check_segments(got, reference_segments(data.view(), job.layout, Op::Sum), false);
    CHECK_MESSAGE(a.ok(), a.detail);
  }
}

TEST_CASE("the Reducer on host data: inputs cut into jobs, and the record") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    const auto offsets = offsets_of(random_lengths(3000, 300, 14));
    const HostBuffer data = generate(DType::F32, static_cast<u64>(offsets.back()), Dist::Uniform, 15);
    const SegmentLayout layout = offsets_layout(offsets);
    const SegmentReference ref = reference_segments(data.view(), layout, Op::Sum);
    RunOptions o;
    o.device_mem_limit = 1 << 20;  // jobs of at most a quarter of it: several
    o.repeat = 2;
    const SegmentedResult got = r.reduce_segments(data.view(), offsets, Op::Sum, o);
    const SegmentAgreement a = check_segments(got, ref, false);
    CHECK_MESSAGE(a.ok(), a.detail);
    CHECK(got.record.chunks > 1);
    CHECK(got.record.kernel.rfind("auto:", 0) == 0);
    CHECK(got.record.kernel_ms > 0);
    CHECK(got.record.launches >= 1);
    // Columns of a matrix, and the same with the strategy named.
    const MatrixShape shape{3001, 37};
    const HostBuffer m = generate(DType::F64, shape.rows * shape.cols, Dist::Uniform, 16);
    if (t.caps.fp64)
      for (const std::string s : {"auto", "columns", "serial"}) {
        RunOptions c;
        c.kernel = s;
        const SegmentedResult col = r.reduce_axis(HostMatrix{m.data(), DType::F64, shape}, 0, Op::Max, c);
        const SegmentAgreement b =
            check_segments(col, reference_segments(m.view(), axis_layout(shape, 0), Op::Max), false);
        CHECK_MESSAGE(b.ok(), s, ": ", b.detail);
      }
  }
}

TEST_CASE("a queue without profiling: host-clock times, the same values") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const MatrixShape shape{500, 300};
    const SegmentLayout layout = axis_layout(shape, 1);
    const HostBuffer data = generate(DType::F32, layout.span(), Dist::Uniform, 17);
    DeviceBuffer in(t, data.bytes(), data.data());
    DeviceBuffer out(t, layout.count * sizeof(float));
    RunOptions o;
    o.warmup = 1;
    o.repeat = 3;
    const Result r = opencl::reduce_axis(t.plain_queue, in.mem, 0, DType::F32, shape, 1, Op::Sum, out.mem, o);
    CHECK(r.kernel_ms > 0);
    CHECK(r.repeats == 3);
    expect_agrees(t, r, out.mem, data, 0, layout, Op::Sum, o, "plain queue");
  }
}

TEST_CASE("the asynchronous forms: one pass enqueued, its values once the queue has run it") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    // The record of a call that returns none, for expect_agrees: the values are checked under
    // the deepest rounding a segment of its length may have.
    const auto record_of = [](const SegmentLayout& layout) {
      Result r;
      r.n = layout.elements();
      r.backend = "opencl";
      return r;
    };
    // Rows and columns of a strided matrix, offset in its buffer, with every strategy, on both queues.
    const MatrixShape shape{300, 77, 80};
    for (int axis : {0, 1}) {
      const SegmentLayout layout = axis_layout(shape, axis);
      const HostBuffer data = generate(DType::F32, layout.span() + 2, Dist::Uniform, 81);
      DeviceBuffer in(t, data.bytes(), data.data());
      for (const auto& s : strategies(t, layout.kind))
        for (cl_command_queue q : {t.queue, t.plain_queue}) {
          RunOptions o;
          o.kernel = s;
          DeviceBuffer out(t, layout.count * sizeof(float));
          opencl::reduce_axis_async(q, in.mem, 2, DType::F32, shape, axis, Op::Sum, out.mem, o);
          od::check(clFinish(q), "clFinish");
          expect_agrees(t, record_of(layout), out.mem, data, 2, layout, Op::Sum, o,
                        name_of(s, Op::Sum, DType::F32, "async, axis " + std::to_string(axis)));
        }
    }
    // Offsets of mixed lengths and empty segments, every strategy, a few ops and types.
    const auto offsets = offsets_of(lognormal_lengths(2000, 3.0, 1.2, 82), 3);
    const SegmentLayout layout = offsets_layout(offsets);
    const u64 n = static_cast<u64>(offsets.back()) + 5;
    DeviceBuffer offs(t, offsets.size() * sizeof(std::int64_t), offsets.data());
    for (const auto& s : strategies(t, SegmentKind::Offsets))
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::I32, Op::Max}}) {
        RunOptions o;
        o.kernel = s;
        const HostBuffer data = generate(type, n, dist_for(op), 83);
        DeviceBuffer in(t, data.bytes(), data.data());
        DeviceBuffer out(t, layout.count * size_of(result_dtype(op, type)));
        opencl::reduce_segments_async(t.queue, in.mem, 0, n, type, offs.mem, layout.count, op, out.mem, o);
        od::check(clFinish(t.queue), "clFinish");
        expect_agrees(t, record_of(layout), out.mem, data, 0, layout, op, o, name_of(s, op, type, "async offsets"));
      }
    // Offsets the host never checks: every strategy that does not read them back completes, within
    // the buffers; binned and multigroup read them back and refuse them as the synchronous form does.
    const std::vector<float> x(20000, 1.0f);
    std::vector<std::int64_t> wild(401);
    std::mt19937_64 rng(84);
    for (auto& v : wild) v = static_cast<std::int64_t>(rng()) >> (rng() % 60);
    wild[0] = -5;
    DeviceBuffer in(t, x.size() * sizeof(float), x.data());
    DeviceBuffer wild_offs(t, wild.size() * sizeof(std::int64_t), wild.data());
    DeviceBuffer out(t, wild.size() * sizeof(float));
    for (const auto& s : strategies(t, SegmentKind::Offsets)) {
      CAPTURE(s);
      RunOptions o;
      o.kernel = s;
      const auto call = [&] {
        opencl::reduce_segments_async(t.queue, in.mem, 0, x.size(), DType::F32, wild_offs.mem, wild.size() - 1, Op::Sum,
                                      out.mem, o);
      };
      if (s == "binned" || s == "multigroup") {
        CHECK_THROWS_AS(call(), InvalidArgument);
        continue;
      }
      CHECK_NOTHROW(call());
      od::check(clFinish(t.queue), "clFinish");
      const HostBuffer v = read_back(t, out.mem, DType::F32, wild.size() - 1);
      for (u64 i = 0; i + 1 < wild.size(); ++i) CHECK(v.as<float>()[i] <= static_cast<float>(x.size()));
    }
    // Exact sums round on the host: refused.
    RunOptions exact;
    exact.exact = true;
    DeviceBuffer exact_in(t, n * sizeof(float));
    DeviceBuffer exact_out(t, layout.count * sizeof(float));
    CHECK_THROWS_AS(opencl::reduce_segments_async(t.queue, exact_in.mem, 0, n, DType::F32, offs.mem, layout.count,
                                                  Op::Sum, exact_out.mem, exact),
                    InvalidArgument);
  }
}

int main(int argc, char** argv) { return run_on_targets(argc, argv, "opencl segments"); }
