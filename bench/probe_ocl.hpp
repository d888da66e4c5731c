// OpenCL helpers shared by the hand-built OpenCL probes (probe_ocl_*.cpp): an exit-on-error
// check and the first GPU of any platform with its context.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                 \
  do {                                        \
    cl_int e_ = (x);                          \
    if (e_ != CL_SUCCESS) {                   \
      std::printf("%s failed: %d\n", #x, e_); \
      std::exit(1);                           \
    }                                         \
  } while (0)

struct OclGpu {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  std::string name;
};

// The first GPU device of any platform, with a context; exits when there is none.
inline OclGpu first_opencl_gpu() {
  cl_uint np = 0;
  CK(clGetPlatformIDs(0, nullptr, &np));
  std::vector<cl_platform_id> ps(np);
  CK(clGetPlatformIDs(np, ps.data(), nullptr));
  OclGpu g;
  for (auto p : ps)
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, &g.device, nullptr) == CL_SUCCESS) break;
  if (!g.device) {
    std::printf("no OpenCL GPU\n");
    std::exit(1);
  }
  char name[256] = {};
  clGetDeviceInfo(g.device, CL_DEVICE_NAME, sizeof name, name, nullptr);
  g.name = name;
  cl_int rc = CL_SUCCESS;
  g.context = clCreateContext(nullptr, 1, &g.device, nullptr, nullptr, &rc);
  CK(rc);
  return g;
}
