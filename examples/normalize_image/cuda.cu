// normalize_image on CUDA: the pixels in device memory, their extremes found there by
// xreduce's device-pointer API, and a CUDA kernel that stretches them.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <xreduce/cuda.hpp>

#include "normalize.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e));
}

// Device memory for n values of T, freed with this object.
template <class T> class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) { check(cudaMalloc(&data_, n * sizeof(T)), "cudaMalloc"); }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

__global__ void stretch_kernel(const float* in, std::uint8_t* out, std::uint64_t n, std::uint32_t lo,
                               std::uint32_t range) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    out[i] = stretch(in[i], lo, range);
}

}  // namespace

Stretched stretch_on_cuda(const std::vector<float>& pixels) {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0)
    throw Unavailable(std::string("no CUDA device (") + cudaGetErrorName(e) + ")");
  const std::size_t n = pixels.size();
  DeviceArray<float> in(n);
  DeviceArray<std::uint8_t> out(n);
  check(cudaMemcpy(in.get(), pixels.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");

  Stretched result;
  const xr::Result lo = xr::cuda::reduce(in.get(), n, xr::Op::Min);  // on the default stream
  const xr::Result hi = xr::cuda::reduce(in.get(), n, xr::Op::Max);
  result.lo = lo.value.as<float>();
  result.hi = hi.value.as<float>();
  result.device = lo.device;

  const auto low = static_cast<std::uint32_t>(result.lo);
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4096));
  stretch_kernel<<<blocks, 256>>>(in.get(), out.get(), n, low, static_cast<std::uint32_t>(result.hi) - low);
  check(cudaGetLastError(), "stretch_kernel launch");
  result.pixels.resize(n);
  check(cudaMemcpy(result.pixels.data(), out.get(), n, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return result;
}
