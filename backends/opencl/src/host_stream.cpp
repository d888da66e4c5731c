// The OpenCL host path (HostPath::Stream): see HostStreamer in ocl_internal.hpp.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ocl_internal.hpp"
#include "xreduce/error.hpp"
#include "xreduce/source.hpp"

namespace xr::ocl::detail {
namespace {

cl_mem create_buffer(cl_context context, cl_mem_flags flags, std::size_t bytes, const std::string& what) {
  cl_int rc = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context, flags, bytes, nullptr, &rc);
  check(rc, "clCreateBuffer", format_bytes(bytes) + " " + what);
  return m;
}

void wait_for(cl_event e, const char* what) {
  if (e) check(clWaitForEvents(1, &e), "clWaitForEvents", what);
}

}  // namespace

HostStreamer::HostStreamer(const DeviceCaps& caps, cl_context context, cl_command_queue queue)
    : caps_(caps), context_(context), queue_(queue) {}

HostStreamer::~HostStreamer() {
  drain();
  release_buffers();
  if (results_) clReleaseMemObject(results_);
}

void HostStreamer::drain() noexcept {
  clFinish(queue_);
  double ignore_kernel = 0, ignore_copy = 0;
  for (auto& s : slots_) {
    try {
      collect(s, ignore_kernel, ignore_copy);
    } catch (...) {
    }
  }
}

void HostStreamer::release_buffers() {
  for (unsigned i = 0; i < kStagingBuffers; ++i) {
    if (staged_[i]) {
      cl_event e = nullptr;
      if (clEnqueueUnmapMemObject(queue_, staging_[i], staged_[i], 0, nullptr, &e) == CL_SUCCESS) {
        clWaitForEvents(1, &e);
        clReleaseEvent(e);
      }
      staged_[i] = nullptr;
    }
    if (staging_[i]) clReleaseMemObject(std::exchange(staging_[i], nullptr));
  }
  for (auto& d : device_)
    if (d) clReleaseMemObject(std::exchange(d, nullptr));
  slot_bytes_ = 0;
}

void HostStreamer::reserve(std::size_t slot_bytes, std::size_t result_bytes, std::uint64_t limit) {
  // Between calls nothing is in flight (run() ends with every slot collected).
  if (slot_bytes_ < slot_bytes || (limit && kDeviceSlots * slot_bytes_ > limit)) {
    release_buffers();
    for (auto& d : device_) d = create_buffer(context_, CL_MEM_READ_ONLY, slot_bytes, "chunk slot");
    for (unsigned i = 0; i < kStagingBuffers; ++i) {
      staging_[i] = create_buffer(context_, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, slot_bytes, "staging buffer");
      cl_int rc = CL_SUCCESS;
      staged_[i] = clEnqueueMapBuffer(queue_, staging_[i], CL_TRUE, CL_MAP_WRITE, 0, slot_bytes, 0, nullptr, nullptr, &rc);
      check(rc, "clEnqueueMapBuffer", "staging buffer");
    }
    slot_bytes_ = slot_bytes;
  }
  if (results_bytes_ < result_bytes) {
    if (results_) clReleaseMemObject(std::exchange(results_, nullptr));
    results_bytes_ = 0;
    results_ = create_buffer(context_, CL_MEM_READ_WRITE, result_bytes, "of chunk results");
    results_bytes_ = result_bytes;
  }
}

void HostStreamer::collect(Slot& slot, double& kernel_ms, double& copy_ms) {
  // Every event is waited on before its profile is read (see record_times).
  if (!slot.reduction.empty()) {
    check(clWaitForEvents(static_cast<cl_uint>(slot.reduction.size()), slot.reduction.data()), "clWaitForEvents",
          "chunk reduction");
    for (std::size_t i = 0; i + 1 < slot.reduction.size(); ++i) kernel_ms += event_ms(slot.reduction[i]);
  }
  if (slot.written) {
    check(clWaitForEvents(1, &slot.written), "clWaitForEvents", "chunk copy");
    copy_ms += event_ms(slot.written);
  }
  for (cl_event e : slot.reduction) clReleaseEvent(e);
  slot.reduction.clear();
  if (slot.written) clReleaseEvent(std::exchange(slot.written, nullptr));
}

Result HostStreamer::run(ChunkSource& source, Op op, const RunOptions& options) {
  const DType type = source.type();
  const std::uint64_t n = source.size();
  const std::size_t elem = size_of(type);
  std::uint64_t chunk = std::min(n, chunk_elements(options, elem, kDeviceSlots));
  chunk = std::min<std::uint64_t>(chunk, std::max<std::uint64_t>(1, caps_.max_alloc / elem));
  const std::uint64_t chunks = (n + chunk - 1) / chunk;
  const DType acc = result_dtype(op, type, options.accumulator);
  const std::size_t acc_bytes = size_of(acc);
  const bool exact = options.exact && exact_applies(op, type);
  reserve(chunk * elem, chunks * acc_bytes, options.device_mem_limit);

  Request rq;
  rq.queue = queue_;
  rq.type = type;
  rq.op = op;
  rq.options = options;
  rq.options.warmup = 0;
  rq.options.repeat = 1;

  using clock = std::chrono::steady_clock;
  StreamTimes times;
  Result r;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = clock::now();
    double kernel_ms = 0, copy_ms = 0;
    Result chunk_result;
    ExactSum exact_sum;
    int launches = 0;
    std::uint64_t depth = 0;
    // Chunks are read on a second thread (ChunkReader) while the queue copies and reduces the
    // ones before. Copies and reductions share the reducer's in-order queue: a reduction
    // follows its copy with no event between queues (NVIDIA's OpenCL ran the two-queue form,
    // each reduction waiting on the copy queue's event, at 61-75% of the fill rate). Exact
    // mode reduces on the host's thread (the state is read back) and merges the states.
    auto reduce_chunk = [&](std::uint64_t k) {
      rq.buffer = device_[k % kDeviceSlots];
      rq.n = std::min(chunk, n - k * chunk);
      if (exact) {
        ExactSum::Raw raw;
        chunk_result = reduce_on_queue(rq, &raw);
        exact_sum.merge_raw(raw);
        kernel_ms += chunk_result.kernel_ms;
      } else {
        rq.sink = results_;
        rq.sink_cell = k;
        rq.events = &slots_[k % kDeviceSlots].reduction;
        rq.scratch = &scratch_;  // the queue is in order: one chunk's reduction ends before the next begins
        chunk_result = reduce_on_queue(rq);
        depth = std::max(depth, chunk_result.rounding_depth);
      }
      launches += chunk_result.launches;
    };
    try {
      ChunkReader reader;
      const auto read_ahead = [&](std::uint64_t k) {
        reader.start(source, k * chunk, std::min(chunk, n - k * chunk), staged_[k % kStagingBuffers]);
      };
      read_ahead(0);
      for (std::uint64_t k = 0; k < chunks; ++k) {
        const std::uint64_t len = std::min(chunk, n - k * chunk);
        Slot& slot = slots_[k % kDeviceSlots];
        reader.join();                      // chunk k is in its staging buffer
        collect(slot, kernel_ms, copy_ms);  // chunk k - kDeviceSlots is reduced: the slot is free
        check(clEnqueueWriteBuffer(queue_, device_[k % kDeviceSlots], CL_FALSE, 0, len * elem,
                                   staged_[k % kStagingBuffers], 0, nullptr, &slot.written),
              "clEnqueueWriteBuffer", "chunk " + std::to_string(k) + " (" + format_bytes(len * elem) + ")");
        clFlush(queue_);
        if (k + 1 < chunks) {
          // The next chunk's staging buffer was the source of chunk k + 1 - kStagingBuffers.
          if (k + 1 >= kStagingBuffers)
            wait_for(slots_[(k + 1 - kStagingBuffers) % kDeviceSlots].written, "staging free");
          read_ahead(k + 1);
        }
        reduce_chunk(k);  // exact mode waits here for the chunk's state, while k + 1 is read
        clFlush(queue_);
      }
      for (auto& slot : slots_) collect(slot, kernel_ms, copy_ms);
    } catch (...) {
      drain();  // nothing left in flight that reads the staging buffers or slots
      throw;
    }
    Result value;
    if (exact) {
      value.value = type == DType::F32 ? Scalar::of(exact_sum.to_float()) : Scalar::of(exact_sum.to_double());
      value.rounding_depth = 1;
      value.finish = chunk_result.finish + (chunks > 1 ? "; " + std::to_string(chunks) +
                                                            " chunk states merged on the host before that rounding"
                                                      : "");
    } else if (chunks == 1) {
      unsigned char bytes[8] = {};
      check(clEnqueueReadBuffer(queue_, results_, CL_TRUE, 0, acc_bytes, bytes, 0, nullptr, nullptr),
            "clEnqueueReadBuffer", "result");
      value.value = visit_dtype(acc, [&](auto t) {
        decltype(t) v;
        std::memcpy(&v, bytes, sizeof v);
        return Scalar::of(v);
      });
      value.rounding_depth = depth;
      value.finish = chunk_result.finish;
    } else {
      // The chunk results, reduced in order by auto.
      Request all;
      all.queue = queue_;
      all.buffer = results_;
      all.n = chunks;
      all.type = acc;
      all.op = op;
      all.options.accumulator = options.accumulator;  // keeps the results' type
      value = reduce_on_queue(all);
      kernel_ms += value.kernel_ms;
      launches += value.launches;
      value.rounding_depth += depth;
      value.finish = chunk_result.finish + " + chunk results reduced on the device in order (" + value.kernel + ", " +
                     value.finish + ")";
      copy_ms += value.transfer_ms;
    }
    if (it < options.warmup) continue;
    times.total_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    times.kernel_ms.push_back(kernel_ms);
    times.transfer_ms.push_back(copy_ms);
    r.value = value.value;
    r.rounding_depth = value.rounding_depth;
    r.finish = value.finish;
    r.kernel = chunk_result.kernel;
    r.launches = launches;
  }
  r.backend = "opencl";
  r.device = caps_.name;
  r.n = n;
  r.op = op;
  r.type = type;
  times.fill(r, n, type, chunks);
  r.path = "stream: " + std::to_string(chunks) + " chunks of " + format_bytes(chunk * elem) + ", " +
           std::to_string(kDeviceSlots) + " device slots, " + std::to_string(kStagingBuffers) +
           " pinned staging buffers (CL_MEM_ALLOC_HOST_PTR) filled on a second thread";
  return r;
}

}  // namespace xr::ocl::detail
