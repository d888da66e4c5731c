// The backend-neutral interface: one Reducer per backend and device.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/result.hpp"
#include "xreduce/types.hpp"

namespace xr {

enum class KernelKind : std::uint8_t {
  Rung,      // one step of the ladder
  Auto,      // picks the fastest of our own rungs
  Baseline,  // a reference implementation that is not ours (cub): cross-checked, not chosen
  Probe,     // measures a machine limit (stream_read): its value is not a reduction
};

struct KernelInfo {
  std::string name;
  std::string note;  // what it improves over the previous rung, what it still costs
  KernelKind kind = KernelKind::Rung;
  std::vector<Op> ops;
  std::vector<DType> types;
  bool exact = false;  // honours RunOptions::exact for f32/f64 sums
  bool supports(Op op, DType type) const;
};

struct RunOptions {
  std::string kernel = "auto";
  Accumulator accumulator = Accumulator::Wide;
  unsigned block_size = 0;        // threads per block / work-group size; 0: the rung's default
  std::uint64_t grid_size = 0;    // blocks / work-groups of the first pass; 0: the rung's default
  unsigned coarsening = 0;        // elements per work-item before the tree; 0: the rung's default
  unsigned threads = 0;           // OpenMP threads; 0: the runtime's default
  // f32/f64 sums return the correctly rounded exact sum (round to nearest even): the same
  // bits on every backend, kernel, launch shape and thread count. Integer reductions, min and
  // max are exact anyway; a float product has no exact mode (InvalidArgument).
  bool exact = false;
  int warmup = 0;                 // untimed runs first
  int repeat = 1;                 // timed runs; Result times are their medians
};

// A view of host memory: the type-erased form of std::span<const T>.
struct HostArray {
  const void* data = nullptr;
  std::uint64_t n = 0;
  DType type = DType::F32;
  template <class T> static HostArray of(std::span<const T> s) {
    return {s.data(), s.size(), dtype_of<T>};
  }
};

class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual std::string backend() const = 0;
  virtual std::string device() const = 0;
  // The ladder in order, auto and baselines included.
  virtual std::vector<KernelInfo> kernels() const = 0;

  // Checks the arguments (known kernel that supports op and type, min/max of nothing is
  // EmptyInput), then runs the backend.
  Result reduce(HostArray in, Op op, const RunOptions& options = {});
  template <class T> Result reduce(std::span<const T> data, Op op, const RunOptions& options = {}) {
    return reduce(HostArray::of(data), op, options);
  }
  template <class T> Result reduce(const std::vector<T>& data, Op op, const RunOptions& options = {}) {
    return reduce(HostArray::of(std::span<const T>(data)), op, options);
  }

  // The KernelInfo named `name`; throws InvalidArgument listing the known names.
  KernelInfo kernel(std::string_view name) const;

 protected:
  // Arguments already checked. Fills every Result field but backend/n/op/type, which the
  // caller sets.
  virtual Result run(HostArray in, Op op, const RunOptions& options, const KernelInfo& kernel) = 0;
};

// Throws InvalidArgument unless `kernel` supports (op, type) (and exact mode, when asked for
// a float sum); EmptyInput for min/max of nothing.
void check_request(const KernelInfo& kernel, Op op, DType type, std::uint64_t n, std::string_view backend,
                   bool exact = false);

// True when RunOptions::exact changes the computation: an f32 or f64 sum.
constexpr bool exact_applies(Op op, DType type) { return op == Op::Sum && is_float(type); }

// Median of a non-empty sample (the mean of the middle two for even sizes).
double median(std::vector<double> sample);

}  // namespace xr
