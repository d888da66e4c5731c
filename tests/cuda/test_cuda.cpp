// CUDA backend tests that the cross-backend suite cannot express: data already on the device.
// This file: the ladder's rows, every rung, op, type and block size on device pointers, NaN,
// multi-pass and nested launches, misaligned pointers; test_cuda_device.cpp: the asynchronous
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
          if (n == 0 && op != Op::Sum && op != Op::Prod) {
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
          if (n == 0 && op != Op::Sum && op != Op::Prod) continue;
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
                    u64((u64(64) << 20) / sizeof(T) + 7)})
        for (Op op : xr::all_ops) {
          if (n == 0 && op != Op::Sum && op != Op::Prod) continue;
          const auto h = make_data<T>(n, op, 5 + offset);
          DevBuf<T> d(h, offset);
          for (const char* kernel : {"auto", "vector", "single_pass", "dynamic_tiles", "bulk_copy", "bulk_tiles"}) {
            if (xr::is_pair(op) && std::string(kernel) != "auto") continue;  // auto's alone
            xr::RunOptions opt;
            opt.kernel = kernel;
            check_value(xr::cuda::reduce(d.p + offset, n, op, nullptr, opt), h, op, Accumulator::Wide,
                        std::string(kernel) + " offset " + std::to_string(offset));
          }
        }
  });
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
