// The vendor's own arg reduction for xr_bench_auto_vs_cub: cub::DeviceReduce::ArgMin and
// ArgMax as CUB users call them (value and int64 index written apart), timed as the backend
// times one reduction. Its operator< never picks a NaN, so the cub row leaves float types out;
// on the bench's NaN-free data it is their baseline.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

// Appends to `ms` the time of each of `rounds` calls on `d_in[0, n)` after three untimed ones;
// `value` and `index` get the last call's result. The first failing CUDA call's error, else
// cudaSuccess.
template <class T>
cudaError_t time_cub_arg(bool max, const T* d_in, std::int64_t n, int rounds, std::vector<double>& ms, T& value,
                         std::int64_t& index) {
  T* d_value = nullptr;
  std::int64_t* d_index = nullptr;
  void* temp = nullptr;
  std::size_t bytes = 0;
  cudaEvent_t a = nullptr, b = nullptr;
  const auto call = [&] {
    return max ? cub::DeviceReduce::ArgMax(temp, bytes, d_in, d_value, d_index, n)
               : cub::DeviceReduce::ArgMin(temp, bytes, d_in, d_value, d_index, n);
  };
  cudaError_t e = cudaMalloc(&d_value, sizeof(T));
  if (e == cudaSuccess) e = cudaMalloc(&d_index, sizeof(std::int64_t));
  if (e == cudaSuccess) e = call();
  if (e == cudaSuccess) e = cudaMalloc(&temp, bytes ? bytes : 1);
  if (e == cudaSuccess) e = cudaEventCreate(&a);
  if (e == cudaSuccess) e = cudaEventCreate(&b);
  for (int i = 0; e == cudaSuccess && i < rounds + 3; ++i) {
    cudaEventRecord(a);
    e = call();
    cudaEventRecord(b);
    float t = 0;
    if (e == cudaSuccess) e = cudaEventSynchronize(b);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&t, a, b);
    if (e == cudaSuccess && i >= 3) ms.push_back(t);
  }
  if (e == cudaSuccess) e = cudaMemcpy(&value, d_value, sizeof(T), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(&index, d_index, sizeof index, cudaMemcpyDeviceToHost);
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  cudaFree(temp);
  cudaFree(d_index);
  cudaFree(d_value);
  return e;
}

template cudaError_t time_cub_arg<float>(bool, const float*, std::int64_t, int, std::vector<double>&, float&,
                                         std::int64_t&);
template cudaError_t time_cub_arg<double>(bool, const double*, std::int64_t, int, std::vector<double>&, double&,
                                          std::int64_t&);
