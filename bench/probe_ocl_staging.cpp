// Experiment for the OpenCL host path on NVIDIA (not built by CMake): is the staging
// memory the reason the OpenCL path trails CUDA's (61% of the link against 89% on one host,
// bench/RESULTS.md)? 3 x 64 MiB staging buffers of each kind, 1 GiB moved per figure:
//   cuda        cudaHostAlloc (the CUDA path's staging), for the fill only
//   malloc      page-aligned malloc'd memory, for the fill only (NVIDIA's OpenCL writes
//               pageable memory at 7 GB/s: measured by an earlier version of this file)
//   alloc       CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, mapped once (the library's kind)
//   alloc rw    CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR
//   alloc hwo   CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR | CL_MEM_HOST_WRITE_ONLY
// Per kind: the fill (memcpy from pageable, 16 threads), and for OpenCL kinds the write alone
// (staging -> device buffer, back to back) and the library's pipeline (a second thread fills
// chunk k+1 while the queue writes chunk k). Rounds rotate over the kinds (the host's copy rate
// drifts by tens of percent within a minute); GB/s, medians of 7 rounds.
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench/probe_ocl_staging.cpp -o /tmp/probe_ocl_staging \
//       -L/usr/local/cuda/lib64 -lOpenCL -lcudart_static -ldl -lrt -lpthread && /tmp/probe_ocl_staging
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "probe_ocl.hpp"
#include "probe_util.hpp"


int main() {
  const OclGpu gpu = first_opencl_gpu();
  cl_device_id dev = gpu.device;
  cl_context ctx = gpu.context;
  const char* name = gpu.name.c_str();
  cl_int rc;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
  CK(rc);
  const size_t total = size_t(1) << 30, chunk = size_t(64) << 20, chunks = total / chunk;
  const int threads = 16;
  char* pageable = nullptr;
  if (posix_memalign(reinterpret_cast<void**>(&pageable), 4096, total)) return 1;
  std::memset(pageable, 1, total);
  cl_mem slots[3];
  for (auto& s : slots) {
    s = clCreateBuffer(ctx, CL_MEM_READ_ONLY, chunk, nullptr, &rc);
    CK(rc);
  }
  struct Kind {
    std::string name;
    cl_mem_flags flags;  // 0: not an OpenCL buffer
    char* host[3];
    cl_mem staging[3];
    std::vector<double> fill, write, pipe;
  };
  std::vector<Kind> kinds = {{"cuda", 0, {}, {}, {}, {}, {}},
                             {"malloc", 0, {}, {}, {}, {}, {}},
                             {"alloc", CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, {}, {}, {}, {}, {}},
                             {"alloc rw", CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, {}, {}, {}, {}, {}},
                             {"alloc hwo", CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR | CL_MEM_HOST_WRITE_ONLY, {}, {}, {}, {}, {}}};
  for (auto& k : kinds)
    for (int i = 0; i < 3; ++i) {
      k.staging[i] = nullptr;
      if (k.flags) {
        k.staging[i] = clCreateBuffer(ctx, k.flags, chunk, nullptr, &rc);
        CK(rc);
        k.host[i] = static_cast<char*>(
            clEnqueueMapBuffer(q, k.staging[i], CL_TRUE, CL_MAP_WRITE, 0, chunk, 0, nullptr, nullptr, &rc));
        CK(rc);
      } else if (k.name == "cuda") {
        if (cudaHostAlloc(reinterpret_cast<void**>(&k.host[i]), chunk, cudaHostAllocDefault) != cudaSuccess) return 1;
      } else if (posix_memalign(reinterpret_cast<void**>(&k.host[i]), 4096, chunk)) {
        return 1;
      }
      std::memset(k.host[i], 0, chunk);
    }
  std::printf("%s (OpenCL); 1 GiB in 64 MiB chunks, 3 staging buffers, %d fill threads; GB/s, median of 7 rounds\n",
              name, threads);
  for (int r = 0; r < 8; ++r)
    for (size_t j = 0; j < kinds.size(); ++j) {
      Kind& k = kinds[(j + r) % kinds.size()];
      auto t0 = clk::now();
      for (size_t c = 0; c < chunks; ++c) par_copy(k.host[c % 3], pageable + c * chunk, chunk, threads);
      const double f = since(t0);
      if (r > 0) k.fill.push_back(f);
      if (!k.flags) continue;
      auto write = [&](int b, cl_event* e) {
        CK(clEnqueueWriteBuffer(q, slots[b], CL_FALSE, 0, chunk, k.host[b], 0, nullptr, e));
        clFlush(q);
      };
      t0 = clk::now();
      for (size_t c = 0; c < chunks; ++c) write(int(c % 3), nullptr);
      CK(clFinish(q));
      const double w = since(t0);
      // The library's shape: chunk c+1 filled on a second thread while chunk c is written.
      cl_event written[3] = {nullptr, nullptr, nullptr};
      t0 = clk::now();
      std::thread filler([&] { par_copy(k.host[0], pageable, chunk, threads); });
      for (size_t c = 0; c < chunks; ++c) {
        filler.join();
        const int b = int(c % 3);
        if (written[b]) clReleaseEvent(written[b]);
        write(b, &written[b]);
        if (c + 1 < chunks) {
          const int o = int((c + 1) % 3);
          if (written[o]) CK(clWaitForEvents(1, &written[o]));
          filler = std::thread([&, o, c] { par_copy(k.host[o], pageable + (c + 1) * chunk, chunk, threads); });
        }
      }
      CK(clFinish(q));
      const double p = since(t0);
      for (auto& e : written)
        if (e) clReleaseEvent(e);
      if (r > 0) {
        k.write.push_back(w);
        k.pipe.push_back(p);
      }
    }
  auto gbs = [&](const std::vector<double>& v) { return v.empty() ? 0.0 : total / median(v) / 1e9; };
  for (auto& k : kinds)
    std::printf("%-10s fill %6.1f  write %6.1f  pipeline %6.1f\n", k.name.c_str(), gbs(k.fill), gbs(k.write),
                gbs(k.pipe));
  return 0;
}
