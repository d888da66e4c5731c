// What a backend supplies for segmented reductions (xreduce/segments.hpp). Core validates the
// arguments, cuts inputs larger than a job into jobs of whole segments (splitting a segment larger
// than one and combining its parts), handles exact sums through piece states, and fills the record,
// for host input (Reducer::reduce_axis, reduce_segments) and for input already in the backend's
// device memory (the CUDA pointer and cl_mem APIs) alike. A backend reduces one job, gives the
// exact states of pieces, and copies between its device memory and the host. Backends include
// this header; applications never see it.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::detail {

// Memory a segmented reduction reads or writes: host memory, or the backend's device memory (a
// CUDA device pointer; an OpenCL cl_mem), `offset` bytes from `handle`.
struct Memory {
  const void* handle = nullptr;
  std::uint64_t offset = 0;
  bool on_device = false;
  static Memory host(const void* p) { return {p, 0, false}; }
  static Memory device(const void* handle, std::uint64_t offset = 0) { return {handle, offset, true}; }
  // Host memory only: the address.
  const void* address() const { return static_cast<const unsigned char*>(handle) + offset; }
  void* mutable_address() const { return const_cast<void*>(address()); }
  // The memory `bytes` further on.
  Memory at(std::uint64_t bytes) const { return {handle, offset + bytes, on_device}; }
};

// One job: every segment of `layout` over `data`, into `out`. Host jobs (data in host memory) come
// from Reducer's host path; device jobs from the device-memory APIs, where data, offsets and out
// all lie in the backend's device memory.
struct SegmentJob {
  Op op = Op::Sum;
  DType type = DType::F32;
  DType result_type = DType::F32;  // result_dtype(op, type, options.accumulator)
  RunOptions options;              // options.kernel: a checked name of kernels()
  SegmentLayout layout;            // Offsets: layout.offsets in host memory, relative to data; nullptr
                                   // where the host has not read them (an unsynchronised device job)
  Memory data;                     // n elements
  std::uint64_t n = 0;             // >= layout.span() (unsynchronised Offsets jobs: offsets are clamped to n)
  Memory offsets;                  // Offsets layouts of device jobs: count + 1 int64 values on the device
  // layout.count records of segment_record_bytes(op, type, accumulator) bytes: values of
  // result_type for the folds; for a pair op pair_record_t<op, T> over the input type, an index
  // within its segment (0 .. length - 1; -1 for an empty segment, whose record is
  // empty_segment_record's).
  Memory out;
  // true: warmup + repeat passes, timed, and the values in `out` when reduce() returns.
  // false (device jobs only): one pass enqueued in order on the device's stream or queue, untimed;
  // reduce() returns at once.
  bool synchronous = true;
};

struct SegmentOutcome {
  double kernel_ms = 0;     // median device time of one pass over the job (options.repeat passes
                            // after options.warmup)
  double transfer_ms = 0;   // host<->device copies (data, offsets, values) of one pass
  int launches = 0;         // kernel launches (or parallel regions) of one pass
  std::string kernel;       // what ran ("auto:warp")
  std::string finish;       // how parts of one segment combined ("one block", "last block", ...)
  std::uint64_t depth = 0;  // float sums: the most roundings behind any one value (0: unknown)
};

// Exact sums per segment go through pieces: a piece is `count` elements of one segment,
// data[first + k * step] for k < count, at most kExactPieceElements of them. A backend gives
// each piece's exact state (as one thread would add it up); core merges the states of each
// segment's pieces and rounds once, so every backend gives the same bits.
struct ExactPiece {
  std::int64_t first = 0, count = 0, step = 1;
};
inline constexpr std::int64_t kExactPieceElements = std::int64_t{1} << 16;

// A piece's state is the window of ExactSum limbs its type can reach, then the flags: f32 terms
// m * 2^e (m < 2^24, -149 <= e <= 104) reach limbs 28..37, f64 terms limbs 0..67. Each limb takes
// at most kExactPieceElements digits below 2^32, so no carry is needed on the device.
constexpr int exact_window_first(DType type) { return type == DType::F32 ? 28 : 0; }
constexpr int exact_window_limbs(DType type) { return type == DType::F32 ? 10 : ExactSum::kLimbs; }
constexpr int exact_piece_words(DType type) { return exact_window_limbs(type) + 1; }

// A piece's state on the host: the definition the device kernels follow. The digits of a term
// go where ExactSum puts them (xreduce/exact.hpp), relative to the window's first limb.
template <class T> void exact_piece_state(const T* data, const ExactPiece& piece, std::int64_t* words) {
  constexpr DType type = dtype_of<T>;
  constexpr int limbs = exact_window_limbs(type), first = exact_window_first(type);
  constexpr int frac = std::numeric_limits<T>::digits - 1;                     // 23, 52
  constexpr int bias = std::numeric_limits<T>::max_exponent - 1 + frac;        // 150, 1075
  constexpr int digits = sizeof(T) == 4 ? 2 : 3;
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits exp_max = (Bits{1} << (8 * sizeof(T) - 1 - frac)) - 1;
  for (int i = 0; i <= limbs; ++i) words[i] = 0;
  std::uint32_t flags = piece.count ? ExactSum::kFlagAny : 0;
  for (std::int64_t k = 0; k < piece.count; ++k) {
    const T x = data[piece.first + k * piece.step];
    Bits bits;
    std::memcpy(&bits, &x, sizeof bits);
    const bool negative = bits >> (8 * sizeof(T) - 1);
    const Bits ex = (bits >> frac) & exp_max, fraction = bits & ((Bits{1} << frac) - 1);
    if (bits != (Bits{1} << (8 * sizeof(T) - 1))) flags |= ExactSum::kFlagNotNegZero;
    if (ex == exp_max) {
      flags |= fraction ? ExactSum::kFlagNaN : negative ? ExactSum::kFlagNegInf : ExactSum::kFlagPosInf;
      continue;
    }
    const Bits m = fraction | (Bits{ex != 0} << frac);
    // x = m * 2^(max(ex, 1) - bias): m's bit 0 lies `pos` bits above 2^-1074.
    const int pos = static_cast<int>(ex ? ex : 1) - bias + 1074;
    const unsigned __int128 shifted = static_cast<unsigned __int128>(m) << (pos % 32);
    for (int d = 0; d < digits; ++d) {
      const auto digit = static_cast<std::int64_t>(static_cast<std::uint32_t>(shifted >> (32 * d)));
      words[pos / 32 - first + d] += negative ? -digit : digit;
    }
  }
  words[limbs] = flags;
}

// Adds a piece's state to a segment's sum.
void merge_piece(ExactSum& sum, const std::int64_t* words, DType type);

class SegmentDevice {
 public:
  virtual ~SegmentDevice() = default;
  // The strategies, auto first, then each strategy, then baselines (cub), with the layouts each
  // reduces and the (op, type) pairs it supports.
  virtual std::vector<KernelInfo> kernels() const = 0;
  // The largest host job in input bytes (0: no limit): core cuts larger host inputs.
  virtual std::uint64_t max_job_bytes(const RunOptions& options) const = 0;
  // Reduces every segment of the job (not called for exact sums).
  virtual SegmentOutcome reduce(const SegmentJob& job) = 0;
  // Exact states of pieces of `data` (n elements of `type`, a float type; host or device memory as
  // for jobs): piece p's exact_piece_words(compute_dtype(type)) words at words + p * that (host
  // memory). f16 and bf16 pieces have the states of their values widened to f32.
  virtual SegmentOutcome exact_pieces(Memory data, std::uint64_t n, DType type, std::span<const ExactPiece> pieces,
                                      std::int64_t* words, const RunOptions& options) = 0;
  // Exact sums of short segments (layout: Rows or Columns of at most kShortExactTerms terms,
  // short_exact.hpp), each in one 128-bit integer rounded where it is: result_dtype(Sum, type)
  // values into `out` (host memory for host input, the device's for input in its memory), except
  // the segments whose terms span too many binades for it, whose indices go to `missed` (any
  // order) for the pieces path. data as for exact_pieces. nullopt where the backend has no such
  // kernel for this data and out: core then sums every segment through pieces.
  virtual std::optional<SegmentOutcome> exact_short_segments(Memory data, std::uint64_t n, DType type,
                                                            const SegmentLayout& layout, Memory out,
                                                            std::vector<std::uint64_t>& missed,
                                                            const RunOptions& options) {
    (void)data, (void)n, (void)type, (void)layout, (void)out, (void)missed, (void)options;
    return std::nullopt;
  }
  // A mapped op's last step on a device job's output (Finalize: a mean's division, any's and all's
  // test of the count), in order after the job: each of job.layout.count values of
  // job.result_type through finalize_folded with its segment's length, as finalize_value does.
  // Backends that have a step say so; core refuses the op's segments in device memory on the others.
  virtual bool finalizes_on_device(Finalize step) const { return step == Finalize::None; }
  virtual void finalize(const SegmentJob& job, Finalize step) { (void)job, (void)step; }
  // Copies between the device's memory and the host, in order with the work enqueued before, and
  // waits for them; the copy's time in ms. A host-memory device (OpenMP) copies with memcpy.
  virtual double read(Memory from, void* to, std::uint64_t bytes) = 0;
  virtual double write(const void* from, Memory to, std::uint64_t bytes) = 0;

  // The input bytes of the largest host job (or batch of exact pieces) of the call under way, set
  // by core before its jobs run (0: none, or unknown). A backend that copies host jobs into a
  // buffer of its own sizes it to this once: replaced at every job a little larger than the one
  // before (the segments of a streamed input), each freed buffer stays in the host allocator's
  // heap (glibc, PoCL's buffers: 4 MiB jobs over a 128 MiB file took 8 more jobs' worth).
  std::uint64_t host_job_bytes = 0;
};

// Segment i of a Rows or Offsets layout: elements [begin, end).
struct Range {
  std::uint64_t begin, end;
};
inline Range segment_range(const SegmentLayout& l, std::uint64_t i) {
  if (l.kind == SegmentKind::Rows) return {i * l.stride, i * l.stride + l.length};
  return {static_cast<std::uint64_t>(l.offsets[i]), static_cast<std::uint64_t>(l.offsets[i + 1])};
}
// The number of elements of segment i of any layout.
inline std::uint64_t segment_length(const SegmentLayout& l, std::uint64_t i) {
  if (l.kind == SegmentKind::Columns) return l.length;
  const Range r = segment_range(l, i);
  return r.end - r.begin;
}

// The record of an empty segment of (op, type, acc) into `bytes` (segment_record_bytes of them):
// empty_segment_value, and for argmin and argmax index -1, for minmax empty_segment_maximum.
void empty_segment_record(Op op, DType type, Accumulator acc, void* bytes);

// Checks a segmented call before anything runs: options, the strategy (a known name that supports
// op and type and reduces the layout's kind). The strategy's KernelInfo.
KernelInfo check_segment_call(SegmentDevice& device, std::string_view backend, const SegmentLayout& layout, Op op,
                              DType type, const RunOptions& options);

// A host input's segmented reduction, in jobs of at most max_job_bytes (Reducer::reduce_axis and
// reduce_segments).
SegmentedResult run_segments(SegmentDevice& device, std::string_view backend, const std::string& device_name,
                             ChunkSource& source, const SegmentLayout& layout, Op op, const RunOptions& options);

// A segmented reduction of input in the device's memory into its memory: the device-memory APIs'
// one path. `layout` of kind Offsets has count set and offsets null: the offsets are the count + 1
// int64 values at `offsets` on the device. Synchronous calls read the offsets back and check them
// before anything runs, run warmup + repeat timed passes and return the record (Result::value
// unused); exact sums merge and round the piece states on the host and write the values to `out`.
// Asynchronous calls (synchronous = false) enqueue one pass and return an empty record at once;
// exact sums throw InvalidArgument.
struct DeviceSegmentCall {
  Memory data;
  std::uint64_t n = 0;
  DType type = DType::F32;
  SegmentLayout layout;
  Memory offsets;
  Memory out;
  Op op = Op::Sum;
  bool synchronous = true;
};
Result run_device_segments(SegmentDevice& device, std::string_view backend, const std::string& device_name,
                           const DeviceSegmentCall& call, const RunOptions& options);

}  // namespace xr::detail
