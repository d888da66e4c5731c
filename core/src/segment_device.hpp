// What a backend supplies for segmented reductions (xreduce/segments.hpp). Core validates the
// arguments, cuts inputs larger than a job into jobs of whole segments (splitting a segment larger
// than one and combining its parts), handles exact sums through piece states, and fills the record;
// a backend reduces one job of host data, or gives the exact states of pieces. Backends include
// this header; applications never see it.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <string>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"

namespace xr::detail {

// One job: every segment of `layout` over `data`, into `out`.
struct SegmentJob {
  Op op = Op::Sum;
  DType type = DType::F32;
  DType result_type = DType::F32;  // result_dtype(op, type, options.accumulator)
  RunOptions options;              // options.kernel: a checked name of segment_kernels()
  SegmentLayout layout;            // Offsets: in host memory, relative to data
  const void* data = nullptr;      // host memory, n elements
  std::uint64_t n = 0;             // >= layout.span()
  void* out = nullptr;             // host memory: layout.count values of result_type
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
XR_API void merge_piece(ExactSum& sum, const std::int64_t* words, DType type);

class SegmentDevice {
 public:
  virtual ~SegmentDevice() = default;
  // The strategies, auto first, then each strategy, then baselines (cub), with the layouts each
  // reduces and the (op, type) pairs it supports.
  virtual std::vector<KernelInfo> kernels() const = 0;
  // The largest job in input bytes (0: no limit): core cuts larger inputs.
  virtual std::uint64_t max_job_bytes(const RunOptions& options) const = 0;
  // Reduces every segment of the job (not called for exact sums).
  virtual SegmentOutcome reduce(const SegmentJob& job) = 0;
  // Exact states of pieces of `data` (n elements of f32 or f64, host memory): piece p's
  // exact_piece_words(type) words at words + p * exact_piece_words(type).
  virtual SegmentOutcome exact_pieces(const void* data, std::uint64_t n, DType type,
                                      std::span<const ExactPiece> pieces, std::int64_t* words,
                                      const RunOptions& options) = 0;
};

}  // namespace xr::detail
