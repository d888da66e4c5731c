// Launches, passes and their timing (launch.hpp), and the work-group sizes every launch chooses from.
#include "launch.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "xreduce/error.hpp"

namespace xr::opencl::detail {

KernelArg local_arg(std::size_t bytes) {
  KernelArg a;
  a.size = bytes;
  a.local = true;
  return a;
}

Launch fill_launch(cl_mem buffer, std::size_t bytes, const void* pattern, std::size_t pattern_bytes, const char* name) {
  Launch l;
  l.command = Launch::Command::Fill;
  l.name = name;
  l.buffer = buffer;
  l.bytes = bytes;
  std::memcpy(l.pattern.data(), pattern, pattern_bytes);
  l.pattern_bytes = pattern_bytes;
  return l;
}

Launch copy_launch(cl_mem source, std::size_t source_offset, cl_mem buffer, std::size_t offset, std::size_t bytes,
                   const char* name) {
  Launch l;
  l.command = Launch::Command::Copy;
  l.name = name;
  l.source = source;
  l.source_offset = source_offset;
  l.buffer = buffer;
  l.offset = offset;
  l.bytes = bytes;
  return l;
}

int kernel_launches(std::span<const Launch> steps) {
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [](const Launch& l) { return l.command == Launch::Command::Kernel; }));
}

void enqueue(cl_command_queue queue, const Launch& step, EventChain& chain) {
  cl_event e = nullptr;
  switch (step.command) {
    case Launch::Command::Fill:
      check(clEnqueueFillBuffer(queue, step.buffer, step.pattern.data(), step.pattern_bytes, 0, step.bytes,
                                chain.wait_count(), chain.wait_list(), &e),
            "clEnqueueFillBuffer", step.name);
      break;
    case Launch::Command::Copy:
      check(clEnqueueCopyBuffer(queue, step.source, step.buffer, step.source_offset, step.offset, step.bytes,
                                chain.wait_count(), chain.wait_list(), &e),
            "clEnqueueCopyBuffer", step.name);
      break;
    case Launch::Command::Kernel: {
      std::lock_guard lock(step.kernel->mutex);
      cl_kernel k = step.kernel->kernel.get();
      for (std::size_t i = 0; i < step.args.size(); ++i) {
        const KernelArg& a = step.args[i];
        check(clSetKernelArg(k, static_cast<cl_uint>(i), a.size, a.local ? nullptr : a.bytes.data()), "clSetKernelArg",
              std::string(step.name) + " argument " + std::to_string(i));
      }
      check(clEnqueueNDRangeKernel(queue, k, 1, nullptr, &step.global, &step.local, chain.wait_count(),
                                   chain.wait_list(), &e),
            "clEnqueueNDRangeKernel",
            std::string(step.name) + ": " + std::to_string(step.global / step.local) + " work-groups of " +
                std::to_string(step.local));
      break;
    }
  }
  chain.events.push_back(e);
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One timed pass that ended with a read: with profiling, the device time of the chain's first
// `kernels` events and of its last (the read); without, the host clock's t0..t1 and t1..t2.
void record_times(const EventChain& chain, std::size_t kernels, bool profiling, Clock::time_point t0,
                  Clock::time_point t1, Clock::time_point t2, std::vector<double>& kernel_ms,
                  std::vector<double>& read_ms) {
  if (profiling) {
    // A blocking read returns once the read is done, but NVIDIA's OpenCL (H100, while another
    // queue was copying) could still answer CL_PROFILING_INFO_NOT_AVAILABLE for the kernels
    // before it: wait on the events themselves first.
    check(clWaitForEvents(static_cast<cl_uint>(chain.events.size()), chain.events.data()), "clWaitForEvents",
          "profiled commands");
    double sum = 0;
    for (std::size_t i = 0; i < kernels; ++i) sum += event_ms(chain.events[i]);
    kernel_ms.push_back(sum);
    read_ms.push_back(event_ms(chain.events.back()));
  } else {
    kernel_ms.push_back(ms_between(t0, t1));
    read_ms.push_back(ms_between(t1, t2));
  }
}

}  // namespace

PassTimes time_passes(cl_command_queue queue, bool profiling, std::span<const Launch> steps, const RunOptions& options,
                      const PassRead* read) {
  std::vector<double> kernel_ms, read_ms;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    EventChain chain;
    const auto t0 = Clock::now();
    for (const Launch& step : steps) enqueue(queue, step, chain);
    if (read) {
      const std::size_t launched = chain.events.size();
      if (!profiling) check(clFinish(queue), "clFinish");
      const auto t1 = Clock::now();
      cl_event e = nullptr;
      check(clEnqueueReadBuffer(queue, read->from, CL_TRUE, 0, read->bytes, read->to, chain.wait_count(),
                                chain.wait_list(), &e),
            "clEnqueueReadBuffer", read->what);
      chain.events.push_back(e);
      const auto t2 = Clock::now();
      if (it >= options.warmup) record_times(chain, launched, profiling, t0, t1, t2, kernel_ms, read_ms);
      continue;
    }
    if (!chain.events.empty())
      check(clWaitForEvents(static_cast<cl_uint>(chain.events.size()), chain.events.data()), "clWaitForEvents",
            "segmented reduction");
    const auto t1 = Clock::now();
    if (it < options.warmup) continue;
    if (profiling) {
      double ms = 0;
      for (cl_event e : chain.events) ms += event_ms(e);
      kernel_ms.push_back(ms);
    } else {
      kernel_ms.push_back(ms_between(t0, t1));
    }
  }
  PassTimes t;
  t.kernel_ms = kernel_ms.empty() ? 0.0 : median(kernel_ms);
  t.read_ms = read_ms.empty() ? 0.0 : median(read_ms);
  return t;
}

std::size_t group_limit(const CachedKernel& kernel, const DeviceCaps& caps, std::size_t local_per_item) {
  std::size_t limit = std::min(kernel.work_group_max, caps.max_work_group);
  if (local_per_item) {
    const std::uint64_t left = caps.local_mem > kernel.local_mem_used ? caps.local_mem - kernel.local_mem_used : 0;
    limit = std::min<std::uint64_t>(limit, left / local_per_item);
  }
  return std::max<std::size_t>(limit, 1);
}

std::uint64_t max_groups(std::size_t local) { return std::max<std::uint64_t>(1, ((1ull << 31) - 1) / local); }

double event_ms(cl_event e) {
  cl_ulong start = 0, end = 0;
  check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
        "clGetEventProfilingInfo", "CL_PROFILING_COMMAND_START");
  check(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
        "clGetEventProfilingInfo", "CL_PROFILING_COMMAND_END");
  return end > start ? static_cast<double>(end - start) * 1e-6 : 0.0;
}

std::size_t floor_pow2(std::size_t x) {
  std::size_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

std::size_t choose_work_group(unsigned requested, std::size_t limit, std::size_t preferred, const DeviceCaps& caps,
                              const char* kernel) {
  if (!requested) return floor_pow2(std::min(preferred, limit));
  if (requested > limit)
    throw InvalidArgument("opencl: work-group size " + std::to_string(requested) + " exceeds " +
                          std::to_string(limit) + ", the most " + kernel + " allows on " + caps.name +
                          " (CL_KERNEL_WORK_GROUP_SIZE, CL_DEVICE_MAX_WORK_GROUP_SIZE, local memory)");
  return requested;
}

}  // namespace xr::opencl::detail
