// The one way the OpenCL backend launches its kernels: a Launch is a kernel with its arguments and
// its global and local sizes (or a fill or copy of a buffer), enqueued after the last command of an
// EventChain; time_passes runs options.warmup + options.repeat passes of a list of them and times
// each. The ladder (ladder.cpp), whole-array exact sums (exact.cpp), the segment strategies
// (segments/) and exact piece states (segments.cpp) all launch through it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "internal.hpp"

namespace xr::opencl::detail {

// One kernel argument: a value of at most 32 bytes, or `size` bytes of local memory.
struct KernelArg {
  std::size_t size = 0;
  std::array<unsigned char, 32> bytes{};
  bool local = false;
};
template <class T> KernelArg value_arg(const T& v) {
  static_assert(sizeof(T) <= sizeof(KernelArg::bytes));
  KernelArg a;
  a.size = sizeof v;
  std::memcpy(a.bytes.data(), &v, sizeof v);
  return a;
}
KernelArg local_arg(std::size_t bytes);

// One command of a pass.
struct Launch {
  enum class Command { Kernel, Fill, Copy };
  Command command = Command::Kernel;
  const char* name = "";  // what the command is, in error messages
  // Kernel: `global` work-items in work-groups of `local`; `limit` the most work-items a
  // work-group of this kernel allows (group_limit), which a plan checks `local` against.
  CachedKernel* kernel = nullptr;
  std::size_t global = 0, local = 1;
  std::size_t limit = 1;
  std::vector<KernelArg> args;
  // Fill: `bytes` of `buffer` with `pattern` (pattern_bytes of it). Copy: `bytes` from `source`
  // at `source_offset` into `buffer` at `offset`.
  cl_mem buffer = nullptr;
  cl_mem source = nullptr;
  std::size_t offset = 0, source_offset = 0, bytes = 0;
  std::array<unsigned char, 16> pattern{};
  std::size_t pattern_bytes = 0;
};

Launch fill_launch(cl_mem buffer, std::size_t bytes, const void* pattern, std::size_t pattern_bytes, const char* name);
Launch copy_launch(cl_mem source, std::size_t source_offset, cl_mem buffer, std::size_t offset, std::size_t bytes,
                   const char* name);

// The kernels among `steps`.
int kernel_launches(std::span<const Launch> steps);

// Enqueues `step` on `queue` after the chain's last command and appends its event.
void enqueue(cl_command_queue queue, const Launch& step, EventChain& chain);

// A read of `bytes` of `from` into host memory at `to` that ends each timed pass.
struct PassRead {
  cl_mem from = nullptr;
  std::size_t bytes = 0;
  void* to = nullptr;
  const char* what = "";
};

struct PassTimes {
  double kernel_ms = 0;  // median over the timed passes
  double read_ms = 0;    // the read's median (0 without one)
};

// options.warmup + options.repeat passes of `steps` on `queue`, each command after the one before.
// Without `read`: each pass is waited for; its time is the device time of every command where the
// queue profiles, else the host clock around the pass. With `read`: each pass ends with the read,
// blocking; kernel_ms is the device time of `steps` (profiling) or the host clock up to a clFinish
// before the read, read_ms the read's.
PassTimes time_passes(cl_command_queue queue, bool profiling, std::span<const Launch> steps, const RunOptions& options,
                      const PassRead* read = nullptr);

// The most work-items of `kernel` in one work-group on `caps`' device, each with `local_per_item`
// bytes of local memory (0: none).
std::size_t group_limit(const CachedKernel& kernel, const DeviceCaps& caps, std::size_t local_per_item);

// Work-groups of one launch at most, so that global sizes stay below 2^31 work-items; the kernels
// loop over whatever the grid does not cover.
std::uint64_t max_groups(std::size_t local);

}  // namespace xr::opencl::detail
