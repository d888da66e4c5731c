// normalize_image on OpenCL: the pixels in a cl_mem of this program's own context, their
// extremes found there by xreduce's cl_mem API, and an OpenCL kernel, built from source here,
// that stretches them.
#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <xreduce/opencl.hpp>

#include "normalize.hpp"

namespace {

// stretch() of normalize.hpp in OpenCL C: the same integer formula, the same bytes.
const char* kStretchSource = R"CL(
__kernel void stretch(__global const float* in, __global uchar* out, uint lo, uint range) {
  const size_t i = get_global_id(0);
  const uint above = (uint)in[i] - lo;
  out[i] = range == 0 ? 0 : (uchar)((above * 255u + range / 2u) / range);
}
)CL";

void check(cl_int code, const char* what) {
  if (code != CL_SUCCESS) throw std::runtime_error(std::string(what) + ": " + xr::opencl::error_name(code));
}

// An OpenCL object released with this handle: Handle<cl_mem, clReleaseMemObject>.
template <class T, cl_int (*release)(T)> struct Releaser {
  void operator()(T object) const { release(object); }
};
template <class T, cl_int (*release)(T)> using Handle = std::unique_ptr<std::remove_pointer_t<T>, Releaser<T, release>>;

// A GPU if any platform has one, else the first device of any type.
cl_device_id choose_device() {
  cl_platform_id platforms[8];
  cl_uint count = 0;
  if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS || count == 0) throw Unavailable("no OpenCL platform");
  for (const cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}})
    for (cl_uint p = 0; p < std::min(count, cl_uint{8}); ++p) {
      cl_device_id device = nullptr;
      cl_uint found = 0;
      if (clGetDeviceIDs(platforms[p], type, 1, &device, &found) == CL_SUCCESS && found > 0) return device;
    }
  throw Unavailable("no OpenCL device");
}

}  // namespace

Stretched stretch_on_opencl(const std::vector<float>& pixels) {
  cl_device_id device = choose_device();
  const std::size_t n = pixels.size();
  cl_int rc = CL_SUCCESS;
  const Handle<cl_context, clReleaseContext> context(clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc));
  check(rc, "clCreateContext");
  const Handle<cl_command_queue, clReleaseCommandQueue> queue(clCreateCommandQueue(context.get(), device, 0, &rc));
  check(rc, "clCreateCommandQueue");
  const Handle<cl_mem, clReleaseMemObject> in(clCreateBuffer(context.get(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                                             n * sizeof(float), const_cast<float*>(pixels.data()), &rc));
  check(rc, "clCreateBuffer");
  const Handle<cl_mem, clReleaseMemObject> out(clCreateBuffer(context.get(), CL_MEM_WRITE_ONLY, n, nullptr, &rc));
  check(rc, "clCreateBuffer");

  Stretched result;
  const xr::Result lo = xr::opencl::reduce<float>(queue.get(), in.get(), 0, n, xr::Op::Min);
  const xr::Result hi = xr::opencl::reduce<float>(queue.get(), in.get(), 0, n, xr::Op::Max);
  result.lo = lo.value.as<float>();
  result.hi = hi.value.as<float>();
  result.device = lo.device;

  const Handle<cl_program, clReleaseProgram> program(
      clCreateProgramWithSource(context.get(), 1, &kStretchSource, nullptr, &rc));
  check(rc, "clCreateProgramWithSource");
  check(clBuildProgram(program.get(), 1, &device, "", nullptr, nullptr), "clBuildProgram");
  const Handle<cl_kernel, clReleaseKernel> kernel(clCreateKernel(program.get(), "stretch", &rc));
  check(rc, "clCreateKernel");
  const cl_mem buffers[2] = {in.get(), out.get()};
  const cl_uint low = static_cast<cl_uint>(result.lo), range = static_cast<cl_uint>(result.hi) - low;
  check(clSetKernelArg(kernel.get(), 0, sizeof(cl_mem), &buffers[0]), "clSetKernelArg");
  check(clSetKernelArg(kernel.get(), 1, sizeof(cl_mem), &buffers[1]), "clSetKernelArg");
  check(clSetKernelArg(kernel.get(), 2, sizeof(cl_uint), &low), "clSetKernelArg");
  check(clSetKernelArg(kernel.get(), 3, sizeof(cl_uint), &range), "clSetKernelArg");
  check(clEnqueueNDRangeKernel(queue.get(), kernel.get(), 1, nullptr, &n, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  result.pixels.resize(n);
  check(clEnqueueReadBuffer(queue.get(), out.get(), CL_TRUE, 0, n, result.pixels.data(), 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
  return result;
}
