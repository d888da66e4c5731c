// xreduce: the pair ops (argmin, argmax, minmax) on OpenCL devices. A program is reduce.cl
// followed by this file, built with reduce.cl's -D options for the input type as its own
// accumulator and for the fold the op compares by (XR_OP_MIN for argmin and minmax, XR_OP_MAX for
// argmax), so that in_t, acc_t, out_t, XR_IDENTITY, XR_LOAD, XR_LOADV, XR_STORE, XR_MIN_STEP,
// XR_MAX_STEP, xr_op and xr_op_vec come from there, and with these:
//
//   XR_PAIR_<NAME>   the op: XR_PAIR_ARGMIN, XR_PAIR_ARGMAX, XR_PAIR_MINMAX
//   XR_MAX_IDENTITY  minmax: the identity of max (XR_IDENTITY is min's)
//
// A record is what core's PairFn reduces: for argmin and argmax a value and the index of its
// first occurrence in the whole input (XR_NO_INDEX: none, the identity), for minmax a min and a
// max. Values compare as acc_t (f16 and bf16 as float) and are stored back as the input type,
// exactly. A record in memory (partials, the result cell) is two cell_t, core's cell layout:
// argmin and argmax the value as out_t in the first 8 bytes and the index as a long after it
// (Located<T>), minmax the min and the max as out_t (Bounds<T>).

#define XR_NO_INDEX LONG_MAX

#if defined(XR_PAIR_MINMAX)
typedef struct {
  acc_t min;
  acc_t max;
} pair_t;
typedef out_t cell_t;
#elif defined(XR_PAIR_ARGMIN) || defined(XR_PAIR_ARGMAX)
typedef struct {
  acc_t value;
  long index;
} pair_t;
typedef long cell_t;
// Whether `later` lies strictly beyond `kept` (below for argmin, above for argmax), on scalars
// and vectors alike.
#if defined(XR_PAIR_ARGMIN)
#define XR_BEYOND(kept, later) ((later) < (kept))
#else
#define XR_BEYOND(kept, later) ((kept) < (later))
#endif
#else
#error "no XR_PAIR_<NAME> given"
#endif

inline pair_t xr_pair_identity(void) {
  pair_t p;
#if defined(XR_PAIR_MINMAX)
  p.min = XR_IDENTITY;
  p.max = XR_MAX_IDENTITY;
#else
  p.value = XR_IDENTITY;
  p.index = XR_NO_INDEX;
#endif
  return p;
}

#if defined(XR_PAIR_MINMAX)
// Two records in either order: min and max with core's NaN rule.
inline pair_t xr_pair_combine(pair_t a, pair_t b) {
  a.min = XR_MIN_STEP(a.min, b.min);
  a.max = XR_MAX_STEP(a.max, b.max);
  return a;
}
// Element `v` after the record's elements.
inline pair_t xr_pair_step(pair_t acc, acc_t v, long i) {
  acc.min = XR_MIN_STEP(acc.min, v);
  acc.max = XR_MAX_STEP(acc.max, v);
  return acc;
}
#else
// Whether `later`, found after `kept`, takes its place (core's replaces): strictly beyond it, or
// the first NaN. XR_ANY_REPLACES(kept, v): whether some lane of the acc_vec_t v would.
#if XR_ACC_FLOAT
inline bool xr_replaces(acc_t kept, acc_t later) { return XR_BEYOND(kept, later) || (isnan(later) && !isnan(kept)); }
#define XR_ANY_REPLACES(kept, v) (!isnan(kept) && any(XR_BEYOND((acc_vec_t)(kept), v) | isnan(v)))
#else
inline bool xr_replaces(acc_t kept, acc_t later) { return XR_BEYOND(kept, later); }
#define XR_ANY_REPLACES(kept, v) any(XR_BEYOND((acc_vec_t)(kept), v))
#endif
// Two records in either order (core's ArgFn::apply): the one of the smaller index, unless the
// other replaces it.
inline pair_t xr_pair_combine(pair_t a, pair_t b) {
  const bool a_first = a.index <= b.index;
  const pair_t first = a_first ? a : b, second = a_first ? b : a;
  return xr_replaces(first.value, second.value) ? second : first;
}
// Element `v` at index i, after the record's elements: it replaces the identity or a value it
// replaces.
inline pair_t xr_pair_step(pair_t acc, acc_t v, long i) {
  if (acc.index == XR_NO_INDEX || xr_replaces(acc.value, v)) {
    acc.value = v;
    acc.index = i;
  }
  return acc;
}
#endif

// Record r of `cells` (written by xr_store_record), and writing one.
inline pair_t xr_load_record(__global const cell_t* cells, ulong r) {
  pair_t p;
#if defined(XR_PAIR_MINMAX)
  p.min = XR_LOAD((__global const in_t*)cells, 2 * r);
  p.max = XR_LOAD((__global const in_t*)cells, 2 * r + 1);
#else
  p.value = XR_LOAD((__global const in_t*)(cells + 2 * r), 0);
  p.index = cells[2 * r + 1];
#endif
  return p;
}
inline void xr_store_record(__global cell_t* cells, ulong r, pair_t p) {
#if defined(XR_PAIR_MINMAX)
  XR_STORE(p.min, cells, 2 * r);
  XR_STORE(p.max, cells, 2 * r + 1);
#else
  XR_STORE(p.value, (__global out_t*)(cells + 2 * r), 0);
  cells[2 * r + 1] = p.index;
#endif
}

// The work-group's records in local memory combined by a sequential-addressing tree (any L):
// the combination, in scratch[0] for every work-item (every work-item must call it).
inline pair_t xr_pair_tree(__local pair_t* scratch, pair_t acc) {
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint p = 1;
  while (p < L) p *= 2;
  for (uint s = p / 2; s > 0; s /= 2) {
    if (lid < s && lid + s < L) scratch[lid] = xr_pair_combine(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

// xr_pair_tree, whose result work-item 0 writes as record `r` of `out`.
inline void xr_pair_finish(__local pair_t* scratch, pair_t acc, __global cell_t* out, ulong r) {
  acc = xr_pair_tree(scratch, acc);
  if (get_local_id(0) == 0) xr_store_record(out, r, acc);
}

// One record per work-group of elements [offset, offset + n) of `in`, whose element `offset` is
// element `first_index` of the whole input, as xr_reduce reads them: with XR_VEC one contiguous
// run per work-item, K elements per step folded in K / W vectors and looked at one by one only
// when the block may replace the record (argmin, argmax: a scalar pass over the few blocks that
// improve it) or kept in vector min and max (minmax); else tiles of K * L elements, each
// work-item stepping through its K elements of a tile in index order. One read of the input,
// then a local tree of log2(L) steps.
__kernel void xr_pair(__global const in_t* in, ulong offset, ulong n, __global cell_t* out, __local pair_t* scratch,
                      uint k_arg, long first_index) {
  in += offset;
  pair_t acc = xr_pair_identity();
#if XR_VEC
  const ulong items = get_global_size(0);
  const ulong run = (n + items * XR_K - 1) / (items * XR_K) * XR_K;
  const ulong begin = min(n, get_global_id(0) * run), end = min(n, begin + run);
  ulong i = begin;
#if defined(XR_PAIR_MINMAX)
  acc_vec_t lo = (acc_vec_t)(XR_IDENTITY), hi = (acc_vec_t)(XR_MAX_IDENTITY);
  for (; i + XR_K <= end; i += XR_K) {
#pragma unroll
    for (uint a = 0; a < XR_K / XR_VEC; ++a) {
      const acc_vec_t v = XR_LOADV(XR_VEC, in, i + a * XR_VEC);
      lo = XR_MIN_STEP(lo, v);
      hi = XR_MAX_STEP(hi, v);
    }
  }
  acc_t lo_lanes[XR_VEC], hi_lanes[XR_VEC];
  XR_CAT(vstore, XR_VEC)(lo, 0, lo_lanes);
  XR_CAT(vstore, XR_VEC)(hi, 0, hi_lanes);
#pragma unroll
  for (uint j = 0; j < XR_VEC; ++j) {
    acc.min = XR_MIN_STEP(acc.min, lo_lanes[j]);
    acc.max = XR_MAX_STEP(acc.max, hi_lanes[j]);
  }
#else
  for (; i + XR_K <= end; i += XR_K) {
    acc_vec_t f = XR_LOADV(XR_VEC, in, i);
#pragma unroll
    for (uint a = 1; a < XR_K / XR_VEC; ++a) f = xr_op_vec(f, XR_LOADV(XR_VEC, in, i + a * XR_VEC));
    // Some element of the block may replace the record: the record is the identity, or some lane
    // of the block's fold (NaN where the lane met one) replaces its value.
    if (acc.index == XR_NO_INDEX || XR_ANY_REPLACES(acc.value, f))
      for (uint j = 0; j < XR_K; ++j) acc = xr_pair_step(acc, XR_LOAD(in, i + j), first_index + (long)(i + j));
  }
#endif
  for (; i < end; ++i) acc = xr_pair_step(acc, XR_LOAD(in, i), first_index + (long)i);
#else
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
#if XR_K > 0
  const uint K = XR_K;
#else
  const uint K = k_arg;
#endif
  const ulong tile = (ulong)L * K;
  const ulong ntiles = (n + tile - 1) / tile;
  // Element j of this work-item's part of tile t: neighbours lid*K .. lid*K + K-1 (XR_CONTIG,
  // CPUs), else lid, lid + L, ... (coalesced); either way in index order.
#if XR_CONTIG
  const ulong first = (ulong)lid * K, stride = 1;
#else
  const ulong first = lid, stride = L;
#endif
  for (ulong t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
    const ulong base = t * tile + first;
    if ((t + 1) * tile <= n) {
#if XR_K > 0
#pragma unroll
#endif
      for (uint j = 0; j < K; ++j) {
        const ulong i = base + j * stride;
        acc = xr_pair_step(acc, XR_LOAD(in, i), first_index + (long)i);
      }
    } else {
      for (uint j = 0; j < K; ++j) {
        const ulong i = base + j * stride;
        if (i < n) acc = xr_pair_step(acc, XR_LOAD(in, i), first_index + (long)i);
      }
    }
  }
#endif
  xr_pair_finish(scratch, acc, out, get_group_id(0));
}

// One record per work-group of records [offset, offset + n) of `in` (the partials of xr_pair or
// of this kernel), each work-item combining records of a grid-stride loop in any order (the
// indices decide): n / global size loads a work-item, then a local tree of log2(L) steps.
__kernel void xr_pair_records(__global const cell_t* in, ulong offset, ulong n, __global cell_t* out,
                              __local pair_t* scratch) {
  pair_t acc = xr_pair_identity();
  for (ulong r = get_global_id(0); r < n; r += get_global_size(0)) acc = xr_pair_combine(acc, xr_load_record(in, offset + r));
  xr_pair_finish(scratch, acc, out, get_group_id(0));
}
