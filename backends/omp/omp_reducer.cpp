// OpenMP backend: the host CPU as a device. Rungs: `clause` (the reduction clause),
// `vector` (independent accumulator lanes that the compiler vectorises), `auto`, and the
// `stream_read` probe that measures this machine's streaming-read rate in the same run.
// `vector` and `auto` honour RunOptions::exact for f32/f64 sums (omp_exact.cpp).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "backend_entry.hpp"
#include "omp_exact.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr {
namespace {

// The accumulator of (op, T): i64 for i32 sums with the Wide accumulator, T otherwise.
template <Op O, class T, Accumulator W>
using acc_t = std::conditional_t<O == Op::Sum && std::is_same_v<T, std::int32_t> && W == Accumulator::Wide,
                                 std::int64_t, T>;
// Integer sums and products run in the unsigned type so that wrap-around is defined.
template <Op O, class A> struct work_type { using type = A; };
template <Op O, class A>
  requires(std::is_integral_v<A> && (O == Op::Sum || O == Op::Prod))
struct work_type<O, A> { using type = std::make_unsigned_t<A>; };
template <Op O, class A> using work_t = typename work_type<O, A>::type;

struct Span {
  std::uint64_t lo, hi;
};
// Thread t's share of n elements, boundaries rounded to `align` elements.
Span share(std::uint64_t n, int t, int nt, std::uint64_t align) {
  const auto edge = [&](int k) { return std::min(n, (n / align * k / nt) * align); };
  return {edge(t), t + 1 == nt ? n : edge(t + 1)};
}

struct Outcome {
  Scalar value;
  std::uint64_t rounding_depth;
};

// rung `clause`: the OpenMP reduction clause (Ukrainian Wikipedia, "Reduction (parallel
// programming)"); one accumulator per thread, so
// one element a cycle per core at best, and no NaN rule of its own (a flag adds it).
template <Op O, class T, class A> Outcome run_clause(const T* x, std::uint64_t n, int threads) {
  using Wt = work_t<O, A>;
  Wt acc = static_cast<Wt>(identity<A>(O));
  bool nan = false;
  const auto count = static_cast<std::int64_t>(n);
  if constexpr (O == Op::Sum) {
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : acc)
    for (std::int64_t i = 0; i < count; ++i) acc += static_cast<Wt>(static_cast<A>(x[i]));
  } else if constexpr (O == Op::Prod) {
#pragma omp parallel for num_threads(threads) schedule(static) reduction(* : acc)
    for (std::int64_t i = 0; i < count; ++i) acc *= static_cast<Wt>(static_cast<A>(x[i]));
  } else if constexpr (O == Op::Min) {
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : acc) reduction(|| : nan)
    for (std::int64_t i = 0; i < count; ++i) {
      nan = nan || x[i] != x[i];
      acc = x[i] < acc ? x[i] : acc;
    }
  } else {
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max : acc) reduction(|| : nan)
    for (std::int64_t i = 0; i < count; ++i) {
      nan = nan || x[i] != x[i];
      acc = acc < x[i] ? x[i] : acc;
    }
  }
  A value = static_cast<A>(acc);
  if constexpr (std::is_floating_point_v<A>)
    if (nan) value = std::numeric_limits<A>::quiet_NaN();
  return {Scalar::of<A>(value), (n + threads - 1) / threads + threads};
}

// Accumulator lanes per thread: 128 bytes of them, enough independent chains to hide the
// add latency and to fill two AVX-512 or four AVX2 registers.
template <class A> constexpr std::uint64_t kLanes = 128 / sizeof(A);

// rung `vector`: kLanes independent accumulators per thread in a lane loop the compiler turns
// into SIMD; reaches the streaming-read rate, at the cost of a lane-then-thread combine.
template <Op O, class T, class A> Outcome run_vector(const T* x, std::uint64_t n, int threads) {
  constexpr std::uint64_t K = kLanes<A>;
  std::vector<A> partial(static_cast<std::size_t>(threads), identity<A>(O));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const Span s = share(n, t, omp_get_num_threads(), K);
    A lane[K];
    for (auto& a : lane) a = identity<A>(O);
    std::uint64_t i = s.lo;
    for (; i + K <= s.hi; i += K)
      for (std::uint64_t j = 0; j < K; ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<A>(x[i + j]));
    for (std::uint64_t j = 0; i < s.hi; ++i, ++j) lane[j] = OpFn<O>::apply(lane[j], static_cast<A>(x[i]));
    A r = identity<A>(O);
    for (const auto& a : lane) r = OpFn<O>::apply(r, a);
    partial[static_cast<std::size_t>(t)] = r;
  }
  A r = identity<A>(O);
  for (const auto& p : partial) r = OpFn<O>::apply(r, p);
  return {Scalar::of<A>(r), (n + threads * K - 1) / (threads * K) + K + threads};
}

// probe `stream_read`: XORs every 8-byte word of the input in vectorised lanes; the rate of
// reading memory once, against which the rungs are measured. Its value is no reduction.
Outcome run_stream_read(const void* data, std::uint64_t bytes, int threads) {
  constexpr std::uint64_t K = 16;
  const auto* w = static_cast<const std::uint64_t*>(data);
  const std::uint64_t words = bytes / 8;
  std::uint64_t all = 0;
#pragma omp parallel num_threads(threads) reduction(^ : all)
  {
    const Span s = share(words, omp_get_thread_num(), omp_get_num_threads(), K);
    std::uint64_t lane[K] = {};
    std::uint64_t i = s.lo;
    for (; i + K <= s.hi; i += K)
      for (std::uint64_t j = 0; j < K; ++j) lane[j] ^= w[i + j];
    for (; i < s.hi; ++i) lane[0] ^= w[i];
    for (auto l : lane) all ^= l;
  }
  return {Scalar::of<std::int64_t>(static_cast<std::int64_t>(all)), 0};
}

using RungFn = Outcome (*)(HostArray in, Op op, Accumulator acc, int threads);

// Instantiates rung R<O, T, A> for the run-time (op, type, accumulator).
template <template <Op, class, class> class R> Outcome dispatch(HostArray in, Op op, Accumulator acc, int threads) {
  return visit_dtype(in.type, [&](auto zero) {
    using T = decltype(zero);
    return visit_op(op, [&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      const T* x = static_cast<const T*>(in.data);
      if (acc == Accumulator::Native) return R<O, T, acc_t<O, T, Accumulator::Native>>::run(x, in.n, threads);
      return R<O, T, acc_t<O, T, Accumulator::Wide>>::run(x, in.n, threads);
    });
  });
}

template <Op O, class T, class A> struct Clause {
  static Outcome run(const T* x, std::uint64_t n, int threads) { return run_clause<O, T, A>(x, n, threads); }
};
template <Op O, class T, class A> struct Vector {
  static Outcome run(const T* x, std::uint64_t n, int threads) { return run_vector<O, T, A>(x, n, threads); }
};

Outcome stream_read(HostArray in, Op, Accumulator, int threads) {
  return run_stream_read(in.data, in.n * size_of(in.type), threads);
}

struct Rung {
  KernelInfo info;
  RungFn fn;
  const char* finish;
};

std::vector<Op> every_op() { return {all_ops.begin(), all_ops.end()}; }
std::vector<DType> every_type() { return {all_dtypes.begin(), all_dtypes.end()}; }
KernelInfo exact_capable(KernelInfo k) {
  k.exact = true;
  return k;
}

// Exact mode (f32/f64 sums): per-thread exact window sums feeding ExactSum superaccumulators,
// merged in thread order, rounded once (docs/exact.md).
ExactSum::Raw exact_state(HostArray in, int threads) {
  return in.type == DType::F32 ? omp_exact::sum(static_cast<const float*>(in.data), in.n, threads)
                               : omp_exact::sum(static_cast<const double*>(in.data), in.n, threads);
}

Outcome exact_sum(HostArray in, int threads) {
  ExactSum acc;
  acc.merge_raw(exact_state(in, threads));
  return {in.type == DType::F32 ? Scalar::of<float>(acc.to_float()) : Scalar::of<double>(acc.to_double()), 1};
}

int thread_count(const RunOptions& options) {
  return options.threads ? static_cast<int>(options.threads) : omp_get_max_threads();
}

const std::vector<Rung>& rungs() {
  static const std::vector<Rung> table = {
      {{"clause", "#pragma omp parallel for reduction(op:acc): one dependent chain per thread, no SIMD",
        KernelKind::Rung, every_op(), every_type()},
       dispatch<Clause>, "reduction clause"},
      {exact_capable({"vector",
                      "128 bytes of independent lanes per thread, vectorised: memory-bound, lane combine at the end",
                      KernelKind::Rung, every_op(), every_type()}),
       dispatch<Vector>, "lanes, then threads in order"},
      {exact_capable({"auto", "the fastest rung: vector", KernelKind::Auto, every_op(), every_type()}), dispatch<Vector>,
       "lanes, then threads in order"},
      {{"stream_read", "baseline: XOR of every 8-byte word, the machine's streaming-read rate",
        KernelKind::Probe, every_op(), every_type()},
       stream_read, "none (probe)"},
  };
  return table;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "host CPU";
}

class OmpReducer final : public Reducer {
 public:
  std::string backend() const override { return "omp"; }
  std::string device() const override {
    return cpu_name() + " (" + std::to_string(omp_get_max_threads()) + " threads)";
  }
  std::vector<KernelInfo> kernels() const override {
    std::vector<KernelInfo> list;
    for (const auto& r : rungs()) list.push_back(r.info);
    return list;
  }

 protected:
  Result run(HostArray in, Op op, const RunOptions& options, const KernelInfo& kernel) override {
    const Rung* rung = nullptr;
    for (const auto& r : rungs())
      if (r.info.name == kernel.name) rung = &r;
    const int threads = thread_count(options);
    const bool exact = options.exact && exact_applies(op, in.type) && kernel.exact;
    Outcome out{};
    std::vector<double> ms;
    for (int k = 0; k < options.warmup + options.repeat; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      out = exact ? exact_sum(in, threads) : rung->fn(in, op, options.accumulator, threads);
      const auto t1 = std::chrono::steady_clock::now();
      if (k >= options.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    Result r;
    r.value = out.value;
    r.device = device();
    r.kernel = exact ? kernel.name + ":exact" : kernel.kind == KernelKind::Auto ? "auto:vector" : kernel.name;
    r.finish = exact ? std::string("exact: per-thread superaccumulators (") + omp_exact::front_end() +
                           " front end), merged in thread order, rounded once"
                     : rung->finish;
    r.launches = 1;
    r.repeats = options.repeat;
    r.kernel_ms = median(ms);
    r.bytes_per_s = r.kernel_ms > 0 ? static_cast<double>(in.n * size_of(in.type)) / (r.kernel_ms * 1e-3) : 0;
    r.rounding_depth = out.rounding_depth;
    return r;
  }

  ExactSum::Raw run_exact_state(HostArray in, const RunOptions& options, const KernelInfo&) override {
    return exact_state(in, thread_count(options));
  }
};

}  // namespace

namespace detail {

std::unique_ptr<Reducer> make_omp_reducer(const BackendOptions&) { return std::make_unique<OmpReducer>(); }

BackendStatus omp_status() {
  BackendStatus s;
  s.name = "omp";
  s.compiled = true;
  s.usable = true;
  s.devices.push_back({cpu_name(), std::to_string(omp_get_max_threads()) + " OpenMP threads, " +
                                       std::to_string(omp_get_num_procs()) + " processors"});
  return s;
}

}  // namespace detail
}  // namespace xr
