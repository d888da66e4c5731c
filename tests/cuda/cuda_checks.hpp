// The helpers the CUDA suite's files share (test_cuda.cpp, test_cuda_device.cpp): device buffers,
// inputs, a host reference of each fold in the result type (core's reference for the pair and
// mapped ops), the sizes, accumulators and block sizes the loops run, and what auto's record
// names.
#pragma once

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

namespace xr_cuda_test {


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

// Whether a reduction of no elements has a value (sum, prod and the mapped sums), else EmptyInput.
inline bool empty_has_value(Op op) { return xr::op_info(op).empty_has_value; }

// The record of a reduction of v against core's reference `ref` of it (check_result's rules).
template <class T>
inline void check_reference(const xr::Result& res, const std::vector<T>& v, const xr::Reference& ref, Accumulator acc,
                            const std::string& what) {
  INFO(what << " n=" << v.size() << " op=" << xr::to_string(ref.op) << " type=" << xr::to_string(xr::dtype_of<T>)
            << " kernel=" << res.kernel << " value=" << res.value.to_string());
  CHECK(res.value.type == xr::result_dtype(ref.op, xr::dtype_of<T>, acc));
  CHECK(res.n == v.size());
  CHECK(res.backend == "cuda");
  const xr::Agreement a = xr::check_result(res, ref);
  CHECK_MESSAGE(a.ok, a.detail);
}

inline xr::Reference reference_of(const void* data, u64 n, DType type, Op op, Accumulator acc) {
  return xr::reference_reduce(xr::HostArray{data, n, type}, op, acc);
}

template <class T>
inline void check_value(const xr::Result& res, const std::vector<T>& v, Op op, Accumulator acc, const std::string& what) {
  INFO(what << " n=" << v.size() << " op=" << xr::to_string(op) << " type=" << xr::to_string(xr::dtype_of<T>)
            << " kernel=" << res.kernel << " value=" << res.value.to_string());
  CHECK(res.value.type == xr::result_dtype(op, xr::dtype_of<T>, acc));
  CHECK(res.n == v.size());
  CHECK(res.backend == "cuda");
  CHECK(res.launches >= (v.empty() ? 0 : 1));  // an empty host input launches nothing
  // Pair ops: the value and its index, or the min and the max, exactly the reference's. Mapped
  // ops: the reference maps every element (sums within check_result's bound).
  if (xr::is_pair(op) || xr::is_mapped(op)) {
    const xr::Agreement a = xr::check_result(res, reference_of(v.data(), v.size(), xr::dtype_of<T>, op, acc));
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


inline const std::vector<u64> kSizes{0, 1, 2, 31, 33, 1025, (1u << 20) + 7};

inline std::vector<Accumulator> accumulators(Op op, DType t) {
  if (xr::accumulator_matters(op, t)) return {Accumulator::Wide, Accumulator::Native};
  return {Accumulator::Wide};
}

// The block sizes to try for a rung: a non-power of two it accepts (100, else 96), plus the
// default. unroll_complete (templated) and cub accept neither.
// Block sizes to try on a rung, from its rule (KernelInfo::blocks): its default (0), then the
// sizes it lists, or a non-power-of-two multiple of a warp, 33, one warp and its largest.
inline std::vector<unsigned> blocks_for(const xr::KernelInfo& k) {
  const xr::BlockRule& rule = k.blocks;
  std::vector<unsigned> out{0};
  const std::vector<unsigned> candidates = rule.only.empty() ? std::vector<unsigned>{96, 33, 32, rule.max} : rule.only;
  for (unsigned b : candidates)
    if (b && rule.accepts(b) && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  return out;
}

// Whether auto ran a layout it takes for an input of `bytes` (rungs_grid.cu): from 64 MB,
// segments, or bulk_copy on GPUs whose HBM reaches 4 TB/s; from 1 GiB tiles of either kind.
// The pair ops draw tiles at every size (rungs_pairs.cu).
inline bool auto_ran_its_layout(const std::string& kernel, u64 bytes, Op op = Op::Sum) {
  if (xr::is_pair(op)) return kernel == "auto:pairs";
  if (bytes < (u64(64) << 20)) return kernel == "auto:single_pass";
  if (bytes < (u64(1) << 30)) return kernel == "auto:segmented" || kernel == "auto:bulk_copy";
  return kernel == "auto:dynamic_tiles" || kernel == "auto:bulk_tiles";
}

}  // namespace xr_cuda_test
