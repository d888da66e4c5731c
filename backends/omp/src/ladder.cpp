// The OpenMP ladder: `clause` (the reduction clause), `vector` (independent accumulator lanes
// that the compiler vectorises), `auto`, and the `stream_read` probe that measures this
// machine's streaming-read rate in the same run. `vector` and `auto` honour RunOptions::exact
// for f32/f64 sums (exact.cpp).
#include "ladder.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "arith.hpp"
#include "cpu.hpp"
#include "exact.hpp"
#include "lanes.hpp"
#include "policy.hpp"
#include "regions.hpp"
#include "widen.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {
namespace {

using xr::detail::ceil_div;
using xr::detail::Region;
using xr::detail::RegionErrors;

// The type each rung combines in. Integer sums and products run in the unsigned type so that
// wrap-around is defined.
template <Op O, class A> struct work_type { using type = A; };
template <Op O, class A>
  requires(std::is_integral_v<A> && (O == Op::Sum || O == Op::Prod))
struct work_type<O, A> { using type = std::make_unsigned_t<A>; };
// Min and max of f16 and bf16 compare in float (each converts exactly), then round back exactly.
template <Op O, class A>
  requires is_half_v<A>
struct work_type<O, A> { using type = float; };
template <Op O, class A> using work_t = typename work_type<O, A>::type;

struct Span {
  std::uint64_t lo, hi;
};
// Thread t's share of n elements, boundaries rounded to `align` elements.
Span share(std::uint64_t n, int t, int nt, std::uint64_t align) {
  const auto edge = [&](int k) { return std::min(n, (n / align * k / nt) * align); };
  return {edge(t), t + 1 == nt ? n : edge(t + 1)};
}

// The float reductions of the clause, each thread's copy starting at the semantics' identity:
// OpenMP's own `+` starts at +0, which turns a sum of -0 terms into +0, and clang's `max` at the
// lowest finite value, which turns the max of {-inf} into -FLT_MAX. The identities are
// constants: an initializer that read the variable (omp_orig) would race with threads that
// already combine into it.
#pragma omp declare reduction(xr_float_sum : float : omp_out += omp_in) initializer(omp_priv = -0.0f)
#pragma omp declare reduction(xr_float_sum : double : omp_out += omp_in) initializer(omp_priv = -0.0)
#pragma omp declare reduction(xr_float_min : float : omp_out = omp_in < omp_out ? omp_in : omp_out) \
    initializer(omp_priv = std::numeric_limits<float>::infinity())
#pragma omp declare reduction(xr_float_min : double : omp_out = omp_in < omp_out ? omp_in : omp_out) \
    initializer(omp_priv = std::numeric_limits<double>::infinity())
#pragma omp declare reduction(xr_float_max : float : omp_out = omp_out < omp_in ? omp_in : omp_out) \
    initializer(omp_priv = -std::numeric_limits<float>::infinity())
#pragma omp declare reduction(xr_float_max : double : omp_out = omp_out < omp_in ? omp_in : omp_out) \
    initializer(omp_priv = -std::numeric_limits<double>::infinity())

// rung `clause`: the OpenMP reduction clause (Ukrainian Wikipedia, "Reduction (parallel
// programming)"); one accumulator per thread, so
// one element a cycle per core at best, and no NaN rule of its own (a flag adds it).
// The loop is a worksharing loop in a region of its own, so that each thread enters the region
// (RegionErrors::enter) before its iterations; the loop bodies throw nothing.
template <Op O, class T, class A> RungValue run_clause(const T* x, std::uint64_t n, int threads) {
  using Wt = work_t<O, A>;
  Wt acc = static_cast<Wt>(identity<A>(O));
  bool nan = false;
  const auto count = static_cast<std::int64_t>(n);
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  {
    errors.enter(Region::OmpClause);
    if constexpr (O == Op::Sum && std::is_floating_point_v<A>) {
#pragma omp for schedule(static) reduction(xr_float_sum : acc)
      for (std::int64_t i = 0; i < count; ++i) acc += static_cast<Wt>(static_cast<A>(x[i]));
    } else if constexpr (O == Op::Sum) {
#pragma omp for schedule(static) reduction(+ : acc)
      for (std::int64_t i = 0; i < count; ++i) acc += static_cast<Wt>(static_cast<A>(x[i]));
    } else if constexpr (O == Op::Prod) {
#pragma omp for schedule(static) reduction(* : acc)
      for (std::int64_t i = 0; i < count; ++i) acc *= static_cast<Wt>(static_cast<A>(x[i]));
    } else if constexpr (O == Op::Min && std::is_floating_point_v<Wt>) {
#pragma omp for schedule(static) reduction(xr_float_min : acc) reduction(|| : nan)
      for (std::int64_t i = 0; i < count; ++i) {
        nan = nan || x[i] != x[i];
        acc = x[i] < acc ? x[i] : acc;
      }
    } else if constexpr (O == Op::Min) {
#pragma omp for schedule(static) reduction(min : acc)
      for (std::int64_t i = 0; i < count; ++i) acc = x[i] < acc ? x[i] : acc;
    } else if constexpr (O == Op::Max && std::is_floating_point_v<Wt>) {
#pragma omp for schedule(static) reduction(xr_float_max : acc) reduction(|| : nan)
      for (std::int64_t i = 0; i < count; ++i) {
        nan = nan || x[i] != x[i];
        acc = acc < x[i] ? x[i] : acc;
      }
    } else {
      static_assert(O == Op::Max, "run_clause: a fold with no reduction clause");
#pragma omp for schedule(static) reduction(max : acc)
      for (std::int64_t i = 0; i < count; ++i) acc = acc < x[i] ? x[i] : acc;
    }
  }
  errors.rethrow();
  A value = static_cast<A>(acc);
  if constexpr (is_float_v<A>)
    if (nan) value = std::numeric_limits<A>::quiet_NaN();
  return {Scalar::of<A>(value), ceil_div(n, threads) + threads};
}

// One thread's share of the `vector` rung (lanes.hpp), compiled for the portable build and again
// for AVX2 with F16C, taken where the CPU has them (cpu.hpp). One core of the 2-core Xeon
// development machine, 16 KiB in L1, GB/s of input, AVX2 against portable: u32 max 74 against
// 21, u32 sum 46 against 38, bf16 sum 49 against 31, bf16 max 37 against 21 (f16 and bytes take
// the same F16C and AVX2 loops of widen.cpp in both copies, where the CPU has them). The min, max and
// pair ops of 64-bit integers stay portable: AVX2 compares them only as signed (u64 max 19
// against 37, i64 max 25 against 37, u64 argmax 18 against 33), where the portable copy's
// scalar compare and move runs at twice the rate. Where the CPU has AVX-512 (F, BW, VL, DQ), a
// third copy takes every op and type: its compares take 64-bit lanes, signed and unsigned, and
// its shorter loops keep more loads in flight from memory. One core of the development machine,
// 256 MiB, GB/s, AVX-512 against AVX2: u64 max 8.8-9.2 against 6.9-7.3 (portable 7.1-7.5), u32
// sum 12.7-13.0 against 10.8-11.0, f32 sum 15.2-15.5 against 13.6-13.7, f32 minmax 12.2-12.6
// against 11.3-11.6. The 16-core Xeon host of the H100 machine, 16 threads, share of
// stream_read with AVX-512 against without (two processes each): u64 max 0.93-0.94 against
// 0.80-0.81, f32 minmax 0.94-0.97 against 0.70-0.81, u32 sum 1.10-1.13 against 0.97-0.98, f16
// max 0.85-0.89 against 0.78-0.81, i8 sum (widen.cpp's AVX2 loop in both) 0.98-1.04. The
// AVX-512 copy also takes the min, max and pair ops in packs of a register's width
// (lanes::Extremes::add_packs).
constexpr std::uint64_t kAvx512PackBytes = 64;
template <Op O, class T, class A> auto share_portable(const T* x, std::uint64_t n, std::int64_t first) {
  return lanes::share_result<O, T, A, 0>(x, n, first);
}
#if XR_OMP_X86
template <Op O, class T, class A>
__attribute__((target("avx2,f16c"), flatten)) auto share_avx2(const T* x, std::uint64_t n, std::int64_t first) {
  return lanes::share_result<O, T, A, 0>(x, n, first);
}
template <Op O, class T, class A>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c"), flatten)) auto share_avx512(const T* x, std::uint64_t n,
                                                                                                 std::int64_t first) {
  return lanes::share_result<O, T, A, kAvx512PackBytes>(x, n, first);
}
#endif
template <Op O, class T> constexpr bool kWideIntegerExtremes = std::is_integral_v<T> && sizeof(T) == 8 && O != Op::Sum && O != Op::Prod;
template <Op O, class T, class A> auto share_fn() {
#if XR_OMP_X86
  if (have_avx512()) return &share_avx512<O, T, A>;
  if constexpr (!kWideIntegerExtremes<O, T>)
    if (have_avx2()) return &share_avx2<O, T, A>;
#endif
  return &share_portable<O, T, A>;
}

// rung `vector`: kLanes independent accumulators per thread in lane loops the compiler turns
// into SIMD (lanes.hpp); reaches the streaming-read rate, at the cost of a lane-then-thread
// combine.
template <Op O, class T, class A> RungValue run_vector(const T* x, std::uint64_t n, int threads) {
  constexpr std::uint64_t K = lanes::kFoldLanes<T, A>;
  const auto fold = share_fn<O, T, A>();
  std::vector<A> partial(static_cast<std::size_t>(threads), identity<A>(O));
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  errors.run(Region::OmpVector, [&] {
    const int t = omp_get_thread_num();
    const Span s = share(n, t, omp_get_num_threads(), K);
    partial[static_cast<std::size_t>(t)] = fold(x + s.lo, s.hi - s.lo, 0);
  });
  errors.rethrow();
  A r = identity<A>(O);
  for (const auto& p : partial) r = OpFn<O>::apply(r, p);
  return {Scalar::of<A>(r), ceil_div(n, threads * K) + K + threads};
}

// A pair op's record as the rung's value.
template <class T> RungValue rung_value(const Located<T>& r) {
  RungValue v{};
  v.value = Scalar::of<T>(r.value);
  v.index = r.index == kNoIndex ? -1 : r.index;
  return v;
}
template <class T> RungValue rung_value(const Bounds<T>& r) {
  RungValue v{};
  v.value = Scalar::of<T>(r.min);
  v.maximum = Scalar::of<T>(r.max);
  return v;
}

// The pair ops on rung `vector`: each thread's record of its share (lanes.hpp: the lanes fold
// every block, and only a block that beats the record is searched for its index), the threads'
// records by PairFn.
template <Op O, class T> RungValue run_pair(const T* x, std::uint64_t n, int threads) {
  using Record = pair_record_t<O, T>;
  const auto locate = share_fn<O, T, T>();
  std::vector<Record> partial(static_cast<std::size_t>(threads), PairFn<O>::template identity<T>());
  RegionErrors errors;
#pragma omp parallel num_threads(threads)
  errors.run(Region::OmpVectorPairs, [&] {
    const int t = omp_get_thread_num();
    const Span s = share(n, t, omp_get_num_threads(), lanes::kLanes<compute_t<T>>);
    partial[static_cast<std::size_t>(t)] = locate(x + s.lo, s.hi - s.lo, static_cast<std::int64_t>(s.lo));
  });
  errors.rethrow();
  Record r = PairFn<O>::template identity<T>();
  for (const auto& p : partial) r = PairFn<O>::apply(r, p);
  return rung_value(r);
}

// probe `stream_read`: XORs every 8-byte word of the input in vectorised lanes; the rate of
// reading memory once, against which the rungs are measured. Its value is no reduction.
RungValue run_stream_read(const void* data, std::uint64_t bytes, int threads) {
  constexpr std::uint64_t K = 16;
  const auto* w = static_cast<const std::uint64_t*>(data);
  const std::uint64_t words = bytes / 8;
  std::uint64_t all = 0;
  RegionErrors errors;
#pragma omp parallel num_threads(threads) reduction(^ : all)
  errors.run(Region::OmpStreamRead, [&] {
    const Span s = share(words, omp_get_thread_num(), omp_get_num_threads(), K);
    std::uint64_t lane[K] = {};
    std::uint64_t i = s.lo;
    for (; i + K <= s.hi; i += K)
      for (std::uint64_t j = 0; j < K; ++j) lane[j] ^= w[i + j];
    for (; i < s.hi; ++i) lane[0] ^= w[i];
    for (auto l : lane) all ^= l;
  });
  errors.rethrow();
  return {Scalar::of<std::int64_t>(static_cast<std::int64_t>(all)), 0};
}

using RungFn = RungValue (*)(HostArray in, Op op, Accumulator acc, int threads);

// Instantiates rung R<O, T, A> for the run-time (op, type, accumulator).
template <template <Op, class, class> class R> RungValue dispatch(HostArray in, Op op, Accumulator acc, int threads) {
  return visit_dtype(in.type, [&](auto zero) {
    using T = decltype(zero);
    if (is_pair(op))
      return visit_pair(op, [&](auto fn) { return run_pair<decltype(fn)::op>(static_cast<const T*>(in.data), in.n, threads); });
    if (is_mapped(op)) {
      if constexpr (R<Op::Sum, T, T>::maps) {
        return visit_mapped(op, [&](auto fn) {
          using F = decltype(fn);
          using M = typename F::template element<T>;
          const M* x = reinterpret_cast<const M*>(in.data);  // the same bytes, read through the map
          if (acc == Accumulator::Native) return R<F::fold, M, accumulator_t<F::op, T, Accumulator::Native>>::run(x, in.n, threads);
          return R<F::fold, M, accumulator_t<F::op, T, Accumulator::Wide>>::run(x, in.n, threads);
        });
      } else {
        throw InvalidArgument("omp: this rung does not take " + std::string(to_string(op)));
      }
    }
    return visit_fold(op, [&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      const T* x = static_cast<const T*>(in.data);
      if (acc == Accumulator::Native) return R<O, T, accumulator_t<O, T, Accumulator::Native>>::run(x, in.n, threads);
      return R<O, T, accumulator_t<O, T, Accumulator::Wide>>::run(x, in.n, threads);
    });
  });
}

template <Op O, class T, class A> struct Clause {
  static constexpr bool maps = false;  // the reduction clause reads raw elements
  static RungValue run(const T* x, std::uint64_t n, int threads) { return run_clause<O, T, A>(x, n, threads); }
};
template <Op O, class T, class A> struct Vector {
  static constexpr bool maps = true;  // its lanes read mapped elements through their map
  static RungValue run(const T* x, std::uint64_t n, int threads) { return run_vector<O, T, A>(x, n, threads); }
};

RungValue stream_read(HostArray in, Op, Accumulator, int threads) {
  return run_stream_read(in.data, in.n * size_of(in.type), threads);
}

// Every host rung takes every type, and the folds, or every op (`pairs`); block sizes mean
// nothing to it (the default rule).
KernelInfo host_kernel(std::string name, std::string note, KernelKind kind, bool exact = false, bool pairs = false) {
  KernelInfo k;
  k.name = std::move(name);
  k.note = std::move(note);
  k.kind = kind;
  if (pairs) k.ops.assign(all_ops.begin(), all_ops.end());  // the pair and mapped ops too
  else k.ops.assign(fold_ops.begin(), fold_ops.end());
  k.types.assign(all_dtypes.begin(), all_dtypes.end());
  k.exact = exact;
  return k;
}

}  // namespace

namespace {
// f16 and bf16 widened to float a block at a time (each converts exactly), summed as f32.
template <class T> ExactSum::Raw exact_half_state(const T* x, std::uint64_t n, int threads) {
  constexpr std::uint64_t kBlock = std::uint64_t{1} << 20;
  std::vector<float> wide(static_cast<std::size_t>(std::min(n, kBlock)));
  ExactSum sum;
  for (std::uint64_t first = 0; first < n; first += kBlock) {
    const std::uint64_t len = std::min(kBlock, n - first);
    RegionErrors errors;
#pragma omp parallel num_threads(threads)
    errors.run(Region::OmpExactWiden, [&] {
      const Span s = share(len, omp_get_thread_num(), omp_get_num_threads(), 8);
      widen(x + first + s.lo, wide.data() + s.lo, s.hi - s.lo);
    });
    errors.rethrow();
    sum.merge_raw(exact_sum_state(wide.data(), len, threads));
  }
  return sum.raw();
}
}  // namespace

// Exact mode (float sums): per-thread exact window sums feeding ExactSum superaccumulators,
// merged in thread order, rounded once (docs/exact.md).
ExactSum::Raw exact_state(HostArray in, int threads) {
  return visit_dtype(in.type, [&](auto t) -> ExactSum::Raw {
    using T = decltype(t);
    const T* x = static_cast<const T*>(in.data);
    if constexpr (is_half_v<T>) return exact_half_state(x, in.n, threads);
    else if constexpr (std::is_floating_point_v<T>) return exact_sum_state(x, in.n, threads);
    else throw InvalidArgument("omp: exact mode covers float sums, not " + std::string(to_string(in.type)));
  });
}

const std::vector<Rung>& rungs() {
  static const std::vector<Rung> table = {
      {host_kernel("clause", "#pragma omp parallel for reduction(op:acc): one dependent chain per thread, no SIMD",
                   KernelKind::Rung),
       dispatch<Clause>, "reduction clause"},
      {host_kernel("vector", "128 bytes of independent lanes per thread, vectorised: memory-bound, lane combine at the end",
                   KernelKind::Rung, true, true),
       dispatch<Vector>, "lanes, then threads in order"},
      {host_kernel("auto", "the fastest rung: vector", KernelKind::Auto, true, true), dispatch<Vector>,
       "lanes, then threads in order"},
      {host_kernel("stream_read", "baseline: XOR of every 8-byte word, the machine's streaming-read rate",
                   KernelKind::Probe),
       stream_read, "none (probe)"},
  };
  return table;
}


const Rung& rung(const std::string& name) {
  for (const auto& r : rungs())
    if (r.info.name == name) return r;
  throw InvalidArgument("omp: unknown kernel '" + name + "'");
}

}  // namespace xr::omp::detail
