// xreduce: exact f32/f64 sums on OpenCL devices, OpenCL C 1.2 (the state layout and the method of
// the CUDA kernels: docs/exact.md; the OpenCL specifics are described here).
//
//   XR_IN_T     float or double, XR_FP64 1 for double (the host's type options, from core's type table)
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
//
// xr_exact: every work-group owns one column of `part`, a [69][G] array of longs (row r < 68:
// limb r of the xr::ExactSum layout, weight 2^(32r - 1074); row 68: flag bits), and adds its
// share of [offset, offset + n) to it (or stores it, when `accumulate` is 0).
//
// Inside a work-group every work-item reads tiles of 8 elements (two float4 or four double2
// loads, coalesced: work-item lid takes packs lid, lid + L, ... of the group's tile, grid-stride
// over tiles) and keeps a private *window* [W - w, W] of binades from the largest exponent it
// has seen (W = tile max + 2, moved when a tile's max rises above W or falls 8 binades below
// it). Elements inside the window are summed exactly in registers:
//   f32: a float is an exact double; at most 512 floats with biased exponents in
//        [max(W-20, 1), W] sum to a multiple of 2^(max(W-20,1) - 150) below 2^(W - 126 + 9):
//        at most 53 bits, exact (or, XR_F32_INT, the same integer in a long);
//   f64: sigma = 1.5 * 2^(E + 12), E = max(W,1) - 1023: h = (v + sigma) - sigma is v rounded
//        to a multiple of 2^(E - 40), r = v - h is exact; 1024 h's and 1024 r's of elements
//        at most 32 binades below W sum exactly (Rump's extraction; FP_CONTRACT off, round to
//        nearest).
// Before a sum could stop being exact (512 / 1024 terms, or the window moves) the work-item
// converts it to an integer on the window's grid and adds it, as three 32-bit digits, to the
// work-group's carry-save superaccumulator in local memory (atomics). Everything else goes
// digit by digit (ExactSum's split): elements below the window (f32 subnormals and zeros
// among them), tiles with inf or NaN (they set the flags), f64 tiles within 2^12 of overflow.
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

#if !XR_FP64
typedef float elem_t;
typedef float4 pack_t;
#define XR_PER_PACK 4
#define XR_PACKS 2
#define XR_WINDOW 20
#define XR_MAX_TERMS 512
#define XR_MAX_TOP 254u
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
#define XR_PER_PACK 2
#define XR_PACKS 4
#define XR_WINDOW 32
#define XR_MAX_TERMS 1024
#define XR_MAX_TOP 2034u
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

#if XR_RUNS
// Chunks of XR_CHUNK elements read XR_STEP at a time into XR_STEP lanes, XR_MAX_TERMS per lane.
#define XR_CHUNK 16384
#define XR_STEP (XR_CHUNK / XR_MAX_TERMS)
#define XR_BLOCK 16u
#if !XR_FP64
typedef float16 elem_vec;
typedef uint16 bits_vec;
typedef uint8 bits_half;
typedef int16 mask_vec;
#define XR_KEYS(v) (as_uint16(v) & 0x7fffffffu)      // abs_key lane by lane
#define XR_NOT_NEG_ZERO(v) (as_uint16(v) != 0x80000000u)
#define XR_MASKED(v, keep) as_float16(as_uint16(v) & as_uint16(keep))  // +0 where !keep
#else
typedef double16 elem_vec;
typedef ulong16 bits_vec;
typedef ulong8 bits_half;
typedef long16 mask_vec;
#define XR_KEYS(v) ((as_ulong16(v) >> 32) & 0x7fffffffUL)
#define XR_NOT_NEG_ZERO(v) (as_ulong16(v) != 0x8000000000000000UL)
#define XR_MASKED(v, keep) as_double16(as_ulong16(v) & as_ulong16(keep))
#endif
// The largest of 16 keys.
inline uint max_lane(bits_vec k) {
  const bits_half m = max(k.lo, k.hi);
  return (uint)max(max(max(m.s0, m.s1), max(m.s2, m.s3)), max(max(m.s4, m.s5), max(m.s6, m.s7)));
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

// Adds a work-item's window sums to the work-group accumulator and clears them: each sum is an
// integer multiple of the window's lowest ulp, converted exactly (docs/exact.md).
#if !XR_FP64
#define XR_F32_POS(w) ((int)(max((w), 21u) - 20u) + 924)  // 2^(max(W-20,1) - 150) = 2^(pos - 1074)
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
// f64: u = 2^(E - 40) is 2^(pos_hi - 1074) with E = max(W,1) - 1023; the low sums are multiples
// of 2^(E - 84), or of 2^-1074.
#define FLUSH()                                                    \
  do {                                                             \
    const int ew_ = (int)max(top_w, 1u);                           \
    const int pos_hi_ = ew_ + 11, pos_lo_ = max(ew_ - 33, 0);      \
    add_scaled(L, scaled_int(hi, pos_hi_), pos_hi_);               \
    add_scaled(L, scaled_int(lo, pos_lo_), pos_lo_);               \
    hi = 0.0;                                                      \
    lo = 0.0;                                                      \
  } while (0)
#endif

__kernel void xr_exact(__global const elem_t* in, ulong offset, ulong n, __global long* part, uint accumulate) {
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
  // chunk, as the OpenMP front end does: the chunk's largest magnitude sets the window [W - w, W]
  // (W = its exponent + 2, the tile kernel's window), a second pass sums the elements inside it
  // into XR_STEP lanes, exact since no lane takes more than XR_MAX_TERMS of them, and flushes each
  // lane; the elements below the window (zeros and subnormals among them) go digit by digit, and
  // so does a whole chunk with inf or NaN (or f64 values within 2^12 of overflow).
  const ulong items = get_global_size(0);
  const ulong run = (n + items * XR_CHUNK - 1) / (items * XR_CHUNK) * XR_CHUNK;
  const ulong run_end = min(n, get_global_id(0) * run + run);
  uint top_w = 0;
#if !XR_FP64
  double s = 0.0;
#else
  double sigma = 0.0, hi = 0.0, lo = 0.0;
#endif
  for (ulong c = min(n, get_global_id(0) * run); c < run_end; c += XR_CHUNK) {
    __global const elem_t* x = in + c;
    const uint m = (uint)min((ulong)XR_CHUNK, run_end - c);
    const uint whole = m / 16u * 16u;
    bits_vec keys = (bits_vec)(0);
    mask_vec not_neg_zero = (mask_vec)(0);
    for (uint i = 0; i < whole; i += 16u) {
      const elem_vec v = vload16(0, x + i);
      keys = max(keys, XR_KEYS(v));
      not_neg_zero |= XR_NOT_NEG_ZERO(v);
    }
    uint key = max_lane(keys);
    nnz |= any(not_neg_zero);
    for (uint i = whole; i < m; ++i) {
      key = max(key, abs_key(x[i]));
      nnz |= !is_neg_zero(x[i]);
    }
    const uint top = key >> XR_EXP_SHIFT;
    if (top > XR_MAX_TOP) {
      for (uint i = 0; i < m; ++i) add_one(L, &flags, x[i]);
      continue;
    }
    top_w = min(top + 2u, XR_MAX_TOP);
#if !XR_FP64
    const uint thr = (max(top_w, 21u) - 20u) << 23;
    double16 lane_a = 0.0, lane_b = 0.0;  // 32 lanes
#else
    const uint thr = top_w > 33u ? (top_w - 32u) << 20 : 0u;
    sigma = as_double((((ulong)(max(top_w, 1u) + 12u)) << 52) | (1UL << 51));
    double16 lane_hi = 0.0, lane_lo = 0.0;  // 16 lanes, high and low parts
#endif
    // Misses are looked for once per block of XR_BLOCK steps (a test of every step costs more
    // than the sums), then element by element in a block that has one.
    const uint steps = m / XR_STEP * XR_STEP;
    for (uint b = 0; b < steps; b += XR_BLOCK * XR_STEP) {
      const uint b_end = min(steps, b + XR_BLOCK * XR_STEP);
      mask_vec missed = (mask_vec)(0);
      for (uint i = b; i < b_end; i += XR_STEP) {
#if !XR_FP64
        const float16 va = vload16(0, x + i), vb = vload16(1, x + i);
        const int16 keep_a = XR_KEYS(va) >= thr, keep_b = XR_KEYS(vb) >= thr;
        lane_a += convert_double16(XR_MASKED(va, keep_a));
        lane_b += convert_double16(XR_MASKED(vb, keep_b));
        missed |= ~keep_a | ~keep_b;
#else
        const double16 v = vload16(0, x + i);
        const long16 keep = XR_KEYS(v) >= (ulong)thr;
        const double16 kept = XR_MASKED(v, keep);
        const double16 h = (kept + sigma) - sigma;
        lane_hi += h;
        lane_lo += kept - h;
        missed |= ~keep;
#endif
      }
      if (any(missed))
        for (uint i = b; i < b_end; ++i)
          if (abs_key(x[i]) < thr) add_one(L, &flags, x[i]);
    }
    // The ragged end of the run (fewer than XR_STEP elements), then every lane.
    for (uint i = steps; i < m; ++i) {
      if (abs_key(x[i]) < thr) {
        add_one(L, &flags, x[i]);
        continue;
      }
#if !XR_FP64
      s += (double)x[i];
#else
      const double h = (x[i] + sigma) - sigma;
      hi += h;
      lo += x[i] - h;
#endif
    }
    FLUSH();
#if !XR_FP64
    double lanes[32];
    vstore16(lane_a, 0, lanes);
    vstore16(lane_b, 1, lanes);
    for (int j = 0; j < 32; ++j) {
      s = lanes[j];
      FLUSH();
    }
#else
    double lanes_hi[16], lanes_lo[16];
    vstore16(lane_hi, 0, lanes_hi);
    vstore16(lane_lo, 0, lanes_lo);
    for (int j = 0; j < 16; ++j) {
      hi = lanes_hi[j];
      lo = lanes_lo[j];
      FLUSH();
    }
#endif
  }
#else
  // Whole packs start at the first 16-byte boundary; the head before it and the tail after
  // the last whole pack (fewer than 2 packs' worth) go digit by digit in work-group 0.
  const ulong addr = (ulong)(size_t)in;
  ulong head = ((16 - (addr & 15)) & 15) / sizeof(elem_t);
  if (head > n) head = n;
  const ulong npacks = (n - head) / XR_PER_PACK;
  const ulong tail_begin = head + npacks * XR_PER_PACK;
  if (group == 0) {
    const ulong extra = head + (n - tail_begin);
    for (ulong i = lid; i < extra; i += lsize) {
      const elem_t x = in[i < head ? i : tail_begin + (i - head)];
      nnz |= !is_neg_zero(x);
      add_one(L, &flags, x);
    }
  }

  __global const pack_t* packs = (__global const pack_t*)(in + head);
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
      const pack_t q = valid[u] ? packs[j] : (pack_t)((elem_t)0);
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
#if !XR_FP64
        thr = (max(top_w, 21u) - 20u) << 23;  // exponent >= 1: subnormals and zeros are never kept
#else
        thr = top_w > 33u ? (top_w - 32u) << 20 : 0u;
        sigma = as_double((((ulong)(max(top_w, 1u) + 12u)) << 52) | (1UL << 51));
#endif
        have = 1;
        count = 0;
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
    // The rare elements, through one copy of the digit code (no dynamic indexing of v).
    for (int k = 0; miss != 0; ++k, miss >>= 1) {
      if (!(miss & 1u)) continue;
      elem_t x = v[0];
#pragma unroll
      for (int e = 1; e < XR_PER_ITEM; ++e) x = k == e ? v[e] : x;
      add_one(L, &flags, x);
    }
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
