// f16 and bf16 widened to float, n elements at a time (each converts exactly), for the exact sums'
// f32 front end and for f16 on CPUs without F16C; and the lane loops of lanes.hpp that need
// instructions beyond SSE2 (widen.cpp), for the CPUs that have them.
#pragma once

#include <cstdint>

#include "xreduce/half.hpp"
#include "xreduce/types.hpp"

namespace xr::omp::detail {

// out[i] = float(x[i]) for i in [0, n). f16 uses the CPU's F16C conversion (vcvtph2ps) where it
// has one, found at run time; otherwise, and for bf16 (a shift), a loop the compiler vectorises.
void widen(const f16* x, float* out, std::uint64_t n);
void widen(const bf16* x, float* out, std::uint64_t n);

// The lane loops of lanes.hpp on f16, each element converted by F16C in registers: called only
// where have_f16c() (the AVX2 copy of the lanes), never through L1 as widen's blocks go. They
// do exactly what lanes::Folds::add (sum, prod) and lanes::Extremes::add do on the widened
// floats, with 32 lanes: the same lanes, operations and order, so the same bits.
//   fold_f16:     lane[j] = O(lane[j], x[i + j]) for each 32 elements, the last n % 32 into
//                 lanes 0, 1, ...
//   extremes_f16: of the 64 elements from i, x[i + j] and x[i + 32 + j] into lane j (lo: the
//                 min, hi: the max, each only when asked for; nan: -1 once a NaN was among
//                 them), the last n % 64 one at a time into lane i % 32.
template <Op O>
  requires(O == Op::Sum || O == Op::Prod)
void fold_f16(float* lane, const f16* x, std::uint64_t n);
void extremes_f16(bool lo_on, bool hi_on, float* lo, float* hi, std::int32_t* nan, const f16* x, std::uint64_t n);

// The sum of (x[i] ^ bias) over x[0, n), n a multiple of 128, by VPSADBW (32 bytes into four
// 64-bit lanes an instruction): called only where have_avx2(); an integer sum, exact in any order.
std::uint64_t sum_bytes_avx2(const std::uint8_t* x, std::uint64_t n, std::uint8_t bias);

}  // namespace xr::omp::detail
