// The chunk pipeline (pipeline.hpp) and the Reducer entry points that feed it.
#include "pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "arith.hpp"
#include "testing.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

namespace xr {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The chunks of a plan: a resident input takes chunks as large as one allocation allows, a
// streamed one the policy's chunk (or RunOptions::chunk_elements), lowered so that its slots fit
// RunOptions::device_mem_limit.
void size_chunks(ChunkPlan& plan, const ChunkPolicy& policy) {
  const std::size_t elem = size_of(plan.type);
  RunOptions limits = plan.options;
  if (policy.host_memory) limits.device_mem_limit = 0;  // no device memory: the chunk is only the buffers' size
  std::uint64_t chunk = plan.resident ? plan.n : chunk_elements(limits, elem, policy.slots, policy.chunk_bytes);
  if (policy.max_chunk_bytes) chunk = std::min<std::uint64_t>(chunk, std::max<std::uint64_t>(1, policy.max_chunk_bytes / elem));
  plan.chunk = std::max<std::uint64_t>(1, std::min(chunk, plan.n));
  plan.chunks = ceil_div(plan.n, plan.chunk);
}

std::uint64_t chunk_length(const ChunkPlan& plan, std::uint64_t k) {
  return std::min(plan.chunk, plan.n - std::min(plan.n, k * plan.chunk));
}

const void* in_memory(const ChunkPlan& plan, std::uint64_t k) {
  return static_cast<const unsigned char*>(plan.memory) + k * plan.chunk * size_of(plan.type);
}

// Stages every chunk once (resident plans); returns the copies' time.
double stage_all(ChunkDevice& device, ChunkSource& source, const ChunkPlan& plan) {
  for (std::uint64_t k = 0; k < plan.chunks; ++k) {
    const std::uint64_t len = chunk_length(plan, k);
    void* host = device.staging(k);
    if (host) source.read(k * plan.chunk, len, host);
    device.stage(k, host ? host : in_memory(plan, k), len);
  }
  return device.staged();
}

// One pass: every chunk reduced into its cell, then the cells combined. A streamed chunk is
// read while the device copies and reduces the one before: on a second thread for a device
// that reduces synchronously, by this thread after the reduction is enqueued otherwise.
ChunkOutcome pass(ChunkDevice& device, ChunkSource& source, const ChunkPlan& plan) {
  if (plan.resident) {
    for (std::uint64_t k = 0; k < plan.chunks; ++k) device.reduce(k, chunk_length(plan, k));
    return device.finish();
  }
  ChunkReader reader;
  void* host = nullptr;
  const auto read = [&](std::uint64_t k) {
    host = device.staging(k);
    if (!host) return;
    if (plan.read_ahead) reader.start(source, k * plan.chunk, chunk_length(plan, k), host);
    else source.read(k * plan.chunk, chunk_length(plan, k), host);
  };
  read(0);
  for (std::uint64_t k = 0; k < plan.chunks; ++k) {
    const std::uint64_t len = chunk_length(plan, k);
    reader.join();  // chunk k is in its staging buffer
    device.stage(k, host ? host : in_memory(plan, k), len);
    const bool next = k + 1 < plan.chunks;
    if (next && plan.read_ahead) read(k + 1);
    device.reduce(k, len);
    if (next && !plan.read_ahead) read(k + 1);
  }
  return device.finish();
}

}  // namespace

namespace {
// The exact sum rounded once to the result type of a float sum of `type` (f32 for f16 and bf16).
Scalar rounded(const ExactSum& sum, DType type) {
  return result_dtype(Op::Sum, type) == DType::F32 ? Scalar::of(sum.to_float()) : Scalar::of(sum.to_double());
}
}  // namespace

Scalar round_exact(const ExactSum::Raw& state, DType type) {
  ExactSum sum;
  sum.merge_raw(state);
  return rounded(sum, type);
}

void set_exact(Result& r, const ExactSum::Raw& state, DType type) {
  ExactSum sum;
  sum.merge_raw(state);
  r.value = rounded(sum, type);
  r.exact_state = sum.raw();
  r.rounding_depth = 1;
}

Scalar scalar_from_bytes(DType type, const void* bytes) {
  return visit_dtype(type, [&](auto t) {
    decltype(t) v;
    std::memcpy(&v, bytes, sizeof v);
    return Scalar::of(v);
  });
}

namespace {

// Calls f(PairFn<op>{}, T{}) for a run-time pair op over a run-time type.
template <class F> decltype(auto) visit_pair_record(Op op, DType type, F&& f) {
  return visit_pair(op, [&](auto fn) { return visit_dtype(type, [&](auto t) { return f(fn, t); }); });
}

// A pair op's record into a cell's value, and back.
template <class T> void store(CellValue& c, const Located<T>& r) {
  c.value = Scalar::of(r.value);
  c.index = r.index == kNoIndex ? -1 : r.index;
}
template <class T> void store(CellValue& c, const Bounds<T>& r) {
  c.value = Scalar::of(r.min);
  c.maximum = Scalar::of(r.max);
}
template <class T> void load(Located<T>& r, const CellValue& c) {
  r = {c.value.as<T>(), c.index < 0 ? kNoIndex : c.index};
}
template <class T> void load(Bounds<T>& r, const CellValue& c) { r = {c.value.as<T>(), c.maximum.as<T>()}; }

}  // namespace

std::size_t cell_bytes(Op op, DType type, Accumulator acc) {
  if (!is_pair(op)) return size_of(result_dtype(op, type, acc));
  return visit_pair_record(op, type, [](auto fn, auto t) {
    return sizeof(pair_record_t<decltype(fn)::op, decltype(t)>);
  });
}

CellValue read_cell(Op op, DType type, Accumulator acc, const void* bytes) {
  CellValue c;
  if (!is_pair(op)) {
    c.value = scalar_from_bytes(result_dtype(op, type, acc), bytes);
    return c;
  }
  visit_pair_record(op, type, [&](auto fn, auto t) {
    pair_record_t<decltype(fn)::op, decltype(t)> r;
    std::memcpy(&r, bytes, sizeof r);
    store(c, r);
  });
  return c;
}

CellValue combine_cells(Op op, DType type, Accumulator acc, const CellValue& a, const CellValue& b) {
  CellValue c;
  if (!is_pair(op)) {
    c.value = visit_dtype(result_dtype(op, type, acc), [&](auto t) {
      using T = decltype(t);
      return Scalar::of(combine(op, a.value.as<T>(), b.value.as<T>()));
    });
    return c;
  }
  visit_pair_record(op, type, [&](auto fn, auto t) {
    using F = decltype(fn);
    pair_record_t<F::op, decltype(t)> x, y;
    load(x, a);
    load(y, b);
    store(c, F::apply(x, y));
  });
  return c;
}

double bytes_per_second(std::uint64_t n, DType type, double ms) {
  return ms > 0 ? static_cast<double>(n) * static_cast<double>(size_of(type)) / (ms * 1e-3) : 0.0;
}

void fill_identity(Result& r, std::string_view backend, std::uint64_t n, Op op, DType type) {
  r.backend = backend;
  r.n = n;
  r.op = op;
  r.type = type;
  r.bytes_per_s = bytes_per_second(n, type, r.total_ms > 0 ? r.total_ms : r.kernel_ms);
  // A float product's every multiplication rounds the whole product, whatever the order: its
  // error grows with n - 1, not with the chain length.
  if (op == Op::Prod) r.rounding_depth = std::max(r.rounding_depth, n);
  // A float square rounds once before its sum (or not at all, where the sum fuses it).
  if (map_of(op) == ElementMap::Square && is_float(type) && n > 0) r.rounding_depth += 1;
}

bool needs_nan_twin(Op op, const Scalar& value) {
  if (!may_be_all_nan(op, value.type)) return false;
  const double identity = fold_of(op) == Op::Min ? HUGE_VAL : -HUGE_VAL;
  return value.f == identity;
}

Op nan_twin(Op op) {
  if (op == Op::NanMin) return Op::NanMax;
  if (op == Op::NanMax) return Op::NanMin;
  throw std::invalid_argument("xr::nan_twin: " + std::string(to_string(op)) + " has no twin");
}

void settle_with_twin(Result& r, const Scalar& twin) {
  if (needs_nan_twin(nan_twin(r.op), twin)) r.value.f = std::numeric_limits<double>::quiet_NaN();
}

Result run_chunks(ChunkDevice& device, ChunkSource& source, Op op, const RunOptions& options,
                  const KernelInfo& kernel, bool resident) {
  ChunkPlan plan;
  plan.op = op;
  plan.type = source.type();
  plan.options = options;
  plan.options.kernel = kernel.name;
  plan.kernel = &kernel;
  plan.exact = options.exact && exact_applies(op, plan.type) && kernel.exact;
  plan.n = source.size();
  plan.resident = resident;
  plan.memory = source.memory();
  const ChunkPolicy policy = device.policy(plan.type);
  plan.read_ahead = policy.read_ahead;
  size_chunks(plan, policy);

  std::vector<double> kernel_ms, transfer_ms, total_ms;
  ChunkOutcome out;
  double staging_ms = 0;
  try {
    device.begin(plan);
    if (resident) staging_ms = stage_all(device, source, plan);
    for (int it = 0; it < options.warmup + options.repeat; ++it) {
      const auto t0 = Clock::now();
      out = pass(device, source, plan);
      if (it < options.warmup) continue;  // warm-up passes are not timed
      total_ms.push_back(ms_since(t0));
      kernel_ms.push_back(out.kernel_ms);
      transfer_ms.push_back(out.transfer_ms);
    }
  } catch (...) {
    device.abandon();
    throw;
  }

  Result r;
  r.value = out.value;
  r.index = out.index;
  r.maximum = out.maximum;
  r.rounding_depth = out.depth;
  if (plan.exact) set_exact(r, out.exact, plan.type);
  r.kernel = out.kernel;
  r.finish = out.finish;
  r.launches = out.launches;
  r.repeats = options.repeat;
  r.kernel_ms = median(kernel_ms);
  r.transfer_ms = median(transfer_ms) + staging_ms;
  r.chunks = plan.chunks;
  if (!resident) r.total_ms = median(total_ms);
  r.path = device.describe(plan);
  return r;
}

}  // namespace detail

void finalize_result(Result& r, Op op, DType type, std::uint64_t n) {
  r.op = op;
  if (finalize_of(op) == Finalize::None) return;
  r.folded = r.value;
  if (r.exact_state) {
    ExactSum sum;
    sum.merge_raw(*r.exact_state);
    r.value = result_dtype(op, type) == DType::F32 ? Scalar::of(sum.quotient_to_float(n))
                                                   : Scalar::of(sum.quotient_to_double(n));
    return;
  }
  r.value = visit_dtype(r.value.type, [&](auto t) {
    using A = decltype(t);
    return Scalar::of(finalize_value(op, r.value.as<A>(), n));
  });
  if (finalize_of(op) == Finalize::DivideByCount) r.rounding_depth += 1;
}

Result Reducer::reduce(HostArray in, Op op, const RunOptions& options) {
  if (in.n > 0 && in.data == nullptr) throw InvalidArgument("reduce: null data pointer with n > 0");
  ArraySource source(in);
  return reduce(source, op, options);
}

Result Reducer::reduce(ChunkSource& source, Op op, const RunOptions& options) {
  check_options(options);
  const KernelInfo k = kernel(options.kernel);
  check_request(k, op, source.type(), source.size(), backend(), options);
  // Resident or streamed, chosen here: a host device reduces host memory where it lies; a
  // device with memory of its own streams unless the caller asks for a resident copy.
  detail::ChunkDevice& chunks = chunk_device();
  const bool in_memory = source.memory() != nullptr || source.size() == 0;
  const bool resident = in_memory && (options.host_path == HostPath::Resident || chunks.policy(source.type()).host_memory);
  if (options.host_path == HostPath::Resident && !in_memory)
    throw InvalidArgument(backend() + ": host_path Resident needs the input in host memory; " + source.name() +
                          " streams");
  const std::uint64_t bytes = source.size() * size_of(source.type());
  if (resident && options.device_mem_limit && bytes > options.device_mem_limit && !chunks.policy(source.type()).host_memory)
    throw InvalidArgument(backend() + ": a resident input of " + format_bytes(bytes) +
                          " does not fit the device memory limit of " + format_bytes(options.device_mem_limit) +
                          " (the streamed host path takes any size)");
  // A mean of floats runs as their sum, and is divided by the count below; any and all count.
  const Op run = kernel_op(op, source.type());
  Result r;
  if (source.size() == 0) {  // nothing to stage or reduce: the op's empty value
    r.value = empty_scalar(run, result_dtype(run, source.type(), options.accumulator));
    if (options.exact && exact_applies(op, source.type()) && k.exact) detail::set_exact(r, ExactSum::Raw{}, source.type());
    r.kernel = k.name;
    r.finish = "none (empty input)";
    r.repeats = options.repeat;
    r.path = "none";
  } else {
    std::lock_guard lock(mutex_);
    r = detail::run_chunks(chunks, source, run, options, k, resident);
    if (detail::needs_nan_twin(op, r.value)) {
      RunOptions once = options;
      once.warmup = 0;
      once.repeat = 1;
      r.op = op;
      detail::settle_with_twin(r, detail::run_chunks(chunks, source, detail::nan_twin(op), once, k, resident).value);
    }
  }
  finalize_result(r, op, source.type(), source.size());
  detail::fill_identity(r, backend(), source.size(), op, source.type());
  r.device = device();
  detail::testing::apply_broken_kernel(r);
  return r;
}

}  // namespace xr
