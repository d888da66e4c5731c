// Launcher of k_finalize (kernels_cu/finalize.cuh): a mapped op's last step on the device, after
// its fold: a mean's division by its counts, any's and all's test of the nonzero count.
#include <algorithm>

#include "arith.hpp"
#include "check.hpp"
#include "kernels_cu/finalize.cuh"
#include "segments.hpp"

namespace xr::cuda::detail {

namespace {

template <Finalize F, class A>
void launch(A* values, u64 count, u64 length, const std::int64_t* offsets, u64 n, cudaStream_t stream) {
  constexpr unsigned kBlock = 256;
  const u64 grid = std::min<u64>(xr::detail::ceil_div(count, kBlock), u64{1} << 16);  // grid-stride beyond
  xr::kern::k_finalize<F, A><<<static_cast<unsigned>(grid), kBlock, 0, stream>>>(values, count, length, offsets, n);
}

}  // namespace

void launch_finalize(Finalize step, DType type, void* values, u64 count, u64 length, const std::int64_t* offsets, u64 n,
                     cudaStream_t stream) {
  if (count == 0 || step == Finalize::None) return;
  if (step == Finalize::DivideByCount && type == DType::F32)
    launch<Finalize::DivideByCount>(static_cast<float*>(values), count, length, offsets, n, stream);
  else if (step == Finalize::DivideByCount && type == DType::F64)
    launch<Finalize::DivideByCount>(static_cast<double*>(values), count, length, offsets, n, stream);
  else if (step == Finalize::IsPositive && type == DType::I64)
    launch<Finalize::IsPositive>(static_cast<std::int64_t*>(values), count, length, offsets, n, stream);
  else if (step == Finalize::EqualsCount && type == DType::I64)
    launch<Finalize::EqualsCount>(static_cast<std::int64_t*>(values), count, length, offsets, n, stream);
  else
    throw InvalidArgument("cuda: no last step on the device for values of " + std::string(to_string(type)) +
                          " (a mean's are f32 or f64, any's and all's i64)");
  check_launch("k_finalize");
}

}  // namespace xr::cuda::detail
