// Experiment for the OpenCL host path on NVIDIA (not built by CMake): the library's
// streamer reaches 70-78% of the host's fill rate where a bare fill-and-write pipeline reached
// 86-88% (probe_ocl_staging.cpp). Which of the library's extras costs it? The bare pipeline
// (a second thread fills chunk c+1 into mapped CL_MEM_ALLOC_HOST_PTR staging while the queue
// writes chunk c; 3 staging buffers, 3 device slots, 64 MiB chunks, 1 GiB) with:
//   prof     the queue has CL_QUEUE_PROFILING_ENABLE (the library's reducer queue has)
//   kern     after each write, a kernel that reads the whole slot and a 4-byte copy of its
//            result into a results buffer, on the same in-order queue (the library's shape)
//   T        fill threads (16: the library's; 14: two cores left to the runtime)
// Rounds rotate over the variants; GB/s, medians of 7 rounds after one warm-up, with the fill
// alone measured in the same rounds.
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench/probe_ocl_pipeline.cpp -o /tmp/probe_ocl_pipeline \
//       -L/usr/local/cuda/lib64 -lOpenCL -lpthread && /tmp/probe_ocl_pipeline
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "probe_ocl.hpp"
#include "probe_util.hpp"

namespace {
const char* kSource = R"CL(
kernel void sum(global const float* in, ulong n, global float* out, local float* s) {
  float acc = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) acc += in[i];
  const uint l = get_local_id(0);
  s[l] = acc;
  for (uint w = get_local_size(0) / 2; w > 0; w /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < w) s[l] += s[l + w];
  }
  if (l == 0) out[get_group_id(0)] = s[0];
}
)CL";
}  // namespace

int main() {
  const OclGpu gpu = first_opencl_gpu();
  cl_int rc;
  cl_command_queue plain = clCreateCommandQueue(gpu.context, gpu.device, 0, &rc);
  CK(rc);
  cl_command_queue prof = clCreateCommandQueue(gpu.context, gpu.device, CL_QUEUE_PROFILING_ENABLE, &rc);
  CK(rc);
  cl_program prog = clCreateProgramWithSource(gpu.context, 1, &kSource, nullptr, &rc);
  CK(rc);
  CK(clBuildProgram(prog, 1, &gpu.device, "", nullptr, nullptr));
  cl_kernel sum = clCreateKernel(prog, "sum", &rc);
  CK(rc);
  const size_t total = size_t(1) << 30, chunk = size_t(64) << 20, chunks = total / chunk;
  const size_t groups = 1024, local = 256;
  char* pageable = nullptr;
  if (posix_memalign(reinterpret_cast<void**>(&pageable), 4096, total)) return 1;
  std::memset(pageable, 1, total);
  cl_mem slots[3], staging[3], partials, results;
  char* host[3];
  for (int i = 0; i < 3; ++i) {
    slots[i] = clCreateBuffer(gpu.context, CL_MEM_READ_ONLY, chunk, nullptr, &rc);
    CK(rc);
    staging[i] = clCreateBuffer(gpu.context, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, chunk, nullptr, &rc);
    CK(rc);
    host[i] = static_cast<char*>(
        clEnqueueMapBuffer(plain, staging[i], CL_TRUE, CL_MAP_WRITE, 0, chunk, 0, nullptr, nullptr, &rc));
    CK(rc);
    std::memset(host[i], 0, chunk);
  }
  partials = clCreateBuffer(gpu.context, CL_MEM_READ_WRITE, groups * sizeof(float), nullptr, &rc);
  CK(rc);
  results = clCreateBuffer(gpu.context, CL_MEM_READ_WRITE, chunks * sizeof(float), nullptr, &rc);
  CK(rc);

  struct Variant {
    bool prof, kern;
    int threads;
    std::vector<double> secs;
  };
  std::vector<Variant> vs;
  for (int t : {16, 14})
    for (bool p : {false, true})
      for (bool k : {false, true}) vs.push_back({p, k, t, {}});
  std::vector<double> fill16, fill14;

  auto pipeline = [&](const Variant& v) {
    cl_command_queue q = v.prof ? prof : plain;
    std::vector<cl_event> written(3, nullptr), reduced(3, nullptr);
    std::thread filler([&] { par_copy(host[0], pageable, chunk, v.threads); });
    for (size_t c = 0; c < chunks; ++c) {
      filler.join();
      const int b = int(c % 3);
      if (reduced[b]) CK(clWaitForEvents(1, &reduced[b]));
      for (auto* e : {&written[b], &reduced[b]})
        if (*e) clReleaseEvent(std::exchange(*e, nullptr));
      CK(clEnqueueWriteBuffer(q, slots[b], CL_FALSE, 0, chunk, host[b], 0, nullptr, &written[b]));
      clFlush(q);
      if (c + 1 < chunks) {
        const int o = int((c + 1) % 3);
        if (written[o]) CK(clWaitForEvents(1, &written[o]));
        filler = std::thread([&, o, c] { par_copy(host[o], pageable + (c + 1) * chunk, chunk, v.threads); });
      }
      if (v.kern) {
        const cl_ulong n = chunk / sizeof(float);
        CK(clSetKernelArg(sum, 0, sizeof(cl_mem), &slots[b]));
        CK(clSetKernelArg(sum, 1, sizeof n, &n));
        CK(clSetKernelArg(sum, 2, sizeof(cl_mem), &partials));
        CK(clSetKernelArg(sum, 3, local * sizeof(float), nullptr));
        const size_t global = groups * local;
        CK(clEnqueueNDRangeKernel(q, sum, 1, nullptr, &global, &local, 0, nullptr, nullptr));
        CK(clEnqueueCopyBuffer(q, partials, results, 0, c * sizeof(float), sizeof(float), 0, nullptr, &reduced[b]));
        clFlush(q);
      }
    }
    CK(clFinish(q));
    for (auto& e : written)
      if (e) clReleaseEvent(e);
    for (auto& e : reduced)
      if (e) clReleaseEvent(e);
  };

  for (int r = 0; r < 8; ++r) {
    for (int t : {16, 14}) {
      const auto t0 = clk::now();
      for (size_t c = 0; c < chunks; ++c) par_copy(host[c % 3], pageable + c * chunk, chunk, t);
      if (r > 0) (t == 16 ? fill16 : fill14).push_back(since(t0));
    }
    for (size_t j = 0; j < vs.size(); ++j) {
      Variant& v = vs[(j + r) % vs.size()];
      const auto t0 = clk::now();
      pipeline(v);
      if (r > 0) v.secs.push_back(since(t0));
    }
  }
  auto gbs = [&](const std::vector<double>& s) { return total / median(s) / 1e9; };
  std::printf("%s (OpenCL); 1 GiB in 64 MiB chunks, 3 staging buffers; GB/s, medians of 7 rounds\n", gpu.name.c_str());
  std::printf("fill alone: 16 threads %.1f, 14 threads %.1f\n", gbs(fill16), gbs(fill14));
  for (const auto& v : vs)
    std::printf("pipeline threads %2d  prof %d  kern %d  %6.1f  (%3.0f%% of that fill)\n", v.threads, v.prof, v.kern,
                gbs(v.secs), 100 * gbs(v.secs) / gbs(v.threads == 16 ? fill16 : fill14));
  return 0;
}
