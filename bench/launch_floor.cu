// The launch floor of xr_bench_auto_vs_cub: an empty kernel timed as the backend times one
// reduction (events recorded on the stream around the launch, then a synchronize), so the
// sweep's smallest sizes can be read against what any one-launch call costs on this device.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace {
__global__ void k_empty() {}
}  // namespace

// Median microseconds of `rounds` empty launches of one block on `stream`, each between two
// events; negative if a CUDA call failed.
double empty_kernel_us(int rounds, cudaStream_t stream) {
  cudaEvent_t a = nullptr, b = nullptr;
  if (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess) return -1;
  std::vector<float> ms;
  for (int i = 0; i < rounds + 3; ++i) {
    cudaEventRecord(a, stream);
    k_empty<<<1, 32, 0, stream>>>();
    cudaEventRecord(b, stream);
    float t = 0;
    if (cudaEventSynchronize(b) != cudaSuccess || cudaEventElapsedTime(&t, a, b) != cudaSuccess) return -1;
    if (i >= 3) ms.push_back(t);  // three warm-up launches
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (cudaGetLastError() != cudaSuccess) return -1;
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2] * 1e3;
}
