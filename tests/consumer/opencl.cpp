// An application that uses the installed xreduce's OpenCL API: its own context, queue and buffer
// (OpenCL::OpenCL comes with xreduce::xreduce), reduced in place by xr::opencl::reduce.
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>
#include <xreduce/opencl.hpp>
#include <xreduce/xreduce.hpp>

int main() {
  cl_platform_id platform = nullptr;
  cl_uint platforms = 0;
  cl_device_id device = nullptr;
  cl_uint devices = 0;
  if (clGetPlatformIDs(1, &platform, &platforms) != CL_SUCCESS || platforms == 0 ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &devices) != CL_SUCCESS || devices == 0) {
    std::printf("opencl: no OpenCL device, nothing reduced\n");
    return 0;
  }
  std::vector<std::int32_t> data(1000);
  std::iota(data.begin(), data.end(), 1);
  cl_int rc = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  cl_command_queue queue = rc == CL_SUCCESS ? clCreateCommandQueue(context, device, 0, &rc) : nullptr;
  cl_mem buffer = rc == CL_SUCCESS ? clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                                    data.size() * sizeof(data[0]), data.data(), &rc)
                                   : nullptr;
  int failures = 0;
  if (rc != CL_SUCCESS) {
    std::printf("opencl: setting up the buffer failed: %s\n", xr::opencl::error_name(rc));
    failures = 1;
  } else {
    try {
      const xr::Result r = xr::opencl::reduce<std::int32_t>(queue, buffer, 0, data.size(), xr::Op::Sum);
      std::printf("opencl cl_mem on %s: %s\n", r.device.c_str(), r.value.to_string().c_str());
      failures = r.value.i != 500500;
    } catch (const xr::Error& e) {
      std::printf("opencl: %s\n", e.what());
      failures = 1;
    }
  }
  if (buffer) clReleaseMemObject(buffer);
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
  return failures;
}
