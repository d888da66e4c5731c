// Launcher of k_exact_pieces (kernels_cu/segments_exact.cuh): the exact states of pieces of
// segments, word for word those of exact_piece_state (core/src/segment_device.hpp; f16 and bf16:
// of their values widened to f32).
#include <climits>
#include <algorithm>
#include <cstddef>

#include "arith.hpp"
#include "check.hpp"
#include "kernels_cu/segments_exact.cuh"
#include "segments.hpp"

namespace xr::cuda::detail {

namespace ks = xr::kern::seg;
using xr::detail::ExactPiece;

static_assert(sizeof(ks::PieceRef) == sizeof(ExactPiece) && offsetof(ks::PieceRef, first) == offsetof(ExactPiece, first) &&
                  offsetof(ks::PieceRef, count) == offsetof(ExactPiece, count) &&
                  offsetof(ks::PieceRef, step) == offsetof(ExactPiece, step),
              "pieces go to the device as they are");
static_assert(ks::PieceTraits<float>::first == xr::detail::exact_window_first(DType::F32) &&
              ks::PieceTraits<float>::limbs == xr::detail::exact_window_limbs(DType::F32));
static_assert(ks::PieceTraits<double>::first == xr::detail::exact_window_first(DType::F64) &&
              ks::PieceTraits<double>::limbs == xr::detail::exact_window_limbs(DType::F64));
static_assert(ks::kFlagNaN == ExactSum::kFlagNaN && ks::kFlagPosInf == ExactSum::kFlagPosInf &&
              ks::kFlagNegInf == ExactSum::kFlagNegInf && ks::kFlagAny == ExactSum::kFlagAny &&
              ks::kFlagNotNegZero == ExactSum::kFlagNotNegZero);

void launch_exact_pieces(DType type, const void* data, const void* pieces, u64 count, std::int64_t* words,
                         cudaStream_t stream) {
  if (count == 0) return;
  const u64 grid = xr::detail::ceil_div(count, ks::kExactPieceWarps);
  if (grid > static_cast<u64>(INT_MAX))
    throw InvalidArgument("cuda: " + std::to_string(count) + " exact pieces in one launch (at most " +
                          std::to_string(u64(INT_MAX) * ks::kExactPieceWarps) + ")");
  const auto* p = static_cast<const ks::PieceRef*>(pieces);
  auto* w = reinterpret_cast<long long*>(words);
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>)
      ks::k_exact_pieces<T><<<static_cast<unsigned>(grid), 32 * ks::kExactPieceWarps, 0, stream>>>(
          static_cast<const T*>(data), p, count, w);
    else
      throw InvalidArgument("cuda: exact pieces are of float types, not " + std::string(to_string(type)));
  });
  check_launch("k_exact_pieces");
}

void launch_exact_short_segments(DType type, const void* data, u64 count, u64 length, u64 first_step, u64 term_step,
                                 void* out, unsigned long long* missed_count, unsigned long long* missed, u64 capacity,
                                 cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kBlock = 256;
  const u64 grid = std::min<u64>(xr::detail::ceil_div(count, kBlock), u64{1} << 20);  // grid-stride beyond
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>)
      ks::k_exact_short_segments<T><<<static_cast<unsigned>(grid), kBlock, 0, stream>>>(
          static_cast<const T*>(data), count, length, first_step, term_step, static_cast<compute_t<T>*>(out),
          missed_count, missed, capacity);
    else
      throw InvalidArgument("cuda: exact sums are of float types, not " + std::string(to_string(type)));
  });
  check_launch("k_exact_short_segments");
}

}  // namespace xr::cuda::detail
