// The OpenMP backend's device for the chunk pipeline: the host CPU. An input in memory is
// reduced where it lies; a stream is read into kStagingBuffers host buffers, one read on a
// second thread while the other is reduced. Cells are combined in order as they come.
#include "stream.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "exact.hpp"
#include "policy.hpp"
#include "team.hpp"
#include "xreduce/semantics.hpp"

namespace xr::omp::detail {

ChunkPolicy Chunks::policy(DType) const {
  ChunkPolicy p;
  p.host_memory = true;
  p.read_ahead = true;  // reduce() computes on this thread: the next chunk is read beside it
  p.slots = kStagingBuffers;
  p.chunk_bytes = kChunkBytes;
  return p;
}

void Chunks::begin(const ChunkPlan& plan) {
  plan_ = plan;
  rung_ = &rung(plan.options.kernel);
  threads_ = team_size(plan.options, std::min(plan.chunk, plan.n) * size_of(plan.type));
  if (!plan.memory)
    for (auto& b : buffers_) b.resize(plan.chunk * size_of(plan.type));
}

void* Chunks::staging(std::uint64_t k) { return plan_.memory ? nullptr : buffers_[k % kStagingBuffers].data(); }

void Chunks::stage(std::uint64_t k, const void* host, std::uint64_t) { chunk_[k % kStagingBuffers] = host; }

void Chunks::reduce(std::uint64_t k, std::uint64_t len) {
  const HostArray piece{chunk_[k % kStagingBuffers], len, plan_.type};
  const auto t0 = std::chrono::steady_clock::now();
  if (plan_.exact) {
    exact_.merge_raw(exact_state(piece, threads_));
  } else {
    const RungValue v = rung_->fn(piece, plan_.op, plan_.options.accumulator, threads_);
    const auto offset = static_cast<std::int64_t>(k * plan_.chunk);
    const xr::detail::CellValue cell{v.value, v.index < 0 ? -1 : v.index + offset, v.maximum};
    value_ = k == 0 ? cell : xr::detail::combine_cells(plan_.op, plan_.type, plan_.options.accumulator, value_, cell);
    depth_ = std::max(depth_, v.rounding_depth);
  }
  kernel_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ChunkOutcome Chunks::finish() {
  ChunkOutcome out;
  xr::detail::take_cell(out, value_);
  out.exact = exact_.raw();
  out.kernel_ms = kernel_ms_;
  out.launches = static_cast<int>(plan_.chunks);
  out.depth = depth_ + (plan_.chunks - 1);  // the chunk results are combined in order
  const KernelInfo& k = *plan_.kernel;
  if (plan_.exact) {
    out.kernel = k.name + ":exact";
    out.finish = std::string("exact: per-thread superaccumulators (") + exact_front_end() +
                 " front end), merged in thread order" + (plan_.chunks > 1 ? ", then chunk by chunk" : "") +
                 ", rounded once";
  } else {
    out.kernel = k.kind == KernelKind::Auto ? "auto:vector" : k.name;
    out.finish = rung_->finish;
    if (plan_.chunks > 1) out.finish += " + host combine of " + std::to_string(plan_.chunks) + " chunks";
  }
  exact_ = ExactSum();
  kernel_ms_ = 0;
  depth_ = 0;
  return out;
}

std::string Chunks::describe(const ChunkPlan& plan) const {
  if (plan.memory) return "in place";
  return "stream: " + std::to_string(plan.chunks) + " chunks of " + format_bytes(plan.chunk * size_of(plan.type)) +
         ", read on a second thread into " + std::to_string(kStagingBuffers) + " host buffers";
}

}  // namespace xr::omp::detail
