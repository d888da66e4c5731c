// CUDA backend tests on a stream and at the device's limits (a part of xr_test_cuda, whose main()
// is in test_cuda.cpp): the asynchronous forms and their records, graphs, tile claiming, errors
// with their CUDA names, out of device memory, the streamed host path's copies, and 64-bit
// indexing at n = 2^31 + 5.
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
#include "exact_inputs.hpp"

using namespace xr_cuda_test;

TEST_CASE("reduce_async writes a pair op's record: Located for argmax, Bounds for minmax") {
  const u64 n = 1000003;
  auto h = make_data<float>(n, Op::Max, 8);
  h[777] = h[900001] = 7.0f;  // the max, twice: the first index wins
  DevBuf<float> d(h);
  DevBuf<xr::Located<float>> located(1);
  DevBuf<xr::Bounds<float>> bounds(1);
  xr::cuda::reduce_async(d.p, n, Op::ArgMax, located.p, nullptr);
  xr::cuda::reduce_async(d.p, n, Op::MinMax, bounds.p, nullptr);
  xr::Located<float> l{};
  xr::Bounds<float> b{};
  CK(cudaMemcpy(&l, located.p, sizeof l, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&b, bounds.p, sizeof b, cudaMemcpyDeviceToHost));
  CHECK(l.value == 7.0f);
  CHECK(l.index == 777);
  CHECK(b.max == 7.0f);
  CHECK(b.min == host_reduce(h, Op::Min, Accumulator::Wide).value);
}

TEST_CASE("reduce_async leaves the result on the device, on the caller's stream") {
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const u64 n = 123457;
  const auto h = make_data<std::int32_t>(n, Op::Sum, 6);
  DevBuf<std::int32_t> d(h);
  DevBuf<std::int64_t> out(4);
  xr::cuda::reduce_async(d.p, n, Op::Sum, out.p, s);                                  // i64 (wide)
  xr::cuda::reduce_async(d.p, n, Op::Sum, out.p + 1, s, Accumulator::Native);         // i32
  xr::cuda::reduce_async(d.p, n, Op::Max, out.p + 2, s);
  xr::RunOptions opt;
  opt.kernel = "shuffle";
  xr::cuda::reduce_async(d.p, n, Op::Min, out.p + 3, s, opt);
  std::int64_t got[4] = {};
  CK(cudaMemcpyAsync(got, out.p, sizeof got, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  CHECK(got[0] == host_reduce(h, Op::Sum, Accumulator::Wide).exact);
  std::int32_t native = 0;
  std::memcpy(&native, &got[1], sizeof native);
  CHECK(native == host_reduce(h, Op::Sum, Accumulator::Native).exact);
  std::int32_t mx = 0, mn = 0;
  std::memcpy(&mx, &got[2], sizeof mx);
  std::memcpy(&mn, &got[3], sizeof mn);
  CHECK(mx == host_reduce(h, Op::Max, Accumulator::Wide).exact);
  CHECK(mn == host_reduce(h, Op::Min, Accumulator::Wide).exact);
  // The synchronous form on the same stream reuses that stream's workspace.
  check_value(xr::cuda::reduce(d.p, n, Op::Sum, s), h, Op::Sum, Accumulator::Wide, "sync on stream");
  CK(cudaStreamDestroy(s));
}

TEST_CASE("one-launch finish: each launch waits for its own partials, also when replayed from a graph") {
  // Back-to-back launches on one stream over different data, with grids that grow, shrink and
  // grow again: a finish that read a slot left by an earlier launch would return that launch's
  // partial in place of this one's.
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const u64 n = (1u << 20) + 7;
  std::vector<std::vector<std::int32_t>> data;
  for (u64 seed : {11, 12, 13}) data.push_back(make_data<std::int32_t>(n, Op::Sum, seed));
  DevBuf<std::int32_t> a(data[0]), b(data[1]), c(data[2]);
  const std::int32_t* inputs[] = {a.p, b.p, c.p};
  const u64 grids[] = {1000, 3, 517, 2, 1000, 64, 999};
  DevBuf<std::int64_t> out(std::size(grids));
  for (const char* kernel : {"auto", "single_pass", "dynamic_tiles", "bulk_tiles"}) {
    for (std::size_t i = 0; i < std::size(grids); ++i) {
      xr::RunOptions opt;
      opt.kernel = kernel;
      opt.grid_size = grids[i];
      xr::cuda::reduce_async(inputs[i % 3], n, Op::Sum, out.p + i, s, opt);
    }
    std::int64_t got[std::size(grids)] = {};
    CK(cudaMemcpyAsync(got, out.p, sizeof got, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (std::size_t i = 0; i < std::size(grids); ++i) {
      INFO(kernel << " launch " << i << " grid " << grids[i]);
      CHECK(got[i] == host_reduce(data[i % 3], Op::Sum, Accumulator::Wide).exact);
    }
  }
  // The same launch replayed from a CUDA graph, the input changed between replays.
  for (const char* kernel : {"auto", "dynamic_tiles", "bulk_tiles"}) {
    xr::RunOptions opt;
    opt.kernel = kernel;
    opt.grid_size = 700;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    xr::cuda::reduce_async(a.p, n, Op::Sum, out.p, s, opt);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (std::size_t replay = 0; replay < 3; ++replay) {
      CK(cudaMemcpyAsync(a.p, data[replay].data(), n * sizeof(std::int32_t), cudaMemcpyHostToDevice, s));
      CK(cudaGraphLaunch(exec, s));
      std::int64_t got = 0;
      CK(cudaMemcpyAsync(&got, out.p, sizeof got, cudaMemcpyDeviceToHost, s));
      CK(cudaStreamSynchronize(s));
      INFO(kernel << " replay " << replay);
      CHECK(got == host_reduce(data[replay], Op::Sum, Accumulator::Wide).exact);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
  }
  CK(cudaStreamDestroy(s));
}

TEST_CASE("dynamic_tiles, bulk_tiles: the same bits on every call and every grid, whichever block drew which tile") {
  // Float sums depend on the order of additions: each tile is summed by one block in a fixed
  // order and the tile partials are combined in tile order, so neither the race for tiles nor
  // the grid may change a bit.
  xr::for_each_dtype([](auto t) {
    using T = decltype(t);
    if constexpr (xr::is_float_v<T>) {
      const u64 n = (u64(1) << 23) + 3;
      const auto h = make_data<T>(n, Op::Sum, 21);
      DevBuf<T> d(h, 1);  // misaligned by one element: a head and a tail outside the tiles
      for (const char* kernel : {"dynamic_tiles", "bulk_tiles"}) {
        xr::RunOptions opt;
        opt.kernel = kernel;
        const xr::Result first = xr::cuda::reduce(d.p + 1, n, Op::Sum, nullptr, opt);
        check_value(first, h, Op::Sum, Accumulator::Wide, kernel);
        for (u64 grid : {u64(0), u64(0), u64(1), u64(7), u64(132), u64(528), u64(4096)}) {
          opt.grid_size = grid;
          const xr::Result again = xr::cuda::reduce(d.p + 1, n, Op::Sum, nullptr, opt);
          INFO(kernel << " " << xr::to_string(xr::dtype_of<T>) << " grid " << grid);
          CHECK(again.value.same_bits(first.value));
        }
      }
    }
  });
}

TEST_CASE("errors carry the CUDA name; nothing printed") {
  std::vector<float> host(1000, 1.0f);
  try {
    xr::cuda::reduce(host.data(), host.size(), Op::Sum);
    FAIL("host pointer accepted as device pointer");
  } catch (const xr::DeviceError& e) {
    CHECK(e.code_name() == "cudaErrorInvalidValue");
    CHECK(std::string(e.what()).find("cuda") != std::string::npos);
  }
  DevBuf<float> d(host);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, host.size(), Op::Sum, host.data(), nullptr), xr::DeviceError);
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, 0, Op::Min), xr::EmptyInput);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, 0, Op::Max, d.p, nullptr), xr::EmptyInput);
  // A pointer not aligned to its element type.
  CHECK_THROWS_AS(xr::cuda::reduce(reinterpret_cast<const float*>(reinterpret_cast<const char*>(d.p) + 1), 10, Op::Sum),
                  xr::InvalidArgument);
  xr::BackendOptions bad_device;
  bad_device.device = "999";
  CHECK_THROWS_AS(xr::make_reducer("cuda", bad_device), xr::InvalidArgument);
  // exact mode: refused by rungs that do not offer it, in both forms, never silently ignored.
  xr::RunOptions exact;
  exact.exact = true;
  exact.kernel = "sequential";
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, host.size(), Op::Sum, nullptr, exact), xr::InvalidArgument);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, host.size(), Op::Sum, d.p, nullptr, exact), xr::InvalidArgument);
  exact.kernel = "auto";
  exact.block_size = 1024;  // the exact kernel takes blocks up to 512
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, host.size(), Op::Sum, nullptr, exact), xr::InvalidArgument);
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, host.size(), Op::Sum, d.p, nullptr, exact), xr::InvalidArgument);
}

// Exact sums rounded on the device (reduce_async) against the host's rounding of the same
// state (reduce, whose rounding test_exact.cpp checks against MPFR): the same bits.
template <class T> void check_device_rounding(const T* host, u64 n, const std::string& what) {
  using R = xr::compute_t<T>;
  DevBuf<T> d(std::vector<T>(host, host + n));
  DevBuf<R> out(1);
  xr::RunOptions exact;
  exact.exact = true;
  const xr::Result want = xr::cuda::reduce(d.p, n, Op::Sum, nullptr, exact);
  xr::cuda::reduce_async(d.p, n, Op::Sum, out.p, nullptr, exact);
  R got{};
  CK(cudaMemcpy(&got, out.p, sizeof got, cudaMemcpyDeviceToHost));
  INFO(what << " (" << xr::to_string(xr::dtype_of<T>) << ", n = " << n << "): got " << got << ", want "
            << want.value.to_string());
  CHECK(xr::test_inputs::same_bits(got, want.value.as<R>()));
}

template <class T> void device_rounding_cases() {
  using namespace xr::test_inputs;
  for (const auto& c : special_value_cases<T>()) check_device_rounding(c.data(), c.size(), "special values");
  constexpr int p = std::numeric_limits<T>::digits;
  const T one = 1, half_ulp = std::ldexp(T(1), -p), tiny = std::numeric_limits<T>::denorm_min();
  const T least = std::numeric_limits<T>::min();
  const std::vector<std::vector<T>> ties = {
      {one, half_ulp},                           // a tie: to even, down
      {std::nextafter(one, T(2)), half_ulp},     // a tie: to even, up
      {one, half_ulp, tiny},                     // above the tie by a sticky bit far below
      {-one, -half_ulp, tiny},                   // below the tie, negative
      {least, -least * T(0.75)},                 // a subnormal result
      {tiny, tiny, -tiny},                       // the smallest subnormal
  };
  for (const auto& c : ties) check_device_rounding(c.data(), c.size(), "ties, sticky bits, subnormals");
  std::mt19937_64 g(5);
  for (const int span : {8, 30, 60, 200}) {
    const auto v = exponent_band<T>(100003, 10, span, g);
    check_device_rounding(v.data(), v.size(), "a band of " + std::to_string(span) + " binades");
  }
  const auto sub = subnormals<T>(70001, g);
  check_device_rounding(sub.data(), sub.size(), "subnormals");
  const auto noise = random_bits<T>(1 << 16, g);
  check_device_rounding(noise.data(), noise.size(), "random bit patterns");
}

TEST_CASE("reduce_async rounds exact sums on the device: the bits reduce gives") {
  device_rounding_cases<float>();
  device_rounding_cases<double>();
  std::uint64_t seed = 17;
  for (const xr::DType t : {xr::DType::F16, xr::DType::BF16})
    for (const xr::Dist dist : {xr::Dist::Uniform, xr::Dist::Cancel, xr::Dist::Wide, xr::Dist::Special})
      for (const u64 n : {u64{0}, u64{1}, u64{100003}}) {
        const xr::HostBuffer x = xr::generate(t, n, dist, ++seed);
        const std::string what = std::string(xr::to_string(dist)) + " data";
        if (t == xr::DType::F16) check_device_rounding(static_cast<const xr::f16*>(x.view().data), n, what);
        else check_device_rounding(static_cast<const xr::bf16*>(x.view().data), n, what);
      }
}

TEST_CASE("out of device memory is a DeviceError named cudaErrorMemoryAllocation; the stream fits a limit") {
  // Take all but 64 MiB of the device, then ask for a 256 MiB resident input buffer.
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  void* hog = nullptr;
  const std::size_t keep = std::size_t(64) << 20;
  REQUIRE(free_b > keep);
  CK(cudaMalloc(&hog, free_b - keep));
  const std::vector<float> host(std::size_t(64) << 20, 1.0f);
  auto reducer = xr::make_reducer("cuda");
  xr::RunOptions resident;
  resident.host_path = xr::HostPath::Resident;
  try {
    reducer->reduce(host, Op::Sum, resident);
    FAIL("a 256 MiB input fitted in 64 MiB of free device memory");
  } catch (const xr::DeviceError& e) {
    CHECK(e.code_name() == "cudaErrorMemoryAllocation");
    CHECK(std::string(e.what()).find("cudaErrorMemoryAllocation") != std::string::npos);
  }
  // The streamed path holds 3 chunks of 8 MiB under a 24 MiB limit: 32 chunks through the
  // 64 MiB that are free.
  xr::RunOptions limited;
  limited.device_mem_limit = std::size_t(24) << 20;
  const xr::Result streamed = reducer->reduce(host, Op::Sum, limited);
  CHECK(streamed.value.as<float>() == float(host.size()));
  CHECK(streamed.chunks == 32);
  CK(cudaFree(hog));
  // The device is usable again afterwards.
  CHECK(reducer->reduce(host, Op::Sum).value.as<double>() == double(host.size()));
}

TEST_CASE("the streamed host path copies straight from page-locked memory, and stages pageable memory") {
  const std::size_t n = (std::size_t(1) << 26) + 3;  // 5 chunks: 4 of 64 MiB, then 3 elements
  float* pinned = nullptr;
  CK(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(float)));
  std::vector<float> pageable(n);
  for (std::size_t i = 0; i < n; ++i) pinned[i] = pageable[i] = float(i % 1000) * 0.5f;
  const xr::Reference ref = xr::reference_reduce(xr::HostArray{pinned, n, xr::DType::F32}, Op::Sum);
  auto reducer = xr::make_reducer("cuda");
  xr::RunOptions o;
  o.exact = true;
  const xr::Result direct = reducer->reduce(std::span<const float>(pinned, n), Op::Sum, o);
  const xr::Result staged = reducer->reduce(pageable, Op::Sum, o);
  CHECK(direct.path.find("copied straight from page-locked memory") != std::string::npos);
  CHECK(staged.path.find("pinned staging buffers") != std::string::npos);
  CHECK(direct.chunks == 5);
  CHECK(staged.chunks == 5);
  CHECK(direct.value.same_bits(ref.value));
  CHECK(staged.value.same_bits(ref.value));
  // Plain sums, chunk results combined on the device.
  const xr::Result plain = reducer->reduce(pageable, Op::Max);
  CHECK(plain.value.as<float>() == 499.5f);
  CHECK(plain.finish.find("chunk results reduced on the device in order") != std::string::npos);
  CK(cudaFreeHost(pinned));
}

TEST_CASE("auto at n = 2^31 + 5 (64-bit indexing)") {
  const u64 n = (u64(1) << 31) + 5;
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < n * sizeof(std::int32_t) + (u64(256) << 20)) {
    MESSAGE("skipped: needs " << (n * 4 >> 20) << " MiB of device memory, " << (free_b >> 20) << " MiB free");
    return;
  }
  DevBuf<std::int32_t> d(n);
  CK(cudaMemset(d.p, 1, n * sizeof(std::int32_t)));  // every element 0x01010101
  const std::int64_t v = 0x01010101;
  auto run = [&](const char* kernel, Op op, Accumulator acc) {
    xr::RunOptions opt;
    opt.kernel = kernel;
    opt.accumulator = acc;
    INFO(kernel << " " << xr::to_string(op));
    return xr::cuda::reduce(d.p, n, op, nullptr, opt);
  };
  const xr::Result sum = run("auto", Op::Sum, Accumulator::Wide);
  CHECK(sum.value.i == std::int64_t(n) * v);
  CHECK(auto_ran_its_layout(sum.kernel, n * sizeof(std::int32_t)));
  const auto wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(n * std::uint64_t(v)));
  CHECK(run("auto", Op::Sum, Accumulator::Native).value.i == wrapped);
  CHECK(run("auto", Op::Max, Accumulator::Wide).value.i == v);
  CHECK(run("auto", Op::Min, Accumulator::Wide).value.i == v);
  CK(cudaMemset(d.p + n - 1, 0, sizeof(std::int32_t)));  // the last element (beyond 2^31) is 0
  CHECK(run("auto", Op::Min, Accumulator::Wide).value.i == 0);
  // The pair ops: the only minimum is the last element; the maxima tie at index 0 until one
  // larger element lands past 2^31, then it wins.
  const xr::Result argmin = run("auto", Op::ArgMin, Accumulator::Wide);
  CHECK(argmin.value.i == 0);
  CHECK(argmin.index == std::int64_t(n) - 1);
  CHECK(auto_ran_its_layout(argmin.kernel, n * sizeof(std::int32_t), Op::ArgMin));
  CHECK(run("auto", Op::ArgMax, Accumulator::Wide).index == 0);
  const u64 planted = (u64(1) << 31) + 1;
  CK(cudaMemset(d.p + planted, 2, sizeof(std::int32_t)));
  const xr::Result argmax = run("auto", Op::ArgMax, Accumulator::Wide);
  CHECK(argmax.value.i == 0x02020202);
  CHECK(argmax.index == std::int64_t(planted));
  CK(cudaMemset(d.p + planted, 1, sizeof(std::int32_t)));
  // The other rungs index with 64 bits too (the serialised atomic ones are left out: slow).
  for (const auto& k : xr::cuda::kernels()) {
    if (k.name == "atomic_global" || k.name == "atomic_shared" || k.name == "auto") continue;
    CHECK(run(k.name.c_str(), Op::Sum, Accumulator::Wide).value.i == std::int64_t(n - 1) * v);
  }
}


// Sums of bytes far past 2^32 in 64 bits, on every rung that takes bytes: 2^31 + 5 of 255 and
// of -128.
TEST_CASE("i8 and u8 sums at n = 2^31 + 5") {
  const u64 n = (u64(1) << 31) + 5;
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < n + (u64(256) << 20)) {
    MESSAGE("skipped: needs " << (n >> 20) << " MiB of device memory, " << (free_b >> 20) << " MiB free");
    return;
  }
  DevBuf<std::uint8_t> d(n);
  for (const int byte : {0xff, 0x80}) {
    CK(cudaMemset(d.p, byte, n));
    for (const auto& k : xr::cuda::kernels()) {
      if (k.name == "atomic_global" || k.name == "atomic_shared") continue;  // serialised: slow
      if (!k.supports(Op::Sum, DType::U8)) continue;
      xr::RunOptions opt;
      opt.kernel = k.name;
      INFO(k.name << " bytes 0x" << std::hex << byte);
      const xr::Result u = xr::cuda::reduce(d.p, n, Op::Sum, nullptr, opt);
      CHECK(u.value.type == DType::U64);
      CHECK(u.value.as<std::uint64_t>() == n * std::uint64_t(byte));
      const xr::Result i = xr::cuda::reduce(reinterpret_cast<const std::int8_t*>(d.p), n, Op::Sum, nullptr, opt);
      CHECK(i.value.type == DType::I64);
      CHECK(i.value.i == std::int64_t(n) * static_cast<std::int8_t>(byte));
    }
  }
}

