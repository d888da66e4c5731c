// Segmented reductions through each of their entry points. An Entry reduces the rows, columns or
// CSR segments of a host buffer through one API and returns the values and the record as a
// SegmentedResult, so that one test body (test_segments.cpp) runs against every entry:
//   HostEntry    Reducer::reduce_axis and reduce_segments on host arrays, every backend;
//   CudaEntry    xr::cuda::reduce_axis and reduce_segments on cudaMalloc'd copies of the input,
//                offsets and values (compiled with XR_TEST_CUDA_ENTRY);
//   OpenclEntry  xr::opencl::reduce_axis and reduce_segments on cl_mem copies in the caller's
//                context, on the caller's queue (compiled with XR_TEST_OPENCL_ENTRY).
// And the helpers the segment suites share: offsets from lengths, mixes of lengths, the strategies
// that reduce a layout, the input distribution for an op, the host's exact sum of each segment.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

#ifdef XR_TEST_CUDA_ENTRY
#include <cuda_runtime_api.h>

#include "xreduce/cuda.hpp"
#endif
#ifdef XR_TEST_OPENCL_ENTRY
#include "xreduce/opencl.hpp"
#endif

namespace xr_seg {

using u64 = std::uint64_t;
using i64 = std::int64_t;

// Products of ExactProduct inputs are exact in any order; every other op takes uniform values.
inline xr::Dist dist_for(xr::Op op) { return op == xr::Op::Prod ? xr::Dist::ExactProduct : xr::Dist::Uniform; }

// Offsets of segments of the given lengths, the first starting at element `start`.
inline std::vector<i64> offsets_of(const std::vector<u64>& lengths, u64 start = 0) {
  std::vector<i64> o{static_cast<i64>(start)};
  for (u64 len : lengths) o.push_back(o.back() + static_cast<i64>(len));
  return o;
}

// `count` lengths drawn evenly from [0, max].
inline std::vector<u64> random_lengths(u64 count, u64 max, u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> l(count);
  for (auto& x : l) x = rng() % (max + 1);
  return l;
}

// Lengths whose logarithm is normal: most short, a long tail (the CSR rows of real matrices).
inline std::vector<u64> lognormal_lengths(u64 count, double mean_log, double sigma, u64 seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(mean_log, sigma);
  std::vector<u64> l(count);
  for (auto& x : l) x = static_cast<u64>(d(rng));
  return l;
}

// Empty, tiny (1..30), short (30..3029) and medium (3000..42999) segments, one of 200000 elements
// and one of 70001: every bin of CUDA's binned for both element sizes (its long bin takes several
// 64 KiB chunks: f32 from 2^16 elements, f64 from 2^15).
inline std::vector<u64> mixed_lengths(u64 seed) {
  std::mt19937_64 rng(seed);
  std::vector<u64> l;
  for (int i = 0; i < 300; ++i) {
    const auto pick = rng() % 16;
    if (pick < 3) l.push_back(0);
    else if (pick < 10) l.push_back(1 + rng() % 30);
    else if (pick < 14) l.push_back(30 + rng() % 3000);
    else l.push_back(3000 + rng() % 40000);
  }
  l.insert(l.begin() + 37, 200000);
  l.push_back(70001);
  return l;
}

// The Offsets layout of offsets in host memory.
inline xr::SegmentLayout offsets_layout(const std::vector<i64>& offsets) {
  xr::SegmentLayout l;
  l.kind = xr::SegmentKind::Offsets;
  l.count = offsets.size() - 1;
  l.offsets = offsets.data();
  return l;
}

// The names of the strategies of `kernels` that reduce `kind` and take `op` (by default the folds'
// sum; argmin for those of the pair ops), in their order (auto first).
inline std::vector<std::string> strategies(const std::vector<xr::KernelInfo>& kernels, xr::SegmentKind kind,
                                           xr::Op op = xr::Op::Sum) {
  std::vector<std::string> names;
  for (const auto& k : kernels)
    if (k.reduces(kind) && std::find(k.ops.begin(), k.ops.end(), op) != k.ops.end()) names.push_back(k.name);
  return names;
}

inline std::string describe(const std::string& strategy, xr::Op op, xr::DType t, const std::string& shape) {
  return strategy + " " + std::string(xr::to_string(op)) + " " + std::string(xr::to_string(t)) + " " + shape;
}

inline std::string shape_text(const xr::MatrixShape& s, int axis) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + (s.order == xr::Order::C ? " C" : " F") + " stride " +
         std::to_string(s.stride) + " axis " + std::to_string(axis);
}

// Element i of a buffer.
inline xr::Scalar element(const xr::HostBuffer& b, u64 i) {
  return xr::visit_dtype(b.type(), [&](auto zero) { return xr::Scalar::of(b.as<decltype(zero)>()[i]); });
}

// The sum of every segment of `layout` over the float buffer `data`, by xr::ExactSum on the host,
// rounded once to result_dtype(Sum, type): f32 for f32, f16 and bf16 (each of whose values f32 holds
// exactly), f64 for f64.
inline xr::HostBuffer exact_sums(const xr::HostBuffer& data, const xr::SegmentLayout& l) {
  const xr::DType result = xr::result_dtype(xr::Op::Sum, data.type());
  xr::HostBuffer out(result, l.count);
  xr::visit_dtype(data.type(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (xr::is_float_v<T>) {
      using R = xr::compute_t<T>;  // f32 for f16 and bf16
      const T* x = data.as<T>();
      for (u64 i = 0; i < l.count; ++i) {
        xr::ExactSum s;
        if (l.kind == xr::SegmentKind::Columns) {
          for (u64 r = 0; r < l.length; ++r) s.add(static_cast<R>(x[i + r * l.stride]));
        } else {
          const u64 b = l.kind == xr::SegmentKind::Rows ? i * l.stride : static_cast<u64>(l.offsets[i]);
          const u64 e = l.kind == xr::SegmentKind::Rows ? b + l.length : static_cast<u64>(l.offsets[i + 1]);
          for (u64 k = b; k < e; ++k) s.add(static_cast<R>(x[k]));
        }
        if constexpr (sizeof(R) == 4) out.as<float>()[i] = s.to_float();
        else out.as<double>()[i] = s.to_double();
      }
    } else {
      throw std::invalid_argument("exact_sums: a float type, not " + std::string(xr::to_string(data.type())));
    }
  });
  return out;
}

// Values a reduce_axis call of `shape` writes: one per row (axis 1) or column (axis 0); 0 for an
// axis or a count that the library refuses (nothing is written then, so no buffer is made).
inline u64 values_of(const xr::MatrixShape& shape, int axis) {
  const u64 count = axis == 1 ? shape.rows : axis == 0 ? shape.cols : 0;
  return count > (u64{1} << 32) ? 0 : count;
}

// One segmented-reduction entry point.
class Entry {
 public:
  virtual ~Entry() = default;
  // "host", "cuda device", "opencl device".
  virtual std::string name() const = 0;
  // true where the result's kind, bytes_read and bytes_written come from the library (the host
  // API returns a SegmentedResult); the device APIs return the record, and the values are read back.
  virtual bool whole_result() const = 0;
  // The strategies this entry takes (RunOptions::kernel), with the layouts each reduces.
  virtual std::vector<xr::KernelInfo> segment_kernels() = 0;
  // One value per row (axis 1) or column (axis 0) of `shape` over `data`.
  virtual xr::SegmentedResult reduce_axis(const xr::HostBuffer& data, const xr::MatrixShape& shape, int axis, xr::Op op,
                                          const xr::RunOptions& o = {}) = 0;
  // One value per segment [offsets[i], offsets[i + 1]) of the data.size() elements of `data`;
  // offsets holds n_segments + 1 values (the device APIs take no empty list).
  virtual xr::SegmentedResult reduce_segments(const xr::HostBuffer& data, std::span<const i64> offsets, xr::Op op,
                                              const xr::RunOptions& o = {}) = 0;
};

// Reducer::reduce_axis and reduce_segments on host arrays.
class HostEntry final : public Entry {
 public:
  explicit HostEntry(xr::Reducer& r) : r_(r) {}
  std::string name() const override { return "host"; }
  bool whole_result() const override { return true; }
  std::vector<xr::KernelInfo> segment_kernels() override { return r_.segment_kernels(); }
  xr::SegmentedResult reduce_axis(const xr::HostBuffer& data, const xr::MatrixShape& shape, int axis, xr::Op op,
                                  const xr::RunOptions& o = {}) override {
    return r_.reduce_axis(xr::HostMatrix{data.data(), data.type(), shape}, axis, op, o);
  }
  xr::SegmentedResult reduce_segments(const xr::HostBuffer& data, std::span<const i64> offsets, xr::Op op,
                                      const xr::RunOptions& o = {}) override {
    return r_.reduce_segments(data.view(), offsets, op, o);
  }

 private:
  xr::Reducer& r_;
};

// The record and the values written to device memory by xr::cuda or xr::opencl, as a SegmentedResult.
inline xr::SegmentedResult device_result(const xr::Result& record, xr::HostBuffer values) {
  xr::SegmentedResult r;
  r.record = record;
  r.values = std::move(values);
  r.rounding_depth = record.rounding_depth;
  return r;
}

// The record and what xr::cuda or xr::opencl wrote to device memory (`bytes`: one record per segment,
// segment_record_bytes apart), as a SegmentedResult: the values, and for a pair op the indices of
// the documented xr::Located<T> or the maxima of xr::Bounds<T>.
inline xr::SegmentedResult device_result(const xr::Result& record, const xr::HostBuffer& bytes, xr::Op op,
                                         xr::DType type, xr::Accumulator acc, u64 count) {
  xr::SegmentedResult r;
  r.record = record;
  r.rounding_depth = record.rounding_depth;
  r.values = xr::HostBuffer(xr::result_dtype(op, type, acc), count);
  if (!xr::is_pair(op)) {
    if (count) std::memcpy(r.values.data(), bytes.data(), r.values.bytes());
    return r;
  }
  REQUIRE(bytes.bytes() == count * xr::segment_record_bytes(op, type, acc));
  xr::visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    const auto* raw = static_cast<const unsigned char*>(bytes.data());
    if (xr::is_indexed(op)) {
      static_assert(sizeof(xr::Located<T>) == 16 && offsetof(xr::Located<T>, index) == 8);
      r.indices = xr::HostBuffer(xr::DType::I64, count);
      for (u64 i = 0; i < count; ++i) {
        xr::Located<T> rec;
        std::memcpy(&rec, raw + i * sizeof rec, sizeof rec);
        r.values.as<T>()[i] = rec.value;
        r.indices.as<i64>()[i] = rec.index;
      }
    } else {
      static_assert(sizeof(xr::Bounds<T>) == 2 * sizeof(T));
      r.maxima = xr::HostBuffer(type, count);
      for (u64 i = 0; i < count; ++i) {
        xr::Bounds<T> rec;
        std::memcpy(&rec, raw + i * sizeof rec, sizeof rec);
        r.values.as<T>()[i] = rec.min;
        r.maxima.as<T>()[i] = rec.max;
      }
    }
  });
  return r;
}

#ifdef XR_TEST_CUDA_ENTRY

#define CK(call) REQUIRE_MESSAGE((call) == cudaSuccess, #call)

// Device memory of `bytes` (at least 1), optionally filled from the host; freed at scope exit.
struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t bytes) {
    if (cudaMalloc(&p, std::max<std::size_t>(bytes, 1)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes failed");
  }
  DevMem(const void* host, std::size_t bytes) : DevMem(bytes) {
    if (bytes && cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("cudaMemcpy to the device failed");
  }
  ~DevMem() { cudaFree(p); }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
  template <class T> T* as() const { return static_cast<T*>(p); }
};

// `count` values of `type` at device memory `p`, copied to the host.
inline xr::HostBuffer read_back(const DevMem& mem, xr::DType type, u64 count) {
  xr::HostBuffer b(type, count);
  if (count && cudaMemcpy(b.data(), mem.p, b.bytes(), cudaMemcpyDeviceToHost) != cudaSuccess)
    throw std::runtime_error("cudaMemcpy to the host failed");
  return b;
}

// `bytes` bytes at device memory `p`, copied to the host.
inline xr::HostBuffer read_back(const DevMem& mem, u64 bytes) {
  xr::HostBuffer b(xr::DType::U8, bytes);
  if (bytes && cudaMemcpy(b.data(), mem.p, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    throw std::runtime_error("cudaMemcpy to the host failed");
  return b;
}

// xr::cuda::reduce_axis and reduce_segments on device copies of the input and offsets, on
// `stream`; the values copied back.
class CudaEntry final : public Entry {
 public:
  explicit CudaEntry(cudaStream_t stream = nullptr) : stream_(stream) {}
  std::string name() const override { return "cuda device"; }
  bool whole_result() const override { return false; }
  std::vector<xr::KernelInfo> segment_kernels() override { return xr::cuda::segment_kernels(); }
  xr::SegmentedResult reduce_axis(const xr::HostBuffer& data, const xr::MatrixShape& shape, int axis, xr::Op op,
                                  const xr::RunOptions& o = {}) override {
    const DevMem in(data.data(), data.bytes());
    const u64 count = values_of(shape, axis);
    const u64 bytes = count * xr::segment_record_bytes(op, data.type(), o.accumulator);
    const DevMem out(bytes);
    const xr::Result record = xr::visit_dtype(data.type(), [&](auto zero) {
      using T = decltype(zero);
      return xr::cuda::reduce_axis(in.as<const T>(), shape, axis, op, out.p, stream_, o);
    });
    return device_result(record, read_back(out, bytes), op, data.type(), o.accumulator, count);
  }
  xr::SegmentedResult reduce_segments(const xr::HostBuffer& data, std::span<const i64> offsets, xr::Op op,
                                      const xr::RunOptions& o = {}) override {
    const DevMem in(data.data(), data.bytes());
    const DevMem off(offsets.data(), offsets.size() * sizeof(i64));
    const u64 count = offsets.size() - 1;
    const u64 bytes = count * xr::segment_record_bytes(op, data.type(), o.accumulator);
    const DevMem out(bytes);
    const xr::Result record = xr::visit_dtype(data.type(), [&](auto zero) {
      using T = decltype(zero);
      return xr::cuda::reduce_segments(in.as<const T>(), data.size(), off.as<const i64>(), count, op, out.p, stream_, o);
    });
    return device_result(record, read_back(out, bytes), op, data.type(), o.accumulator, count);
  }

 private:
  cudaStream_t stream_;
};

#endif  // XR_TEST_CUDA_ENTRY

#ifdef XR_TEST_OPENCL_ENTRY

inline void cl_check(cl_int rc, const char* what) {
  if (rc != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + xr::opencl::error_name(rc));
}

// A buffer of `bytes` (at least 1) in `context`, optionally filled from the host; released at scope exit.
struct ClBuffer {
  cl_mem mem = nullptr;
  ClBuffer(cl_context context, std::size_t bytes, const void* host = nullptr) {
    cl_int rc = CL_SUCCESS;
    mem = clCreateBuffer(context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), std::max<std::size_t>(1, bytes),
                         const_cast<void*>(host), &rc);
    cl_check(rc, "clCreateBuffer");
  }
  ClBuffer(const ClBuffer&) = delete;
  ClBuffer& operator=(const ClBuffer&) = delete;
  ~ClBuffer() { clReleaseMemObject(mem); }
};

// `count` values of `type` from the start of `mem`, read on `queue`.
inline xr::HostBuffer read_back(cl_command_queue queue, cl_mem mem, xr::DType type, u64 count) {
  xr::HostBuffer b(type, count);
  if (count) cl_check(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, b.bytes(), b.data(), 0, nullptr, nullptr), "clEnqueueReadBuffer");
  return b;
}

// `bytes` bytes from the start of `mem`, read on `queue`.
inline xr::HostBuffer read_back(cl_command_queue queue, cl_mem mem, u64 bytes) {
  xr::HostBuffer b(xr::DType::U8, bytes);
  if (bytes) cl_check(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, bytes, b.data(), 0, nullptr, nullptr), "clEnqueueReadBuffer");
  return b;
}

// xr::opencl::reduce_axis and reduce_segments on buffers of `context` on `queue`. The input lies
// `offset` elements into its buffer, after bytes of all ones (NaN for floats, -1 or the maximum
// for integers), which change any value that reads them.
class OpenclEntry final : public Entry {
 public:
  OpenclEntry(cl_context context, cl_command_queue queue, cl_device_id device, u64 offset = 0)
      : context_(context), queue_(queue), device_(device), offset_(offset) {}
  std::string name() const override { return offset_ ? "opencl device, offset " + std::to_string(offset_) : "opencl device"; }
  bool whole_result() const override { return false; }
  std::vector<xr::KernelInfo> segment_kernels() override { return xr::opencl::segment_kernels(device_); }
  xr::SegmentedResult reduce_axis(const xr::HostBuffer& data, const xr::MatrixShape& shape, int axis, xr::Op op,
                                  const xr::RunOptions& o = {}) override {
    const ClBuffer in = input(data);
    const u64 count = values_of(shape, axis);
    const u64 bytes = count * xr::segment_record_bytes(op, data.type(), o.accumulator);
    const ClBuffer out(context_, bytes);
    const xr::Result record = xr::opencl::reduce_axis(queue_, in.mem, offset_, data.type(), shape, axis, op, out.mem, o);
    return device_result(record, read_back(queue_, out.mem, bytes), op, data.type(), o.accumulator, count);
  }
  xr::SegmentedResult reduce_segments(const xr::HostBuffer& data, std::span<const i64> offsets, xr::Op op,
                                      const xr::RunOptions& o = {}) override {
    const ClBuffer in = input(data);
    const ClBuffer offs(context_, offsets.size() * sizeof(i64), offsets.data());
    const u64 count = offsets.size() - 1;
    const u64 bytes = count * xr::segment_record_bytes(op, data.type(), o.accumulator);
    const ClBuffer out(context_, bytes);
    const xr::Result record =
        xr::opencl::reduce_segments(queue_, in.mem, offset_, data.size(), data.type(), offs.mem, count, op, out.mem, o);
    return device_result(record, read_back(queue_, out.mem, bytes), op, data.type(), o.accumulator, count);
  }

 private:
  ClBuffer input(const xr::HostBuffer& data) const {
    std::vector<unsigned char> bytes(offset_ * xr::size_of(data.type()), 0xff);
    bytes.insert(bytes.end(), static_cast<const unsigned char*>(data.data()),
                 static_cast<const unsigned char*>(data.data()) + data.bytes());
    return ClBuffer(context_, bytes.size(), bytes.empty() ? nullptr : bytes.data());
  }
  cl_context context_;
  cl_command_queue queue_;
  cl_device_id device_;
  u64 offset_;
};

#endif  // XR_TEST_OPENCL_ENTRY

}  // namespace xr_seg
