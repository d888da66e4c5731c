// The CDP2 rungs, nested and nested_per_block: built with separable compilation in their own
// target (CDP2 needs -rdc and cudadevrt). The host launches level 0; every further level is a
// device-side launch.
#include <map>
#include <mutex>

#include "kernels_cu/nested_per_block.cuh"
#include "drivers.cuh"

namespace xr::cuda::detail {
namespace {

// The levels k_nested runs on n values: launches, rounding depth, and the most partials an
// even and an odd level write (the sizes of its ping-pong buffers).
struct NestedLevels {
  int launches = 0;
  u64 depth = 0;
  u64 even_partials = 1, odd_partials = 1;
};

NestedLevels nested_levels(u64 n, unsigned block, const char* rung) {
  const u64 chunk = u64(block) * kern::kNestedPerThread;
  NestedLevels s;
  for (int level = 0;; ++level) {
    const u64 blocks = std::max<u64>(1, ceil_div(n, chunk));
    to_grid(blocks, rung);
    ++s.launches;
    s.depth += pass_depth(n, blocks, block);
    u64& partials = level % 2 == 0 ? s.even_partials : s.odd_partials;
    partials = std::max(partials, blocks);
    if (blocks == 1) return s;
    n = blocks;
  }
}

struct Nested {
  static constexpr const char* name = "nested";
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    const NestedLevels levels = nested_levels(L.n, L.block, name);
    Outcome o;
    o.finish = "tail launch";
    o.variant = name;
    o.launches = levels.launches;
    o.depth = levels.depth;
    const unsigned grid = static_cast<unsigned>(std::max<u64>(1, ceil_div(L.n, u64(L.block) * kern::kNestedPerThread)));
    Acc* a = static_cast<Acc*>(L.ws->scratch(0, levels.even_partials * sizeof(Acc)));
    Acc* b = static_cast<Acc*>(L.ws->scratch(1, levels.odd_partials * sizeof(Acc)));
    kern::k_nested<In, Acc, O><<<grid, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, a, b,
                                                                 static_cast<Acc*>(L.out));
    check_launch(name);
    return o;
  }
};

// nested_per_block's block rule.
constexpr unsigned kPerBlockMinBlock = 32, kPerBlockMaxBlock = 1024, kPerBlockBlockStep = 32;

// Child grids in one block's chain: the top block halves its values once, each child once
// more, down to one value.
u64 chain_launches(unsigned block) { return ceil_log2((block + 1) / 2); }

// The largest top grid at `block` threads: as many blocks as the SMs can hold at once by the
// device's limits on blocks and threads per SM (the kernel's occupancy is at most that). A
// larger grid would only queue more chains.
u64 per_block_grid_cap(const DeviceCaps& caps, int max_blocks_per_sm, unsigned block) {
  const u64 per_sm = std::max<u64>(1, std::min<u64>(u64(max_blocks_per_sm), u64(caps.max_threads_per_sm) / block));
  return u64(caps.sm_count) * per_sm;
}

// Device launches of one call: every block's chain and the finish's levels. A grid counts as
// pending from its launch until it is known to have completed (cudaDeviceSetLimit), and it
// completes only with the grids it launched, so all of them may be pending at once.
u64 pending_launches(u64 grid, unsigned block, const char* rung) {
  return grid * chain_launches(block) + (grid > 1 ? u64(nested_levels(grid, block, rung).launches) : 0);
}

// Once per device: raises cudaLimitDevRuntimePendingLaunchCount to what the largest grid at
// any accepted block size needs (an H100 SXM or H200, 132 SMs of at most 32 blocks and 2048
// threads: 4224 blocks of 64 threads, 5 children each, and 2 finish levels: 21122), unless it
// is already that high. Returns the device's blocks-per-SM limit. Calls running at the same
// time on several streams share the buffer: a child that finds it full is replaced in its
// launching thread (kernels_cu/nested_per_block.cuh).
int prepare_device(const DeviceCaps& caps, const char* rung) {
  static std::mutex mutex;
  static auto* ready = new std::map<int, int>();  // device -> blocks per SM; never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = ready->find(caps.device); it != ready->end()) return it->second;
  DeviceGuard guard(caps.device);
  int max_blocks_per_sm = 0;
  check(cudaDeviceGetAttribute(&max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, caps.device),
        "cudaDeviceGetAttribute(blocks per SM)");
  u64 needed = 0;
  for (unsigned b = kPerBlockMinBlock; b <= kPerBlockMaxBlock; b += kPerBlockBlockStep)
    needed = std::max(needed, pending_launches(per_block_grid_cap(caps, max_blocks_per_sm, b), b, rung));
  std::size_t limit = 0;
  check(cudaDeviceGetLimit(&limit, cudaLimitDevRuntimePendingLaunchCount), "cudaDeviceGetLimit(pending launches)");
  if (limit < needed) {
    check(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, needed),
          "cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, " + std::to_string(needed) + ")");
    check(cudaDeviceGetLimit(&limit, cudaLimitDevRuntimePendingLaunchCount), "cudaDeviceGetLimit(pending launches)");
    if (limit < needed)
      throw DeviceError(std::string("cuda: ") + rung + ": the device runtime holds " + std::to_string(limit) +
                            " pending launches, not the " + std::to_string(needed) + " asked for",
                        static_cast<int>(cudaErrorLaunchPendingCountExceeded), "cudaErrorLaunchPendingCountExceeded");
  }
  (*ready)[caps.device] = max_blocks_per_sm;
  return max_blocks_per_sm;
}

struct NestedPerBlock {
  static constexpr const char* name = "nested_per_block";
  template <class In, class Acc, Op O> static Outcome run(const Launch& L) {
    const u64 cap = per_block_grid_cap(*L.caps, prepare_device(*L.caps, name), L.block);
    const u64 grid = L.grid ? L.grid : std::clamp<u64>(ceil_div(L.n, u64(L.block) * kern::kNestedPerThread), 1, cap);
    if (grid > cap)
      throw InvalidArgument(std::string("cuda: ") + name + ": grid of " + std::to_string(grid) + " blocks exceeds " +
                            std::to_string(cap) + " at " + std::to_string(L.block) +
                            " threads (every block launches its own child grids; the device's pending-launch "
                            "buffer is sized for that many)");
    const unsigned g = to_grid(grid, name);
    Outcome o;
    o.variant = name;
    o.launches = int(1 + grid * chain_launches(L.block));
    o.depth = pass_depth(L.n, grid, L.block);
    u64 work = grid * L.block;
    if (grid > 1) {
      const NestedLevels finish = nested_levels(grid, L.block, name);
      o.launches += finish.launches;
      o.depth += finish.depth;
      work = std::max(work, finish.even_partials + finish.odd_partials);
      o.finish = "per-block child grids, then a tail-launched nested finish";
    } else {
      o.finish = "per-block child grids";
    }
    Acc* w = static_cast<Acc*>(L.ws->scratch(0, work * sizeof(Acc)));
    Acc* partials = static_cast<Acc*>(L.ws->scratch(1, grid * sizeof(Acc)));
    kern::k_nested_per_block<In, Acc, O><<<g, L.block, 0, L.stream>>>(static_cast<const In*>(L.in), L.n, w, partials,
                                                                       static_cast<Acc*>(L.out));
    check_launch(name);
    return o;
  }
};

}  // namespace

std::vector<RungEntry> nested_rungs() {
  std::vector<RungEntry> rungs;
  rungs.push_back(make_entry<Nested, classic_dtypes>(
      "CDP2: each level tail-launches the next from the device (no host loop, no device sync); device launch cost",
      KernelKind::Rung, 256, BlockRule{32, 1024, 32, {}}));
  rungs.push_back(make_entry<NestedPerBlock, classic_dtypes>(
      "CDP2 per block: each block launches its own chain of halving child grids, so no level waits for the "
      "whole grid; grid x log2(block) device launches, each level a round trip through global memory",
      KernelKind::Rung, 256, BlockRule{kPerBlockMinBlock, kPerBlockMaxBlock, kPerBlockBlockStep, {}}));
  return rungs;
}

}  // namespace xr::cuda::detail
