// xreduce: exact f32/f64 sums on OpenCL devices, OpenCL C 1.2 (the state layout and the method of
// the CUDA kernels: docs/exact.md; the OpenCL specifics are described here). f16 and bf16 are
// summed as the f32 values they are exactly: read with vload_half, or by a shift.
//
//   XR_IN_T     float, double, half (f16) or ushort (bf16), XR_FP64 1 for double, XR_IN_HALF 1
//               for f16 and 2 for bf16 (the host's type options, from core's type table)
//   XR_ATOM64   1: the work-group accumulator is 68 __local longs updated with atom_add
//               (cl_khr_int64_base_atomics); 0: each limb is a pair of __local uints updated
//               with the core 32-bit atomic_add (low word, then the carry into the high word)
//   XR_F32_INT  1 (f32 only): window sums in 64-bit integers instead of doubles (devices
//               without cl_khr_fp64)
//   XR_DENORM_SAFE 1 (f64 only): tiles whose window would reach the subnormal range go digit
//               by digit (devices whose doubles flush subnormals; none should: CL_FP_DENORM is
//               mandatory for doubles)
//   XR_RUNS     1 (CPU devices; not with XR_F32_INT or XR_DENORM_SAFE): one contiguous run per
//               work-item in chunks of 16384 elements, one window per chunk, vector lanes (the
//               OpenMP front end's scheme, described at the main loop)
//   XR_RUN_BINS 1 (with XR_RUNS, work-groups of one work-item): the misses into private bins
//               (bin_add) instead of digit by digit
//
// xr_exact: every work-group owns one column of `part`, a [69][G] array of longs (row r < 68:
// limb r of the xr::ExactSum layout, weight 2^(32r - 1074); row 68: flag bits), and adds its
// share of [offset, offset + n) to it (or stores it, when `accumulate` is 0).
//
// Inside a work-group every work-item reads tiles of 8 elements (two float4 or four double2
// loads, two of four f16 or bf16; coalesced: work-item lid takes packs lid, lid + L, ... of the group's tile, grid-stride
// over tiles) and keeps a private *window* [W - w, W] of binades from the largest exponent it
// has seen (W = tile max + 2, moved when a tile's max rises above W or falls 8 binades below
// it). Elements inside the window are summed exactly in registers:
//   f32: a float is an exact double; at most 2048 floats with biased exponents in
//        [max(W-18, 1), W] sum to a multiple of 2^(max(W-18,1) - 150) below 2^(W - 126 + 11):
//        at most 53 bits, exact (or, XR_F32_INT, the same integer in a long);
//   f64: sigma = 1.5 * 2^(E + 13), E = max(W,1) - 1023: h = (v + sigma) - sigma is v rounded
//        to a multiple of 2^(E - 39), r = v - h is exact; 2048 h's and 2048 r's of elements
//        at most 30 binades below W sum exactly (Rump's extraction; FP_CONTRACT off, round to
//        nearest).
// Before a sum could stop being exact (2048 terms, or the window moves) the work-item
// converts it to an integer on the window's grid and adds it, as three 32-bit digits, to the
// work-group's carry-save superaccumulator in local memory (atomics). Everything else goes
// digit by digit (ExactSum's split; with XR_RUN_BINS, into private bins first): elements below
// the window (f32 subnormals and zeros among them), tiles with inf or NaN (they set the flags),
// f64 tiles within 2^12 of overflow.
// The main loop has no barrier: windows are per work-item.
//
// Bounds: a work-item adds at most one digit per element and at most two per flush into any
// limb, so a work-group that reads E elements adds fewer than 1.25 E + 2 L + 8 digits (each
// below 2^32) to one limb; the host keeps E <= 2^28 per launch (more launches for more), so
// |limb| < 2^62 (and the 64-bit value of a 32-bit pair stays below 2^63). At the end the
// work-group adds its column to the limbs, work-item 0 propagates carries, and the column is
// written back normalised (digits in [0, 2^32) below the top limb), so columns and the merge of
// up to 2^16 of them stay far below 2^62, whatever n.
//
// xr_exact_merge: work-group r (0 .. 68) adds row r over the G columns (ORs the flags row) and
// writes out[r]. The host reads out[0 .. 68] and merges it into an xr::ExactSum (merge_raw).

#pragma OPENCL FP_CONTRACT OFF

#ifndef XR_FP64
#define XR_FP64 0
#endif
#ifndef XR_ATOM64
#define XR_ATOM64 0
#endif
#ifndef XR_F32_INT
#define XR_F32_INT 0
#endif
#ifndef XR_DENORM_SAFE
#define XR_DENORM_SAFE 0
#endif
#ifndef XR_RUNS
#define XR_RUNS 0
#endif
#ifndef XR_RUN_BINS
#define XR_RUN_BINS 0
#endif
#if XR_RUNS && (XR_F32_INT || XR_DENORM_SAFE)
#error "XR_RUNS sums windows in doubles with subnormals"
#endif

#if XR_FP64 || !XR_F32_INT
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if XR_ATOM64
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

#define XR_LIMBS 68
#define XR_ROWS 69
#define XR_FLAG_NAN 1u
#define XR_FLAG_POS_INF 2u
#define XR_FLAG_NEG_INF 4u
#define XR_FLAG_NOT_NEG_ZERO 16u

// ---- the work-group superaccumulator in local memory ----

#if XR_ATOM64
#define XR_LOCAL_WORDS XR_LIMBS
typedef long limb_word;
inline void limb_add(__local limb_word* L, int i, long d) {
  if (d != 0) atom_add(L + i, d);
}
inline long limb_get(__local limb_word* L, int i) { return L[i]; }
inline void limb_zero(__local limb_word* L, int i) { L[i] = 0; }
inline void limb_set(__local limb_word* L, int i, long v) { L[i] = v; }
#else
// Limb i is the 64-bit two's complement pair (L[2i+1] : L[2i]) modulo 2^64. atomic_add on the
// low word returns the old value; its carry goes into the high word. Once every addition has
// landed (after the barrier) the pair is the exact sum modulo 2^64, exact while |limb| < 2^63.
#define XR_LOCAL_WORDS (2 * XR_LIMBS)
typedef uint limb_word;
inline void limb_add(__local limb_word* L, int i, long d) {
  if (d == 0) return;
  const uint lo = (uint)d, hi = (uint)((ulong)d >> 32);
  const uint old = atomic_add(L + 2 * i, lo);
  const uint h = hi + (uint)(old + lo < old);
  if (h != 0) atomic_add(L + 2 * i + 1, h);
}
inline long limb_get(__local limb_word* L, int i) {
  return (long)(((ulong)L[2 * i + 1] << 32) | (ulong)L[2 * i]);
}
inline void limb_zero(__local limb_word* L, int i) {
  L[2 * i] = 0;
  L[2 * i + 1] = 0;
}
inline void limb_set(__local limb_word* L, int i, long v) {
  L[2 * i] = (uint)v;
  L[2 * i + 1] = (uint)((ulong)v >> 32);
}
#endif

// L += v * 2^(pos - 1074) for |v| < 2^63, as three signed digits below 2^32.
inline void add_scaled(__local limb_word* L, long v, int pos) {
  if (v == 0) return;
  const int neg = v < 0;
  const ulong a = neg ? (ulong)0 - (ulong)v : (ulong)v;
  const int i = pos >> 5, r = pos & 31;
  const ulong lo = a << r;
  const ulong hi = r ? a >> (64 - r) : (ulong)0;
  const long d0 = (long)(lo & 0xffffffffUL), d1 = (long)(lo >> 32), d2 = (long)hi;
  limb_add(L, i, neg ? -d0 : d0);
  limb_add(L, i + 1, neg ? -d1 : d1);
  limb_add(L, i + 2, neg ? -d2 : d2);
}

// ---- element types ----

#ifndef XR_IN_HALF
#define XR_IN_HALF 0
#endif
// in_t: what the input holds; elem_t: the value summed. XR_ELEM reads element i of p as elem_t,
// XR_ELEMS(W, p, i) elements i .. i + W - 1 as a vector.
typedef XR_IN_T in_t;
#if XR_IN_HALF == 1
#define XR_ELEM(p, i) vload_half((i), (p))
#define XR_ELEMS(W, p, i) XR_CAT(vload_half, W)(0, (p) + (i))
#elif XR_IN_HALF == 2
#define XR_ELEM(p, i) as_float((uint)(p)[i] << 16)
#define XR_ELEMS(W, p, i) XR_CAT(as_float, W)(XR_CAT(convert_uint, W)(XR_CAT(vload, W)(0, (p) + (i))) << 16)
#else
#define XR_ELEM(p, i) ((p)[i])
#define XR_ELEMS(W, p, i) XR_CAT(vload, W)(0, (p) + (i))
#endif
#define XR_CAT_(a, b) a##b
#define XR_CAT(a, b) XR_CAT_(a, b)

#if !XR_FP64
typedef float elem_t;
typedef float4 pack_t;
#define XR_PER_PACK 4
#define XR_PACKS 2
#define XR_EXP_SHIFT 23
inline uint abs_key(float x) { return as_uint(x) & 0x7fffffffu; }
inline int is_neg_zero(float x) { return as_uint(x) == 0x80000000u; }
// One element, digit by digit; inf/NaN only set flags.
inline void add_one(__local limb_word* L, uint* flags, float x) {
  const uint b = as_uint(x);
  const uint ex = (b >> 23) & 0xffu;
  if (ex == 0xffu) {
    *flags |= (b & 0x7fffffu) ? XR_FLAG_NAN : ((b >> 31) ? XR_FLAG_NEG_INF : XR_FLAG_POS_INF);
    return;
  }
  const uint normal = ex != 0u;
  const long m = (long)((b & 0x7fffffu) | (normal << 23));
  add_scaled(L, (b >> 31) ? -m : m, (int)(ex + (1u - normal) + 924u));
}
#else
typedef double elem_t;
typedef double2 pack_t;
// 16 elements a work-item a tile (f32 keeps 8): NVIDIA's OpenCL on an H200, 2^28 f64, 0.853-0.870x
// of the plain sum's rate, against 0.811-0.818x with 8 and 0.758-0.761x with 32 (f32 with 16:
// 0.796-0.810x against 0.899-0.913x with 8).
#define XR_PER_PACK 2
#define XR_PACKS 8
#define XR_EXP_SHIFT 20
inline uint abs_key(double x) { return (uint)(as_ulong(x) >> 32) & 0x7fffffffu; }
inline int is_neg_zero(double x) { return as_ulong(x) == 0x8000000000000000UL; }
inline void add_one(__local limb_word* L, uint* flags, double x) {
  const ulong b = as_ulong(x);
  const uint ex = (uint)(b >> 52) & 0x7ffu;
  if (ex == 0x7ffu) {
    *flags |= (b & 0xfffffffffffffUL) ? XR_FLAG_NAN : ((b >> 63) ? XR_FLAG_NEG_INF : XR_FLAG_POS_INF);
    return;
  }
  const uint normal = ex != 0u;
  const long m = (long)((b & 0xfffffffffffffUL) | ((ulong)normal << 52));
  add_scaled(L, (b >> 63) ? -m : m, (int)(ex - normal));
}
#endif
#define XR_PER_ITEM (XR_PER_PACK * XR_PACKS)

// The window: a sum takes at most 2^XR_LOG2_TERMS terms from XR_WINDOW binades below its top W.
// f32: 2^k floats from w binades sum exactly in a double when k + w + 24 <= 53. f64: Rump's
// sigma = 1.5 * 2^(E + 2 + k) makes 2^k high parts exact and 2^k low parts too when
// w <= 52 - 2k; sigma is finite for W <= 2046 - 2 - k. The tiles take 2^11 terms (f32 from 18
// binades, f64 from 30): every flush is local atomics that all work-items of a group make at
// about the same time, and fewer flushes cost less (the misses below the window stay rare).
// The runs (XR_RUNS) keep their lanes in a CPU's vector registers: 16 f32 lanes of 2^10, 8
// pairs of f64 lanes of 2^11.
#if !XR_FP64
#define XR_LOG2_TERMS (XR_RUNS ? 10 : 11)
#define XR_WINDOW (53 - 24 - XR_LOG2_TERMS)
#define XR_MAX_TOP 254u
#else
#define XR_LOG2_TERMS 11
#define XR_WINDOW (52 - 2 * XR_LOG2_TERMS)
#define XR_MAX_TOP (2046u - 2u - XR_LOG2_TERMS)
#endif
#define XR_MAX_TERMS (1 << XR_LOG2_TERMS)

// Elements whose key is below window_thr(W) are misses: they go digit by digit.
#if !XR_FP64
// Exponents from max(W - w, 1): subnormals and zeros are never kept.
inline uint window_thr(uint w) { return (max(w, XR_WINDOW + 1u) - XR_WINDOW) << 23; }
#else
inline uint window_thr(uint w) { return w > XR_WINDOW + 1u ? (w - XR_WINDOW) << 20 : 0u; }
inline double window_sigma(uint w) {
  return as_double((((ulong)(max(w, 1u) + 2u + XR_LOG2_TERMS)) << 52) | (1UL << 51));
}
#endif

#if XR_RUNS
// Chunks of XR_CHUNK elements read XR_STEP at a time into XR_STEP lanes (f32: 16 double lanes,
// f64: 8 pairs of Rump lanes), XR_MAX_TERMS per lane; misses are looked for per block of
// XR_BLOCK_ELEMS elements, a bit of a ulong each.
#define XR_CHUNK 16384
#define XR_STEP (XR_CHUNK / XR_MAX_TERMS)
#define XR_BLOCK_ELEMS 256u
#if !XR_FP64
// Keys are signed (they are below 2^31): signed 32-bit max, min and compare are one vector
// instruction each on x86, the unsigned ones are not all.
typedef float16 step_vec;
typedef int16 key_vec;
typedef double16 lane_vec;
#define XR_RUN_W 16
#define XR_STORE vstore16
#define XR_KEYS(v) (as_int16(v) & 0x7fffffff)  // abs_key lane by lane
#define XR_MASKED(v, keep) as_float16(as_int16(v) & (keep))  // +0 where !keep
inline uint max_key(int16 k) {
  const int8 a = max(k.lo, k.hi);
  const int4 b = max(a.lo, a.hi);
  const int2 c = max(b.lo, b.hi);
  return (uint)max(c.x, c.y);
}
#else
// Keys are the high words, narrowed to 32-bit lanes (signed, below 2^31): 64-bit max, min and
// unsigned compares take several instructions each on x86.
typedef double8 step_vec;
typedef int8 key_vec;
typedef double8 lane_vec;
#define XR_RUN_W 8
#define XR_STORE vstore8
#define XR_KEYS(v) (convert_int8(as_ulong8(v) >> 32) & 0x7fffffff)
#define XR_MASKED(v, keep) as_double8(as_long8(v) & convert_long8(keep))
inline uint max_key(int8 k) {
  const int4 b = max(k.lo, k.hi);
  const int2 c = max(b.lo, b.hi);
  return (uint)max(c.x, c.y);
}
#endif
#if XR_FP64
#define XR_SIGMA_PARAM double sigma,
#define XR_SIGMA_ARG sigma,
#else
#define XR_SIGMA_PARAM
#define XR_SIGMA_ARG
#endif
// The lines 2 KiB ahead are asked for while a step is summed: without it the hardware's own
// prefetcher fell behind the pass on PoCL (2-core EPYC, 2^27 f32: 0.75-0.77x of the plain sum
// without, 0.86-0.95x with), as in the OpenMP front end. Where the compiler has no __builtin_prefetch
// (not clang) it is left out.
#define XR_PREFETCH_ELEMS (2048 / sizeof(in_t))
#if defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define XR_PREFETCH(p) __builtin_prefetch(p)
#endif
#endif
#ifndef XR_PREFETCH
#define XR_PREFETCH(p)
#endif
#if XR_CHUNK / XR_BLOCK_ELEMS > 64 || XR_BLOCK_ELEMS % XR_STEP != 0
#error "a chunk's blocks must fit the bits of a ulong"
#endif
// Adds one step of elements to the lanes: all of them, or (masked) only those inside the window.
inline void runs_step(step_vec v, int thr, int masked, XR_SIGMA_PARAM lane_vec* p, lane_vec* q) {
  if (masked) v = XR_MASKED(v, XR_KEYS(v) >= thr);
#if !XR_FP64
  *p += convert_double16(v);
#else
  const double8 h = (v + sigma) - sigma;
  *p += h;
  *q += v - h;
#endif
}
// One pass over the first `steps` elements of a chunk (a multiple of XR_STEP) with the window
// top top_w: the elements inside the window summed into the lanes *p (and, f64, the low parts
// into *q), and the bit of every block that holds a miss in *miss_blocks; returns the chunk's
// largest key. The sums are exact when that key's exponent is at most top_w; the caller checks,
// and passes again with a higher window when it is not. A block adds every element at first, as
// if none were a miss; if one is (rare: 2^-17 of uniform f32 data), the lanes go back to where
// the block began and the block is added again without its misses. That saves the mask on
// every element.
inline uint runs_pass(__global const in_t* x, uint steps, uint top_w, lane_vec* p, lane_vec* q,
                      ulong* miss_blocks) {
  const int thr = (int)window_thr(top_w);
#if XR_FP64
  const double sigma = window_sigma(top_w);
#endif
  lane_vec lane_p = 0.0, lane_q = 0.0;
  key_vec keys = (key_vec)(0);
  ulong blocks = 0;
  for (uint b = 0, blk = 0; b < steps; b += XR_BLOCK_ELEMS, ++blk) {
    const uint b_end = min(steps, b + XR_BLOCK_ELEMS);
    const lane_vec start_p = lane_p, start_q = lane_q;
    key_vec low = (key_vec)(0x7fffffff);  // the block's smallest key: a miss iff below thr
    for (uint i = b; i < b_end; i += XR_STEP) {
      XR_PREFETCH(x + i + XR_PREFETCH_ELEMS);
      const step_vec v = XR_ELEMS(XR_RUN_W, x, i);
      const key_vec k = XR_KEYS(v);
      keys = max(keys, k);
      low = min(low, k);
      runs_step(v, thr, 0, XR_SIGMA_ARG &lane_p, &lane_q);
    }
    if (any(low < thr)) {
      blocks |= 1UL << blk;
      lane_p = start_p;
      lane_q = start_q;
      for (uint i = b; i < b_end; i += XR_STEP) runs_step(XR_ELEMS(XR_RUN_W, x, i), thr, 1, XR_SIGMA_ARG &lane_p, &lane_q);
    }
  }
  *p = lane_p;
  *q = lane_q;
  *miss_blocks = blocks;
  return max_key(keys);
}
#endif

#if XR_FP64 || !XR_F32_INT
// A double s that is an integer multiple of 2^(pos - 1074) (pos >= 0), as that integer.
inline long scaled_int(double s, int pos) {
  const ulong b = as_ulong(s);
  const uint ex = (uint)(b >> 52) & 0x7ffu;
  const uint normal = ex != 0u;
  const ulong m = (b & 0xfffffffffffffUL) | ((ulong)normal << 52);
  if (m == 0) return 0;
  const int p = (int)(ex - normal);  // position of m's lowest bit
  const ulong v = p >= pos ? m << (p - pos) : m >> (pos - p);  // exact: zeros shift out
  return (b >> 63) ? -(long)v : (long)v;
}
#endif

#if XR_RUNS && XR_RUN_BINS
// The misses of a run (elements below their chunk's window), summed exactly in private double
// bins by biased exponent, XR_BIN_BINADES binades a bin, at most 2^18 terms a bin between two
// flushes (every XR_BIN_CHUNKS chunks, and at the run's end), instead of three local atomics
// each (the OpenMP front end's MissBins, backends/omp/src/exact.cpp, which gives the proof:
// f32 2^18 floats of 8 binades need 50 bits; f64 Rump's extraction with sigma = 1.5 * 2^(E +
// 20), E the bin's top, 2 * 18 + 16 <= 53). A bin's high sum is an integer on the grid
// 2^(top + 19 - 1074), its low sum (f64) and an f32 bin's sum on the grid of its lowest
// exponent's ulp. Data over 1e-300..1e300 is nearly all misses.
#define XR_BIN_LOG2_TERMS 18
#define XR_BIN_CHUNKS ((1 << XR_BIN_LOG2_TERMS) / XR_CHUNK)
#if !XR_FP64
#define XR_BIN_BINADES 8
#define XR_BINS 32
#define XR_BIN_SHIFT 26  // key >> 23 >> 3
#else
#define XR_BIN_BINADES 16
#define XR_BINS 128
#define XR_BIN_SHIFT 24  // high word >> 20 >> 4
#endif
// Neighbouring elements go to different copies of the bins, so that two in one bin do not wait
// for each other's store (summed, exactly, at the flush).
#define XR_BIN_COPIES 4
inline int bin_low_exponent(int b) { return max(b * XR_BIN_BINADES, 1); }
inline void bin_add(double* bin_hi, double* bin_lo, uint i, uint key, elem_t x) {
  const uint b = (i % XR_BIN_COPIES) * XR_BINS + (key >> XR_BIN_SHIFT);
#if !XR_FP64
  bin_hi[b] += (double)x;
#else
  const uint top = (b % XR_BINS + 1u) * XR_BIN_BINADES - 1u;
  const double sigma = as_double(((ulong)(top + 2u + XR_BIN_LOG2_TERMS) << 52) | (1UL << 51));
  const double h = (x + sigma) - sigma;
  bin_hi[b] += h;
  bin_lo[b] += x - h;
#endif
}
inline void bins_flush(__local limb_word* L, double* bin_hi, double* bin_lo) {
  for (int b = 0; b < XR_BINS; ++b) {
    double h = 0.0;
    for (int c = 0; c < XR_BIN_COPIES; ++c) {
      h += bin_hi[c * XR_BINS + b];
      bin_hi[c * XR_BINS + b] = 0.0;
    }
#if !XR_FP64
    const int pos = bin_low_exponent(b) + 924;
    add_scaled(L, scaled_int(h, pos), pos);
#else
    double l = 0.0;
    for (int c = 0; c < XR_BIN_COPIES; ++c) {
      l += bin_lo[c * XR_BINS + b];
      bin_lo[c * XR_BINS + b] = 0.0;
    }
    const int pos_hi = (b + 1) * XR_BIN_BINADES + XR_BIN_LOG2_TERMS, pos_lo = bin_low_exponent(b) - 1;
    add_scaled(L, scaled_int(h, pos_hi), pos_hi);
    add_scaled(L, scaled_int(l, pos_lo), pos_lo);
#endif
  }
}
#endif

// Adds a work-item's window sums to the work-group accumulator and clears them: each sum is an
// integer multiple of the window's lowest ulp, converted exactly (docs/exact.md).
#if !XR_FP64
#define XR_F32_POS(w) ((int)(max((w), XR_WINDOW + 1u) - XR_WINDOW) + 924)  // 2^(max(W-w,1) - 150) = 2^(pos - 1074)
#if XR_F32_INT
#define FLUSH()                               \
  do {                                        \
    add_scaled(L, s, XR_F32_POS(top_w));      \
    s = 0;                                    \
  } while (0)
#else
#define FLUSH()                                                    \
  do {                                                             \
    const int pos_ = XR_F32_POS(top_w);                            \
    add_scaled(L, scaled_int(s, pos_), pos_);                      \
    s = 0.0;                                                       \
  } while (0)
#endif
#else
// f64: u = 2^(E + 2 + k - 52) is 2^(pos_hi - 1074) with E = max(W,1) - 1023; the low sums are
// multiples of 2^(E - w - 52), or of 2^-1074.
#define FLUSH()                                                    \
  do {                                                             \
    const int ew_ = (int)max(top_w, 1u);                           \
    const int pos_hi_ = ew_ + 1 + XR_LOG2_TERMS;                   \
    const int pos_lo_ = max(ew_ - XR_WINDOW - 1, 0);               \
    add_scaled(L, scaled_int(hi, pos_hi_), pos_hi_);               \
    add_scaled(L, scaled_int(lo, pos_lo_), pos_lo_);               \
    hi = 0.0;                                                      \
    lo = 0.0;                                                      \
  } while (0)
#endif

__kernel void xr_exact(__global const in_t* in, ulong offset, ulong n, __global long* part, uint accumulate) {
  __local limb_word L[XR_LOCAL_WORDS];
  __local uint group_flags;
  const uint lid = (uint)get_local_id(0);
  const uint lsize = (uint)get_local_size(0);
  const ulong group = get_group_id(0), groups = get_num_groups(0);
  for (uint i = lid; i < XR_LIMBS; i += lsize) limb_zero(L, (int)i);
  if (lid == 0) group_flags = 0;
  barrier(CLK_LOCAL_MEM_FENCE);

  in += offset;
  uint flags = 0;  // NaN / inf of this work-item
  uint nnz = 0;    // a term that is not -0
#if XR_RUNS
  // One contiguous run per work-item (a multiple of XR_CHUNK, the last one ragged), chunk by
  // chunk, as the OpenMP front end does, in one pass per chunk: the window [W - w, W] comes
  // from the chunks before (W = the top exponent + 2, the tile kernel's window), the pass sums
  // the elements inside it into XR_STEP lanes, exact since no lane takes more than XR_MAX_TERMS
  // of them, and finds the chunk's own top. A top above W means the sums may be inexact: the
  // pass runs again with W on that top (the first chunk always does, from W = 0). A chunk with
  // inf or NaN (or f64 values within 2^12 of overflow) goes digit by digit; otherwise each lane
  // is flushed, the elements below the window (zeros and subnormals among them) go to the
  // run's bins (bin_add; digit by digit without XR_RUN_BINS), and a top more than 8 binades
  // below W lowers W for the next chunk. A form that found the top in a pass of its own read
  // every chunk twice: 0.56x of the plain sum on PoCL on the 2-core machine, against
  // 0.95-1.01x in one pass (docs/performance.md).
  const ulong items = get_global_size(0);
  const ulong run = (n + items * XR_CHUNK - 1) / (items * XR_CHUNK) * XR_CHUNK;
  const ulong run_end = min(n, get_global_id(0) * run + run);
  uint top_w = 0;
#if !XR_FP64
  double s = 0.0;
#else
  double hi = 0.0, lo = 0.0;
#endif
#if XR_RUN_BINS
  double bin_hi[XR_BIN_COPIES * XR_BINS], bin_lo[XR_FP64 ? XR_BIN_COPIES * XR_BINS : 1];
  for (int b = 0; b < XR_BIN_COPIES * XR_BINS; ++b) bin_hi[b] = 0.0;
  for (int b = 0; b < (XR_FP64 ? XR_BIN_COPIES * XR_BINS : 1); ++b) bin_lo[b] = 0.0;
  uint binned_chunks = 0;
#define XR_MISS(i, key, v) bin_add(bin_hi, bin_lo, (i), (key), (v))
#else
#define XR_MISS(i, key, v) add_one(L, &flags, (v))
#endif
  for (ulong c = min(n, get_global_id(0) * run); c < run_end; c += XR_CHUNK) {
    __global const in_t* x = in + c;
    const uint m = (uint)min((ulong)XR_CHUNK, run_end - c);
    const uint steps = m / XR_STEP * XR_STEP;
    // The ragged end of the run (fewer than XR_STEP elements) joins the top.
    uint rest_key = 0;
    for (uint i = steps; i < m; ++i) rest_key = max(rest_key, abs_key(XR_ELEM(x, i)));
    lane_vec lane_p, lane_q;
    ulong miss_blocks;
    uint key;
    for (;;) {
      key = max(rest_key, runs_pass(x, steps, top_w, &lane_p, &lane_q, &miss_blocks));
      if ((key >> XR_EXP_SHIFT) <= top_w || (key >> XR_EXP_SHIFT) > XR_MAX_TOP) break;
      top_w = min((key >> XR_EXP_SHIFT) + 2u, XR_MAX_TOP);
    }
    const uint top = key >> XR_EXP_SHIFT;
    // A chunk whose largest key is not 0 holds a term other than -0; one whose keys are all 0
    // (zeros, or f64 values with a zero high word) is looked at element by element.
    if (key != 0u) nnz = 1u;
    else
      for (uint i = 0; i < m && !nnz; ++i) nnz = !is_neg_zero(XR_ELEM(x, i));
    if (top > XR_MAX_TOP) {
      for (uint i = 0; i < m; ++i) add_one(L, &flags, XR_ELEM(x, i));
      continue;
    }
    const uint thr = window_thr(top_w);
#if XR_FP64
    const double sigma = window_sigma(top_w);
#endif
    for (uint k = 0; miss_blocks != 0; ++k, miss_blocks >>= 1) {
      if (!(miss_blocks & 1UL)) continue;
      const uint b = k * XR_BLOCK_ELEMS, b_end = min(steps, b + XR_BLOCK_ELEMS);
      for (uint i = b; i < b_end; ++i) {
        const elem_t v = XR_ELEM(x, i);
        const uint key = abs_key(v);
        if (key < thr) XR_MISS(i, key, v);
      }
    }
    for (uint i = steps; i < m; ++i) {
      const uint key = abs_key(XR_ELEM(x, i));
      if (key < thr) {
        XR_MISS(i, key, XR_ELEM(x, i));
        continue;
      }
#if !XR_FP64
      s += (double)XR_ELEM(x, i);
#else
      const double h = (XR_ELEM(x, i) + sigma) - sigma;
      hi += h;
      lo += XR_ELEM(x, i) - h;
#endif
    }
    // The lanes and the ragged end are integers on the same grid: summed as integers first (each
    // below 2^53 units, so fewer than 2^58 together), they reach the accumulator as one flush.
    // A flush of every lane (three local atomics each) cost PoCL a tenth of the f32 pass.
    double lanes_p[XR_STEP], lanes_q[XR_STEP];
    XR_STORE(lane_p, 0, lanes_p);
    XR_STORE(lane_q, 0, lanes_q);
#if !XR_FP64
    const int pos = XR_F32_POS(top_w);
    long total = scaled_int(s, pos);
    for (int j = 0; j < XR_STEP; ++j) total += scaled_int(lanes_p[j], pos);
    add_scaled(L, total, pos);
    s = 0.0;
#else
    const int ew = (int)max(top_w, 1u);
    const int pos_hi = ew + 1 + XR_LOG2_TERMS, pos_lo = max(ew - XR_WINDOW - 1, 0);
    long total_hi = scaled_int(hi, pos_hi), total_lo = scaled_int(lo, pos_lo);
    for (int j = 0; j < XR_STEP; ++j) {
      total_hi += scaled_int(lanes_p[j], pos_hi);
      total_lo += scaled_int(lanes_q[j], pos_lo);
    }
    add_scaled(L, total_hi, pos_hi);
    add_scaled(L, total_lo, pos_lo);
    hi = 0.0;
    lo = 0.0;
#endif
    if (top + 8u < top_w) top_w = top + 2u;
#if XR_RUN_BINS
    if (++binned_chunks == XR_BIN_CHUNKS) {
      bins_flush(L, bin_hi, bin_lo);
      binned_chunks = 0;
    }
#endif
  }
#if XR_RUN_BINS
  bins_flush(L, bin_hi, bin_lo);
#endif
#else
  // Whole packs start at the first 16-byte boundary; the head before it and the tail after
  // the last whole pack (fewer than 2 packs' worth) go digit by digit in work-group 0.
  const ulong addr = (ulong)(size_t)in;
  ulong head = ((16 - (addr & 15)) & 15) / sizeof(in_t);
  if (head > n) head = n;
  const ulong npacks = (n - head) / XR_PER_PACK;
  const ulong tail_begin = head + npacks * XR_PER_PACK;
  if (group == 0) {
    const ulong extra = head + (n - tail_begin);
    for (ulong i = lid; i < extra; i += lsize) {
      const elem_t x = XR_ELEM(in, i < head ? i : tail_begin + (i - head));
      nnz |= !is_neg_zero(x);
      add_one(L, &flags, x);
    }
  }

  __global const in_t* tile_in = in + head;  // whole packs of XR_PER_PACK elements from here
#if XR_IN_HALF
#define XR_PACK_AT(j) XR_ELEMS(XR_PER_PACK, tile_in, (j) * XR_PER_PACK)
#else
#define XR_PACK_AT(j) (((__global const pack_t*)tile_in)[j])
#endif
  const ulong tile = (ulong)lsize * XR_PACKS;  // packs per work-group iteration
  uint top_w = 0;   // window top W (biased exponent)
  uint thr = 0;     // kept iff abs_key >= thr
  int count = 0;    // terms since the last flush
  int have = 0;     // a window is set
#if !XR_FP64
#if XR_F32_INT
  long s = 0;
#else
  double s = 0.0;
#endif
#else
  double sigma = 0.0, hi = 0.0, lo = 0.0;
#endif

  for (ulong base = group * tile; base < npacks; base += groups * tile) {
    elem_t v[XR_PER_ITEM];
    int valid[XR_PACKS];
#pragma unroll
    for (int u = 0; u < XR_PACKS; ++u) {
      const ulong j = base + lid + (ulong)u * lsize;
      valid[u] = j < npacks;
      const pack_t q = valid[u] ? XR_PACK_AT(j) : (pack_t)((elem_t)0);
#if !XR_FP64
      v[4 * u] = q.x;
      v[4 * u + 1] = q.y;
      v[4 * u + 2] = q.z;
      v[4 * u + 3] = q.w;
#else
      v[2 * u] = q.x;
      v[2 * u + 1] = q.y;
#endif
    }
    uint key = 0;
#pragma unroll
    for (int e = 0; e < XR_PER_ITEM; ++e) {
      key = max(key, abs_key(v[e]));
      nnz |= valid[e / XR_PER_PACK] && !is_neg_zero(v[e]);
    }
    const uint top = key >> XR_EXP_SHIFT;
#if XR_DENORM_SAFE
    const int cold = top > XR_MAX_TOP || top < 96u;
#else
    const int cold = top > XR_MAX_TOP;
#endif
    uint miss = 0;  // elements that go digit by digit
    if (cold) {
      // inf/NaN (or f64 values near overflow, or subnormal windows) in this tile: digits.
#pragma unroll
      for (int e = 0; e < XR_PER_ITEM; ++e) miss |= (uint)valid[e / XR_PER_PACK] << e;
    } else {
      if (!have || top > top_w || top + 8u < top_w || count + XR_PER_ITEM > XR_MAX_TERMS) {
        if (have && count > 0) FLUSH();
        top_w = min(top + 2u, XR_MAX_TOP);
        thr = window_thr(top_w);
#if XR_FP64
        sigma = window_sigma(top_w);
#endif
        // The first window staggers the work-items' flushes over the group: work-item lid
        // flushes first after (8 - lid % 8) / 8 of the terms, then every XR_MAX_TERMS.
        count = have ? 0 : (int)((lid & 7u) * (XR_MAX_TERMS / 8));
        have = 1;
      }
#pragma unroll
      for (int e = 0; e < XR_PER_ITEM; ++e) {
        const int keep = abs_key(v[e]) >= thr;
        miss |= (uint)!keep << e;  // below the window: rare (zeros add nothing)
#if !XR_FP64
#if XR_F32_INT
        const uint b = as_uint(v[e]);
        const long m = (long)((b & 0x7fffffu) | 0x800000u) << (keep ? ((b >> 23) & 0xffu) - (thr >> 23) : 0u);
        s += keep ? ((b >> 31) ? -m : m) : 0;
#else
        s += keep ? (double)v[e] : 0.0;
#endif
#else
        const double x = keep ? v[e] : 0.0;
        const double h = (x + sigma) - sigma;
        hi += h;
        lo += x - h;
#endif
      }
      count += XR_PER_ITEM;
    }
    // The rare elements, through one copy of the digit code, read again from global memory
    // (a cache hit). Picking them out of v instead (a chain of selects on k) made the compiler
    // keep v in local memory: NVIDIA's OpenCL gave the f64 kernel a 64-byte stack frame, stored
    // every tile there and ran at 0.64x of the plain sum (docs/performance.md).
    // Packs past the end (zeros in v) are no elements.
    uint valid_bits = 0;
#pragma unroll
    for (int u = 0; u < XR_PACKS; ++u) valid_bits |= (uint)valid[u] << (u * XR_PER_PACK);
    miss &= valid_bits * ((1u << XR_PER_PACK) - 1u);
    for (int k = 0; miss != 0; ++k, miss >>= 1)
      if (miss & 1u)
        add_one(L, &flags, XR_ELEM(tile_in, (base + lid + (ulong)(k / XR_PER_PACK) * lsize) * XR_PER_PACK + k % XR_PER_PACK));
  }
  if (have && count > 0) FLUSH();
#endif

  const uint f = flags | (nnz ? XR_FLAG_NOT_NEG_ZERO : 0u);
  if (f) atomic_or(&group_flags, f);
  barrier(CLK_LOCAL_MEM_FENCE);
  // The column plus this work-group's limbs (read in parallel), carries propagated by one
  // work-item (ExactSum's normalisation), written back in parallel.
  const ulong col = group;
  if (accumulate)
    for (uint i = lid; i < XR_LIMBS; i += lsize) limb_set(L, (int)i, limb_get(L, (int)i) + part[(ulong)i * groups + col]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    long carry = 0;
    for (int i = 0; i < XR_LIMBS - 1; ++i) {
      const long x = limb_get(L, i) + carry;
      carry = x >> 32;
      limb_set(L, i, x & 0xffffffffL);
    }
    limb_set(L, XR_LIMBS - 1, limb_get(L, XR_LIMBS - 1) + carry);
    const ulong at = (ulong)XR_LIMBS * groups + col;
    part[at] = (accumulate ? part[at] : 0) | (long)group_flags;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = lid; i < XR_LIMBS; i += lsize) part[(ulong)i * groups + col] = limb_get(L, (int)i);
}

// Row r of part ([69][G]) summed (r < 68) or ORed (r = 68, the flags) into out[r]; one
// work-group per row, any work-group size.
__kernel void xr_exact_merge(__global const long* part, uint G, __global long* out, __local long* scratch) {
  const uint lid = (uint)get_local_id(0);
  const uint lsize = (uint)get_local_size(0);
  const uint row = (uint)get_group_id(0);
  const int is_flags = row == XR_LIMBS;
  long acc = 0;
  for (uint g = lid; g < G; g += lsize) {
    const long x = part[(ulong)row * G + g];
    acc = is_flags ? (acc | x) : (acc + x);
  }
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint p = 1;
  while (p < lsize) p *= 2;
  for (uint s = p / 2; s > 0; s /= 2) {
    if (lid < s && lid + s < lsize)
      scratch[lid] = is_flags ? (scratch[lid] | scratch[lid + s]) : (scratch[lid] + scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[row] = scratch[0];
}
