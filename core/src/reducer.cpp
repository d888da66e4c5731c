#include <algorithm>
#include <string>
#include <thread>

#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/semantics.hpp"

namespace xr {

bool KernelInfo::supports(Op op, DType type) const {
  return std::find(ops.begin(), ops.end(), op) != ops.end() &&
         std::find(types.begin(), types.end(), type) != types.end();
}

void check_request(const KernelInfo& kernel, Op op, DType type, std::uint64_t n, std::string_view backend,
                   bool exact) {
  if (kernel.kind != KernelKind::Probe && !kernel.supports(op, type))
    throw InvalidArgument(std::string(backend) + " kernel '" + kernel.name + "' does not support " +
                          std::string(to_string(op)) + " on " + std::string(to_string(type)));
  if (exact && op == Op::Prod && is_float(type))
    throw InvalidArgument("exact mode covers sums; a float product has no exact mode");
  if (exact && exact_applies(op, type) && !kernel.exact && kernel.kind != KernelKind::Probe)
    throw InvalidArgument(std::string(backend) + " kernel '" + kernel.name + "' has no exact mode");
  require_value_exists(op, n);
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

Result Reducer::reduce(HostArray in, Op op, const RunOptions& options) {
  if (in.n > 0 && in.data == nullptr) throw InvalidArgument("reduce: null data pointer with n > 0");
  check_options(options);
  const KernelInfo k = kernel(options.kernel);
  check_request(k, op, in.type, in.n, backend(), options.exact);
  Result r = run(in, op, options, k);
  if (r.path.empty()) r.path = "in place";
  r.backend = backend();
  r.n = in.n;
  r.op = op;
  r.type = in.type;
  return r;
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

void StreamTimes::fill(Result& r, std::uint64_t n, DType type, std::uint64_t chunks) const {
  r.repeats = static_cast<int>(total_ms.size());
  r.kernel_ms = median(kernel_ms);
  r.transfer_ms = median(transfer_ms);
  r.total_ms = median(total_ms);
  r.chunks = chunks;
  r.bytes_per_s = r.total_ms > 0 ? double(n) * double(size_of(type)) / (r.total_ms * 1e-3) : 0;
}

double median(std::vector<double> sample) {
  if (sample.empty()) return 0.0;
  const auto mid = sample.begin() + static_cast<std::ptrdiff_t>(sample.size() / 2);
  std::nth_element(sample.begin(), mid, sample.end());
  if (sample.size() % 2) return *mid;
  return (*mid + *std::max_element(sample.begin(), mid)) / 2.0;
}

}  // namespace xr
