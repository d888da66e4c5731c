// OpenCL segmented reductions (kernels_cl/segments.cl), what only OpenCL has: the strategy table
// of a device, inputs at an offset into their buffer, buffers too small or of another context, a
// queue without profiling and an out-of-order one, exact piece states word for word against
// exact_piece_state, offsets on the device that the host did not plan from, the plans auto makes
// for a GPU run on this device, and jobs under a device memory limit; balanced's work-groups and
// grids are in test_opencl_balanced.cpp. The values of every strategy, op and type, exact sums and
// argument errors are test_segments.cpp's, run on the cl_mem API as segments.opencl_device. Runs
// on the default device of every OpenCL platform (exit 77 when there is none).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../turning_ops.hpp"
#include "internal.hpp"
#include "segment_checks.hpp"
#include "segment_entries.hpp"
#include "segments.hpp"
#include "targets.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
namespace od = xr::opencl::detail;
using namespace xr::ocl_test;
using namespace xr_seg;

TEST_CASE("the strategies: names and layouts, f64 only with cl_khr_fp64") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const auto list = opencl::segment_kernels(t.caps.device);
    std::vector<std::string> names;
    for (const auto& k : list) names.push_back(k.name);
    CHECK(names == std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "binned", "balanced",
                                            "columns", "serial", "pairs"});
    for (const auto& k : list) {
      CAPTURE(k.name);
      const bool lists_f64 = std::find(k.types.begin(), k.types.end(), DType::F64) != k.types.end();
      CHECK(lists_f64 == t.caps.fp64);
    }
    CHECK(strategies(t, SegmentKind::Rows) ==
          std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "serial"});
    CHECK(strategies(t, SegmentKind::Columns) == std::vector<std::string>{"auto", "columns", "serial"});
    CHECK(strategies(t, SegmentKind::Offsets) ==
          std::vector<std::string>{"auto", "lanes", "workgroup", "multigroup", "binned", "balanced", "serial"});
  }
}

TEST_CASE("an input at an offset into its buffer: every strategy on rows, columns and offsets") {
  // The input starts 3 elements into its buffer, after bytes of all ones (OpenclEntry), so that
  // no row, column or segment starts where it would at offset 0 and any read of those elements
  // changes a value.
  const std::vector<MatrixShape> rows = {{2000, 1, 0},     {3000, 2, 0},  {1001, 3, 5},  {700, 8, 0},
                                         {513, 16, 0},     {301, 33, 40}, {129, 128, 0}, {64, 1000, 0},
                                         {17, 4099, 4100}, {3, 70001, 0}, {1, 300007, 0}};
  const std::vector<MatrixShape> columns = {
      {1000, 4, 0},  {999, 3, 0},   {2000, 1, 0}, {257, 1000, 1003}, {5, 100000, 0},
      {70000, 2, 0}, {3000, 16, 0}, {33, 7, 9},   {64, 64, 0},       {100, 130, 0, Order::Fortran}};
  std::vector<u64> huge(300, 3);
  huge[150] = (u64{1} << 20) + 3;
  std::vector<u64> tail = random_lengths(2000, 6, 4);
  tail.insert(tail.end(), {0, 0, 40000, 0, 1, 70001});
  const std::vector<Lengths> segments = {{"all empty", std::vector<u64>(50, 0)},
                                         {"one element each", std::vector<u64>(3000, 1)},
                                         {"random 0..40", random_lengths(5000, 40, 1)},
                                         {"random 0..3000", random_lengths(300, 3000, 2)},
                                         {"lognormal, mean ~64", lognormal_lengths(4000, 3.66, 1.0, 3)},
                                         {"one of 2^20+3 among short ones", huge},
                                         {"short ones, then 40000 and 70001", tail}};
  for (auto& t : targets()) {
    CAPTURE(t.label());
    OpenclEntry entry(t.context, t.queue, t.caps.device, 3);
    const auto run_axis = [&](const MatrixShape& shape, int axis, DType type, Op op, const std::string& s) {
      const SegmentLayout layout = axis_layout(shape, axis);
      const HostBuffer data = generate(type, layout.span(), dist_for(op), shape.rows + shape.cols);
      RunOptions o;
      o.kernel = s;
      expect_agrees(t, entry.reduce_axis(data, shape, axis, op, o), data, layout, op, o,
                    name_of(s, op, type, shape_text(shape, axis) + ", offset 3"));
    };
    for (const auto& [shapes, kind] : {std::pair{rows, SegmentKind::Rows}, std::pair{columns, SegmentKind::Columns}}) {
      const auto names = strategies(t, kind);
      for (std::size_t si = 0; si < names.size(); ++si) {
        for (const MatrixShape& shape : shapes) {
          // Rows are axis 1; columns axis 0, or axis 1 of a Fortran-order matrix.
          const int axis = kind == SegmentKind::Rows || shape.order == Order::Fortran ? 1 : 0;
          run_axis(shape, axis, DType::F32, Op::Sum, names[si]);
        }
        // Every type (the offset in bytes changes with its size), ops turning with the strategy.
        for (const auto& [type, op] : xr_test::turning_ops(types_of(t), si))
          run_axis(kind == SegmentKind::Rows ? MatrixShape{40, 517, 520} : MatrixShape{777, 4}, kind == SegmentKind::Rows,
                   type, op, names[si]);
      }
    }
    const auto names = strategies(t, SegmentKind::Offsets);
    for (std::size_t si = 0; si < names.size(); ++si) {
      RunOptions o;
      o.kernel = names[si];
      for (const auto& c : segments) {
        // The segments start at element 5 of the input.
        const auto offsets = offsets_of(c.lengths, 5);
        const HostBuffer data = generate(DType::F32, static_cast<u64>(offsets.back()) + 7, Dist::Uniform, 5);
        expect_agrees(t, entry.reduce_segments(data, offsets, Op::Sum, o), data, offsets_layout(offsets), Op::Sum, o,
                      name_of(names[si], Op::Sum, DType::F32, c.name + ", offset 3"));
      }
      const auto offsets = offsets_of(random_lengths(1500, 70, 8));
      for (const auto& [type, op] : xr_test::turning_ops(types_of(t), si)) {
        const HostBuffer data = generate(type, static_cast<u64>(offsets.back()), dist_for(op), 9);
        expect_agrees(t, entry.reduce_segments(data, offsets, op, o), data, offsets_layout(offsets), op, o,
                      name_of(names[si], op, type, "random 0..70, offset 3"));
      }
    }
    // Exact sums: the pieces read from the offset.
    RunOptions exact;
    exact.exact = true;
    const auto offsets = offsets_of({0, 1, 7, 65536, 65537, 3, 0, 1000});
    const HostBuffer wide = generate(DType::F32, static_cast<u64>(offsets.back()), Dist::Wide, 21);
    expect_agrees(t, entry.reduce_segments(wide, offsets, Op::Sum, exact), wide, offsets_layout(offsets), Op::Sum, exact,
                  "exact, offset 3");
    const MatrixShape shape{300, 77, 80};
    for (int axis : {0, 1})
      expect_agrees(t, entry.reduce_axis(wide, shape, axis, Op::Sum, exact), wide, axis_layout(shape, axis), Op::Sum,
                    exact, "exact " + shape_text(shape, axis) + ", offset 3");
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

TEST_CASE("buffers and queues: too small, of another context, no queue; InvalidArgument before anything runs") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const std::vector<float> x(100, 1.0f);
    ClBuffer in(t.context, x.size() * sizeof(float), x.data());
    ClBuffer out(t.context, 100 * sizeof(double));
    auto segments = [&](const std::vector<i64>& o, u64 n = 100, const RunOptions& opt = {}) {
      ClBuffer offs(t.context, o.size() * sizeof(i64), o.data());
      return opencl::reduce_segments(t.queue, in.mem, 0, n, DType::F32, offs.mem, o.size() - 1, Op::Sum, out.mem, opt);
    };
    CHECK_THROWS_AS(segments({0, 10}, 101), InvalidArgument);  // n beyond the buffer
    CHECK_NOTHROW(segments({0, 10, 100}));
    // The offsets buffer holds fewer than n_segments + 1 values; the values buffer too few.
    {
      ClBuffer offs(t.context, 2 * sizeof(i64));
      CHECK_THROWS_AS(opencl::reduce_segments(t.queue, in.mem, 0, 100, DType::F32, offs.mem, 2, Op::Sum, out.mem),
                      InvalidArgument);
      ClBuffer small(t.context, 2 * sizeof(float));
      const std::vector<i64> o{0, 1, 2, 3};
      ClBuffer offs3(t.context, o.size() * sizeof(i64), o.data());
      CHECK_THROWS_AS(opencl::reduce_segments(t.queue, in.mem, 0, 100, DType::F32, offs3.mem, 3, Op::Sum, small.mem),
                      InvalidArgument);
    }
    // A matrix beyond the buffer, from its start and from an offset.
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 0, DType::F32, MatrixShape{11, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce_axis(t.queue, in.mem, 1, DType::F32, MatrixShape{10, 10}, 1, Op::Sum, out.mem),
                    InvalidArgument);
    CHECK_NOTHROW(opencl::reduce_axis(t.queue, in.mem, 0, DType::F32, MatrixShape{10, 10}, 1, Op::Sum, out.mem));
    // No queue.
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
    ClBuffer in(t.context, x.size() * sizeof(float), x.data());
    ClBuffer offs(t.context, wild.size() * sizeof(std::int64_t), wild.data());
    ClBuffer out(t.context, planned.size() * sizeof(float));
    for (const auto& s : strategies(t, SegmentKind::Offsets)) {
      CAPTURE(s);
      const xr::detail::SegmentJob job = job_on(in.mem, x.size(), offsets_layout(planned), offs.mem, out.mem, s);
      CHECK_NOTHROW(device.reduce(job));
      const HostBuffer v = read_back(t, out.mem, DType::F32, job.layout.count);
      for (u64 i = 0; i < job.layout.count; ++i) CHECK(v.as<float>()[i] <= static_cast<float>(x.size()));
    }
  }
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
    ClBuffer in(t.context, data.bytes(), data.data());
    ClBuffer out(t.context, n * sizeof(float));
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
      ClBuffer offs(t.context, offsets.size() * sizeof(std::int64_t), offsets.data());
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
    ClBuffer offs(t.context, offsets.size() * sizeof(std::int64_t), offsets.data());
    ClBuffer even_offs(t.context, even_offsets.size() * sizeof(std::int64_t), even_offsets.data());
    SegmentLayout segments = offsets_layout(offsets);
    SegmentLayout even = segments;
    even.count = even_offsets.size() - 1;
    even.offsets = even_offsets.data();
    for (const auto& [type, op] : {std::pair{DType::F16, Op::Max}, std::pair{DType::BF16, Op::Sum}}) {
      const HostBuffer data = generate(type, n, Dist::Uniform, 24);
      ClBuffer in(t.context, data.bytes(), data.data());
      const DType result = result_dtype(op, type);
      ClBuffer out(t.context, n * size_of(result));
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

TEST_CASE("the Reducer on host data under a device memory limit: several jobs, the values and the record") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    const auto offsets = offsets_of(random_lengths(3000, 300, 14));
    const HostBuffer data = generate(DType::F32, static_cast<u64>(offsets.back()), Dist::Uniform, 15);
    const SegmentReference ref = reference_segments(data.view(), offsets_layout(offsets), Op::Sum);
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
  }
}

TEST_CASE("a queue without profiling: host-clock times, the same values") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const MatrixShape shape{500, 300};
    const SegmentLayout layout = axis_layout(shape, 1);
    const HostBuffer data = generate(DType::F32, layout.span(), Dist::Uniform, 17);
    OpenclEntry entry(t.context, t.plain_queue, t.caps.device);
    RunOptions o;
    o.warmup = 1;
    o.repeat = 3;
    const SegmentedResult got = entry.reduce_axis(data, shape, 1, Op::Sum, o);
    CHECK(got.record.kernel_ms > 0);
    CHECK(got.record.repeats == 3);
    expect_agrees(t, got, data, layout, Op::Sum, o, "plain queue");
  }
}

TEST_CASE("an out-of-order queue: the values of every layout, exact sums too") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    cl_int rc = CL_SUCCESS;
    cl_command_queue queue =
        clCreateCommandQueue(t.context, t.caps.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE, &rc);
    od::check(rc, "clCreateCommandQueue");
    {
      OpenclEntry entry(t.context, queue, t.caps.device);
      const auto offsets = offsets_of(lognormal_lengths(3000, 3.66, 1.0, 18));
      const HostBuffer data = generate(DType::F32, static_cast<u64>(offsets.back()), Dist::Uniform, 19);
      for (bool exact : {false, true}) {
        RunOptions o;
        o.exact = exact;
        expect_agrees(t, entry.reduce_segments(data, offsets, Op::Sum, o), data, offsets_layout(offsets), Op::Sum, o,
                      exact ? "offsets, exact" : "offsets");
        const MatrixShape shape{700, 90};
        for (int axis : {0, 1})
          expect_agrees(t, entry.reduce_axis(data, shape, axis, Op::Sum, o), data, axis_layout(shape, axis), Op::Sum, o,
                        shape_text(shape, axis) + (exact ? ", exact" : ""));
      }
    }
    clReleaseCommandQueue(queue);
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
      ClBuffer in(t.context, data.bytes(), data.data());
      for (const auto& s : strategies(t, layout.kind))
        for (cl_command_queue q : {t.queue, t.plain_queue}) {
          RunOptions o;
          o.kernel = s;
          ClBuffer out(t.context, layout.count * sizeof(float));
          opencl::reduce_axis_async(q, in.mem, 2, DType::F32, shape, axis, Op::Sum, out.mem, o);
          od::check(clFinish(q), "clFinish");
          expect_agrees(t, device_result(record_of(layout), read_back(t, out.mem, DType::F32, layout.count)), tail_of(data, 2),
                        layout, Op::Sum, o,
                        name_of(s, Op::Sum, DType::F32, "async, axis " + std::to_string(axis)));
        }
    }
    // Offsets of mixed lengths and empty segments, every strategy, a few ops and types.
    const auto offsets = offsets_of(lognormal_lengths(2000, 3.0, 1.2, 82), 3);
    const SegmentLayout layout = offsets_layout(offsets);
    const u64 n = static_cast<u64>(offsets.back()) + 5;
    ClBuffer offs(t.context, offsets.size() * sizeof(std::int64_t), offsets.data());
    for (const auto& s : strategies(t, SegmentKind::Offsets))
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::I32, Op::Max}}) {
        RunOptions o;
        o.kernel = s;
        const HostBuffer data = generate(type, n, dist_for(op), 83);
        ClBuffer in(t.context, data.bytes(), data.data());
        ClBuffer out(t.context, layout.count * size_of(result_dtype(op, type)));
        opencl::reduce_segments_async(t.queue, in.mem, 0, n, type, offs.mem, layout.count, op, out.mem, o);
        od::check(clFinish(t.queue), "clFinish");
        expect_agrees(t, device_result(record_of(layout), read_back(t, out.mem, result_dtype(op, type), layout.count)), data,
                      layout, op, o, name_of(s, op, type, "async offsets"));
      }
    // Offsets the host never checks: every strategy that does not read them back completes, within
    // the buffers; binned and multigroup read them back and refuse them as the synchronous form does.
    // A segment that such offsets do not describe may be left unwritten (balanced, whose merge path
    // assumes offsets that never decrease): the values start as zeros, so a value above the input's
    // sum, or NaN, is a read beyond the input.
    const std::vector<float> x(20000, 1.0f);
    const std::vector<float> zeros(401);
    std::vector<std::int64_t> wild(401);
    std::mt19937_64 rng(84);
    for (auto& v : wild) v = static_cast<std::int64_t>(rng()) >> (rng() % 60);
    wild[0] = -5;
    ClBuffer in(t.context, x.size() * sizeof(float), x.data());
    ClBuffer wild_offs(t.context, wild.size() * sizeof(std::int64_t), wild.data());
    for (const auto& s : strategies(t, SegmentKind::Offsets)) {
      CAPTURE(s);
      ClBuffer out(t.context, zeros.size() * sizeof(float), zeros.data());
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
    ClBuffer exact_in(t.context, n * sizeof(float));
    ClBuffer exact_out(t.context, layout.count * sizeof(float));
    CHECK_THROWS_AS(opencl::reduce_segments_async(t.queue, exact_in.mem, 0, n, DType::F32, offs.mem, layout.count,
                                                  Op::Sum, exact_out.mem, exact),
                    InvalidArgument);
  }
}

int main(int argc, char** argv) { return run_on_targets(argc, argv, "opencl segments"); }
