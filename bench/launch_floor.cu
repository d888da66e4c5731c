// The launch floor of xr_bench_auto_vs_cub: an empty kernel timed as the backend times one
// reduction (events recorded on the stream around the launch, then a synchronize), so the
// sweep's smallest sizes can be read against what any one-launch call costs on this device.
#include <cuda_runtime.h>

#include <vector>

namespace {
__global__ void k_empty() {}
}  // namespace

// Appends to `ms` the time of each of `rounds` empty launches of one block on `stream`, each
// between two events, after three untimed ones. The first failing CUDA call's error, else
// cudaSuccess.
cudaError_t time_empty_kernel(int rounds, cudaStream_t stream, std::vector<double>& ms) {
  cudaEvent_t a = nullptr, b = nullptr;
  cudaError_t e = cudaEventCreate(&a);
  if (e == cudaSuccess) e = cudaEventCreate(&b);
  for (int i = 0; e == cudaSuccess && i < rounds + 3; ++i) {
    cudaEventRecord(a, stream);
    k_empty<<<1, 32, 0, stream>>>();
    cudaEventRecord(b, stream);
    float t = 0;
    e = cudaEventSynchronize(b);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&t, a, b);
    if (e == cudaSuccess && i >= 3) ms.push_back(t);
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  return e;
}
