// xreduce on data already in an OpenCL buffer: reduce a cl_mem the caller owns, in the
// caller's context and on the caller's queue; nothing is copied to the host but the result.
//
//   cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_ONLY, n * sizeof(float), nullptr, &err);
//   ...
//   xr::Result r = xr::opencl::reduce<float>(queue, buf, 0, n, xr::Op::Sum);
//
// Device choice for xr::make_reducer("opencl", options) (BackendOptions):
//   platform  -1: any platform; otherwise the platform index (as listed by backend_status).
//   device    empty: a GPU if the chosen platform(s) have one, else a CPU, else any device;
//             digits: a device index, counted within the platform when one is given, else
//             over every device of every platform in listing order; otherwise a
//             case-insensitive substring of "platform / device".
//   An index out of range is InvalidArgument; a name nothing matches, no OpenCL platform or no
//   device is BackendUnavailable.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/result.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/types.hpp"

namespace xr::opencl {

// Reduces elements [offset, offset + n) of `buffer` (offset and n in elements of `type`) with
// the rung options.kernel ("auto" by default). argmin and argmax return the value and the index
// of its first occurrence (Result::index, counted from `offset`), minmax the min (Result::value)
// and the max (Result::maximum); they run on auto and on the rung kernels() lists them for.
// The queue may be in-order or out-of-order; the call enqueues its commands after everything
// already on the queue that it waits for (in-order queues) and returns when the result has been
// read back.
//
// Timing: with a queue created with CL_QUEUE_PROFILING_ENABLE, kernel_ms comes from profiling
// events (the result fill and the kernels of one reduction); without it, from the host's
// steady clock around enqueue + clFinish (which then includes launch overhead).
// transfer_ms is the read of the result only.
//
// Throws InvalidArgument (unknown rung, unsupported op/type such as f64 on a device without
// cl_khr_fp64, a range beyond the buffer, a buffer of another context, a work-group size the
// kernel does not allow, a pair op on a rung without it), EmptyInput (min, max or a pair op of
// nothing), KernelBuildError, DeviceError.
XR_API Result reduce(cl_command_queue queue, cl_mem buffer, std::uint64_t offset, std::uint64_t n,
                     DType type, Op op, const RunOptions& options = {});

template <class T>
Result reduce(cl_command_queue queue, cl_mem buffer, std::uint64_t offset, std::uint64_t n, Op op,
              const RunOptions& options = {}) {
  return reduce(queue, buffer, offset, n, dtype_of<T>, op, options);
}

// Segmented reductions (xreduce/segments.hpp) of data in a buffer the caller owns, on the caller's
// queue, into a buffer the caller owns: `out` receives one value per segment, of
// result_dtype(op, type, options.accumulator); for a pair op one record per segment instead, as
// xreduce/cuda.hpp's (segment_record_bytes(op, type) bytes apart: xr::Located<T>, the value then
// the int64 index within the segment, -1 for an empty one; xr::Bounds<T>, the min then the max).
// options.kernel names one of segment_kernels(device)
// ("auto" by default). Exact mode (options.exact on an f32/f64 sum) gives every value the bits of
// the host's xr::ExactSum of its segment, rounded once: the exact states of its pieces are read
// back, merged and rounded on the host, and written to `out`. Timing as for reduce; transfer_ms
// covers the reads and writes the call makes (the offsets read back; exact: piece states, values).
// The arguments are in the order of xreduce/cuda.hpp's: the op before `out`.
//
// reduce_segments: segment i is elements [offsets[i], offsets[i + 1]) of the n elements from
// element `offset` of `data`; `offsets` holds n_segments + 1 int64 values, relative to `offset`.
// They are read back and checked (xr::check_offsets) before anything is launched:
// InvalidArgument names the first bad position.
XR_API Result reduce_segments(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                              cl_mem offsets, std::uint64_t n_segments, Op op, cl_mem out,
                              const RunOptions& options = {});

// reduce_axis: one value per row (axis 1) or per column (axis 0) of the matrix `shape` whose
// element (0, 0) is element `offset` of `data` (xr::axis_layout).
XR_API Result reduce_axis(cl_command_queue queue, cl_mem data, std::uint64_t offset, DType type,
                          const MatrixShape& shape, int axis, Op op, cl_mem out, const RunOptions& options = {});

// The asynchronous forms: the same arguments and checks of the buffers, one pass enqueued on
// `queue` (no warmup, no repeat, nothing timed), and the call returns without waiting for it; on
// an in-order queue commands enqueued after it see `out` written. The offsets stay on the device:
// the kernels clamp every segment into the input, so offsets that decrease or leave [0, n) read
// and write nothing outside the buffers (their values are then those of the clamped segments).
// Without the offsets auto takes balanced on GPUs (serial on CPU devices); binned and multigroup,
// which size their launches from the offsets, read them back and check them first (waiting for
// the commands before; InvalidArgument as in reduce_segments). Exact sums, which round on the
// host, are InvalidArgument here. Scratch buffers are released once the queue has run the pass.
XR_API void reduce_segments_async(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n,
                                  DType type, cl_mem offsets, std::uint64_t n_segments, Op op, cl_mem out,
                                  const RunOptions& options = {});
XR_API void reduce_axis_async(cl_command_queue queue, cl_mem data, std::uint64_t offset, DType type,
                              const MatrixShape& shape, int axis, Op op, cl_mem out, const RunOptions& options = {});

// The segmented strategies as they run on `device`, with the layouts each reduces.
XR_API std::vector<KernelInfo> segment_kernels(cl_device_id device);

// The ladder as it runs on `device` (f64 is listed only where the device has cl_khr_fp64).
XR_API std::vector<KernelInfo> kernels(cl_device_id device);

// The symbolic name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL_ERROR_<code>".
XR_API const char* error_name(cl_int code);

// Programs are built once per (context, device, source, build options) and cached for the
// life of the process; a cached program keeps its context alive. Releasing them:
XR_API void clear_program_cache();
XR_API std::size_t program_cache_size();

}  // namespace xr::opencl
