// f16 and bf16 widened to float, n elements at a time (each converts exactly): the rungs fold f16
// a block of floats at a time, and exact sums of both take the f32 front end.
#pragma once

#include <cstdint>

#include "xreduce/half.hpp"

namespace xr::omp::detail {

// out[i] = float(x[i]) for i in [0, n). f16 uses the CPU's F16C conversion (vcvtph2ps) where it
// has one, found at run time; otherwise, and for bf16 (a shift), a loop the compiler vectorises.
void widen(const f16* x, float* out, std::uint64_t n);
void widen(const bf16* x, float* out, std::uint64_t n);

}  // namespace xr::omp::detail
