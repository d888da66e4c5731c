// The CUDA backend's SegmentDevice (Segments): a job resolved into a Task, its strategy's plan run
// and timed, the exact states of pieces, copies to and from the device, the Segments of each
// (device, stream) of the device-pointer API, and that API (xreduce/cuda.hpp): adapters of core's
// run_device_segments.
#include "segments.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "xreduce/cuda.hpp"
#include "xreduce/error.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

using xr::detail::ExactPiece;
using xr::detail::Memory;
using xr::detail::SegmentJob;
using xr::detail::SegmentOutcome;

namespace {

double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  check(cudaEventSynchronize(to), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return ms;
}

// options.warmup untimed calls of `pass`, then options.repeat timed ones: the median ms.
template <class Pass> double median_ms(SegmentScratch& s, const RunOptions& options, Pass pass) {
  for (int i = 0; i < options.warmup; ++i) pass();
  std::vector<double> times;
  for (int i = 0; i < std::max(1, options.repeat); ++i) {
    check(cudaEventRecord(s.start_event(), s.stream()), "cudaEventRecord");
    pass();
    check(cudaEventRecord(s.stop_event(), s.stream()), "cudaEventRecord");
    times.push_back(elapsed_ms(s.start_event(), s.stop_event()));
  }
  return median(times);
}

// `copies` (cudaMemcpyAsync calls on the scratch's stream), timed and waited for.
template <class Copies> double timed_copies(SegmentScratch& s, Copies copies) {
  check(cudaEventRecord(s.start_event(), s.stream()), "cudaEventRecord");
  copies();
  check(cudaEventRecord(s.stop_event(), s.stream()), "cudaEventRecord");
  return elapsed_ms(s.start_event(), s.stop_event());
}

void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream, const char* what) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, kind, stream), std::string("cudaMemcpyAsync of the ") + what);
}

// The device address of device memory.
void* device_pointer(const Memory& m) {
  return const_cast<unsigned char*>(static_cast<const unsigned char*>(m.handle)) + m.offset;
}

u64 clamp_offset(std::int64_t v, u64 lo, u64 hi) {
  return v <= static_cast<std::int64_t>(lo) ? lo : std::min(static_cast<u64>(v), hi);
}

LengthStats length_stats(const Task& t) {
  LengthStats s;
  const auto limit = bin_limits(t.type);
  switch (t.kind) {
    case SegmentKind::Rows:
    case SegmentKind::Columns:
      s.known = true;
      s.longest = t.length;
      s.total = t.count * t.length;
      s.bins[bin_of(t.length, limit)] = t.count;
      break;
    case SegmentKind::Offsets:
      if (!t.host_offsets) break;
      s.known = true;
      for (u64 i = 0; i < t.count; ++i) {  // clamped as the kernels clamp
        const u64 b = clamp_offset(t.host_offsets[i], 0, t.n), e = clamp_offset(t.host_offsets[i + 1], b, t.n);
        s.longest = std::max(s.longest, e - b);
        s.total += e - b;
        ++s.bins[bin_of(e - b, limit)];
      }
      break;
  }
  return s;
}

// Pieces per launch of k_exact_pieces (and so their states on the host): 2^18 pieces are
// 46 MiB of f32 states, 145 MiB of f64.
constexpr std::size_t kExactBatch = std::size_t{1} << 18;

struct ExactRun {
  double kernel_ms = 0, transfer_ms = 0;
  int launches = 0;
};

// The exact states of pieces of device data: each batch of pieces goes up, is reduced
// (options.warmup + options.repeat times, timed) and its states come down into `words` (f16 and
// bf16: the states of their values widened to f32, exact_piece_words(compute_dtype(type)) words).
ExactRun exact_states(SegmentScratch& s, const void* data, DType type, std::span<const ExactPiece> pieces,
                      std::int64_t* words, const RunOptions& options) {
  ExactRun run;
  const auto per_piece = static_cast<std::size_t>(xr::detail::exact_piece_words(compute_dtype(type)));
  for (std::size_t first = 0; first < pieces.size(); first += kExactBatch) {
    const std::size_t count = std::min(kExactBatch, pieces.size() - first);
    void* d_pieces = s.buffer(SegmentScratch::Pieces, count * sizeof(ExactPiece));
    auto* d_words = static_cast<std::int64_t*>(s.buffer(SegmentScratch::Words, count * per_piece * sizeof(std::int64_t)));
    run.transfer_ms += timed_copies(s, [&] {
      copy(d_pieces, pieces.data() + first, count * sizeof(ExactPiece), cudaMemcpyHostToDevice, s.stream(), "exact pieces");
    });
    run.kernel_ms += median_ms(s, options, [&] { launch_exact_pieces(type, data, d_pieces, count, d_words, s.stream()); });
    ++run.launches;
    run.transfer_ms += timed_copies(s, [&] {
      copy(words + first * per_piece, d_words, count * per_piece * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
           s.stream(), "exact states");
    });
  }
  return run;
}

}  // namespace

// ---- Segments ------------------------------------------------------------------------------

Segments::Segments(DeviceState& ds, cudaStream_t stream) : ds_(ds), scratch_(ds.caps().device, stream) {}

std::vector<KernelInfo> Segments::kernels() const { return segment_strategies(); }

std::uint64_t Segments::max_job_bytes(const RunOptions& options) const {
  // Device memory per input byte, at worst: f32 segments of one element hold the input (4
  // bytes), an offset and a value of 8 bytes each, and 4 bytes of bin list: 6 bytes per byte.
  constexpr u64 kBytesPerInputByte = 6;
  if (options.device_mem_limit) return std::max<u64>(1, options.device_mem_limit / kBytesPerInputByte);
  DeviceGuard guard(caps().device);
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  // A tenth left to the runtime and other users.
  return std::max<u64>(1, (u64(free_bytes) + scratch_.held_bytes()) / 10 * 9 / kBytesPerInputByte);
}

SegmentOutcome Segments::reduce(const SegmentJob& job) {
  const SegmentLayout& l = job.layout;
  const bool by_offsets = l.kind == SegmentKind::Offsets;
  const bool upload_data = !job.data.on_device, upload_offsets = by_offsets && !job.offsets.on_device;
  if (!job.synchronous && (upload_data || upload_offsets || !job.out.on_device))
    throw InvalidArgument("cuda: an enqueued segmented job reads and writes device memory only");
  DeviceGuard guard(caps().device);
  const Strategy& strategy = find_strategy(job.options.kernel);
  SegmentScratch& s = scratch_;
  Task t;
  t.n = job.n;
  t.type = job.type;
  t.op = job.op;
  t.acc = job.options.accumulator;
  t.kind = l.kind;
  t.count = l.count;
  t.length = l.length;
  t.stride = l.stride;
  t.host_offsets = l.offsets;
  t.block = checked_block(strategy, job.options.block_size);
  t.block_given = job.options.block_size != 0;
  t.stream = s.stream();
  t.caps = &caps();
  t.scratch = &s;

  // Host memory goes to the scratch (input, offsets, values), device memory is used in place.
  const std::size_t elem = size_of(job.type), rsize = segment_record_bytes(job.op, job.type, job.options.accumulator);
  const std::size_t offsets_bytes = (l.count + 1) * sizeof(std::int64_t);
  t.in = upload_data ? s.buffer(SegmentScratch::Data, job.n * elem) : device_pointer(job.data);
  if (by_offsets)
    t.offsets = static_cast<const std::int64_t*>(upload_offsets ? s.buffer(SegmentScratch::Offsets, offsets_bytes)
                                                                : device_pointer(job.offsets));
  t.out = job.out.on_device ? device_pointer(job.out) : s.buffer(SegmentScratch::Values, l.count * rsize);
  SegmentOutcome o;
  if (upload_data || upload_offsets)
    o.transfer_ms = timed_copies(s, [&] {
      if (upload_data)
        copy(const_cast<void*>(t.in), job.data.address(), job.n * elem, cudaMemcpyHostToDevice, t.stream, "segment input");
      if (upload_offsets)
        copy(const_cast<std::int64_t*>(t.offsets), l.offsets, offsets_bytes, cudaMemcpyHostToDevice, t.stream,
             "segment offsets");
    });
  t.stats = length_stats(t);

  o.kernel = strategy.info.name;
  if (l.count == 0) {
    o.finish = "none (no segments)";
    return o;
  }
  const Plan p = strategy.plan(t);
  o.kernel = p.kernel;
  o.finish = p.finish;
  o.launches = p.launches;
  o.depth = p.depth;
  if (!job.synchronous) {
    run_pass(p);
    return o;
  }
  o.kernel_ms = median_ms(s, job.options, [&] { run_pass(p); });
  if (!job.out.on_device)
    o.transfer_ms += timed_copies(s, [&] {
      copy(job.out.mutable_address(), t.out, l.count * rsize, cudaMemcpyDeviceToHost, t.stream, "segment values");
    });
  return o;
}

SegmentOutcome Segments::exact_pieces(Memory data, std::uint64_t n, DType type, std::span<const ExactPiece> pieces,
                                      std::int64_t* words, const RunOptions& options) {
  if (!is_float(type))
    throw InvalidArgument("cuda: exact pieces are of float types, not " + std::string(to_string(type)));
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const ExactPiece& p = pieces[i];
    const std::int64_t last = p.count > 0 ? p.first + (p.count - 1) * p.step : p.first;
    if (p.count < 0 || p.count > xr::detail::kExactPieceElements || p.first < 0 || last < 0 ||
        (p.count > 0 && static_cast<u64>(std::max(p.first, last)) >= n))
      throw InvalidArgument("cuda: exact piece " + std::to_string(i) + " (first " + std::to_string(p.first) + ", count " +
                            std::to_string(p.count) + ", step " + std::to_string(p.step) + ") lies outside the " +
                            std::to_string(n) + " elements");
  }
  DeviceGuard guard(caps().device);
  SegmentScratch& s = scratch_;
  SegmentOutcome o;
  const void* d_data = nullptr;
  if (data.on_device) {
    d_data = device_pointer(data);
  } else {
    void* buffer = s.buffer(SegmentScratch::Data, n * size_of(type));
    o.transfer_ms = timed_copies(s, [&] {
      copy(buffer, data.address(), n * size_of(type), cudaMemcpyHostToDevice, s.stream(), "segment input");
    });
    d_data = buffer;
  }
  const ExactRun run = exact_states(s, d_data, type, pieces, words, options);
  o.kernel_ms = run.kernel_ms;
  o.transfer_ms += run.transfer_ms;
  o.launches = run.launches;
  o.kernel = options.kernel + ":exact";
  o.finish = "exact pieces (one warp each), merged and rounded once on the host";
  o.depth = 1;
  return o;
}

std::optional<SegmentOutcome> Segments::exact_short_segments(Memory data, std::uint64_t, DType type,
                                                            const SegmentLayout& l, Memory out,
                                                            std::vector<std::uint64_t>& missed,
                                                            const RunOptions& options) {
  if (!data.on_device || !out.on_device || !is_float(type)) return std::nullopt;
  // The missed segments' list: a counter, then room for this many; more than that (data spanning
  // too many binades nearly everywhere) and every segment goes through pieces.
  constexpr u64 kCapacity = u64{1} << 16;
  DeviceGuard guard(caps().device);
  SegmentScratch& s = scratch_;
  auto* counter = static_cast<unsigned long long*>(s.buffer(SegmentScratch::Words, (1 + kCapacity) * sizeof(u64)));
  SegmentOutcome o;
  o.kernel_ms = median_ms(s, options, [&] {
    check(cudaMemsetAsync(counter, 0, sizeof(u64), s.stream()), "cudaMemsetAsync (missed segments)");
    const bool rows = l.kind == SegmentKind::Rows;
    launch_exact_short_segments(type, device_pointer(data), l.count, l.length, rows ? l.stride : 1, rows ? 1 : l.stride,
                                device_pointer(out), counter, counter + 1, kCapacity, s.stream());
  });
  unsigned long long found = 0;
  o.transfer_ms = timed_copies(s, [&] { copy(&found, counter, sizeof found, cudaMemcpyDeviceToHost, s.stream(), "missed count"); });
  if (found > kCapacity) return std::nullopt;
  std::vector<unsigned long long> listed(found);
  o.transfer_ms += timed_copies(s, [&] {
    copy(listed.data(), counter + 1, found * sizeof(u64), cudaMemcpyDeviceToHost, s.stream(), "missed segments");
  });
  missed.assign(listed.begin(), listed.end());
  o.launches = 1;
  o.kernel = options.kernel + ":exact short " + std::string(to_string(l.kind));
  o.finish = "each segment in a 128-bit integer (a thread a segment)";
  o.depth = 1;
  return o;
}

void Segments::finalize(const SegmentJob& job, Finalize step) {
  const SegmentLayout& l = job.layout;
  const auto* offsets = l.kind == SegmentKind::Offsets ? static_cast<const std::int64_t*>(device_pointer(job.offsets)) : nullptr;
  launch_finalize(step, job.result_type, device_pointer(job.out), l.count, l.length, offsets, job.n, scratch_.stream());
  if (job.synchronous) check(cudaStreamSynchronize(scratch_.stream()), "cudaStreamSynchronize");
}

double Segments::read(Memory from, void* to, std::uint64_t bytes) {
  if (!from.on_device) {
    if (bytes) std::memcpy(to, from.address(), bytes);
    return 0;
  }
  DeviceGuard guard(caps().device);
  return timed_copies(scratch_, [&] {
    copy(to, device_pointer(from), bytes, cudaMemcpyDeviceToHost, scratch_.stream(), "device data to the host");
  });
}

double Segments::write(const void* from, Memory to, std::uint64_t bytes) {
  if (!to.on_device) {
    if (bytes) std::memcpy(to.mutable_address(), from, bytes);
    return 0;
  }
  DeviceGuard guard(caps().device);
  return timed_copies(scratch_, [&] {
    copy(device_pointer(to), from, bytes, cudaMemcpyHostToDevice, scratch_.stream(), "host data to the device");
  });
}

Segments& segment_device(int device, cudaStream_t stream) {
  static std::mutex mutex;
  // Never destroyed: CUDA calls from static destructors at exit are unsafe.
  static auto* cache = new std::map<std::pair<int, cudaStream_t>, std::unique_ptr<Segments>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = (*cache)[{device, stream}];
  if (!s) {
    try {
      s = std::make_unique<Segments>(device_state(device), stream);
    } catch (...) {
      cache->erase({device, stream});
      throw;
    }
  }
  return *s;
}

std::vector<KernelInfo> segment_strategies() {
  std::vector<KernelInfo> out;
  for (const Strategy* s : strategies()) out.push_back(s->info);
  return out;
}

namespace {

// The device-pointer API's one path: every pointer on one device and aligned to its element, that
// device current, the block size checked (also where nothing launches: no segments, exact sums),
// and core's run_device_segments on the Segments of (device, stream).
Result device_call(const void* data, u64 n, DType type, const SegmentLayout& layout, const std::int64_t* offsets, Op op,
                   void* out, cudaStream_t stream, bool synchronous, const RunOptions& options) {
  const bool by_offsets = layout.kind == SegmentKind::Offsets;
  if (by_offsets && !offsets) throw InvalidArgument("cuda: the offsets pointer is null");
  int device = -1;
  const auto place = [&](const void* p, std::size_t align, const char* what) {
    const int d = device_of(p, what);
    require_aligned(p, align, what);
    if (device >= 0 && d != device)
      throw InvalidArgument("cuda: the " + std::string(what) + " pointer is on device " + std::to_string(d) +
                            ", the others on device " + std::to_string(device));
    device = d;
  };
  if (layout.count) place(out, segment_record_align(op, type, options.accumulator), "output");
  if (by_offsets) place(offsets, sizeof(std::int64_t), "offsets");
  if (n) place(data, size_of(type), "input");
  if (device < 0) check(cudaGetDevice(&device), "cudaGetDevice");
  DeviceGuard guard(device);
  Segments& segments = segment_device(device, stream);
  for (const Strategy* s : strategies())
    if (s->info.name == options.kernel) checked_block(*s, options.block_size);
  xr::detail::DeviceSegmentCall call;
  call.data = Memory::device(data);
  call.n = n;
  call.type = type;
  call.layout = layout;
  call.offsets = Memory::device(offsets);
  call.out = Memory::device(out);
  call.op = op;
  call.synchronous = synchronous;
  return xr::detail::run_device_segments(segments, "cuda", segments.caps().name, call, options);
}

SegmentLayout offsets_layout(u64 segments) {
  SegmentLayout l;
  l.kind = SegmentKind::Offsets;
  l.count = segments;
  return l;
}

}  // namespace
}  // namespace xr::cuda::detail

// ---- the device-pointer API ---------------------------------------------------------------

namespace xr::cuda {

std::vector<KernelInfo> segment_kernels() { return detail::segment_strategies(); }

template <class T>
Result reduce_segments(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets, std::uint64_t n_segments, Op op,
                       void* d_out, cudaStream_t stream, const RunOptions& options) {
  return detail::device_call(d_data, n, dtype_of<T>, detail::offsets_layout(n_segments), d_offsets, op, d_out, stream,
                             true, options);
}

template <class T>
void reduce_segments_async(const T* d_data, std::uint64_t n, const std::int64_t* d_offsets, std::uint64_t n_segments,
                           Op op, void* d_out, cudaStream_t stream, const RunOptions& options) {
  detail::device_call(d_data, n, dtype_of<T>, detail::offsets_layout(n_segments), d_offsets, op, d_out, stream, false,
                      options);
}

template <class T>
Result reduce_axis(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out, cudaStream_t stream,
                   const RunOptions& options) {
  const SegmentLayout l = axis_layout(shape, axis);
  return detail::device_call(d_data, l.span(), dtype_of<T>, l, nullptr, op, d_out, stream, true, options);
}

template <class T>
void reduce_axis_async(const T* d_data, const MatrixShape& shape, int axis, Op op, void* d_out, cudaStream_t stream,
                       const RunOptions& options) {
  const SegmentLayout l = axis_layout(shape, axis);
  detail::device_call(d_data, l.span(), dtype_of<T>, l, nullptr, op, d_out, stream, false, options);
}

#define XR_CUDA_SEGMENT_DEFINE(e, T, ...) XR_CUDA_SEGMENT_ENTRY_POINTS(, T)
XR_ELEMENT_TYPES(XR_CUDA_SEGMENT_DEFINE)
#undef XR_CUDA_SEGMENT_DEFINE

}  // namespace xr::cuda
