// One way to check every CUDA runtime call and launch: throw xr::DeviceError with the error
// name and a readable message ("cuda: cudaMalloc of 8.0 GiB failed: cudaErrorMemoryAllocation:
// out of memory"). Never prints, never exits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "xreduce/error.hpp"
#include "xreduce/types.hpp"

namespace xr::cuda::detail {

std::string error_name(cudaError_t e);
using xr::format_bytes;

[[noreturn]] void throw_cuda(cudaError_t e, const std::string& what);

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw_cuda(e, what);
}
inline void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw_cuda(e, what);
}
// After a <<<...>>> launch: configuration errors (and earlier asynchronous faults).
inline void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_cuda(e, std::string("launch of ") + kernel);
}

// The device that owns `p`; DeviceError (cudaErrorInvalidValue) for host or unknown memory.
// `what` names the pointer in the message ("input", "result").
int device_of(const void* p, const char* what);
// InvalidArgument unless `p` is aligned to `align` bytes.
void require_aligned(const void* p, std::size_t align, const char* what);

// Makes `device` current for its lifetime and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace xr::cuda::detail

#define XR_CUDA(call) ::xr::cuda::detail::check((call), #call)
