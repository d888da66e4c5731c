// Experiment behind the OpenCL host path on NVIDIA (not built by CMake):
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench/probe_ocl_stream.cpp -o /tmp/probe_ocl \
//       -L/usr/local/cuda/lib64 -lOpenCL -lpthread && /tmp/probe_ocl
// 1 GiB in 64 MiB chunks through 2 mapped CL_MEM_ALLOC_HOST_PTR staging buffers into device
// buffers, on the first GPU device. Measured, GB/s (median of 5), and the host time spent
// inside the enqueue calls (if it is close to the total, the non-blocking write blocks):
//   link      writes from the staging buffers only (no fill)
//   serial    fill chunk k, enqueue its write, next (the library's shape at the time)
//   thread    a second thread fills chunk k+1 while the main thread enqueues chunk k
//   prof      serial, on a queue with CL_QUEUE_PROFILING_ENABLE
//   dep       serial, and after chunk k+1's write is queued, a kernel reading chunk k is queued on
//             a second queue, waiting on chunk k's write event (the library's shape)
//   copybuf   fill, unmap, clEnqueueCopyBuffer staging -> device, map again (non-blocking)
// Then one 64 MiB write and one 64 MiB fill of the other buffer, with no dependency between
// them: alone, and started together (does the write run while the host copies?), and whether
// a flushed write has finished after the host sleeps for 3 ms.

#include <algorithm>
#include <chrono>
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
  cl_command_queue qprof = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
  CK(rc);
  cl_command_queue qk = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
  CK(rc);
  const char* src = "kernel void touch(global const int* a, global int* o) { if (get_global_id(0) == 0) o[0] = a[0]; }";
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &rc);
  CK(rc);
  CK(clBuildProgram(prog, 1, &dev, "", nullptr, nullptr));
  cl_kernel touch = clCreateKernel(prog, "touch", &rc);
  CK(rc);
  cl_mem touched = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, nullptr, &rc);
  CK(rc);
  const size_t total = size_t(1) << 30, chunk = size_t(64) << 20, chunks = total / chunk;
  char* pageable = static_cast<char*>(std::malloc(total));
  std::memset(pageable, 1, total);
  cl_mem staging[2], slots[3];
  char* mapped[2];
  for (int i = 0; i < 2; ++i) {
    staging[i] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, chunk, nullptr, &rc);
    CK(rc);
    mapped[i] = static_cast<char*>(clEnqueueMapBuffer(q, staging[i], CL_TRUE, CL_MAP_WRITE, 0, chunk, 0, nullptr,
                                                      nullptr, &rc));
    CK(rc);
    std::memset(mapped[i], 0, chunk);
  }
  for (auto& s : slots) {
    s = clCreateBuffer(ctx, CL_MEM_READ_ONLY, chunk, nullptr, &rc);
    CK(rc);
  }
  std::printf("%s (OpenCL); 1 GiB in 64 MiB chunks; GB/s and host ms inside enqueue calls, median of 5\n", name);
  const int threads = 8;

  for (const std::string mode : {"link", "serial", "thread", "prof", "dep"}) {
    cl_command_queue wq = mode == "prof" || mode == "dep" ? qprof : q;
    std::vector<cl_event> kernels;
    std::vector<double> t, inside;
    for (int r = 0; r < 6; ++r) {
      cl_event written[2] = {nullptr, nullptr};
      double enq = 0;
      auto t0 = clk::now();
      std::thread filler;
      if (mode == "thread") par_copy(mapped[0], pageable, chunk, threads);
      for (size_t k = 0; k < chunks; ++k) {
        const int b = int(k % 2);
        if (mode == "serial" || mode == "prof" || mode == "dep") {
          if (written[b]) CK(clWaitForEvents(1, &written[b]));
          par_copy(mapped[b], pageable + k * chunk, chunk, threads);
        }
        if (mode == "thread" && filler.joinable()) filler.join();  // chunk k is in mapped[b]
        if (written[b]) clReleaseEvent(written[b]);
        auto e0 = clk::now();
        CK(clEnqueueWriteBuffer(wq, slots[k % 3], CL_FALSE, 0, chunk, mapped[b], 0, nullptr, &written[b]));
        clFlush(wq);
        enq += since(e0);
        if (mode == "dep" && k > 0) {
          const size_t one = 1;
          cl_event ke;
          CK(clSetKernelArg(touch, 0, sizeof(cl_mem), &slots[(k - 1) % 3]));
          CK(clSetKernelArg(touch, 1, sizeof(cl_mem), &touched));
          CK(clEnqueueNDRangeKernel(qk, touch, 1, nullptr, &one, &one, 1, &written[1 - b], &ke));
          clFlush(qk);
          kernels.push_back(ke);
        }
        if (mode == "thread" && k + 1 < chunks) {
          const int o = 1 - b;
          if (written[o]) CK(clWaitForEvents(1, &written[o]));
          filler = std::thread([&, o, k] { par_copy(mapped[o], pageable + (k + 1) * chunk, chunk, threads); });
        }
      }
      if (filler.joinable()) filler.join();
      CK(clFinish(wq));
      CK(clFinish(qk));
      for (auto e : kernels) clReleaseEvent(e);
      kernels.clear();
      for (auto& e : written)
        if (e) clReleaseEvent(e);
      if (r > 0) {
        t.push_back(since(t0));
        inside.push_back(enq);
      }
    }
    std::printf("%-8s: %6.1f GB/s, %7.1f ms of %7.1f ms inside clEnqueueWriteBuffer\n", mode.c_str(),
                total / median(t) / 1e9, median(inside) * 1e3, median(t) * 1e3);
  }
  {
    // copybuf: the staging buffer is unmapped while the device copies from it.
    std::vector<double> t;
    cl_event remapped[2] = {nullptr, nullptr};
    for (int r = 0; r < 6; ++r) {
      auto t0 = clk::now();
      for (size_t k = 0; k < chunks; ++k) {
        const int b = int(k % 2);
        if (remapped[b]) {
          CK(clWaitForEvents(1, &remapped[b]));
          clReleaseEvent(remapped[b]);
          remapped[b] = nullptr;
        }
        par_copy(mapped[b], pageable + k * chunk, chunk, threads);
        CK(clEnqueueUnmapMemObject(q, staging[b], mapped[b], 0, nullptr, nullptr));
        CK(clEnqueueCopyBuffer(q, staging[b], slots[k % 3], 0, 0, chunk, 0, nullptr, nullptr));
        mapped[b] = static_cast<char*>(
            clEnqueueMapBuffer(q, staging[b], CL_FALSE, CL_MAP_WRITE, 0, chunk, 0, nullptr, &remapped[b], &rc));
        CK(rc);
        clFlush(q);
      }
      CK(clFinish(q));
      if (r > 0) t.push_back(since(t0));
    }
    std::printf("copybuf : %6.1f GB/s\n", total / median(t) / 1e9);
  }
  {
    const auto write = [&](cl_event* e) {
      CK(clEnqueueWriteBuffer(q, slots[0], CL_FALSE, 0, chunk, mapped[0], 0, nullptr, e));
      clFlush(q);
    };
    std::vector<double> w, f, both, both_wait;
    int done_after_sleep = 0;
    for (int r = 0; r < 8; ++r) {
      auto t0 = clk::now();
      write(nullptr);
      CK(clFinish(q));
      w.push_back(since(t0));
      t0 = clk::now();
      par_copy(mapped[1], pageable + chunk, chunk, threads);
      f.push_back(since(t0));
      t0 = clk::now();
      write(nullptr);
      par_copy(mapped[1], pageable + chunk, chunk, threads);
      CK(clFinish(q));
      both.push_back(since(t0));
      cl_event e;
      t0 = clk::now();
      write(&e);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      cl_int status = 0;
      clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      done_after_sleep += status == CL_COMPLETE;
      CK(clWaitForEvents(1, &e));
      clReleaseEvent(e);
      both_wait.push_back(since(t0));
    }
    std::printf("one 64 MiB write %.2f ms, one 64 MiB fill %.2f ms, both started together %.2f ms; "
                "write flushed then 3 ms sleep: complete after the sleep %d of 8 times (%.2f ms in all)\n",
                median(w) * 1e3, median(f) * 1e3, median(both) * 1e3, done_after_sleep, median(both_wait) * 1e3);
  }
  return 0;
}
