// xreduce on data already on a CUDA device: no host copy of the input.
//
//   float* d = ...;                                  // cudaMalloc'd, n elements
//   xr::Result r = xr::cuda::reduce(d, n, xr::Op::Sum, stream);        // waits, returns the value
//   xr::cuda::reduce_async(d, n, xr::Op::Max, d_out, stream);          // result stays on the device
//
// Every kernel of the ladder is available through RunOptions::kernel ("auto" by default).
// Temporary storage is cached per (device, stream) and reused: concurrent calls on one stream
// are ordered by the stream, calls on different streams use different storage. The device is
// the one that owns the pointer (cudaPointerGetAttributes); host or unregistered pointers
// throw xr::DeviceError (cudaErrorInvalidValue). Errors of CUDA calls throw xr::DeviceError
// with the CUDA error name; min/max of n = 0 throws xr::EmptyInput.
#pragma once

#include <cstdint>
#include <vector>

#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/result.hpp"
#include "xreduce/types.hpp"

// The CUDA runtime's own declaration (driver_types.h), repeated so that this header needs no
// CUDA include path.
typedef struct CUstream_st* cudaStream_t;

namespace xr::cuda {

// Synchronous: reduces n elements at dev_ptr on `stream`, waits, and returns the record
// (value, launches, kernel_ms from CUDA events as the median of options.repeat runs after
// options.warmup, transfer_ms = the copy of the result to the host).
template <class T>
XR_API Result reduce(const T* dev_ptr, std::uint64_t n, Op op, cudaStream_t stream = nullptr,
                     const RunOptions& options = {});

// Asynchronous: enqueues the reduction on `stream` and returns at once. dev_result (device
// memory on the same device, aligned to its size) receives one value of type
// result_dtype(op, dtype_of<T>, accumulator): for an i32 sum with Accumulator::Wide that is
// an int64_t. Argument errors throw before anything is enqueued.
template <class T>
XR_API void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result,
                         cudaStream_t stream = nullptr, Accumulator accumulator = Accumulator::Wide);
template <class T>
XR_API void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result, cudaStream_t stream,
                         const RunOptions& options);

// The CUDA ladder (same as Reducer::kernels() of the "cuda" backend).
XR_API std::vector<KernelInfo> kernels();

// The entry points for element type T, declared (`extern`, here) and defined (backend.cpp)
// for every row of core's type table.
#define XR_CUDA_ENTRY_POINTS(prefix, T)                                                                  \
  prefix template Result reduce<T>(const T*, std::uint64_t, Op, cudaStream_t, const RunOptions&);         \
  prefix template void reduce_async<T>(const T*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);    \
  prefix template void reduce_async<T>(const T*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);
#define XR_CUDA_EXTERN(e, T, ...) XR_CUDA_ENTRY_POINTS(extern, T)
XR_ELEMENT_TYPES(XR_CUDA_EXTERN)
#undef XR_CUDA_EXTERN

}  // namespace xr::cuda

namespace xr {
// The short name this API had first.
namespace cu = cuda;
}  // namespace xr
