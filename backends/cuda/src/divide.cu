// Launcher of k_divide_by_count (kernels_cu/divide.cuh): a mean's division by its counts, on the
// device, after the sums.
#include <algorithm>

#include "arith.hpp"
#include "check.hpp"
#include "kernels_cu/divide.cuh"
#include "segments.hpp"

namespace xr::cuda::detail {

void launch_divide_by_count(DType type, void* values, u64 count, u64 length, const std::int64_t* offsets, u64 n,
                            cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kBlock = 256;
  const u64 grid = std::min<u64>(xr::detail::ceil_div(count, kBlock), u64{1} << 16);  // grid-stride beyond
  visit_dtype(type, [&](auto zero) {
    using A = decltype(zero);
    if constexpr (std::is_floating_point_v<A>)
      xr::kern::k_divide_by_count<A><<<static_cast<unsigned>(grid), kBlock, 0, stream>>>(static_cast<A*>(values), count,
                                                                                         length, offsets, n);
    else
      throw InvalidArgument("cuda: a mean's values are f32 or f64, not " + std::string(to_string(type)));
  });
  check_launch("k_divide_by_count");
}

}  // namespace xr::cuda::detail
