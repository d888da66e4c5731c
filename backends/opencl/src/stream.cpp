// The OpenCL device of the chunk pipeline: see Chunks in stream.hpp.
//
// Copies and reductions share the reducer's one in-order queue: a reduction follows its copy
// with no event between queues (NVIDIA's OpenCL ran the two-queue form, each reduction waiting
// on the copy queue's event, at 61-75% of the host's fill rate on an H100 host). Every enqueue
// is flushed at once, so that the device starts it while the host reads the next chunk.
#include "stream.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "policy.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::opencl::detail {
namespace {

using xr::detail::ChunkOutcome;
using xr::detail::ChunkPlan;
using xr::detail::ChunkPolicy;

std::atomic<std::uint64_t> g_chunk_limit{0};

// A buffer kept from an earlier reduction serves one that needs `need` bytes unless it is
// smaller, or larger than both `need` and the default chunk (what a large resident input left).
bool serves(std::size_t have, std::size_t need) {
  return have >= need && have <= std::max<std::size_t>(need, policy::kChunkBytes);
}

void wait_for(const Event& e, const char* what) {
  const cl_event event = e.get();
  if (event) check(clWaitForEvents(1, &event), "clWaitForEvents", what);
}

}  // namespace

void set_chunk_limit_for_testing(std::uint64_t elements) { g_chunk_limit = elements; }
std::uint64_t chunk_limit_for_testing() { return g_chunk_limit.load(); }

// ---- staging buffers ------------------------------------------------------------------------

Chunks::StagingBuffer::StagingBuffer(cl_context context, cl_command_queue queue, std::size_t bytes)
    : memory_(create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, bytes, "staging buffer")),
      queue_(queue) {
  cl_int rc = CL_SUCCESS;
  host_ = clEnqueueMapBuffer(queue_, memory_.get(), CL_TRUE, CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &rc);
  check(rc, "clEnqueueMapBuffer", "staging buffer");
}

Chunks::StagingBuffer::StagingBuffer(StagingBuffer&& o) noexcept
    : memory_(std::move(o.memory_)), queue_(o.queue_), host_(std::exchange(o.host_, nullptr)) {}

Chunks::StagingBuffer::~StagingBuffer() {
  if (!host_) return;
  Event unmapped;
  if (clEnqueueUnmapMemObject(queue_, memory_.get(), host_, 0, nullptr, unmapped.out()) == CL_SUCCESS) {
    const cl_event e = unmapped.get();
    clWaitForEvents(1, &e);
  }
}

// ---- the device -----------------------------------------------------------------------------

Chunks::Chunks(const DeviceCaps& caps, cl_context context, cl_command_queue queue)
    : caps_(caps), context_(context), queue_(queue) {}

Chunks::~Chunks() { abandon(); }

ChunkPolicy Chunks::policy(DType type) const {
  ChunkPolicy p;
  p.slots = policy::kDeviceSlots;
  p.chunk_bytes = policy::kChunkBytes;
  // A chunk is one buffer: at most CL_DEVICE_MAX_MEM_ALLOC_SIZE.
  p.max_chunk_bytes = caps_.max_alloc;
  if (const std::uint64_t limit = g_chunk_limit.load()) {
    const std::uint64_t bytes = limit * size_of(type);
    p.max_chunk_bytes = p.max_chunk_bytes ? std::min(p.max_chunk_bytes, bytes) : bytes;
  }
  return p;
}

void Chunks::reserve_slots(std::size_t count, std::size_t bytes, std::uint64_t limit) {
  // Between reductions nothing is in flight (finish() and abandon() collect every slot), so
  // buffers may be replaced.
  const bool keep = serves(slot_bytes_, bytes) && (slots_.size() >= count || slot_bytes_ == bytes) &&
                    !(limit && count * slot_bytes_ > limit);
  if (!keep) {
    slots_.clear();
    slot_bytes_ = bytes;
  }
  if (slots_.size() > count) slots_.erase(slots_.begin() + static_cast<std::ptrdiff_t>(count), slots_.end());
  while (slots_.size() < count)
    slots_.push_back(Slot{create_buffer(context_, CL_MEM_READ_ONLY, slot_bytes_, "chunk slot"), Event(), EventChain()});
}

void Chunks::reserve_staging(std::size_t bytes) {
  if (!serves(staging_bytes_, bytes)) {
    staging_.clear();
    staging_bytes_ = bytes;
  }
  while (staging_.size() < policy::kStagingBuffers) staging_.emplace_back(context_, queue_, staging_bytes_);
}

void Chunks::reserve_results(std::size_t bytes) {
  if (results_bytes_ >= bytes) return;
  results_.reset();
  results_bytes_ = 0;
  results_ = create_buffer(context_, CL_MEM_READ_WRITE, bytes, "of chunk results");
  results_bytes_ = bytes;
}

void Chunks::begin(const ChunkPlan& plan) {
  if (plan.type == DType::F64 && !caps_.fp64)
    throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps_.name + " does not offer");
  plan_ = plan;
  cell_type_ = result_dtype(plan.op, plan.type, plan.options.accumulator);
  cell_size_ = xr::detail::cell_bytes(plan.op, plan.type, plan.options.accumulator);
  const std::size_t chunk_bytes = plan.chunk * size_of(plan.type);
  // A resident input keeps a slot per chunk (core checked its size against device_mem_limit).
  if (plan.resident) {
    reserve_slots(plan.chunks, chunk_bytes, 0);
  } else {
    reserve_slots(policy::kDeviceSlots, chunk_bytes, plan.options.device_mem_limit);
    reserve_staging(chunk_bytes);
  }
  if (!plan.exact) reserve_results(plan.chunks * cell_size_);

  chunk_ = Request{};
  chunk_.queue = queue_;
  chunk_.type = plan.type;
  chunk_.op = plan.op;
  chunk_.options = plan.options;
  chunk_.options.warmup = 0;
  chunk_.options.repeat = 1;
  if (!plan.exact) {
    chunk_.sink = results_.get();
    chunk_.scratch = &scratch_;  // the queue is in order: one chunk's reduction ends before the next begins
  }
  start_pass();
}

void Chunks::start_pass() {
  kernel_ms_ = copy_ms_ = 0;
  launches_ = 0;
  depth_ = 0;
  exact_ = ExactSum();
}

void Chunks::collect(Slot& s) {
  // Every event is waited on before its profile is read (see record_times).
  std::vector<cl_event>& reduction = s.reduction.events;
  if (!reduction.empty()) {
    check(clWaitForEvents(static_cast<cl_uint>(reduction.size()), reduction.data()), "clWaitForEvents",
          "chunk reduction");
    for (std::size_t i = 0; i + 1 < reduction.size(); ++i) kernel_ms_ += event_ms(reduction[i]);
    s.reduction.clear();
  }
  if (s.written) {
    wait_for(s.written, "chunk copy");
    copy_ms_ += event_ms(s.written.get());
    s.written.reset();
  }
}

void* Chunks::staging(std::uint64_t k) {
  if (plan_.resident) return nullptr;  // written straight from the caller's memory
  // The staging buffer was the source of chunk k - kStagingBuffers, whose copy event is still in
  // its slot (kStagingBuffers <= kDeviceSlots) or already collected.
  if (k >= policy::kStagingBuffers) wait_for(slot(k - policy::kStagingBuffers).written, "staging free");
  return staging_[k % policy::kStagingBuffers].host();
}

void Chunks::stage(std::uint64_t k, const void* host, std::uint64_t len) {
  Slot& s = slot(k);
  collect(s);  // chunk k - kDeviceSlots is reduced: the slot is free
  const std::size_t bytes = len * size_of(plan_.type);
  check(clEnqueueWriteBuffer(queue_, s.memory.get(), CL_FALSE, 0, bytes, host, 0, nullptr, s.written.out()),
        "clEnqueueWriteBuffer", "chunk " + std::to_string(k) + " (" + format_bytes(bytes) + ")");
  clFlush(queue_);
}

double Chunks::staged() {
  double ms = 0;
  for (Slot& s : slots_) {
    if (!s.written) continue;
    wait_for(s.written, "input copy");
    ms += event_ms(s.written.get());
    s.written.reset();
  }
  return ms;
}

void Chunks::reduce(std::uint64_t k, std::uint64_t len) {
  Slot& s = slot(k);
  chunk_.buffer = s.memory.get();
  chunk_.n = len;
  Result r;
  if (plan_.exact) {
    // Waits for the chunk's state (while the next chunk is read) and merges it exactly.
    ExactSum::Raw raw;
    r = reduce_on_queue(chunk_, &raw);
    exact_.merge_raw(raw);
    kernel_ms_ += r.kernel_ms;
    copy_ms_ += r.transfer_ms;
  } else {
    chunk_.sink_cell = k;
    chunk_.first_index = static_cast<std::int64_t>(k * plan_.chunk);
    chunk_.events = &s.reduction.events;
    r = reduce_on_queue(chunk_);  // enqueued only: timed when the slot is collected
    depth_ = std::max(depth_, r.rounding_depth);
  }
  clFlush(queue_);
  launches_ += r.launches;
  kernel_ = r.kernel;
  finish_ = r.finish;
}

ChunkOutcome Chunks::finish() {
  for (Slot& s : slots_) collect(s);
  ChunkOutcome out;
  out.kernel = kernel_;
  out.finish = finish_;
  const std::string chunks = std::to_string(plan_.chunks) + " chunks";
  if (plan_.exact) {
    out.exact = exact_.raw();
    if (plan_.chunks > 1) out.finish += "; the states of " + chunks + " merged on the host before that rounding";
  } else if (plan_.chunks == 1 || is_pair(plan_.op)) {
    // The cells as they are: one value, or the records of a pair op combined here in order.
    std::vector<unsigned char> bytes(plan_.chunks * cell_size_);
    Event read;
    check(clEnqueueReadBuffer(queue_, results_.get(), CL_TRUE, 0, bytes.size(), bytes.data(), 0, nullptr, read.out()),
          "clEnqueueReadBuffer", plan_.chunks == 1 ? "result" : "chunk records");
    wait_for(read, "result read");
    copy_ms_ += event_ms(read.get());
    const Accumulator acc = plan_.options.accumulator;
    xr::detail::CellValue cell = xr::detail::read_cell(plan_.op, plan_.type, acc, bytes.data());
    for (std::uint64_t k = 1; k < plan_.chunks; ++k)
      cell = xr::detail::combine_cells(plan_.op, plan_.type, acc, cell,
                                       xr::detail::read_cell(plan_.op, plan_.type, acc, bytes.data() + k * cell_size_));
    xr::detail::take_cell(out, cell);
    out.depth = depth_;
    if (plan_.chunks > 1) out.finish += " + the records of " + chunks + " combined on the host in order";
  } else {
    // The cells, reduced in order by auto; the accumulator keeps their type.
    Request cells;
    cells.queue = queue_;
    cells.buffer = results_.get();
    cells.n = plan_.chunks;
    cells.type = cell_type_;
    cells.op = fold_of(plan_.op);  // chunk results, already mapped
    cells.options.accumulator = plan_.options.accumulator;
    const Result c = reduce_on_queue(cells);
    kernel_ms_ += c.kernel_ms;
    copy_ms_ += c.transfer_ms;
    launches_ += c.launches;
    out.value = c.value;
    out.depth = depth_ + c.rounding_depth;
    out.finish +=
        " + chunk results reduced on the device in order (" + chunks + " by " + c.kernel + ", " + c.finish + ")";
  }
  out.kernel_ms = kernel_ms_;
  out.transfer_ms = copy_ms_;
  out.launches = launches_;
  start_pass();
  return out;
}

void Chunks::abandon() noexcept {
  // Nothing left in flight that reads a staging buffer or a slot; errors are ignored.
  clFinish(queue_);
  for (Slot& s : slots_) {
    s.written.reset();
    s.reduction.clear();
  }
  start_pass();
}

std::string Chunks::describe(const ChunkPlan& plan) const {
  if (plan.resident) return plan.chunks > 1 ? "resident: " + std::to_string(plan.chunks) + " chunks" : "resident";
  return "stream: " + std::to_string(plan.chunks) + " chunks of " + format_bytes(plan.chunk * size_of(plan.type)) +
         ", " + std::to_string(policy::kDeviceSlots) + " device slots, " + std::to_string(policy::kStagingBuffers) +
         " pinned staging buffers (CL_MEM_ALLOC_HOST_PTR)";
}

}  // namespace xr::opencl::detail
