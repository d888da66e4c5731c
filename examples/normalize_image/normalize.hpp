// Contrast stretching: pixel values in [lo, hi] mapped onto the full 8-bit range 0..255. Each
// backend finds lo and hi with xreduce, in the memory its pixels live in, then maps the pixels
// with a kernel of its own API.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef __CUDACC__
#define EXAMPLE_HOST_DEVICE __host__ __device__
#else
#define EXAMPLE_HOST_DEVICE
#endif

// (pixel - lo) * 255 / (hi - lo), rounded to nearest, in integers: the same bytes on every
// backend (a float formula could round differently where a compiler contracts it into an FMA).
// The OpenCL kernel (opencl.cpp) spells the same formula in OpenCL C.
EXAMPLE_HOST_DEVICE inline std::uint8_t stretch(float pixel, std::uint32_t lo, std::uint32_t range) {
  const std::uint32_t above = static_cast<std::uint32_t>(pixel) - lo;
  return static_cast<std::uint8_t>(range == 0 ? 0 : (above * 255u + range / 2u) / range);
}

struct Stretched {
  float lo = 0, hi = 0;  // the extremes xreduce found
  std::string device;    // where it found them
  std::vector<std::uint8_t> pixels;
};

// The backend cannot run here (not in the installed xreduce, or no device): the example skips.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The pixels are floats: the library reduces i32, i64, f32 and f64, and f32 holds every 8- and
// 16-bit pixel value exactly. Each function takes the min with one xreduce call and the max
// with another; xreduce has no minmax operation that would give both in one pass.
Stretched stretch_on_host(const std::vector<float>& pixels);    // host memory, OpenMP
Stretched stretch_on_cuda(const std::vector<float>& pixels);    // a CUDA device pointer
Stretched stretch_on_opencl(const std::vector<float>& pixels);  // an OpenCL cl_mem
