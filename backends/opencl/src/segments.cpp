// The OpenCL SegmentDevice (segments.hpp): a job's buffers, the strategy it names (or auto's
// choice) planned at the largest work-group every launch allows, its passes timed or enqueued,
// exact piece states, and copies between the device and the host.
#include "segments.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "launch.hpp"
#include "policy.hpp"
#include "segment_plan.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::opencl::detail {

using xr::detail::ExactPiece;
using xr::detail::Memory;
using xr::detail::SegmentJob;
using xr::detail::SegmentOutcome;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kRoleNames[] = {"segment input",    "segment offsets", "segment values",   "segment partials",
                                      "segment lists",    "segment tasks",   "segment spans",    "planning counters",
                                      "segment carries",  "carried segments", "exact pieces",    "exact words"};
static_assert(std::size(kRoleNames) == SegmentBuffers::kRoles, "one name per buffer role");

// The cl_mem of device memory, and the offset of a Memory that must start at its handle.
cl_mem mem_of(const Memory& m) { return static_cast<cl_mem>(const_cast<void*>(m.handle)); }
cl_mem whole_mem_of(const Memory& m, const char* what) {
  if (m.offset)
    throw InvalidArgument(std::string("opencl: the ") + what +
                          " of a segmented reduction start at their buffer's start");
  return mem_of(m);
}
// The element offset of device memory `m` into its buffer.
std::uint64_t element_offset(const Memory& m, DType type) {
  if (m.offset % size_of(type))
    throw InvalidArgument("opencl: a data offset of " + std::to_string(m.offset) + " bytes is not a whole number of " +
                          std::string(to_string(type)) + " elements");
  return m.offset / size_of(type);
}

void CL_CALLBACK release_buffers(cl_event, cl_int, void* buffers) { delete static_cast<SegmentBuffers*>(buffers); }

}  // namespace

cl_mem SegmentBuffers::get(cl_context context, Role role, std::size_t want) {
  want = std::max<std::size_t>(want, 1);
  if (memory[role] && bytes[role] >= want) return memory[role].get();
  memory[role].reset();
  bytes[role] = 0;
  memory[role] = create_buffer(context, CL_MEM_READ_WRITE, want, kRoleNames[role]);
  bytes[role] = want;
  return memory[role].get();
}

const char* segment_buffer_name(SegmentBuffers::Role role) { return kRoleNames[role]; }

std::vector<KernelInfo> segment_strategies(const DeviceCaps& caps) {
  std::vector<DType> types;
  for (DType t : segment_dtypes())
    if (caps.fp64 || t != DType::F64) types.push_back(t);
  const std::string no64 = caps.fp64 ? "" : " [no f64: device lacks cl_khr_fp64]";
  const auto widest = static_cast<unsigned>(caps.max_work_group);
  std::vector<KernelInfo> out;
  for (const SegmentStrategy* r : strategy_list()) {
    KernelInfo k;
    k.name = r->name;
    k.note = std::string(r->note) + no64;
    k.kind = r->choose ? KernelKind::Auto : KernelKind::Rung;
    if (r->choose) k.ops.assign(all_ops.begin(), all_ops.end());
    else if (r->pair_ops) k.ops.assign(pair_ops.begin(), pair_ops.end());
    else k.ops.assign(folding_ops.begin(), folding_ops.end());
    k.types = types;
    k.exact = !r->pair_ops;  // exact sums go through exact pieces, whatever the fold strategy
    k.blocks = r->one_item_groups ? BlockRule{1, 1, 1, {}, 1} : BlockRule{1, widest, 1, {}, 0};
    k.layouts = r->layouts;
    out.push_back(std::move(k));
  }
  return out;
}

// ---- the device ----------------------------------------------------------------------------------

Segments::Segments(const DeviceCaps& caps, cl_context context, cl_command_queue queue, bool profiling)
    : caps_(&caps), context_(context), queue_(queue), profiling_(profiling) {}

Segments::Segments(cl_command_queue queue) : queue_(queue) {
  if (!queue) throw InvalidArgument("opencl: null command queue");
  cl_device_id device = nullptr;
  cl_command_queue_properties props = 0;
  check(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_DEVICE");
  check(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context_, &context_, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_CONTEXT");
  check(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_PROPERTIES");
  caps_ = &caps_of(device);
  profiling_ = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
}

Segments::~Segments() {
  if (!pending_) return;
  // The buffers go when the last asynchronous pass is done. Where the callback cannot be set they
  // go now: OpenCL frees a released buffer only once the commands that use it have finished.
  auto* held = new SegmentBuffers(std::move(buffers_));
  if (clSetEventCallback(pending_, CL_COMPLETE, release_buffers, held) != CL_SUCCESS) delete held;
  clReleaseEvent(pending_);
}

std::vector<KernelInfo> Segments::kernels() const { return segment_strategies(*caps_); }

std::uint64_t Segments::max_job_bytes(const RunOptions& options) const {
  // The input is one buffer (at most CL_DEVICE_MAX_MEM_ALLOC_SIZE); the values, offsets and
  // partials beside it take at most about three times the input (i32 rows of one element give
  // i64 values twice their size), so a job takes at most a quarter of the memory it may use.
  std::uint64_t budget = caps_->global_mem;
  if (options.device_mem_limit) budget = std::min(budget, options.device_mem_limit);
  return std::max<std::uint64_t>(1, std::min(caps_->max_alloc, budget / 4));
}

double Segments::command_ms(cl_event e, Clock::time_point t0) const {
  return profiling_ ? event_ms(e) : std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Segments::upload(SegmentBuffers::Role role, const void* host, std::size_t bytes) {
  // Host jobs' data: a buffer of the call's largest job at once (host_job_bytes).
  std::size_t size = bytes;
  if (role == SegmentBuffers::Data && host_job_bytes)
    size = std::max<std::size_t>(bytes, std::min<std::uint64_t>(host_job_bytes, caps_->max_alloc));
  cl_mem mem = buffers_.get(context_, role, size);
  if (!bytes) return 0;
  Event written;
  const auto t0 = Clock::now();
  check(clEnqueueWriteBuffer(queue_, mem, CL_TRUE, 0, bytes, host, 0, nullptr, written.out()), "clEnqueueWriteBuffer",
        format_bytes(bytes) + " of segment data");
  return command_ms(written.get(), t0);
}

double Segments::read(Memory from, void* to, std::uint64_t bytes) {
  if (!bytes) return 0;
  if (!from.on_device) {
    std::memcpy(to, from.address(), bytes);
    return 0;
  }
  Event read;
  const auto t0 = Clock::now();
  check(clEnqueueReadBuffer(queue_, mem_of(from), CL_TRUE, from.offset, bytes, to, 0, nullptr, read.out()),
        "clEnqueueReadBuffer", format_bytes(bytes) + " of segment memory");
  return command_ms(read.get(), t0);
}

double Segments::write(const void* from, Memory to, std::uint64_t bytes) {
  if (!bytes) return 0;
  if (!to.on_device) {
    std::memcpy(to.mutable_address(), from, bytes);
    return 0;
  }
  Event written;
  const auto t0 = Clock::now();
  check(clEnqueueWriteBuffer(queue_, mem_of(to), CL_TRUE, to.offset, bytes, from, 0, nullptr, written.out()),
        "clEnqueueWriteBuffer", format_bytes(bytes) + " of segment memory");
  return command_ms(written.get(), t0);
}

SegmentOutcome Segments::reduce(const SegmentJob& job) {
  const DeviceCaps& caps = *caps_;
  const RunOptions& opt = job.options;
  const bool offsets = job.layout.kind == SegmentKind::Offsets;
  const std::size_t record_bytes = segment_record_bytes(job.op, job.type, opt.accumulator);
  const std::size_t value_bytes = job.layout.count * record_bytes;
  SegmentOutcome out;
  SegmentCall call;
  call.type = job.type;
  call.op = job.op;
  call.options = opt;
  call.layout = job.layout;
  call.n = job.n;
  if (job.data.on_device) {
    call.data = mem_of(job.data);
    call.offset = element_offset(job.data, job.type);
    if (offsets) call.offsets = whole_mem_of(job.offsets, "offsets");
    call.out = whole_mem_of(job.out, "values");
  } else {
    out.transfer_ms += upload(SegmentBuffers::Data, job.data.address(), job.n * size_of(job.type));
    call.data = buffers_.memory[SegmentBuffers::Data].get();
    if (offsets) {
      out.transfer_ms +=
          upload(SegmentBuffers::Offsets, job.layout.offsets, (job.layout.count + 1) * sizeof(std::int64_t));
      call.offsets = buffers_.memory[SegmentBuffers::Offsets].get();
    }
    call.out = buffers_.get(context_, SegmentBuffers::Out, value_bytes);
  }

  const SegmentLayout& lay = call.layout;
  const SegmentStrategy& row = find_segment_strategy(opt.kernel);
  Setting s{caps, context_, call, buffers_, &row};
  s.acc = result_dtype(call.op, call.type, opt.accumulator);
  s.acc_bytes = size_of(s.acc);
  s.compute_bytes = size_of(compute_dtype(s.acc));
  // The offsets' longest and mean lengths: from the host's copy, else estimated from n.
  std::vector<std::int64_t> read_back;
  const auto measure = [&] {
    if (!offsets || !lay.count) return;
    if (!lay.offsets) {
      s.max_len = call.n;
      s.mean_len = static_cast<double>(call.n) / static_cast<double>(lay.count);
      return;
    }
    s.max_len = 0;
    for (std::uint64_t i = 0; i < lay.count; ++i)
      s.max_len = std::max(s.max_len, static_cast<std::uint64_t>(lay.offsets[i + 1] - lay.offsets[i]));
    s.mean_len = static_cast<double>(lay.offsets[lay.count] - lay.offsets[0]) / static_cast<double>(lay.count);
  };
  measure();

  Plan plan;
  const bool all_empty = offsets ? lay.offsets && s.max_len == 0 : lay.length == 0;
  std::size_t L = choose_work_group(opt.block_size, caps.max_work_group, policy::kWorkGroup, caps, row.name);
  const SegmentStrategy* chosen = &row;
  if (lay.count == 0) {
    plan.finish = "none";
  } else if (all_empty) {
    // Every value is the empty one: a fill, nothing read.
    unsigned char empty[16] = {};
    xr::detail::empty_segment_record(call.op, call.type, opt.accumulator, empty);
    plan.steps.push_back(fill_launch(call.out, value_bytes, empty, record_bytes, "empty values"));
    plan.finish = "none (every segment empty)";
  } else {
    if (row.choose) chosen = &row.choose(s, L);
    s.strategy = chosen;
    if (offsets && chosen->plans_from_offsets) {
      if (lay.count > kMostPlannedSegments)
        throw InvalidArgument("opencl: segment kernel " + std::string(chosen->name) + " sorts at most " +
                              std::to_string(kMostPlannedSegments) + " segments, not " + std::to_string(lay.count));
      if (!lay.offsets) {  // sized from the offsets: read back and checked, after the commands before them
        read_back.resize(lay.count + 1);
        out.transfer_ms += read(job.offsets, read_back.data(), read_back.size() * sizeof(std::int64_t));
        check_offsets(read_back, call.n);
        call.layout.offsets = read_back.data();
        measure();
      }
    }
    // A smaller work-group when a kernel allows fewer work-items (registers, local memory) than
    // the default: planned again with the most every launch allows.
    for (;;) {
      plan = chosen->plan(s, L);
      std::size_t fits = L;
      for (const Launch& st : plan.steps)
        if (st.command == Launch::Command::Kernel && st.local > st.limit) fits = std::min(fits, st.limit);
      if (fits == L) break;
      if (opt.block_size)
        throw InvalidArgument("opencl: work-group size " + std::to_string(opt.block_size) + " exceeds " +
                              std::to_string(fits) + ", the most segment kernel " + row.name + " allows on " +
                              caps.name + " (CL_KERNEL_WORK_GROUP_SIZE, local memory)");
      L = floor_pow2(fits);
    }
  }
  const bool ran = lay.count != 0 && !all_empty;
  out.kernel = !row.choose ? std::string(row.name) : ran ? "auto:" + std::string(chosen->name) : "auto:none";
  out.finish = plan.finish;
  out.depth = plan.depth;
  out.launches = kernel_launches(plan.steps);
  if (!job.synchronous) {
    // One pass, after the last asynchronous one of this device; the buffers stay until it is done.
    EventChain chain;
    if (pending_) chain.events.push_back(std::exchange(pending_, nullptr));
    for (const Launch& st : plan.steps) enqueue(queue_, st, chain);
    if (!chain.events.empty()) {
      pending_ = chain.events.back();
      check(clRetainEvent(pending_), "clRetainEvent", "segmented reduction");
    }
    return out;
  }
  out.kernel_ms = time_passes(queue_, profiling_, plan.steps, opt).kernel_ms;
  if (!job.data.on_device && value_bytes) {
    Event values;
    const auto t0 = Clock::now();
    check(clEnqueueReadBuffer(queue_, call.out, CL_TRUE, 0, value_bytes, job.out.mutable_address(), 0, nullptr,
                              values.out()),
          "clEnqueueReadBuffer", "segment values");
    out.transfer_ms += command_ms(values.get(), t0);
  }
  return out;
}

// ---- exact piece states ----------------------------------------------------------------------

SegmentOutcome Segments::exact_pieces(Memory data, std::uint64_t n, DType type, std::span<const ExactPiece> pieces,
                                      std::int64_t* words, const RunOptions& options) {
  const DeviceCaps& caps = *caps_;
  SegmentOutcome out;
  cl_mem input = nullptr;
  std::uint64_t offset = 0;
  if (data.on_device) {
    input = mem_of(data);
    offset = element_offset(data, type);
  } else {
    out.transfer_ms += upload(SegmentBuffers::Data, data.address(), n * size_of(type));
    input = buffers_.memory[SegmentBuffers::Data].get();
  }
  if (!is_float(type))
    throw InvalidArgument("opencl: exact piece states are for float types, not " + std::string(to_string(type)));
  if (type == DType::F64 && !caps.fp64)
    throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps.name + " does not offer");
  const int per_piece = xr::detail::exact_piece_words(compute_dtype(type));
  std::vector<cl_long> table(3 * pieces.size());
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    const ExactPiece& x = pieces[p];
    const std::int64_t last = x.first + (x.count > 0 ? (x.count - 1) * x.step : 0);
    if (x.count < 0 || x.count > xr::detail::kExactPieceElements ||
        (x.count > 0 && (x.first < 0 || last < 0 || static_cast<std::uint64_t>(std::max(x.first, last)) >= n)))
      throw InvalidArgument("opencl: exact piece " + std::to_string(p) + " (first " + std::to_string(x.first) +
                            ", count " + std::to_string(x.count) + ", step " + std::to_string(x.step) +
                            ") reaches outside the " + std::to_string(n) + " elements");
    table[3 * p] = x.first;
    table[3 * p + 1] = x.count;
    table[3 * p + 2] = x.step;
  }
  out.kernel = "exact";
  out.finish = "piece states merged on the host";
  out.depth = 1;
  if (pieces.empty()) return out;

  cl_mem table_mem = buffers_.get(context_, SegmentBuffers::Pieces, table.size() * sizeof(cl_long));
  out.transfer_ms += write(table.data(), Memory::device(table_mem), table.size() * sizeof(cl_long));
  // Pieces per launch: their words stay within 64 MiB of device memory.
  const std::uint64_t batch =
      std::max<std::uint64_t>(1, (std::uint64_t{64} << 20) / (static_cast<std::uint64_t>(per_piece) * sizeof(cl_long)));
  const std::uint64_t launches = ceil_div(pieces.size(), batch);
  cl_mem words_mem = buffers_.get(context_, SegmentBuffers::Words,
                                  std::min<std::uint64_t>(batch, pieces.size()) * per_piece * sizeof(cl_long));
  CachedKernel& k = cached_kernel(context_, caps.device, kSegmentsSource, exact_options(type), "xr_seg_exact");
  const std::size_t local =
      choose_work_group(options.block_size, group_limit(k, caps, 0), policy::kExactWorkGroup, caps, "xr_seg_exact");
  std::vector<Launch> steps;
  for (std::uint64_t l = 0; l < launches; ++l) {
    const std::uint64_t base = l * batch, count = std::min<std::uint64_t>(batch, pieces.size() - base);
    Launch st;
    st.name = "xr_seg_exact";
    st.kernel = &k;
    st.local = local;
    st.global = static_cast<std::size_t>(std::min(ceil_div(count, local), max_groups(local))) * local;
    st.args = {value_arg(input),          value_arg(cl_ulong{offset}), value_arg(table_mem),
               value_arg(cl_ulong{base}), value_arg(cl_ulong{count}),  value_arg(words_mem)};
    steps.push_back(std::move(st));
  }
  out.launches = static_cast<int>(launches);
  out.kernel_ms = time_passes(queue_, profiling_, steps, options).kernel_ms;
  // One launch's words are still in the buffer; several overwrite one another, so they run once
  // more (untimed), each read before the next.
  for (std::uint64_t l = 0; l < launches; ++l) {
    const std::uint64_t base = l * batch, count = std::min<std::uint64_t>(batch, pieces.size() - base);
    if (launches > 1) {
      EventChain chain;
      enqueue(queue_, steps[l], chain);
      check(clWaitForEvents(1, chain.events.data()), "clWaitForEvents", "exact pieces");
    }
    out.transfer_ms +=
        read(Memory::device(words_mem), words + base * per_piece, count * per_piece * sizeof(cl_long));
  }
  return out;
}

void Segments::finalize(const SegmentJob& job, Finalize step) {
  const SegmentLayout& l = job.layout;
  if (l.count == 0 || step == Finalize::None) return;
  CachedKernel& k =
      cached_kernel(context_, caps_->device, kSegmentsSource, finalize_options(step, job.result_type), "xr_seg_finalize");
  Launch st;
  st.name = "xr_seg_finalize";
  st.kernel = &k;
  st.local = choose_work_group(0, group_limit(k, *caps_, 0), policy::kExactWorkGroup, *caps_, "xr_seg_finalize");
  st.global = static_cast<std::size_t>(std::min(ceil_div(l.count, st.local), max_groups(st.local))) * st.local;
  const bool by_offsets = l.kind == SegmentKind::Offsets;
  st.args = {value_arg(static_cast<cl_mem>(const_cast<void*>(job.out.handle))), value_arg(cl_ulong{l.count}),
             value_arg(cl_ulong{l.length}),
             value_arg(by_offsets ? static_cast<cl_mem>(const_cast<void*>(job.offsets.handle)) : cl_mem{nullptr}),
             value_arg(cl_ulong{job.n}), value_arg(cl_int{by_offsets})};
  EventChain chain;
  enqueue(queue_, st, chain);
  if (job.synchronous) check(clWaitForEvents(1, chain.events.data()), "clWaitForEvents", "a mapped op's last step");
}

}  // namespace xr::opencl::detail
