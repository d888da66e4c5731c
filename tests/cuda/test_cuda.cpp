// CUDA backend tests that the cross-backend suite cannot express: data already on the device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <algorithm>
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

namespace {

using xr::Accumulator;
using xr::DType;
using xr::Op;
using u64 = std::uint64_t;

#define CK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)

template <class T> struct DevBuf {
  T* p = nullptr;
  explicit DevBuf(u64 n) { CK(cudaMalloc(reinterpret_cast<void**>(&p), std::max<u64>(n, 1) * sizeof(T))); }
  DevBuf(const std::vector<T>& h, u64 offset = 0) : DevBuf(h.size() + offset) {
    if (!h.empty()) CK(cudaMemcpy(p + offset, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

template <class T> std::vector<T> make_data(u64 n, Op op, u64 seed) {
  std::mt19937_64 rng(seed * 7919 + n);
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>) {
      if (op == Op::Prod) x = static_cast<T>(std::uniform_int_distribution<int>(-3, 3)(rng));
      else if (rng() % 64 == 0) x = rng() % 2 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
      else x = static_cast<T>(std::uniform_int_distribution<long long>(-100000, 100000)(rng));
    } else {
      if (op == Op::Prod) x = static_cast<T>(std::uniform_real_distribution<double>(0.999, 1.001)(rng));
      else x = static_cast<T>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    }
  }
  return v;
}

// Host reference: integers combined in the result type with core's wrap semantics (exact);
// float sums and products in long double; min/max exactly.
template <class T> struct Ref {
  long double value = 0;
  std::int64_t exact = 0;
  long double abs_sum = 0;
  bool nan = false;
};

template <class T> Ref<T> host_reduce(const std::vector<T>& v, Op op, Accumulator acc) {
  Ref<T> r;
  if constexpr (std::is_integral_v<T>) {
    if (xr::result_dtype(op, xr::dtype_of<T>, acc) != xr::dtype_of<T>) {
      using Wide = xr::wide_sum_t<T>;
      Wide a = xr::identity<Wide>(op);
      for (T x : v) a = xr::combine<Wide>(op, a, static_cast<Wide>(x));
      r.exact = static_cast<std::int64_t>(a);
    } else {
      T a = xr::identity<T>(op);
      for (T x : v) a = xr::combine<T>(op, a, x);
      r.exact = a;
    }
  } else {
    if (op == Op::Sum || op == Op::Prod) {
      long double a = op == Op::Sum ? 0.0L : 1.0L;
      for (T x : v) {
        a = op == Op::Sum ? a + x : a * x;
        r.abs_sum += std::fabs(static_cast<long double>(x));
      }
      r.value = a;
    } else {
      T a = xr::identity<T>(op);
      for (T x : v) a = xr::combine<T>(op, a, x);
      r.nan = std::isnan(a);
      r.value = a;
    }
  }
  return r;
}

template <class T>
void check_value(const xr::Result& res, const std::vector<T>& v, Op op, Accumulator acc, const std::string& what) {
  INFO(what << " n=" << v.size() << " op=" << xr::to_string(op) << " type=" << xr::to_string(xr::dtype_of<T>)
            << " kernel=" << res.kernel << " value=" << res.value.to_string());
  CHECK(res.value.type == xr::result_dtype(op, xr::dtype_of<T>, acc));
  CHECK(res.n == v.size());
  CHECK(res.backend == "cuda");
  CHECK(res.launches >= (v.empty() ? 0 : 1));  // an empty host input launches nothing
  if (xr::is_pair(op)) {  // the value and its index, or the min and the max: exactly the reference's
    const xr::Agreement a = xr::check_result(res, xr::reference_reduce(xr::HostArray{v.data(), v.size(), xr::dtype_of<T>}, op));
    CHECK_MESSAGE(a.ok, a.detail);
    return;
  }
  const Ref<T> ref = host_reduce(v, op, acc);
  if constexpr (std::is_integral_v<T>) {
    CHECK(res.value.i == ref.exact);
  } else {
    const double got = res.value.f;
    // Sums and products of f16 and bf16 round in f32 (compute_t).
    const long double u = std::numeric_limits<xr::compute_t<T>>::epsilon() / 2;
    if (op == Op::Min || op == Op::Max) {
      if (ref.nan) CHECK(std::isnan(got));
      else CHECK(got == static_cast<double>(ref.value));
    } else if (op == Op::Sum) {
      const long double bound = (res.rounding_depth + 1) * u * ref.abs_sum + u * std::fabs(ref.value);
      INFO("error " << double(std::fabs(got - ref.value)) << " bound " << double(bound) << " depth "
                    << res.rounding_depth);
      CHECK(std::fabs(got - ref.value) <= bound);
    } else {
      // Every one of the n-1 multiplications rounds the whole product: (n+1) u |ref|.
      const long double bound = (v.size() + 1) * u * std::fabs(ref.value);
      CHECK(std::fabs(got - ref.value) <= bound);
    }
  }
}


const std::vector<u64> kSizes{0, 1, 2, 31, 33, 1025, (1u << 20) + 7};

std::vector<Accumulator> accumulators(Op op, DType t) {
  if (xr::accumulator_matters(op, t)) return {Accumulator::Wide, Accumulator::Native};
  return {Accumulator::Wide};
}

// The block sizes to try for a rung: a non-power of two it accepts (100, else 96), plus the
// default. unroll_complete (templated) and cub accept neither.
// Block sizes to try on a rung, from its rule (KernelInfo::blocks): its default (0), then the
// sizes it lists, or a non-power-of-two multiple of a warp, 33, one warp and its largest.
std::vector<unsigned> blocks_for(const xr::KernelInfo& k) {
  const xr::BlockRule& rule = k.blocks;
  std::vector<unsigned> out{0};
  const std::vector<unsigned> candidates = rule.only.empty() ? std::vector<unsigned>{96, 33, 32, rule.max} : rule.only;
  for (unsigned b : candidates)
    if (b && rule.accepts(b) && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  return out;
}

}  // namespace

// Whether auto ran a layout it takes for an input of `bytes` (rungs_grid.cu): from 64 MB,
// segments, or bulk_copy on GPUs whose HBM reaches 4 TB/s; from 1 GiB tiles of either kind.
// The pair ops draw tiles at every size (rungs_pairs.cu).
bool auto_ran_its_layout(const std::string& kernel, u64 bytes, Op op = Op::Sum) {
  if (xr::is_pair(op)) return kernel == "auto:pairs";
  if (bytes < (u64(64) << 20)) return kernel == "auto:single_pass";
  if (bytes < (u64(1) << 30)) return kernel == "auto:segmented" || kernel == "auto:bulk_copy";
  return kernel == "auto:dynamic_tiles" || kernel == "auto:bulk_tiles";
}

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
  // exact mode: refused by rungs that do not offer it, and by the async form (the exact state
  // is rounded on the host), never silently ignored.
  xr::RunOptions exact;
  exact.exact = true;
  exact.kernel = "sequential";
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, host.size(), Op::Sum, nullptr, exact), xr::InvalidArgument);
  exact.kernel = "auto";
  CHECK_THROWS_AS(xr::cuda::reduce_async(d.p, host.size(), Op::Sum, d.p, nullptr, exact), xr::InvalidArgument);
  exact.block_size = 1024;  // the exact kernel takes blocks up to 512
  CHECK_THROWS_AS(xr::cuda::reduce(d.p, host.size(), Op::Sum, nullptr, exact), xr::InvalidArgument);
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
