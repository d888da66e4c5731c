// Host launcher of the exact sum kernel of f32, f64, f16 and bf16 (kernels_cu/exact.cuh).
#include "exact.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels_cu/exact.cuh"
#include "check.hpp"
#include "ladder.hpp"
#include "xreduce/error.hpp"

namespace xr::cuda::detail {

namespace ke = xr::kern::exact;

static_assert(ke::kLimbs == ExactSum::kLimbs, "device state layout follows ExactSum");
static_assert(sizeof(ke::RawOut) == ExactSum::kLimbs * 8 + 8);
static_assert(ke::kMaxBlock == kExactMaxBlock);

ExactAccumulator::ExactAccumulator(int device, cudaStream_t stream) : device_(device) {
  check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
  try {
    check(cudaMalloc(&global_, sizeof(ke::Global)), "cudaMalloc of the exact-sum state");
    check(cudaMalloc(&dev_out_, sizeof(ke::RawOut)), "cudaMalloc of the exact-sum result");
    check(cudaMemsetAsync(global_, 0, sizeof(ke::Global), stream), "cudaMemsetAsync of the exact-sum state");
  } catch (...) {
    cudaFree(global_);
    cudaFree(dev_out_);
    throw;
  }
}

void* ExactAccumulator::host_result_buffer() {
  if (host_out_ == nullptr)
    check(cudaMallocHost(&host_out_, sizeof(ke::RawOut)), "cudaMallocHost of the exact-sum result");
  return host_out_;
}

ExactAccumulator::~ExactAccumulator() {
  cudaFree(global_);
  cudaFree(dev_out_);
  cudaFreeHost(host_out_);
}

bool exact_block_ok(unsigned block) { return block >= 32 && block <= kExactMaxBlock && block % 32 == 0; }

namespace {

template <class T> unsigned resolve_block(unsigned block) {
  if (block == 0) return kExactDefaultBlock;
  if (!exact_block_ok(block))
    throw InvalidArgument("cuda: exact sum: block size " + std::to_string(block) +
                          " is not accepted (multiples of 32 from 32 to " + std::to_string(kExactMaxBlock) + ")");
  return block;
}

template <class T> std::uint64_t resolve_grid(std::uint64_t grid, unsigned block, std::uint64_t n, const ExactAccumulator& ws) {
  constexpr std::uint64_t kMaxGrid = std::uint64_t{1} << 30;  // keeps |global limb| <= 2^62
  if (grid != 0) {
    if (grid > kMaxGrid)
      throw InvalidArgument("cuda: exact sum: grid of " + std::to_string(grid) + " blocks is out of range (1.." +
                            std::to_string(kMaxGrid) + ")");
    return grid;
  }
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(&ke::k_exact_sum<T>), block, 0, ws.device());
  const std::uint64_t full = std::uint64_t(ws.sm_count()) * std::uint64_t(per_sm);
  constexpr std::uint64_t per_thread = ke::kPerThread<T>;
  const std::uint64_t needed = (n + std::uint64_t(block) * per_thread - 1) / (std::uint64_t(block) * per_thread);
  return std::clamp<std::uint64_t>(needed, 1, full);
}

template <class T>
ExactLaunch enqueue_typed(const T* dev, std::uint64_t n, cudaStream_t s, ExactAccumulator& ws, unsigned block,
                          std::uint64_t grid, void* dev_value) {
  if (n > 0 && dev == nullptr) throw InvalidArgument("cuda: exact sum: null device pointer with n > 0");
  if (reinterpret_cast<std::uintptr_t>(dev) % sizeof(T) != 0)
    throw InvalidArgument("cuda: exact sum: the device pointer is not aligned to the element size");
  ExactLaunch L;
  L.block = resolve_block<T>(block);
  L.grid = resolve_grid<T>(grid, L.block, n, ws);
  ke::k_exact_sum<T><<<static_cast<unsigned>(L.grid), L.block, 0, s>>>(
      dev, n, static_cast<ke::Global*>(ws.global_state()), static_cast<ke::RawOut*>(ws.device_result()),
      static_cast<compute_t<T>*>(dev_value));
  check_launch("k_exact_sum");
  L.launches = 1;
  if (dev_value == nullptr)
      check(cudaMemcpyAsync(ws.host_result_buffer(), ws.device_result(), sizeof(ke::RawOut),
                          cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync of the exact-sum state");
  return L;
}

}  // namespace

ExactSum::Raw read_exact_state(const ExactAccumulator& ws, std::uint64_t n) {
  const auto* out = static_cast<const ke::RawOut*>(ws.host_result());
  ExactSum::Raw r;
  for (int i = 0; i < ExactSum::kLimbs; ++i) r.limb[static_cast<std::size_t>(i)] = out->limb[i];
  r.flags = out->flags;
  if (n > 0) r.flags |= ExactSum::kFlagAny;
  return r;
}

ExactLaunch enqueue_exact_sum(DType type, const void* dev, std::uint64_t n, cudaStream_t s, ExactAccumulator& ws,
                              unsigned block, std::uint64_t grid, void* dev_value) {
  if (!is_float(type))
    throw InvalidArgument("cuda: exact sum: " + std::string(to_string(type)) + " is not a float type");
  return visit_dtype(type, [&](auto t) -> ExactLaunch {
    using T = decltype(t);
    if constexpr (is_float_v<T>) return enqueue_typed(static_cast<const T*>(dev), n, s, ws, block, grid, dev_value);
    else return {};  // not reached: checked above
  });
}

}  // namespace xr::cuda::detail
