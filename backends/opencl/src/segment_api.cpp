// The cl_mem entry points of segmented reductions (xreduce/opencl.hpp): the caller's buffers
// checked against the queue's context, then core's device-memory path (run_device_segments) on a
// Segments of the caller's queue, one per call.
#include <limits>
#include <string>

#include "segments.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::opencl {

namespace {

using xr::detail::Memory;

void check_buffer(cl_mem mem, cl_context context, std::uint64_t bytes, const char* what) {
  if (!mem) throw InvalidArgument(std::string("opencl: null ") + what + " buffer");
  cl_context owner = nullptr;
  std::size_t size = 0;
  detail::check(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr), "clGetMemObjectInfo",
                "CL_MEM_CONTEXT");
  detail::check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr), "clGetMemObjectInfo",
                "CL_MEM_SIZE");
  if (owner != context)
    throw InvalidArgument(std::string("opencl: the ") + what + " buffer belongs to another context than the queue");
  if (size < bytes)
    throw InvalidArgument(std::string("opencl: the ") + what + " buffer holds " + std::to_string(size) +
                          " bytes, fewer than the " + std::to_string(bytes) + " the reduction reaches");
}

void check_data(const detail::Segments& device, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type) {
  if (offset > std::numeric_limits<std::uint64_t>::max() - n)
    throw InvalidArgument("opencl: elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                          std::to_string(n) + ") overflow");
  check_buffer(data, device.context(), (offset + n) * size_of(type), "data");
}

// One call on the caller's buffers: `layout` over the n elements of `data` from element `offset`.
Result run(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
           const SegmentLayout& layout, cl_mem offsets, Op op, cl_mem out, const RunOptions& options,
           bool synchronous) {
  detail::Segments device(queue);
  check_data(device, data, offset, n, type);
  if (layout.kind == SegmentKind::Offsets)
    check_buffer(offsets, device.context(), (layout.count + 1) * sizeof(std::int64_t), "offsets");
  check_buffer(out, device.context(), layout.count * segment_record_bytes(op, type, options.accumulator), "values");
  xr::detail::DeviceSegmentCall call;
  call.data = Memory::device(data, offset * size_of(type));
  call.n = n;
  call.type = type;
  call.layout = layout;
  call.offsets = Memory::device(offsets);
  call.out = Memory::device(out);
  call.op = op;
  call.synchronous = synchronous;
  return xr::detail::run_device_segments(device, "opencl", device.caps().name, call, options);
}

SegmentLayout offsets_layout(std::uint64_t n_segments) {
  SegmentLayout layout;
  layout.kind = SegmentKind::Offsets;
  layout.count = n_segments;
  return layout;
}

}  // namespace

Result reduce_segments(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                       cl_mem offsets, std::uint64_t n_segments, Op op, cl_mem out, const RunOptions& options) {
  return run(queue, data, offset, n, type, offsets_layout(n_segments), offsets, op, out, options, true);
}

void reduce_segments_async(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                           cl_mem offsets, std::uint64_t n_segments, Op op, cl_mem out, const RunOptions& options) {
  run(queue, data, offset, n, type, offsets_layout(n_segments), offsets, op, out, options, false);
}

Result reduce_axis(cl_command_queue queue, cl_mem data, std::uint64_t offset, DType type, const MatrixShape& shape,
                   int axis, Op op, cl_mem out, const RunOptions& options) {
  const SegmentLayout layout = axis_layout(shape, axis);
  return run(queue, data, offset, layout.span(), type, layout, nullptr, op, out, options, true);
}

void reduce_axis_async(cl_command_queue queue, cl_mem data, std::uint64_t offset, DType type, const MatrixShape& shape,
                       int axis, Op op, cl_mem out, const RunOptions& options) {
  const SegmentLayout layout = axis_layout(shape, axis);
  run(queue, data, offset, layout.span(), type, layout, nullptr, op, out, options, false);
}

}  // namespace xr::opencl
