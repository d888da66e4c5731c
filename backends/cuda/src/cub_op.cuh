// xreduce's op as a CUB reduction functor: core's OpFn, so min and max propagate NaN exactly as
// every kernel of xreduce does. The cub baselines (cub_baseline.cu, segments_cub.cu) use it.
// f16 and bf16 reach CUB as CUDA's own __half and __nv_bfloat16, the types CUB users pass: CUB
// vectorises the loads of those, and loads a class type such as xr::f16 one element at a time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

template <class T> struct cub_native { using type = T; };
template <> struct cub_native<f16> { using type = __half; };
template <> struct cub_native<bf16> { using type = __nv_bfloat16; };
// The type CUB is given for xreduce's T (the same bits).
template <class T> using cub_t = typename cub_native<T>::type;

template <class To, class From> __host__ __device__ To same_bits_as(const From& v) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  __builtin_memcpy(static_cast<void*>(&r), static_cast<const void*>(&v), sizeof(To));
  return r;
}

// The op on CUB's form of Acc, computed as OpFn on xreduce's form of the same bits.
template <class Acc, Op O> struct CubOp {
  __host__ __device__ cub_t<Acc> operator()(const cub_t<Acc>& a, const cub_t<Acc>& b) const {
    return same_bits_as<cub_t<Acc>>(OpFn<O>::apply(same_bits_as<Acc>(a), same_bits_as<Acc>(b)));
  }
};

// The identity of O in CUB's form of Acc (the fold named at compile time: core's op table,
// which xr::identity(op) reads, is host memory).
template <class Acc, Op O> __host__ __device__ cub_t<Acc> cub_identity() {
  return same_bits_as<cub_t<Acc>>(OpFn<fold_of(O)>::template identity<Acc>());
}

}  // namespace xr::cuda::detail
