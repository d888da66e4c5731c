#include "stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "exact.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"

namespace xr::cuda::detail {
namespace {

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

ExactLaunch enqueue_exact(DType type, const void* dev, u64 n, cudaStream_t s, ExactAccumulator& ws,
                                    const RunOptions& opt) {
  const unsigned block = opt.block_size ? opt.block_size : kExactDefaultBlock;
  return type == DType::F32 ? enqueue_exact_sum(static_cast<const float*>(dev), n, s, ws, block, opt.grid_size)
                            : enqueue_exact_sum(static_cast<const double*>(dev), n, s, ws, block, opt.grid_size);
}

}  // namespace

HostStreamer::HostStreamer(DeviceState& ds, Workspace& ws) : ds_(ds), ws_(ws) {
  try {
    check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (copy stream)");
    for (auto& s : slots_)
      for (cudaEvent_t* e : {&s.copy_start, &s.copied, &s.kernel_start, &s.reduced})
        check(cudaEventCreate(e), "cudaEventCreate");
  } catch (...) {
    release();
    throw;
  }
}

HostStreamer::~HostStreamer() { release(); }

void HostStreamer::release() {
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  cudaStreamSynchronize(ws_.stream());
  for (auto& s : slots_)
    for (cudaEvent_t* e : {&s.copy_start, &s.copied, &s.kernel_start, &s.reduced})
      if (*e) cudaEventDestroy(std::exchange(*e, nullptr));
  if (device_) cudaFree(std::exchange(device_, nullptr));
  if (results_) cudaFree(std::exchange(results_, nullptr));
  if (staging_) cudaFreeHost(std::exchange(staging_, nullptr));
  if (copy_stream_) cudaStreamDestroy(std::exchange(copy_stream_, nullptr));
  cudaGetLastError();
}

void HostStreamer::reserve(std::size_t slot_bytes, bool staging, u64 chunks, std::size_t result_bytes, u64 limit) {
  // Between calls nothing is in flight (run() ends synchronised), so buffers may be replaced.
  if (slot_bytes_ < slot_bytes || (limit && kDeviceSlots * slot_bytes_ > limit)) {
    if (device_) check(cudaFree(std::exchange(device_, nullptr)), "cudaFree (chunk slots)");
    slot_bytes_ = 0;
    check(cudaMalloc(&device_, kDeviceSlots * slot_bytes),
          "cudaMalloc of " + std::to_string(kDeviceSlots) + " chunk slots of " + format_bytes(slot_bytes));
    slot_bytes_ = slot_bytes;
  }
  if (staging && staging_bytes_ < slot_bytes) {
    if (staging_) check(cudaFreeHost(std::exchange(staging_, nullptr)), "cudaFreeHost (staging)");
    staging_bytes_ = 0;
    check(cudaHostAlloc(&staging_, kStagingBuffers * slot_bytes, cudaHostAllocDefault),
          "cudaHostAlloc of " + std::to_string(kStagingBuffers) + " staging buffers of " + format_bytes(slot_bytes));
    staging_bytes_ = slot_bytes;
  }
  if (results_bytes_ < result_bytes) {
    if (results_) check(cudaFree(std::exchange(results_, nullptr)), "cudaFree (chunk results)");
    results_bytes_ = 0;
    check(cudaMalloc(&results_, result_bytes), "cudaMalloc of " + std::to_string(chunks) + " chunk results");
    results_bytes_ = result_bytes;
  }
}

void HostStreamer::collect(Slot& slot, double& kernel_ms, double& copy_ms) {
  check(cudaEventSynchronize(slot.reduced), "cudaEventSynchronize (chunk reduced)");
  kernel_ms += elapsed(slot.kernel_start, slot.reduced);
  copy_ms += elapsed(slot.copy_start, slot.copied);
  slot.busy = false;
}

Result HostStreamer::run(ChunkSource& source, Op op, const RunOptions& options) {
  const DType type = source.type();
  const u64 n = source.size();
  const std::size_t elem = size_of(type);
  const u64 chunk = std::min(n, chunk_elements(options, elem, kDeviceSlots));
  const u64 chunks = ceil_div(n, chunk);
  const DType acc = result_dtype(op, type, options.accumulator);
  const std::size_t acc_bytes = size_of(acc);
  const auto* memory = static_cast<const unsigned char*>(source.memory());
  const bool direct = memory && page_locked(memory);  // copy straight from the caller's pinned memory
  // Slots start 256-byte aligned whatever the chunk's length, as cudaMalloc'd inputs do.
  reserve((chunk * elem + 255) / 256 * 256, !direct, chunks, chunks * acc_bytes, options.device_mem_limit);
  auto* slot_memory = static_cast<unsigned char*>(device_);
  auto* staging = static_cast<unsigned char*>(staging_);
  auto* results = static_cast<unsigned char*>(results_);
  const cudaStream_t compute = ws_.stream();

  // The chunk reduction (in, n and out set per chunk) and the in-order reduction of the results.
  const Prepared p = prepare(ds_, ws_, slot_memory, chunk, type, op, options, results);
  Prepared combine;
  if (!p.exact && chunks > 1) {
    RunOptions c;
    c.accumulator = options.accumulator;  // keeps the results' type: i64 stays i64, a native i32 sum i32
    combine = prepare(ds_, ws_, results, chunks, acc, op, c, ws_.result_slot());
  }
  ExactAccumulator* exact_ws = p.exact ? &ws_.exact_accumulator() : nullptr;

  using clock = std::chrono::steady_clock;
  StreamTimes times;
  Result r;
  unsigned char bytes[8] = {};
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = clock::now();
    double kernel_ms = 0, copy_ms = 0;
    int launches = 0;
    u64 depth = 0;
    Outcome last;
    std::string combined;  // how the chunk results were combined, after last.finish
    ExactSum exact_sum;
    try {
      for (u64 k = 0; k < chunks; ++k) {
        const u64 first = k * chunk, len = std::min(chunk, n - first);
        Slot& slot = slots_[k % kDeviceSlots];
        if (slot.busy) collect(slot, kernel_ms, copy_ms);  // its reduction (and so its copy) is done
        const unsigned char* src = nullptr;
        if (direct) {
          src = memory + first * elem;
        } else {
          // The staging buffer's previous chunk must have reached the device.
          if (k >= kStagingBuffers) {
            const Slot& before = slots_[(k - kStagingBuffers) % kDeviceSlots];
            if (before.busy) check(cudaEventSynchronize(before.copied), "cudaEventSynchronize (staging free)");
          }
          unsigned char* stage = staging + (k % kStagingBuffers) * staging_bytes_;
          source.read(first, len, stage);
          src = stage;
        }
        unsigned char* dst = slot_memory + (k % kDeviceSlots) * slot_bytes_;
        record(slot.copy_start, copy_stream_);
        check(cudaMemcpyAsync(dst, src, len * elem, cudaMemcpyHostToDevice, copy_stream_),
              "cudaMemcpyAsync of chunk " + std::to_string(k) + " (" + format_bytes(len * elem) + ")");
        record(slot.copied, copy_stream_);
        check(cudaStreamWaitEvent(compute, slot.copied, 0), "cudaStreamWaitEvent");
        if (p.exact && k > 0) {
          // The state of chunk k-1 is in the workspace's host copy once its reduction is done.
          const Slot& before = slots_[(k - 1) % kDeviceSlots];
          check(cudaEventSynchronize(before.reduced), "cudaEventSynchronize (exact state)");
          exact_sum.merge_raw(read_exact_state(*exact_ws, chunk));
        }
        record(slot.kernel_start, compute);
        if (p.exact) {
          launches += enqueue_exact(type, dst, len, compute, *exact_ws, options).launches;
        } else {
          Launch l = p.launch;
          l.in = dst;
          l.n = len;
          l.out = chunks == 1 ? ws_.result_slot() : results + k * acc_bytes;
          last = p.fn(l);
          launches += last.launches;
          depth = std::max(depth, last.depth);
        }
        record(slot.reduced, compute);
        slot.busy = true;
      }
      for (auto& slot : slots_)
        if (slot.busy) collect(slot, kernel_ms, copy_ms);
      if (p.exact) exact_sum.merge_raw(read_exact_state(*exact_ws, n - (chunks - 1) * chunk));
      if (combine.fn) {
        record(slots_[0].kernel_start, compute);
        const Outcome c = combine.fn(combine.launch);
        record(slots_[0].reduced, compute);
        check(cudaEventSynchronize(slots_[0].reduced), "cudaEventSynchronize (chunk results)");
        kernel_ms += elapsed(slots_[0].kernel_start, slots_[0].reduced);
        launches += c.launches;
        depth += c.depth;
        combined = std::string(" + chunk results reduced on the device in order (") + c.variant + ")";
      }
      if (!p.exact) {
        check(cudaMemcpyAsync(bytes, ws_.result_slot(), acc_bytes, cudaMemcpyDeviceToHost, compute),
              "cudaMemcpyAsync of the result");
        check(cudaStreamSynchronize(compute), "cudaStreamSynchronize");
      }
    } catch (...) {
      // Leave nothing in flight that reads the staging buffers or slots.
      cudaStreamSynchronize(copy_stream_);
      cudaStreamSynchronize(compute);
      for (auto& slot : slots_) slot.busy = false;
      throw;
    }
    if (it < options.warmup) continue;
    times.total_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    times.kernel_ms.push_back(kernel_ms);
    times.transfer_ms.push_back(copy_ms);
    r.launches = launches;
    if (p.exact) {
      r.value = type == DType::F32 ? Scalar::of(exact_sum.to_float()) : Scalar::of(exact_sum.to_double());
      r.kernel = p.entry->info.name + ":exact";
      r.finish = "exact: block superaccumulators, global atomics, " + std::to_string(chunks) +
                 " chunk states merged and rounded once on the host";
      r.rounding_depth = 1;
    } else {
      visit_dtype(acc, [&](auto t) {
        decltype(t) v;
        std::memcpy(&v, bytes, sizeof v);
        r.value = Scalar::of(v);
      });
      r.kernel = last.variant;
      r.finish = last.finish + combined;
      r.rounding_depth = depth;
    }
  }
  r.device = ds_.caps().name;
  times.fill(r, n, type, chunks);
  r.path = "stream: " + std::to_string(chunks) + " chunks of " + format_bytes(chunk * elem) + ", " +
           std::to_string(kDeviceSlots) + " device slots, " +
           (direct ? std::string("copied straight from page-locked memory")
                   : std::to_string(kStagingBuffers) + " pinned staging buffers");
  return r;
}

}  // namespace xr::cuda::detail
