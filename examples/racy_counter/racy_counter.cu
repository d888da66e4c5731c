// The racy counter: 2^20 CUDA threads each add one to a counter in global memory. A plain
// read-modify-write (`*count = *count + 1`) loses most of the updates, because thousands of
// threads read the same old value before any of them writes; atomicAdd serialises the updates
// and loses none, but makes them wait on one another; a reduction gives every thread its own
// slot (a one) and sums the slots in a tree: here with xreduce on the device pointer. The
// exercise is from Bederián and Wolovick, "Curso de CUDA, parte 3" (docs/references.md).
//
//   racy_counter        exit 0 when atomicAdd and xreduce both count 2^20, 77 without a GPU
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <xreduce/cuda.hpp>
#include <xreduce/xreduce.hpp>

namespace {

constexpr unsigned kBlocks = 1024, kThreads = 1024;
constexpr std::uint64_t kUpdates = std::uint64_t{kBlocks} * kThreads;

__global__ void add_one_racy(unsigned* count) { *count = *count + 1; }  // the lost update

__global__ void add_one_atomic(unsigned* count) { atomicAdd(count, 1u); }

__global__ void write_one(std::int32_t* ones) { ones[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e));
}

// Runs `kernel` on a counter that starts at zero, with kBlocks x kThreads threads.
unsigned count_with(void (*kernel)(unsigned*), unsigned* counter) {
  check(cudaMemset(counter, 0, sizeof(unsigned)), "cudaMemset");
  kernel<<<kBlocks, kThreads>>>(counter);
  check(cudaGetLastError(), "launch");
  unsigned value = 0;
  check(cudaMemcpy(&value, counter, sizeof(value), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return value;
}

}  // namespace

int main() {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::printf("racy_counter: skipped, no CUDA device (%s)\n", cudaGetErrorName(e));
    return 77;
  }
  unsigned* counter = nullptr;
  std::int32_t* ones = nullptr;
  int status = 0;
  try {
    check(cudaMalloc(&counter, sizeof(unsigned)), "cudaMalloc");
    check(cudaMalloc(&ones, kUpdates * sizeof(std::int32_t)), "cudaMalloc");
    const unsigned racy = count_with(add_one_racy, counter);
    const unsigned atomic = count_with(add_one_atomic, counter);
    write_one<<<kBlocks, kThreads>>>(ones);
    check(cudaGetLastError(), "launch");
    // An i32 sum accumulates in i64 (xr::Accumulator::Wide): the result is an int64.
    const xr::Result sum = xr::cuda::reduce(ones, kUpdates, xr::Op::Sum);
    std::printf("%llu threads add one to a counter on %s:\n", static_cast<unsigned long long>(kUpdates),
                sum.device.c_str());
    std::printf("  *count = *count + 1   %8u  (%llu updates lost)\n", racy,
                static_cast<unsigned long long>(kUpdates - racy));
    std::printf("  atomicAdd             %8u\n", atomic);
    std::printf("  xreduce sum of ones   %8lld  (%s, %d launches, %.3f ms)\n", static_cast<long long>(sum.value.i),
                sum.kernel.c_str(), sum.launches, sum.kernel_ms);
    status = atomic == kUpdates && static_cast<std::uint64_t>(sum.value.i) == kUpdates ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "racy_counter: %s\n", e.what());
    status = 2;
  }
  cudaFree(ones);
  cudaFree(counter);
  return status;
}
