// xreduce: exact piece states of segmented sums (after segments.cl, whose header gives the -D
// options; XR_SEG_EXACT=1 builds this kernel alone): xr_seg_exact.

#if XR_SEG_EXACT

// ---- exact sums: the state of one piece per work-item ----------------------------------------

// xr_seg_exact: piece base + p = (first, count, step) of the input, pieces[3(base + p) ..]: its
// words at words + p * (XR_WORDS + 1), as xr::detail::exact_piece_state defines them: the
// ExactSum limbs of a window (f32: 10 limbs from limb 28; f64: all 68), each term split into
// 32-bit digits added without carries (a piece has at most 2^16 terms, so no limb leaves 64
// bits), then the flags. Inputs are read as their bits, so the f64 piece needs 64-bit integers
// only; f16 and bf16 terms are widened to f32 (exactly) and added as those, in the f32 window. An
// f32 window lives in registers (each digit goes to the limb whose index matches, by selects);
// the 68 f64 limbs in private memory.
#define XR_FLAG_NAN 1u
#define XR_FLAG_POS_INF 2u
#define XR_FLAG_NEG_INF 4u
#define XR_FLAG_ANY 8u
#define XR_FLAG_NOT_NEG_ZERO 16u

#if !XR_FP64
#define XR_WORDS 10
typedef uint bits_t;
#else
#define XR_WORDS 68
typedef ulong bits_t;
#endif
#if XR_IN_HALF
typedef in_t term_t;
#define XR_TERM_BITS(i) as_uint(XR_LOAD(in, i))
#else
typedef bits_t term_t;
#define XR_TERM_BITS(i) in[i]
#endif

__kernel void xr_seg_exact(__global const term_t* in, ulong offset, __global const long* pieces, ulong base,
                           ulong count, __global long* words) {
  in += offset;
  pieces += 3 * base;
  for (ulong p = get_global_id(0); p < count; p += get_global_size(0)) {
    const long first = pieces[3 * p], terms = pieces[3 * p + 1], step = pieces[3 * p + 2];
    long w[XR_WORDS];
#pragma unroll
    for (int i = 0; i < XR_WORDS; ++i) w[i] = 0;
    uint flags = terms > 0 ? XR_FLAG_ANY : 0u;
    for (long k = 0; k < terms; ++k) {
      const bits_t bits = XR_TERM_BITS(first + k * step);
#if !XR_FP64
      const int negative = (int)(bits >> 31);
      const uint ex = (bits >> 23) & 0xffu, fraction = bits & 0x7fffffu;
      if (bits != 0x80000000u) flags |= XR_FLAG_NOT_NEG_ZERO;
      if (ex == 0xffu) {
        flags |= fraction ? XR_FLAG_NAN : negative ? XR_FLAG_NEG_INF : XR_FLAG_POS_INF;
        continue;
      }
      const ulong m = (ulong)(fraction | ((uint)(ex != 0u) << 23));
      const int pos = (int)(ex ? ex : 1u) + 924;  // m's bit 0 lies pos bits above 2^-1074
      const ulong shifted = m << (pos % 32);
      const long d0 = (long)(shifted & 0xffffffffUL), d1 = (long)(shifted >> 32);
      const int at = pos / 32 - 28;
#pragma unroll
      for (int i = 0; i < XR_WORDS; ++i) {
        const long d = i == at ? d0 : i == at + 1 ? d1 : 0L;
        w[i] += negative ? -d : d;
      }
#else
      const int negative = (int)(bits >> 63);
      const ulong ex = (bits >> 52) & 0x7ffUL, fraction = bits & 0xfffffffffffffUL;
      if (bits != 0x8000000000000000UL) flags |= XR_FLAG_NOT_NEG_ZERO;
      if (ex == 0x7ffUL) {
        flags |= fraction ? XR_FLAG_NAN : negative ? XR_FLAG_NEG_INF : XR_FLAG_POS_INF;
        continue;
      }
      const ulong m = fraction | ((ulong)(ex != 0UL) << 52);
      const int pos = (int)(ex ? ex : 1UL) - 1;
      const int r = pos % 32;
      const ulong lo = m << r, hi = r ? m >> (64 - r) : 0UL;
      const long d0 = (long)(lo & 0xffffffffUL), d1 = (long)(lo >> 32), d2 = (long)hi;
      const int at = pos / 32;
      w[at] += negative ? -d0 : d0;
      w[at + 1] += negative ? -d1 : d1;
      w[at + 2] += negative ? -d2 : d2;
#endif
    }
    __global long* out = words + p * (XR_WORDS + 1);
    for (int i = 0; i < XR_WORDS; ++i) out[i] = w[i];
    out[XR_WORDS] = (long)flags;
  }
}

#endif  // XR_SEG_EXACT
