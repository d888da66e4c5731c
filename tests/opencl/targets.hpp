// The devices the OpenCL test executables run on: one default device per platform that has
// one, each with a reducer, a context and two queues of its own (with and without profiling)
// for the cl_mem API; and the main() they share.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "internal.hpp"
#include "xreduce/xreduce.hpp"

namespace xr::ocl_test {

namespace od = xr::opencl::detail;

struct Target {
  int platform = 0;
  od::DeviceCaps caps;
  std::unique_ptr<Reducer> reducer;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;        // profiling
  cl_command_queue plain_queue = nullptr;  // no profiling
  std::string label() const {
    return "platform " + std::to_string(platform) + " (" + caps.platform_name + " / " + caps.name + ")";
  }
};

inline std::vector<Target>& targets() {
  static std::vector<Target> list;
  return list;
}

inline void open_targets() {
  std::set<int> platforms;
  for (const auto& d : od::list_devices()) platforms.insert(d.platform_index);
  for (int p : platforms) {
    BackendOptions o;
    o.platform = p;
    Target t;
    t.platform = p;
    try {
      t.caps = od::select_device(o).caps;
      t.reducer = make_reducer("opencl", o);
    } catch (const BackendUnavailable& e) {
      std::printf("note: platform %d skipped: %s\n", p, e.what());
      continue;
    }
    cl_int rc = CL_SUCCESS;
    t.context = clCreateContext(nullptr, 1, &t.caps.device, nullptr, nullptr, &rc);
    od::check(rc, "clCreateContext");
    t.queue = clCreateCommandQueue(t.context, t.caps.device, CL_QUEUE_PROFILING_ENABLE, &rc);
    od::check(rc, "clCreateCommandQueue");
    t.plain_queue = clCreateCommandQueue(t.context, t.caps.device, 0, &rc);
    od::check(rc, "clCreateCommandQueue");
    targets().push_back(std::move(t));
  }
}

// main() of an OpenCL test executable: exit 77 (skipped) with the reason when no platform has
// a usable device, else the doctest run on every target.
inline int run_on_targets(int argc, char** argv, const char* suite) {
  const BackendStatus s = backend_status("opencl");
  if (!s.usable) {
    std::printf("SKIP %s: %s\n", suite, s.reason.c_str());
    return 77;
  }
  try {
    open_targets();
  } catch (const std::exception& e) {
    std::printf("SKIP %s: %s\n", suite, e.what());
    return 77;
  }
  if (targets().empty()) {
    std::printf("SKIP %s: no platform with a usable device\n", suite);
    return 77;
  }
  for (const auto& t : targets()) std::printf("%s tests on %s\n", suite, t.label().c_str());
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  const int rc = ctx.run();
  for (auto& t : targets()) {
    t.reducer.reset();
    clReleaseCommandQueue(t.queue);
    clReleaseCommandQueue(t.plain_queue);
    clReleaseContext(t.context);
  }
  return rc;
}

}  // namespace xr::ocl_test
