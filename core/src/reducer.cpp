#include <algorithm>
#include <string>
#include <thread>

#include "pipeline.hpp"
#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/semantics.hpp"

namespace xr {

bool KernelInfo::supports(Op op, DType type) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end() &&
         std::find(types.begin(), types.end(), type) != types.end() &&
         std::find(left_out.begin(), left_out.end(), std::pair{op, type}) == left_out.end();
}

void check_exact_request(Op op, DType type) {
  if (is_pair(op))
    throw InvalidArgument("exact mode covers sums; " + std::string(to_string(op)) +
                          " compares values and is exact without it");
  if (is_mapped(op) && !exact_applies(op, type))
    throw InvalidArgument(finalize_of(op) == Finalize::DivideByCount
                              ? "exact mode covers the means of floats; the mean of " + std::string(to_string(type)) +
                                    " sums its values in f64 (as NumPy's) and has no exact mode"
                              : "exact mode covers sum and mean; " + std::string(to_string(op)) + " has no exact mode");
  if (op == Op::Prod && is_float(type))
    throw InvalidArgument("exact mode covers sums; a float product has no exact mode");
}

void check_request(const KernelInfo& kernel, Op op, DType type, std::uint64_t n, std::string_view backend,
                   const RunOptions& options) {
  const bool exact = options.exact;
  if (kernel.kind != KernelKind::Probe && !kernel.supports(op, type))
    throw InvalidArgument(std::string(backend) + " kernel '" + kernel.name + "' does not support " +
                          std::string(to_string(op)) + " on " + std::string(to_string(type)));
  if (exact) check_exact_request(op, type);
  if (exact && exact_applies(op, type) && !kernel.exact && kernel.kind != KernelKind::Probe)
    throw InvalidArgument(std::string(backend) + " kernel '" + kernel.name + "' has no exact mode");
  if (options.accumulator == Accumulator::Native && is_half(type))
    throw InvalidArgument("the native accumulator does not apply to " + std::string(to_string(type)) +
                          ": its sums and products accumulate in f32, its min and max are exact");
  require_value_exists(op, n);
}

bool BlockRule::accepts(unsigned b) const {
  if (!only.empty()) {
    for (unsigned o : only)
      if (o == b) return true;
    return false;
  }
  return b >= min && b <= max && (multiple <= 1 || b % multiple == 0);
}

std::string BlockRule::describe() const {
  if (!only.empty()) {
    if (only.size() == 1 && only[0] == 0) return "only its own (block size 0)";
    std::string s;
    for (unsigned o : only) s += (s.empty() ? "" : ", ") + std::to_string(o);
    return s;
  }
  std::string s = std::to_string(min) + ".." + std::to_string(max);
  if (multiple > 1) s += " in multiples of " + std::to_string(multiple);
  return s;
}

KernelInfo Reducer::kernel(std::string_view name) const {
  const auto list = kernels();
  for (const auto& k : list)
    if (k.name == name) return k;
  std::string known;
  for (const auto& k : list) known += (known.empty() ? "" : ", ") + k.name;
  throw InvalidArgument("unknown " + backend() + " kernel '" + printable(name) + "' (known: " + known + ")");
}

unsigned max_threads() { return 64 * std::max(1u, std::thread::hardware_concurrency()); }

void check_options(const RunOptions& options) {
  if (options.repeat < 1) throw InvalidArgument("reduce: repeat must be at least 1");
  if (options.warmup < 0) throw InvalidArgument("reduce: warmup must not be negative");
  if (options.threads > max_threads())
    throw InvalidArgument("reduce: " + std::to_string(options.threads) + " threads are more than the limit of " +
                          std::to_string(max_threads()) + " (64 per hardware thread of this machine)");
}

std::uint64_t chunk_elements(const RunOptions& options, std::size_t elem_bytes, unsigned buffers,
                             std::uint64_t default_bytes) {
  const std::uint64_t limit = options.device_mem_limit;
  const std::uint64_t host_limit = host_memory_bytes() / 2;
  if (options.chunk_elements > host_limit / (elem_bytes * buffers))
    throw InvalidArgument(std::to_string(buffers) + " chunks of " + std::to_string(options.chunk_elements) + " " +
                          std::to_string(elem_bytes) + "-byte elements need more than " + format_bytes(host_limit) +
                          ", half of this machine's memory");
  if (options.chunk_elements) {
    if (limit && options.chunk_elements > limit / (elem_bytes * buffers))
      throw InvalidArgument(std::to_string(buffers) + " chunks of " + std::to_string(options.chunk_elements) +
                            " elements need more than the device memory limit of " + format_bytes(limit));
    return options.chunk_elements;
  }
  std::uint64_t bytes = default_bytes;
  if (limit) {
    bytes = std::min(bytes, limit / buffers);
    if (bytes < elem_bytes)
      throw InvalidArgument("a device memory limit of " + format_bytes(limit) + " cannot hold " +
                            std::to_string(buffers) + " chunks of one " + std::to_string(elem_bytes) +
                            "-byte element");
  }
  return std::max<std::uint64_t>(1, bytes / elem_bytes);
}

double median(std::vector<double> sample) {
  if (sample.empty()) return 0.0;
  const auto mid = sample.begin() + static_cast<std::ptrdiff_t>(sample.size() / 2);
  std::nth_element(sample.begin(), mid, sample.end());
  if (sample.size() % 2) return *mid;
  return (*mid + *std::max_element(sample.begin(), mid)) / 2.0;
}

}  // namespace xr
