// xreduce on data already on a CUDA device: no host copy of the input.
//
//   float* d = ...;                                  // cudaMalloc'd, n elements
//   xr::Result r = xr::cuda::reduce(d, n, xr::Op::Sum, stream);        // waits, returns the value
//   xr::cuda::reduce_async(d, n, xr::Op::Max, d_out, stream);          // result stays on the device
//
// Segmented reductions of device data (xreduce/segments.hpp), one value per row, column or
// CSR segment, into device memory:
//
//   xr::cuda::reduce_axis(d, xr::MatrixShape{rows, cols}, 1, xr::Op::Sum, d_row_sums, stream);
//   xr::cuda::reduce_segments(d, n, d_offsets, n_segments, xr::Op::Max, d_maxima, stream);
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
#include "xreduce/segments.hpp"
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
// an int64_t. A pair op writes its record (xreduce/semantics.hpp, aligned as its type):
// xr::Located<T> for argmin and argmax (the value, then the int64 index), xr::Bounds<T> for
// minmax. With options.exact, a float sum writes the correctly rounded exact sum (f32 for f16,
// bf16 and f32; f64 for f64), rounded on the device: the same bits as reduce. A mean writes the
// sum divided by n on the device, as reduce gives it (its exact form rounds on the host: reduce
// takes it, reduce_async throws InvalidArgument). nanmin and
// nanmax of float types throw InvalidArgument: where the input may be all NaN they need a second
// pass that waits for the first (reduce runs it). Argument errors throw before anything is
// enqueued.
template <class T>
XR_API void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result,
                         cudaStream_t stream = nullptr, Accumulator accumulator = Accumulator::Wide);
template <class T>
XR_API void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result, cudaStream_t stream,
                         const RunOptions& options);

// Waits until the work enqueued on `stream` is done (cudaStreamSynchronize); DeviceError with
// the CUDA error of a failed launch or kernel.
XR_API void synchronize(cudaStream_t stream = nullptr);

// The CUDA ladder (same as Reducer::kernels() of the "cuda" backend).
XR_API std::vector<KernelInfo> kernels();

// Segmented reductions. d_out (device memory, aligned to its type) receives one value per
// segment of result_dtype(op, dtype_of<T>, options.accumulator); an empty segment gets the value
// of the table in xreduce/segments.hpp. A pair op writes one record per segment instead, the
// records reduce_async writes (segment_record_bytes(op, type) bytes apart, d_out aligned to
// segment_record_align): xr::Located<T> for argmin and argmax (the value, then the int64 index
// WITHIN the segment; -1 for an empty segment), xr::Bounds<T> for minmax (the min, then the max).
// options.kernel names one of segment_kernels() ("auto":
// chosen by layout and shape), options.block_size a block size its BlockRule accepts (0: its
// default). Every pointer must be on one device.
//
// The synchronous forms wait and return the record: kernel ("auto:warp"), finish, launches,
// kernel_ms (CUDA events, the median of options.repeat passes after options.warmup),
// transfer_ms (the copies of the call: the offsets to the host, exact mode's pieces and states),
// n (the elements reduced) and bytes_per_s (bytes read, offsets included, plus bytes written, over
// kernel_ms); value is unused. They support options.exact for f32/f64 sums: every value is then
// the correctly rounded exact sum of its segment (states of pieces merged and rounded on the host).
// The asynchronous forms of segments enqueue on `stream` and return at once; exact sums throw
// InvalidArgument. A mean divides each segment's sum by its length on the device (NaN for an
// empty segment), in both forms; it has no exact mode per segment.
//
// CSR segments: segment i is d_data[d_offsets[i] .. d_offsets[i + 1]), with d_offsets holding
// n_segments + 1 values in device memory and d_data n elements. reduce_segments copies the
// offsets to the host and throws InvalidArgument naming the first bad position (offsets that
// decrease, start below 0 or end past n) before launching; reduce_segments_async never reads
// them on the host: its kernels clamp each segment to [0, n] (begin to [0, n], end to [begin,
// n]), so that bad offsets give the values of the clamped segments and no access outside
// d_data. The cub baseline reads the offsets as given.
template <class T>
XR_API Result reduce_segments(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets, std::uint64_t n_segments,
                              Op op, void* d_out, cudaStream_t stream = nullptr, const RunOptions& options = {});
template <class T>
XR_API void reduce_segments_async(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets,
                                  std::uint64_t n_segments, Op op, void* d_out, cudaStream_t stream = nullptr,
                                  const RunOptions& options = {});

// The rows (axis 1) or columns (axis 0) of a 2-D array at d_data (shape: xreduce/segments.hpp;
// d_data holds axis_layout(shape, axis).span() elements at least). InvalidArgument for a bad
// axis or shape.
template <class T>
XR_API Result reduce_axis(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out,
                          cudaStream_t stream = nullptr, const RunOptions& options = {});
template <class T>
XR_API void reduce_axis_async(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out,
                              cudaStream_t stream = nullptr, const RunOptions& options = {});

// The segment strategies, with the layouts each reduces (same as Reducer::segment_kernels() of
// the "cuda" backend).
XR_API std::vector<KernelInfo> segment_kernels();

// The entry points for element type T, declared (`extern`, here) and defined (reducer.cpp;
// segments.cpp for the segmented ones) for every row of core's type table.
#define XR_CUDA_ENTRY_POINTS(prefix, T)                                                                  \
  prefix template Result reduce<T>(const T*, std::uint64_t, Op, cudaStream_t, const RunOptions&);         \
  prefix template void reduce_async<T>(const T*, std::uint64_t, Op, void*, cudaStream_t, Accumulator);    \
  prefix template void reduce_async<T>(const T*, std::uint64_t, Op, void*, cudaStream_t, const RunOptions&);
#define XR_CUDA_SEGMENT_ENTRY_POINTS(prefix, T)                                                                    \
  prefix template Result reduce_segments<T>(const T*, std::uint64_t, const std::int64_t*, std::uint64_t, Op, void*, \
                                            cudaStream_t, const RunOptions&);                                      \
  prefix template void reduce_segments_async<T>(const T*, std::uint64_t, const std::int64_t*, std::uint64_t, Op,    \
                                                void*, cudaStream_t, const RunOptions&);                           \
  prefix template Result reduce_axis<T>(const T*, const MatrixShape&, int, Op, void*, cudaStream_t,                \
                                        const RunOptions&);                                                        \
  prefix template void reduce_axis_async<T>(const T*, const MatrixShape&, int, Op, void*, cudaStream_t,            \
                                            const RunOptions&);
#define XR_CUDA_EXTERN(e, T, ...) \
  XR_CUDA_ENTRY_POINTS(extern, T) \
  XR_CUDA_SEGMENT_ENTRY_POINTS(extern, T)
XR_ELEMENT_TYPES(XR_CUDA_EXTERN)
#undef XR_CUDA_EXTERN

}  // namespace xr::cuda
