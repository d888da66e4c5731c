// Streamed sources on host backends: Reducer::reduce(ChunkSource&) and the default run_stream.
#include <chrono>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

namespace xr {

Result Reducer::reduce(ChunkSource& source, Op op, const RunOptions& options) {
  check_options(options);
  const KernelInfo k = kernel(options.kernel);
  check_request(k, op, source.type(), source.size(), backend(), options.exact);
  Result r = run_stream(source, op, options, k);
  r.backend = backend();
  r.n = source.size();
  r.op = op;
  r.type = source.type();
  return r;
}

ExactSum::Raw Reducer::run_exact_state(HostArray, const RunOptions&, const KernelInfo& kernel) {
  throw InvalidArgument(backend() + " kernel '" + kernel.name + "' has no streamed exact mode");
}

Result Reducer::run_stream(ChunkSource& source, Op op, const RunOptions& options, const KernelInfo& kernel) {
  const DType type = source.type();
  const std::uint64_t n = source.size();
  if (const void* memory = source.memory(); memory || n == 0) {
    Result r = run(HostArray{memory, n, type}, op, options, kernel);
    r.path = "in place";
    return r;
  }
  const std::size_t elem = size_of(type);
  RunOptions host = options;
  host.device_mem_limit = 0;  // no device here: the chunk is only the host buffers' size
  const std::uint64_t chunk = std::min(n, chunk_elements(host, elem, 2));
  const std::uint64_t chunks = (n + chunk - 1) / chunk;
  std::vector<unsigned char> buffer[2] = {std::vector<unsigned char>(chunk * elem),
                                          std::vector<unsigned char>(chunk * elem)};
  RunOptions once = options;
  once.warmup = 0;
  once.repeat = 1;
  const bool exact = options.exact && exact_applies(op, type);

  using clock = std::chrono::steady_clock;
  Result out;
  StreamTimes times;
  for (int it = 0; it < options.warmup + options.repeat; ++it) {
    const auto t0 = clock::now();
    ExactSum exact_sum;
    Result sum;  // the chunks' results so far, combined in order
    double busy_ms = 0;
    source.read(0, chunk, buffer[0].data());
    for (std::uint64_t k = 0; k < chunks; ++k) {
      const std::uint64_t first = k * chunk, len = std::min(chunk, n - first);
      ChunkReader reader;  // the next chunk, while this one is reduced
      if (k + 1 < chunks)
        reader.start(source, first + chunk, std::min(chunk, n - first - chunk), buffer[(k + 1) % 2].data());
      const HostArray piece{buffer[k % 2].data(), len, type};
      if (exact) {
        const auto c0 = clock::now();
        exact_sum.merge_raw(run_exact_state(piece, once, kernel));
        busy_ms += std::chrono::duration<double, std::milli>(clock::now() - c0).count();
      } else {
        Result r = run(piece, op, once, kernel);
        busy_ms += r.kernel_ms;
        if (k == 0) {
          sum = r;
        } else {
          sum.value = visit_dtype(r.value.type, [&](auto t) {
            using T = decltype(t);
            return Scalar::of(combine(op, sum.value.as<T>(), r.value.as<T>()));
          });
          sum.launches += r.launches;
          sum.rounding_depth = std::max(sum.rounding_depth, r.rounding_depth);
        }
      }
      reader.join();
    }
    if (it >= options.warmup) {  // warm-up runs are not timed
      times.total_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
      times.kernel_ms.push_back(busy_ms);
      times.transfer_ms.push_back(0);
    }
    if (exact) {
      sum.value = type == DType::F32 ? Scalar::of(exact_sum.to_float()) : Scalar::of(exact_sum.to_double());
      sum.device = device();
      sum.kernel = kernel.name + ":exact";
      sum.finish = "exact: chunk states merged on the host, rounded once";
      sum.launches = static_cast<int>(chunks);
      sum.rounding_depth = 1;
    } else {
      sum.rounding_depth += chunks - 1;  // the host combines the chunk results in order
      if (chunks > 1) sum.finish += " + host combine of " + std::to_string(chunks) + " chunks";
    }
    out = sum;
  }
  times.fill(out, n, type, chunks);
  out.path = "stream: " + std::to_string(chunks) + " chunks of " + format_bytes(chunk * elem) +
             ", read on a second thread into 2 host buffers";
  return out;
}

}  // namespace xr
