// xreduce on data already on a CUDA device: no host copy of the input.
//
//   float* d = ...;                                  // cudaMalloc'd, n elements
//   xr::Result r = xr::cu::reduce(d, n, xr::Op::Sum, stream);        // waits, returns the value
//   xr::cu::reduce_async(d, n, xr::Op::Max, d_out, stream);          // result stays on the device
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

namespace xr::cu {

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

extern template Result reduce<std::int32_t>(const std::int32_t*, std::uint64_t, Op, cudaStream_t, const RunOptions&);
extern template Result reduce<std::int64_t>(const std::int64_t*, std::uint64_t, Op, cudaStream_t, const RunOptions&);
extern template Result reduce<float>(const float*, std::uint64_t, Op, cudaStream_t, const RunOptions&);
extern template Result reduce<double>(const double*, std::uint64_t, Op, cudaStream_t, const RunOptions&);
extern template void reduce_async<std::int32_t>(const std::int32_t*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);
extern template void reduce_async<std::int64_t>(const std::int64_t*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);
extern template void reduce_async<float>(const float*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);
extern template void reduce_async<double>(const double*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);
extern template void reduce_async<std::int32_t>(const std::int32_t*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);
extern template void reduce_async<std::int64_t>(const std::int64_t*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);
extern template void reduce_async<float>(const float*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);
extern template void reduce_async<double>(const double*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);

}  // namespace xr::cu
