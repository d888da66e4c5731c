#include "stream.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "exact.hpp"
#include "policy.hpp"
#include "xreduce/error.hpp"

namespace xr::cuda::detail {
namespace {

using xr::detail::ChunkOutcome;
using xr::detail::ChunkPlan;
using xr::detail::ChunkPolicy;

bool page_locked(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

double elapsed(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return ms;
}

void record(cudaEvent_t e, cudaStream_t s) { check(cudaEventRecord(e, s), "cudaEventRecord"); }

ExactLaunch enqueue_exact(DType type, const void* dev, u64 n, cudaStream_t s, ExactAccumulator& acc,
                          const RunOptions& opt) {
  const unsigned block = opt.block_size ? opt.block_size : kExactDefaultBlock;
  return enqueue_exact_sum(type, dev, n, s, acc, block, opt.grid_size);
}

}  // namespace

Chunks::Chunks(DeviceState& ds, Workspace& ws) : ds_(ds), ws_(ws) {
  try {
    check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (copy stream)");
  } catch (...) {
    release();
    throw;
  }
}

Chunks::~Chunks() { release(); }

void Chunks::release() noexcept {
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  cudaStreamSynchronize(ws_.stream());
  for (auto& s : slots_)
    for (cudaEvent_t* e : {&s.copy_start, &s.copied, &s.kernel_start, &s.reduced})
      if (*e) cudaEventDestroy(std::exchange(*e, nullptr));
  slots_.clear();
  if (device_) cudaFree(std::exchange(device_, nullptr));
  if (results_) cudaFree(std::exchange(results_, nullptr));
  if (staging_) cudaFreeHost(std::exchange(staging_, nullptr));
  if (copy_stream_) cudaStreamDestroy(std::exchange(copy_stream_, nullptr));
  cudaGetLastError();
}

ChunkPolicy Chunks::policy(DType) const {
  ChunkPolicy p;
  p.slots = policy::kDeviceSlots;
  p.chunk_bytes = policy::kChunkBytes;
  return p;
}

void Chunks::reserve(unsigned slots, std::size_t slot_bytes, bool staging, std::size_t result_bytes,
                         std::uint64_t limit) {
  // Between calls nothing is in flight (finish() and abandon() end synchronised), so buffers may
  // be replaced.
  while (slots_.size() < slots) {
    slots_.emplace_back();
    Slot& s = slots_.back();
    for (cudaEvent_t* e : {&s.copy_start, &s.copied, &s.kernel_start, &s.reduced})
      check(cudaEventCreate(e), "cudaEventCreate");
  }
  active_slots_ = slots;
  if (slot_capacity_ < slots || slot_bytes_ < slot_bytes || (limit && slot_capacity_ * slot_bytes_ > limit)) {
    if (device_) check(cudaFree(std::exchange(device_, nullptr)), "cudaFree (chunk slots)");
    slot_capacity_ = 0;
    slot_bytes_ = 0;
    check(cudaMalloc(&device_, slots * slot_bytes),
          "cudaMalloc of " + std::to_string(slots) + " chunk slots of " + format_bytes(slot_bytes));
    slot_capacity_ = slots;
    slot_bytes_ = slot_bytes;
  }
  if (staging && staging_bytes_ < slot_bytes) {
    if (staging_) check(cudaFreeHost(std::exchange(staging_, nullptr)), "cudaFreeHost (staging)");
    staging_bytes_ = 0;
    check(cudaHostAlloc(&staging_, policy::kStagingBuffers * slot_bytes, cudaHostAllocDefault),
          "cudaHostAlloc of " + std::to_string(policy::kStagingBuffers) + " staging buffers of " +
              format_bytes(slot_bytes));
    staging_bytes_ = slot_bytes;
  }
  if (results_bytes_ < result_bytes) {
    if (results_) check(cudaFree(std::exchange(results_, nullptr)), "cudaFree (chunk results)");
    results_bytes_ = 0;
    check(cudaMalloc(&results_, result_bytes), "cudaMalloc of " + format_bytes(result_bytes) + " of chunk results");
    results_bytes_ = result_bytes;
  }
}

unsigned char* Chunks::slot_memory(std::uint64_t k) const {
  return static_cast<unsigned char*>(device_) + (k % active_slots_) * slot_bytes_;
}

void Chunks::begin(const ChunkPlan& plan) {
  DeviceGuard guard(ds_.caps().device);
  plan_ = plan;
  const std::size_t elem = size_of(plan.type);
  const DType acc = result_dtype(plan.op, plan.type, plan.options.accumulator);
  direct_ = plan.resident || (plan.memory && page_locked(plan.memory));
  const unsigned slots = plan.resident ? static_cast<unsigned>(plan.chunks) : policy::kDeviceSlots;
  // Slots start 256-byte aligned whatever the chunk's length, as cudaMalloc'd inputs do.
  cell_bytes_ = xr::detail::cell_bytes(plan.op, plan.type, plan.options.accumulator);
  reserve(slots, (plan.chunk * elem + 255) / 256 * 256, !direct_, plan.chunks * cell_bytes_,
          plan.resident ? 0 : plan.options.device_mem_limit);
  for (auto& s : slots_) {
    s.reducing = false;
    s.copy_timed = true;
  }
  // The chunk reduction (in, n and out set per chunk) and the in-order reduction of the cells.
  // The cells are partial results: a mapped op's combine by its fold alone (fold_of), not by
  // mapping them again.
  chunk_ = prepare(ds_, ws_, device_, plan.chunk, plan.type, plan.op, plan.options, results_);
  combine_ = Prepared{};
  if (!chunk_.exact && plan.chunks > 1 && !is_pair(plan.op)) {
    RunOptions c;
    c.accumulator = plan.options.accumulator;  // keeps the cells' type: i64 stays i64, a native i32 sum i32
    combine_ = prepare(ds_, ws_, results_, plan.chunks, acc, fold_of(plan.op), c, ws_.result_slot());
  }
  kernel_ms_ = copy_ms_ = 0;
  launches_ = 0;
  depth_ = 0;
  exact_ = ExactSum();
}

void Chunks::collect(Slot& s) {
  if (!s.reducing) return;
  check(cudaEventSynchronize(s.reduced), "cudaEventSynchronize (chunk reduced)");
  kernel_ms_ += elapsed(s.kernel_start, s.reduced);
  if (!s.copy_timed) copy_ms_ += elapsed(s.copy_start, s.copied);
  s.reducing = false;
  s.copy_timed = true;
}

void* Chunks::staging(std::uint64_t k) {
  if (direct_) return nullptr;
  // The staging buffer's previous chunk must have reached the device.
  if (k >= policy::kStagingBuffers) {
    const Slot& before = slot(k - policy::kStagingBuffers);
    if (!before.copy_timed || before.reducing)
      check(cudaEventSynchronize(before.copied), "cudaEventSynchronize (staging free)");
  }
  return static_cast<unsigned char*>(staging_) + (k % policy::kStagingBuffers) * staging_bytes_;
}

void Chunks::stage(std::uint64_t k, const void* host, std::uint64_t len) {
  DeviceGuard guard(ds_.caps().device);
  Slot& s = slot(k);
  collect(s);  // its reduction (and so its copy) is done
  record(s.copy_start, copy_stream_);
  check(cudaMemcpyAsync(slot_memory(k), host, len * size_of(plan_.type), cudaMemcpyHostToDevice, copy_stream_),
        "cudaMemcpyAsync of chunk " + std::to_string(k) + " (" + format_bytes(len * size_of(plan_.type)) + ")");
  record(s.copied, copy_stream_);
  s.copy_timed = false;
}

double Chunks::staged() {
  DeviceGuard guard(ds_.caps().device);
  double ms = 0;
  for (auto& s : slots_) {
    if (s.copy_timed) continue;
    check(cudaEventSynchronize(s.copied), "cudaEventSynchronize (input copied)");
    ms += elapsed(s.copy_start, s.copied);
    s.copy_timed = true;
  }
  return ms;
}

void Chunks::reduce(std::uint64_t k, std::uint64_t len) {
  DeviceGuard guard(ds_.caps().device);
  Slot& s = slot(k);
  const cudaStream_t compute = ws_.stream();
  check(cudaStreamWaitEvent(compute, s.copied, 0), "cudaStreamWaitEvent");
  if (chunk_.exact && k > 0) {
    // The state of chunk k-1 is in the accumulator's host copy once its reduction is done.
    Slot& before = slot(k - 1);
    collect(before);
    exact_.merge_raw(read_exact_state(ws_.exact_accumulator(), plan_.chunk));
  }
  record(s.kernel_start, compute);
  if (chunk_.exact) {
    launches_ += enqueue_exact(plan_.type, slot_memory(k), len, compute, ws_.exact_accumulator(), plan_.options).launches;
  } else {
    Launch l = chunk_.launch;
    l.in = slot_memory(k);
    l.n = len;
    l.first = static_cast<std::int64_t>(k * plan_.chunk);
    l.out = plan_.chunks == 1 ? ws_.result_slot() : static_cast<unsigned char*>(results_) + k * cell_bytes_;
    last_ = chunk_.fn(l);
    launches_ += last_.launches;
    depth_ = std::max(depth_, last_.depth);
  }
  record(s.reduced, compute);
  s.reducing = true;
}

ChunkOutcome Chunks::finish() {
  DeviceGuard guard(ds_.caps().device);
  const cudaStream_t compute = ws_.stream();
  for (auto& s : slots_) collect(s);
  ChunkOutcome out;
  const std::string& name = chunk_.entry->info.name;
  if (chunk_.exact) {
    exact_.merge_raw(read_exact_state(ws_.exact_accumulator(), plan_.n - (plan_.chunks - 1) * plan_.chunk));
    out.exact = exact_.raw();
    out.kernel = name + ":exact";
    out.finish = "exact: block superaccumulators, global atomics" +
                 (plan_.chunks > 1 ? ", " + std::to_string(plan_.chunks) + " chunk states merged" : std::string()) +
                 ", rounded once on the host";
  } else {
    out.kernel = *last_.variant ? last_.variant : name;
    out.finish = last_.finish;
    if (combine_.fn) {
      record(ws_.start_event(), compute);
      const Outcome c = combine_.fn(combine_.launch);
      record(ws_.stop_event(), compute);
      check(cudaEventSynchronize(ws_.stop_event()), "cudaEventSynchronize (chunk results)");
      kernel_ms_ += elapsed(ws_.start_event(), ws_.stop_event());
      launches_ += c.launches;
      depth_ += c.depth;
      out.finish += std::string(" + chunk results reduced on the device in order (") + c.variant + ")";
    }
    // A pair op's chunk cells come back whole and combine on the host in order (16 bytes a chunk).
    const bool cells = is_pair(plan_.op) && plan_.chunks > 1;
    std::vector<unsigned char> bytes(cells ? plan_.chunks * cell_bytes_ : cell_bytes_);
    record(ws_.start_event(), compute);
    check(cudaMemcpyAsync(bytes.data(), cells ? results_ : ws_.result_slot(), bytes.size(), cudaMemcpyDeviceToHost,
                          compute),
          "cudaMemcpyAsync of the result");
    record(ws_.stop_event(), compute);
    check(cudaEventSynchronize(ws_.stop_event()), "cudaEventSynchronize (result)");
    copy_ms_ += elapsed(ws_.start_event(), ws_.stop_event());
    const auto cell = [&](std::uint64_t k) {
      return xr::detail::read_cell(plan_.op, plan_.type, plan_.options.accumulator, bytes.data() + k * cell_bytes_);
    };
    xr::detail::CellValue value = cell(0);
    for (std::uint64_t k = 1; cells && k < plan_.chunks; ++k)
      value = xr::detail::combine_cells(plan_.op, plan_.type, plan_.options.accumulator, value, cell(k));
    if (cells) out.finish += " + chunk records combined on the host in order";
    xr::detail::take_cell(out, value);
  }
  out.kernel_ms = kernel_ms_;
  out.transfer_ms = copy_ms_;
  out.launches = launches_;
  out.depth = depth_;
  kernel_ms_ = copy_ms_ = 0;
  launches_ = 0;
  depth_ = 0;
  exact_ = ExactSum();
  return out;
}

void Chunks::abandon() noexcept {
  // Leave nothing in flight that reads the staging buffers or slots.
  cudaStreamSynchronize(copy_stream_);
  cudaStreamSynchronize(ws_.stream());
  cudaGetLastError();
  for (auto& s : slots_) {
    s.reducing = false;
    s.copy_timed = true;
  }
}

std::string Chunks::describe(const ChunkPlan& plan) const {
  if (plan.resident) return plan.chunks > 1 ? "resident: " + std::to_string(plan.chunks) + " chunks" : "resident";
  return "stream: " + std::to_string(plan.chunks) + " chunks of " + format_bytes(plan.chunk * size_of(plan.type)) +
         ", " + std::to_string(policy::kDeviceSlots) + " device slots, " +
         (direct_ ? std::string("copied straight from page-locked memory")
                  : std::to_string(policy::kStagingBuffers) + " pinned staging buffers");
}

}  // namespace xr::cuda::detail
