// The OpenMP backend's ChunkDevice (core/src/pipeline.hpp).
#pragma once

#include <array>
#include <vector>

#include "ladder.hpp"
#include "pipeline.hpp"
#include "policy.hpp"
#include "xreduce/exact.hpp"

namespace xr::omp::detail {

using xr::detail::ChunkDevice;
using xr::detail::ChunkOutcome;
using xr::detail::ChunkPlan;
using xr::detail::ChunkPolicy;

// The chunk pipeline's device on the host CPU: resident inputs are reduced where they lie.
class Chunks final : public ChunkDevice {
 public:
  ChunkPolicy policy(DType type) const override;
  void begin(const ChunkPlan& plan) override;
  void* staging(std::uint64_t k) override;
  void stage(std::uint64_t k, const void* host, std::uint64_t len) override;
  double staged() override { return 0; }
  void reduce(std::uint64_t k, std::uint64_t len) override;
  ChunkOutcome finish() override;
  void abandon() noexcept override {}
  std::string describe(const ChunkPlan& plan) const override;

 private:
  ChunkPlan plan_;
  const Rung* rung_ = nullptr;
  int threads_ = 1;
  std::array<std::vector<unsigned char>, kStagingBuffers> buffers_;
  std::array<const void*, kStagingBuffers> chunk_{};  // where chunk k % kStagingBuffers lies
  xr::detail::CellValue value_;  // the cells so far, combined in order
  ExactSum exact_;        // exact mode: the chunks' states so far
  std::uint64_t depth_ = 0;
  double kernel_ms_ = 0;
};

}  // namespace xr::omp::detail
