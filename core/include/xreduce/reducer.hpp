// The backend-neutral interface: one Reducer per backend and device.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/export.hpp"
#include "xreduce/result.hpp"
#include "xreduce/types.hpp"

namespace xr {

class ChunkSource;  // xreduce/source.hpp
struct HostMatrix;  // xreduce/segments.hpp
struct MatrixShape;
struct SegmentedResult;
namespace detail {
class ChunkDevice;    // core/src/pipeline.hpp
class SegmentDevice;  // core/src/segment_device.hpp
}

// How a segmented reduction finds its values in the input (xreduce/segments.hpp).
enum class SegmentKind : std::uint8_t { Rows, Columns, Offsets };

enum class KernelKind : std::uint8_t {
  Rung,      // one step of the ladder
  Auto,      // picks the fastest of our own rungs
  Baseline,  // a reference implementation that is not ours (cub): cross-checked, not chosen
  Probe,     // measures a machine limit (stream_read): its value is not a reduction
};

// Which block (work-group) sizes a rung accepts: [min, max] in steps of `multiple`, or exactly
// the sizes in `only` (0 there: the rung's own choice, as CUB makes).
struct XR_API BlockRule {
  unsigned min = 1, max = 1024, multiple = 1;
  std::vector<unsigned> only;
  unsigned preferred = 0;  // what RunOptions::block_size 0 runs (0: the device's choice)
  bool accepts(unsigned block) const;
  std::string describe() const;  // "32..1024 in multiples of 32", "128, 256, 512"
};

struct XR_API KernelInfo {
  std::string name;
  std::string note;  // what it improves over the previous rung, what it still costs
  KernelKind kind = KernelKind::Rung;
  std::vector<Op> ops;
  std::vector<DType> types;
  std::vector<std::pair<Op, DType>> left_out;  // pairs of ops x types it does not take
  bool exact = false;  // honours RunOptions::exact for f32/f64 sums
  BlockRule blocks;    // RunOptions::block_size values it accepts, and its default
  // Segmented reductions (Reducer::segment_kernels): the layouts the strategy reduces.
  std::vector<SegmentKind> layouts;
  bool supports(Op op, DType type) const;
  bool reduces(SegmentKind kind) const;
};

// How a device backend (CUDA, OpenCL) treats host data (Reducer::reduce on a host array).
enum class HostPath : std::uint8_t {
  // Chunks go through pinned staging buffers to the device, the copy of one overlapping the
  // reduction of the one before; chunk results combine on the device in order. Any size fits
  // (RunOptions::device_mem_limit bounds device memory). Every repetition moves the data again,
  // and Result::total_ms is the end-to-end time.
  Stream,
  // The whole input is copied to the device once, then warmup + repeat reductions run on it:
  // kernel studies (the ladder). The input must fit in device memory and device_mem_limit.
  Resident,
};

struct RunOptions {
  std::string kernel = "auto";
  Accumulator accumulator = Accumulator::Wide;
  unsigned block_size = 0;        // threads per block / work-group size; 0: the rung's default
  std::uint64_t grid_size = 0;    // blocks / work-groups of the first pass; 0: the rung's default
  unsigned coarsening = 0;        // elements per work-item before the tree; 0: the rung's default
  unsigned threads = 0;           // OpenMP threads; 0: the runtime's default; at most max_threads()
  // f32/f64 sums return the correctly rounded exact sum (round to nearest even): the same
  // bits on every backend, kernel, launch shape and thread count. Integer reductions, min and
  // max are exact anyway; a float product has no exact mode (InvalidArgument).
  bool exact = false;
  int warmup = 0;                 // untimed runs first
  int repeat = 1;                 // timed runs; Result times are their medians
  // Host data on CUDA and OpenCL, and every streamed source (Reducer::reduce(ChunkSource&)):
  HostPath host_path = HostPath::Stream;
  // Bytes of device memory the host path may hold for input chunks and chunk results
  // (0: no limit beyond the defaults: 3 chunks of 64 MiB; CLI --device-mem-limit).
  std::uint64_t device_mem_limit = 0;
  // Elements per chunk of a streamed input (0: the default of 64 MiB, chosen from the transfer
  // measurements in docs/performance.md, or less when device_mem_limit asks for less).
  std::uint64_t chunk_elements = 0;
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

// Threads: every function of xreduce may be called from any number of threads at once, and a
// Reducer may be shared by them: concurrent calls on one Reducer each return their own caller's
// result, one after the other (a reducer's staging buffers and result cells serve one reduction
// at a time). For work that overlaps, give each thread a Reducer of its own: OpenMP reducers
// then run in parallel, each with its own team of RunOptions::threads, and CUDA and OpenCL
// reducers each on their own stream or in-order queue. Device discovery happens once per
// process. A ChunkSource is read by one reduction at a time (ArraySource, FileSource and
// BufferSource may be shared, their reads are independent).
class XR_API Reducer {
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

  // A streamed input (a file, or a host array read chunk by chunk): memory stays bounded by
  // a few chunks whatever the source's size, and reading overlaps the reduction. Each
  // repetition reads the source again. Results equal those of the whole input in memory:
  // exactly for integers, min, max and exact mode; plain float sums within the bound that
  // Result::rounding_depth states (chunk results are combined in order).
  Result reduce(ChunkSource& source, Op op, const RunOptions& options = {});

  // The KernelInfo named `name`; throws InvalidArgument listing the known names.
  KernelInfo kernel(std::string_view name) const;

  // Segmented reductions (xreduce/segments.hpp): one value per row or column of a 2-D array
  // (axis 1: per row, axis 0: per column), or per segment [offsets[i], offsets[i + 1]) of a 1-D
  // array. RunOptions::kernel names one of segment_kernels() ("auto": chosen by shape). Inputs
  // larger than the device's memory, and streamed sources, go through in pieces of whole
  // segments (a segment larger than a piece is split and its parts combined in order).
  // InvalidArgument names the problem and its position (offsets that decrease, run past the
  // input or start below 0; a shape that overflows; a stride below the row length).
  SegmentedResult reduce_axis(const HostMatrix& in, int axis, Op op, const RunOptions& options = {});
  SegmentedResult reduce_axis(ChunkSource& source, const MatrixShape& shape, int axis, Op op,
                              const RunOptions& options = {});
  SegmentedResult reduce_segments(HostArray in, std::span<const std::int64_t> offsets, Op op,
                                  const RunOptions& options = {});
  SegmentedResult reduce_segments(ChunkSource& source, std::span<const std::int64_t> offsets, Op op,
                                  const RunOptions& options = {});
  // The strategies of segmented reductions, with the layouts each reduces; auto and baselines included.
  std::vector<KernelInfo> segment_kernels();
  // The segment strategy named `name`; throws InvalidArgument listing the known names.
  KernelInfo segment_kernel(std::string_view name);

 protected:
  // The backend's device as the chunk pipeline drives it (core/src/pipeline.hpp): every host
  // input, resident or streamed, goes through it.
  virtual detail::ChunkDevice& chunk_device() = 0;
  // The backend's segmented reductions (core/src/segment_device.hpp).
  virtual detail::SegmentDevice& segment_device() = 0;

 private:
  std::mutex mutex_;  // one reduction at a time: the device's slots and cells belong to the reducer
};

// The most threads RunOptions::threads may ask for: 64 per hardware thread of this machine
// (OpenMP runtimes fail in their own ways far beyond: libgomp overflowed its stack at 100,000).
XR_API unsigned max_threads();
// Throws InvalidArgument for options out of range: repeat < 1, warmup < 0, threads above max_threads().
XR_API void check_options(const RunOptions& options);

// True when RunOptions::exact changes the computation: a float sum or mean (f16, bf16, f32, f64).
// An exact mean is the exact sum divided by the count, rounded once (ExactSum::quotient_to_double).
constexpr bool exact_applies(Op op, DType type) {
  return (op == Op::Sum || finalize_of(op) == Finalize::DivideByCount) && is_float(type);
}

// Throws InvalidArgument where exact mode was asked for an (op, type) that has none: the pair
// ops, float products, the mapped ops but the means of floats (min and max are exact anyway).
XR_API void check_exact_request(Op op, DType type);

// Mapped op `op`'s last step (Finalize) on a result whose value is its fold's over n elements of
// `type` (a mean's sum, of a run of its kernel_op, or of results combined by the fold): the mean
// divides the value by n (one more rounding), or, where the result holds the exact state, rounds
// the state's quotient once. Sets Result::op, keeps the fold's value in Result::folded and the
// state as the sum's. Does nothing but set op for ops without a last step.
XR_API void finalize_result(Result& r, Op op, DType type, std::uint64_t n);

// The chunk of a streamed input, in elements of `elem_bytes` each: options.chunk_elements, or the
// default bytes, lowered so that `buffers` chunks fit in options.device_mem_limit (when set).
// Throws InvalidArgument when the limit cannot hold `buffers` elements, when chunk_elements
// does not fit it, or when `buffers` chunks would take more than half of the host's memory
// (each chunk passes through host buffers of its size).
XR_API std::uint64_t chunk_elements(const RunOptions& options, std::size_t elem_bytes, unsigned buffers,
                                    std::uint64_t default_bytes = std::uint64_t{64} << 20);

// Median of a non-empty sample (the mean of the middle two for even sizes).
XR_API double median(std::vector<double> sample);

}  // namespace xr
