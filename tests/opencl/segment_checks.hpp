// The checks the OpenCL segment suites share (test_opencl_segments.cpp, test_opencl_balanced.cpp):
// a device's types and strategies, values read back and checked against the host reference, jobs
// on cl_mem buffers, and a device's capabilities as auto sees a GPU's.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "internal.hpp"
#include "segment_entries.hpp"
#include "segments.hpp"
#include "targets.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"


namespace xr::ocl_test {

using namespace xr;
namespace od = xr::opencl::detail;
using namespace xr_seg;

// The device's types for the loops that turn through types: every one but f16 and bf16, which
// test_segments.cpp covers with fewer kernel builds (PoCL compiles each at run time, about 0.5 s).
inline std::vector<DType> types_of(const Target& t) {
  std::vector<DType> out;
  for (DType d : segment_dtypes())
    if ((t.caps.fp64 || d != DType::F64) && !is_half(d)) out.push_back(d);
  return out;
}

// The strategies of this device that reduce `kind`, auto first.
inline std::vector<std::string> strategies(const Target& t, SegmentKind kind) {
  return xr_seg::strategies(opencl::segment_kernels(t.caps.device), kind);
}

inline HostBuffer read_back(const Target& t, cl_mem mem, DType type, u64 count) { return xr_seg::read_back(t.queue, mem, type, count); }

// The values of a call against reference_segments over `input`, and the record's elements and backend.
inline void expect_agrees(const Target& t, const SegmentedResult& got, const HostBuffer& input, const SegmentLayout& layout,
                   Op op, const RunOptions& o, const std::string& what) {
  const SegmentAgreement a = check_segments(got, reference_segments(input.view(), layout, op, o.accumulator), o.exact);
  CHECK_MESSAGE(a.ok(), t.label(), " ", what, ": ", a.detail);
  CHECK_MESSAGE(got.record.n == layout.elements(), what);
  CHECK_MESSAGE(got.record.backend == "opencl", what);
}

// Elements [offset, size) of `data`.
inline HostBuffer tail_of(const HostBuffer& data, u64 offset) {
  HostBuffer b(data.type(), data.size() - offset);
  std::memcpy(b.data(), static_cast<const unsigned char*>(data.data()) + offset * size_of(data.type()), b.bytes());
  return b;
}

// reduce_segments on a buffer holding `data`, the input starting `offset` elements into it.
inline void check_offsets_call(const Target& t, const HostBuffer& data, u64 offset, const std::vector<i64>& offsets, Op op,
                        const RunOptions& o, const std::string& what) {
  OpenclEntry entry(t.context, t.queue, t.caps.device, offset);
  const HostBuffer input = tail_of(data, offset);
  expect_agrees(t, entry.reduce_segments(input, offsets, op, o), input, offsets_layout(offsets), op, o, what);
}

// A job of `kernel` (f32 sums unless told) on cl_mem buffers: n elements in `in`, the values into
// `out`, an Offsets layout's offsets in `offsets` beside their host copy in layout.offsets.
inline xr::detail::SegmentJob job_on(cl_mem in, u64 n, const SegmentLayout& layout, cl_mem offsets, cl_mem out,
                              const std::string& kernel = "auto", DType type = DType::F32, Op op = Op::Sum) {
  xr::detail::SegmentJob job;
  job.op = op;
  job.type = type;
  job.result_type = result_dtype(op, type);
  job.options.kernel = kernel;
  job.layout = layout;
  job.data = xr::detail::Memory::device(in);
  job.n = n;
  job.offsets = xr::detail::Memory::device(offsets);
  job.out = xr::detail::Memory::device(out);
  return job;
}

inline std::string name_of(const std::string& strategy, Op op, DType type, const std::string& shape) {
  return describe(strategy, op, type, shape);
}

struct Lengths {
  std::string name;
  std::vector<u64> lengths;
};

// This device's capabilities as auto sees an H100's: a GPU of 132 compute units, so that its
// plans for a GPU run here.
inline od::DeviceCaps as_h100(od::DeviceCaps caps) {
  caps.type = CL_DEVICE_TYPE_GPU;
  caps.compute_units = 132;
  return caps;
}

}  // namespace xr::ocl_test
