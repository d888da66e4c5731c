// CUDA backend tests that the cross-backend suite cannot express: data already on the device.
// This file: the ladder's rows, every rung, op, type and block size on device pointers, NaN,
// multi-pass and nested launches, misaligned pointers, the mapped ops; test_cuda_device.cpp: the asynchronous
// forms on a stream, graphs, tiles, errors, device memory limits, the streamed host path and
// 64-bit indexing. Shared helpers: cuda_checks.hpp.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "xreduce/cuda.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

#include "cuda_checks.hpp"

using namespace xr_cuda_test;

TEST_CASE("ladder order and notes") {
  const std::vector<std::string> want{"interleaved_divergent", "interleaved_strided", "sequential", "first_add",
                                      "unroll_last_warp",      "unroll_complete",     "cascade",    "shuffle",
                                      "vector",                "single_pass",         "dynamic_tiles",
                                      "bulk_copy",             "bulk_tiles",          "atomic_global",
                                      "atomic_shared",         "tree_atomic",         "nested",
                                      "nested_per_block",      "cub",                 "auto"};
  const auto ks = xr::cuda::kernels();
  REQUIRE(ks.size() == want.size());
  for (std::size_t i = 0; i < ks.size(); ++i) {
    CHECK(ks[i].name == want[i]);
    CHECK(!ks[i].note.empty());
    CHECK(ks[i].note.find('\n') == std::string::npos);
  }
  CHECK(ks[18].kind == xr::KernelKind::Baseline);
  CHECK(ks[19].kind == xr::KernelKind::Auto);
  auto r = xr::make_reducer("cuda");
  CHECK(r->kernels().size() == want.size());
  CHECK(!r->device().empty());
}

TEST_CASE("device pointer API: auto, every type, op and size") {
  xr::for_each_dtype([](auto t) {
    using T = decltype(t);
    for (Op op : xr::all_ops)
      for (u64 n : kSizes)
        for (Accumulator acc : accumulators(op, xr::dtype_of<T>)) {
          const auto h = make_data<T>(n, op, 1);
          DevBuf<T> d(h);
          xr::RunOptions opt;
          opt.accumulator = acc;
          if (n == 0 && !empty_has_value(op)) {
            CHECK_THROWS_AS(xr::cuda::reduce(d.p, n, op, nullptr, opt), xr::EmptyInput);
            continue;
          }
          const xr::Result res = xr::cuda::reduce(d.p, n, op, nullptr, opt);
          check_value(res, h, op, acc, "auto");
          // n = 0 runs no layout: one launch writes the empty value.
          CHECK((n == 0 ? res.kernel == "auto" : auto_ran_its_layout(res.kernel, n * sizeof(T), op)));
          CHECK(res.launches == 1);
        }
  });
}

TEST_CASE("every rung, op and type, default and non-power-of-two block sizes, device and host paths") {
  auto reducer = xr::make_reducer("cuda");
  const std::vector<u64> sizes{0, 1, 33, 1025, 100003};
  for (const auto& k : xr::cuda::kernels()) {
    xr::for_each_dtype([&](auto t) {
      using T = decltype(t);
      for (Op op : xr::all_ops) {
        if (!k.supports(op, xr::dtype_of<T>)) continue;
        for (u64 n : sizes) {
          if (n == 0 && !empty_has_value(op)) continue;
          if (k.name == "atomic_global" && n > 2000 && op != Op::Sum) continue;  // CAS loops: slow, not wrong
          for (Accumulator acc : accumulators(op, xr::dtype_of<T>)) {
            const auto h = make_data<T>(n, op, 2);
            DevBuf<T> d(h);
            for (unsigned block : blocks_for(k)) {
              xr::RunOptions opt;
              opt.kernel = k.name;
              opt.block_size = block;
              opt.accumulator = acc;
              check_value(xr::cuda::reduce(d.p, n, op, nullptr, opt), h, op, acc, k.name + " block " + std::to_string(block));
            }
            xr::RunOptions opt;
            opt.kernel = k.name;
            opt.accumulator = acc;
            check_value(reducer->reduce(std::span<const T>(h), op, opt), h, op, acc, k.name + " host span");
          }
        }
      }
    });
  }
}

TEST_CASE("NaN propagates through min and max on every rung") {
  for (const auto& k : xr::cuda::kernels()) {
    xr::for_each_dtype([&](auto t) {
      using T = decltype(t);
      if constexpr (xr::is_float_v<T>) {
        for (Op op : {Op::Min, Op::Max})
          for (u64 pos : {u64(0), u64(517), u64(1024)}) {
            if (!k.supports(op, xr::dtype_of<T>)) continue;  // the classic rungs: four types
            auto h = make_data<T>(1025, Op::Sum, 3);
            h[pos] = std::numeric_limits<T>::quiet_NaN();
            DevBuf<T> d(h);
            xr::RunOptions opt;
            opt.kernel = k.name;
            const auto res = xr::cuda::reduce(d.p, h.size(), op, nullptr, opt);
            INFO(k.name << " " << xr::to_string(op) << " NaN at " << pos);
            CHECK(std::isnan(res.value.f));
          }
      }
    });
  }
}

TEST_CASE("blocks the rung cannot run are rejected") {
  DevBuf<float> d(std::vector<float>(100, 1.0f));
  auto bad = [&](const char* kernel, unsigned block) {
    xr::RunOptions opt;
    opt.kernel = kernel;
    opt.block_size = block;
    CHECK_THROWS_AS(xr::cuda::reduce(d.p, 100, Op::Sum, nullptr, opt), xr::InvalidArgument);
  };
  bad("unroll_complete", 96);
  bad("unroll_complete", 1024);
  bad("shuffle", 100);
  bad("auto", 2048);
  bad("sequential", 2048);
  bad("cub", 256);
  xr::RunOptions opt;
  opt.kernel = "no_such_rung";
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, 100, Op::Sum, nullptr, opt), xr::InvalidArgument);
}

TEST_CASE("multi-pass: partials reduced on the device pass after pass") {
  const u64 n = (1u << 20) + 7;
  const auto h = make_data<std::int32_t>(n, Op::Sum, 4);
  DevBuf<std::int32_t> d(h);
  xr::RunOptions opt;
  opt.kernel = "sequential";
  opt.block_size = 32;
  opt.repeat = 3;
  opt.warmup = 1;
  const auto res = xr::cuda::reduce(d.p, n, Op::Sum, nullptr, opt);
  check_value(res, h, Op::Sum, Accumulator::Wide, "sequential/32");
  CHECK(res.launches == 5);  // 1048583 -> 32769 -> 1025 -> 33 -> 2 -> 1
  CHECK(res.finish == "multi-pass");
  CHECK(res.repeats == 3);
  CHECK(res.kernel_ms > 0);
  CHECK(res.bytes_per_s > 0);
  opt.kernel = "nested";
  opt.block_size = 32;  // chunks of 256: 1048583 -> 4097 -> 17 -> 1
  const auto nested = xr::cuda::reduce(d.p, n, Op::Sum, nullptr, opt);
  check_value(nested, h, Op::Sum, Accumulator::Wide, "nested/32");
  CHECK(nested.launches == 3);
}

TEST_CASE("nested_per_block: a chain of child grids per block, the nested finish, the same bits on every call") {
  const u64 n = (1u << 20) + 7;
  const auto h = make_data<double>(n, Op::Sum, 6);
  DevBuf<double> d(h);
  auto run = [&](unsigned block, u64 grid) {
    xr::RunOptions opt;
    opt.kernel = "nested_per_block";
    opt.block_size = block;
    opt.grid_size = grid;
    return xr::cuda::reduce(d.p, n, Op::Sum, nullptr, opt);
  };
  // One block of 96: 96 -> 48 in the top grid, then children of 24, 12, 6, 3, 1, 1 threads
  // (48 -> 24 -> 12 -> 6 -> 3 -> 2 -> 1); no finish.
  const xr::Result one = run(96, 1);
  check_value(one, h, Op::Sum, Accumulator::Wide, "nested_per_block 1x96");
  CHECK(one.launches == 1 + 6);
  // 5 blocks of 96: 5 chains, then one finish level (5 partials fit one block of k_nested).
  const xr::Result five = run(96, 5);
  check_value(five, h, Op::Sum, Accumulator::Wide, "nested_per_block 5x96");
  CHECK(five.launches == 1 + 5 * 6 + 1);
  // 300 blocks of 32: 300 chains of 4 children (32 -> 16 -> 8 -> 4 -> 2 -> 1), the finish in
  // two levels (300 -> 2 -> 1 at 256 partials a block).
  const xr::Result many = run(32, 300);
  check_value(many, h, Op::Sum, Accumulator::Wide, "nested_per_block 300x32");
  CHECK(many.launches == 1 + 300 * 4 + 2);
  // The default grid, twice: the order of every combination is fixed, so the bits are too.
  const xr::Result first = run(0, 0), second = run(0, 0);
  check_value(first, h, Op::Sum, Accumulator::Wide, "nested_per_block default");
  CHECK(first.value.same_bits(second.value));
  // The largest grid at 64 threads, where the most launches are pending at once (every SM full
  // of blocks, 5 children each): the device's pending-launch limit holds them all. One block
  // more is refused.
  int device = 0, sms = 0, blocks_per_sm = 0, threads_per_sm = 0;
  CK(cudaGetDevice(&device));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CK(cudaDeviceGetAttribute(&blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, device));
  CK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  const u64 cap = u64(sms) * u64(std::min(blocks_per_sm, threads_per_sm / 64));
  const xr::Result full = run(64, cap);
  check_value(full, h, Op::Sum, Accumulator::Wide, "nested_per_block full grid x64");
  CHECK(full.launches >= int(1 + cap * 5));
  std::size_t pending = 0;
  CK(cudaDeviceGetLimit(&pending, cudaLimitDevRuntimePendingLaunchCount));
  CHECK(pending >= cap * 5);
  CHECK_THROWS_AS(run(64, cap + 1), xr::InvalidArgument);
}

TEST_CASE("auto on misaligned device pointers (offset 1, 2, 3 elements)") {
  xr::for_each_dtype([](auto t) {
    using T = decltype(t);
    for (u64 offset : {1, 2, 3})
      // The last size is past 64 MiB, where auto switches to block segments with streaming loads.
      for (u64 n : {u64(0), u64(1), u64(2), u64(3), u64(5), u64(7), u64(31), u64(1000), u64((1u << 20) + 7),
                    u64((u64(64) << 20) / sizeof(T) + 7)}) {
        // One input for products, one for every other op (make_data differs for products alone).
        const auto values = make_data<T>(n, Op::Sum, 5 + offset), factors = make_data<T>(n, Op::Prod, 5 + offset);
        const DevBuf<T> d_values(values, offset), d_factors(factors, offset);
        for (Op op : xr::all_ops) {
          if (n == 0 && !empty_has_value(op)) continue;
          const auto& h = op == Op::Prod ? factors : values;
          const DevBuf<T>& d = op == Op::Prod ? d_factors : d_values;
          // A mapped op's reference (an exact sum of up to 2^26 elements) once for every kernel.
          const std::optional<xr::Reference> ref =
              xr::is_mapped(op) ? std::optional(reference_of(h.data(), n, xr::dtype_of<T>, op, Accumulator::Wide))
                                : std::nullopt;
          for (const char* kernel : {"auto", "vector", "single_pass", "dynamic_tiles", "bulk_copy", "bulk_tiles"}) {
            if (xr::is_pair(op) && std::string(kernel) != "auto") continue;  // auto's alone
            // The mapped ops past 64 MiB: auto's layout alone (their smaller sizes take every rung).
            if (xr::is_mapped(op) && n * sizeof(T) >= (u64(64) << 20) && std::string(kernel) != "auto") continue;
            xr::RunOptions opt;
            opt.kernel = kernel;
            const xr::Result res = xr::cuda::reduce(d.p + offset, n, op, nullptr, opt);
            const std::string what = std::string(kernel) + " offset " + std::to_string(offset);
            if (ref) check_reference(res, h, *ref, Accumulator::Wide, what);
            else check_value(res, h, op, Accumulator::Wide, what);
          }
        }
      }
  });
}

// Inputs for the mapped ops: floats with NaN, -0, +0 and negative values; integers with 0,
// negative values and the type's extremes (|lowest| and the squares wrap).
template <class T> std::vector<T> mapped_data(u64 n, u64 seed) {
  std::mt19937_64 rng(seed * 7919 + n);
  std::vector<T> v(n);
  for (auto& x : v) {
    const unsigned pick = static_cast<unsigned>(rng() % 16);
    if constexpr (std::is_integral_v<T>) {
      if (pick == 0) x = 0;
      else if (pick == 1) x = std::numeric_limits<T>::lowest();
      else if (pick == 2) x = std::numeric_limits<T>::max();
      else x = static_cast<T>(std::uniform_int_distribution<long long>(-1000, 1000)(rng));
    } else {
      using C = xr::compute_t<T>;
      const C value = pick == 0   ? std::numeric_limits<C>::quiet_NaN()
                      : pick == 1 ? C(-0.0)
                      : pick == 2 ? C(0.0)
                                  : static_cast<C>(std::uniform_real_distribution<double>(-4.0, 4.0)(rng));
      x = static_cast<T>(value);
    }
  }
  return v;
}

// The rungs that take the mapped ops: the grid family and auto (drivers.cuh: maps_elements).
const std::vector<std::string> kMappingRungs{"cascade",       "shuffle",   "vector",     "single_pass",
                                             "dynamic_tiles", "bulk_copy", "bulk_tiles", "auto"};

TEST_CASE("mapped ops: NaN, -0 and negative values on auto, cascade and vector, every type and size") {
  auto reducer = xr::make_reducer("cuda");
  // Up to more than one block's share of every rung (auto: 256 threads x 4 packs of 16 bytes).
  const std::vector<u64> sizes{0, 1, 2, 7, 33, 1025, 4099, 100003};
  xr::for_each_dtype([&](auto t) {
    using T = decltype(t);
    constexpr DType type = xr::dtype_of<T>;
    for (u64 n : sizes) {
      const auto h = mapped_data<T>(n, 8);
      DevBuf<T> d(h);
      for (Op op : xr::mapped_ops) {
        if (n == 0 && !empty_has_value(op)) {  // nanmin, nanmax
          CHECK_THROWS_AS(xr::cuda::reduce(d.p, n, op), xr::EmptyInput);
          continue;
        }
        for (Accumulator acc : accumulators(op, type)) {
          const xr::Reference ref = reference_of(h.data(), n, type, op, acc);
          for (const char* kernel : {"auto", "cascade", "vector"}) {
            xr::RunOptions opt;
            opt.kernel = kernel;
            opt.accumulator = acc;
            const std::string what = std::string(kernel) + (acc == Accumulator::Native ? " native" : " wide");
            const xr::Result res = xr::cuda::reduce(d.p, n, op, nullptr, opt);
            CHECK(res.op == op);
            check_reference(res, h, ref, acc, what);
            check_reference(reducer->reduce(std::span<const T>(h), op, opt), h, ref, acc, what + " host span");
          }
          // Chunks of 1000: their cells combine on the device by the op's fold, not the op.
          for (xr::HostPath path : {xr::HostPath::Resident, xr::HostPath::Stream}) {
            xr::RunOptions opt;
            opt.accumulator = acc;
            opt.chunk_elements = 1000;
            opt.host_path = path;
            check_reference(reducer->reduce(std::span<const T>(h), op, opt), h, ref, acc,
                            path == xr::HostPath::Stream ? "auto streamed in chunks" : "auto resident in chunks");
          }
        }
      }
    }
  });
}

TEST_CASE("nanmin and nanmax: NaN where every element is NaN, an infinity beside NaN is that infinity") {
  auto reducer = xr::make_reducer("cuda");
  xr::for_each_dtype([&](auto t) {
    using T = decltype(t);
    if constexpr (xr::is_float_v<T>) {
      using C = xr::compute_t<T>;
      const T nan = static_cast<T>(std::numeric_limits<C>::quiet_NaN());
      const T inf = static_cast<T>(std::numeric_limits<C>::infinity()), minus_inf = static_cast<T>(-std::numeric_limits<C>::infinity());
      for (u64 n : {u64(1), u64(2), u64(33), u64(100003)}) {
        const std::vector<T> all_nan(n, nan);
        std::vector<T> low(n, nan), high(n, nan);  // [-inf, NaN, ...], [NaN, ..., +inf]
        low[0] = minus_inf;
        high[n - 1] = inf;
        const DevBuf<T> d_all_nan(all_nan), d_low(low), d_high(high);
        for (Op op : {Op::NanMin, Op::NanMax})
          for (const std::string kernel : {"auto", "cascade", "vector"}) {
            INFO(kernel << " " << xr::to_string(op) << " " << xr::to_string(xr::dtype_of<T>) << " n=" << n);
            xr::RunOptions opt;
            opt.kernel = kernel;
            const xr::Result none = xr::cuda::reduce(d_all_nan.p, n, op, nullptr, opt);
            CHECK(std::isnan(none.value.f));
            CHECK(none.value.type == xr::dtype_of<T>);
            CHECK(none.op == op);
            CHECK(std::isnan(reducer->reduce(std::span<const T>(all_nan), op, opt).value.f));
            check_reference(none, all_nan, reference_of(all_nan.data(), n, xr::dtype_of<T>, op, Accumulator::Wide),
                            Accumulator::Wide, kernel + " all NaN");
            const xr::Result lowest = xr::cuda::reduce(d_low.p, n, op, nullptr, opt);
            CHECK(lowest.value.f == -HUGE_VAL);
            CHECK(reducer->reduce(std::span<const T>(low), op, opt).value.f == -HUGE_VAL);
            const xr::Result highest = xr::cuda::reduce(d_high.p, n, op, nullptr, opt);
            CHECK(highest.value.f == HUGE_VAL);
            CHECK(reducer->reduce(std::span<const T>(high), op, opt).value.f == HUGE_VAL);
          }
      }
    }
  });
}

TEST_CASE("mapped ops: which rungs take them, what reduce_async and the segments refuse") {
  for (const auto& k : xr::cuda::kernels()) {
    const bool maps = std::find(kMappingRungs.begin(), kMappingRungs.end(), k.name) != kMappingRungs.end();
    for (Op op : xr::mapped_ops) {
      INFO(k.name << " " << xr::to_string(op));
      CHECK(k.supports(op, DType::F32) == maps);
    }
  }
  const std::vector<float> h{3.0f, -4.0f, std::numeric_limits<float>::quiet_NaN(), -0.0f, 1.5f};
  DevBuf<float> d(h);
  xr::RunOptions sequential;
  sequential.kernel = "sequential";  // a shared-memory tree: folds only
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, h.size(), Op::SumSq, nullptr, sequential), xr::InvalidArgument);

  // reduce_async: nanmin and nanmax of floats would need a second pass; the other mapped ops,
  // and nanmin/nanmax of integers, run and write what reduce gives.
  DevBuf<double> out(1);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, h.size(), Op::NanMin, out.p), xr::InvalidArgument);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, h.size(), Op::NanMax, out.p), xr::InvalidArgument);
  for (Op op : {Op::SumSq, Op::ASum, Op::NanSum, Op::CountNonzero, Op::Any, Op::All}) {
    xr::cuda::reduce_async(d.p, h.size(), op, out.p);
    xr::cuda::synchronize();
    const xr::Result sync = xr::cuda::reduce(d.p, h.size(), op);
    REQUIRE((sync.value.type == DType::F32 || sync.value.type == DType::I64));
    const std::size_t size = xr::size_of(sync.value.type);
    unsigned char got[8] = {}, want[8] = {};
    CK(cudaMemcpy(got, out.p, size, cudaMemcpyDeviceToHost));
    const float f = static_cast<float>(sync.value.f);
    std::memcpy(want, sync.value.type == DType::F32 ? static_cast<const void*>(&f) : &sync.value.i, size);
    INFO(xr::to_string(op) << ": reduce gives " << sync.value.to_string());
    CHECK(std::memcmp(got, want, size) == 0);
  }
  const std::vector<std::int32_t> ints{5, -7, 2};
  DevBuf<std::int32_t> d_ints(ints);
  for (Op op : {Op::NanMin, Op::NanMax}) {
    xr::cuda::reduce_async(d_ints.p, ints.size(), op, out.p);
    xr::cuda::synchronize();
    std::int32_t got = 0;
    CK(cudaMemcpy(&got, out.p, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(got == (op == Op::NanMin ? -7 : 5));
  }

  // Segments: every strategy takes the mapped ops but cub (CUB's reduce of the raw elements) and
  // pairs (the pair ops alone).
  for (const auto& s : xr::cuda::segment_kernels()) {
    const bool maps = s.name != "cub" && s.name != "pairs";
    for (Op op : xr::mapped_ops) {
      INFO(s.name << " " << xr::to_string(op));
      CHECK(s.supports(op, DType::F32) == maps);
    }
  }
  // nanmin and nanmax of float segments in device memory would need a second pass: refused.
  const std::vector<std::int64_t> offsets{0, 2, 5};
  DevBuf<std::int64_t> d_offsets(offsets);
  DevBuf<std::int64_t> segment_out(2);
  for (Op op : {Op::NanMin, Op::NanMax}) {
    CHECK_THROWS_AS(xr::cuda::reduce_segments(d.p, h.size(), d_offsets.p, 2, op, segment_out.p), xr::InvalidArgument);
    CHECK_THROWS_AS(xr::cuda::reduce_segments_async(d.p, h.size(), d_offsets.p, 2, op, segment_out.p),
                    xr::InvalidArgument);
    CHECK_THROWS_AS(xr::cuda::reduce_axis(d.p, xr::MatrixShape{1, 5}, 1, op, segment_out.p), xr::InvalidArgument);
  }
  // The other mapped ops on every strategy that takes them: the segments {3, -4} and
  // {NaN, -0, 1.5} by offsets, all five elements as one row (axis 1) or one column (axis 0).
  struct Want {
    Op op;
    double segments[2], whole;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Want wants[] = {{Op::SumSq, {25, nan}, nan},
                        {Op::ASum, {7, nan}, nan},
                        {Op::NanSum, {-1, 1.5}, 0.5},
                        {Op::CountNonzero, {2, 2}, 4},
                        {Op::Any, {1, 1}, 1},
                        {Op::All, {1, 0}, 0}};
  // The first `count` values in segment_out, of op's result type over f32.
  const auto written = [&](Op op, std::size_t count) {
    std::vector<double> v(count);
    if (xr::result_dtype(op, DType::F32) == DType::I64) {
      std::vector<std::int64_t> raw(count);
      CK(cudaMemcpy(raw.data(), segment_out.p, count * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
      std::copy(raw.begin(), raw.end(), v.begin());
    } else {
      std::vector<float> raw(count);
      CK(cudaMemcpy(raw.data(), segment_out.p, count * sizeof(float), cudaMemcpyDeviceToHost));
      std::copy(raw.begin(), raw.end(), v.begin());
    }
    return v;
  };
  const auto same = [](double got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; };
  for (const auto& s : xr::cuda::segment_kernels()) {
    if (!s.supports(Op::SumSq, DType::F32)) continue;
    xr::RunOptions opt;
    opt.kernel = s.name;
    for (const Want& w : wants) {
      INFO(s.name << " " << xr::to_string(w.op));
      if (s.reduces(xr::SegmentKind::Offsets)) {
        xr::cuda::reduce_segments(d.p, h.size(), d_offsets.p, 2, w.op, segment_out.p, nullptr, opt);
        const std::vector<double> v = written(w.op, 2);
        CHECK(same(v[0], w.segments[0]));
        CHECK(same(v[1], w.segments[1]));
      }
      for (int axis : {0, 1}) {
        const xr::MatrixShape shape = axis == 1 ? xr::MatrixShape{1, 5} : xr::MatrixShape{5, 1};
        if (!s.reduces(xr::axis_layout(shape, axis).kind)) continue;
        xr::cuda::reduce_axis(d.p, shape, axis, w.op, segment_out.p, nullptr, opt);
        CHECK(same(written(w.op, 1)[0], w.whole));
      }
    }
  }
  // nanmin and nanmax of integers have no NaN to skip: they run as min and max.
  DevBuf<std::int32_t> int_out(1);
  for (Op op : {Op::NanMin, Op::NanMax}) {
    xr::cuda::reduce_axis(d_ints.p, xr::MatrixShape{1, 3}, 1, op, int_out.p);
    std::int32_t got = 0;
    CK(cudaMemcpy(&got, int_out.p, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(got == (op == Op::NanMin ? -7 : 5));
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
