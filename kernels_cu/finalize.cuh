// A mapped op's last step on the device (Finalize: a mean's division by the count, any's and
// all's test of the nonzero count): each value through core's finalize_folded with its segment's
// length, as finalize_value does it on the host, so that device and host give the same bits.
// Device code only: launching lives in backends/cuda.
#pragma once

#include <cstdint>

#include "xreduce/semantics.hpp"

namespace xr::kern {

// values[i] = finalize_folded<F>(values[i], length of segment i): `length` for rows and columns,
// else offsets[i + 1] - offsets[i] clamped to [0, n] as the segment kernels clamp them (begin to
// [0, n], end to [begin, n]).
template <Finalize F, class A>
__global__ void k_finalize(A* values, std::uint64_t count, std::uint64_t length, const std::int64_t* offsets,
                           std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride) {
    std::uint64_t c = length;
    if (offsets) {
      const std::int64_t lo = offsets[i], hi = offsets[i + 1];
      const std::uint64_t b = lo < 0 ? 0 : static_cast<std::uint64_t>(lo) > n ? n : static_cast<std::uint64_t>(lo);
      const std::uint64_t e = hi < 0 ? 0 : static_cast<std::uint64_t>(hi) > n ? n : static_cast<std::uint64_t>(hi);
      c = e > b ? e - b : 0;
    }
    values[i] = xr::finalize_folded<F>(values[i], c);
  }
}

}  // namespace xr::kern
