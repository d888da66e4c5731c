// xreduce: one reduction kernel for every OpenCL rung, specialised by -D options that the host
// builds from core's op and type tables (backends/opencl: program_options):
//
//   XR_IN_T      input element type (OpenCL C name: char, uchar, int, uint, long, ulong, float,
//                double; half for f16 and ushort, its bits, for bf16)
//   XR_IN_HALF   1: the input is f16, read with vload_half (no extension needed); 2: bf16, read
//                by a shift into the top of a float; absent: read as it is
//   XR_ACC_T     accumulator type, what the kernel computes in (sums of narrow integers
//                accumulate in long or ulong; f16 and bf16 in float)
//   XR_OUT_T     the stored accumulator, what out and the partials hold: XR_ACC_T, except for
//                min and max of f16 and bf16, whose float result is stored back as the input type
//   XR_OUT_HALF  1 or 2 when XR_OUT_T is f16 or bf16 (as XR_IN_HALF)
//   XR_ACC_BYTES size of XR_ACC_T, which decides the atomic extension of the finish
//   XR_ACC_FLOAT 1 when the accumulator is a float type
//   XR_FP64      1 when either type is double
//   XR_IDENTITY  the op's identity in the accumulator type, as a literal
//   XR_OP_<NAME> the op: XR_OP_SUM, XR_OP_PROD, XR_OP_MIN, XR_OP_MAX (a mapped op's fold)
//   XR_MAP_<NAME> a mapped op's map of each element before the fold (XR_MAPPED below), with
//                XR_NAN_AS for XR_MAP_SKIP_NAN; absent on the passes over partial results
//   XR_K       elements each work-item reduces per tile before the tree; 0: kernel argument k
//   XR_CONTIG  1: work-item lid reads elements lid*K .. lid*K+K-1 of a tile (CPUs); 0: lid, lid+L, ...
//   XR_VEC     0: tiles as below; W > 0: contiguous runs (CPUs), K / W accumulators of W lanes
//   XR_PACK    0: tiles of elements; W > 0: tiles of 16-byte packs of W elements (GPUs)
//   XR_TREE    0 interleaved addressing (lid % (2s)), 1 sequential addressing
//   XR_FINISH  0 store one partial per work-group, 1 atom_add, 2 atom_min, 3 atom_max
//
// The input is cut into tiles of K * local_size elements. Work-group g reduces tiles g,
// g + num_groups, ... : with one tile per group this is the classic one-pass kernel, with a
// fixed grid it is a grid-stride (cascade) kernel. Inside a tile work-item lid reads elements
// lid, lid + L, lid + 2L, ...: neighbouring work-items read neighbouring elements (coalesced);
// with XR_CONTIG, elements lid*K ... lid*K + K-1 instead (one SIMD load on a CPU). Then the
// work-group reduces its L private values in local memory, barrier after barrier, for any L
// (not only powers of two), and work-item 0 finishes.
//
// With XR_VEC = W (CPU devices) there are no tiles: the input is cut into one contiguous run per
// work-item (a multiple of K elements, the last one ragged), which the work-item reads with
// vload<W>, K elements per step into K / W independent vector accumulators, then combines lane
// by lane. The grid is a few work-groups per compute unit, of one work-item by default, so
// that the local tree and its barriers cost next to nothing.

#ifndef XR_CONTIG
#define XR_CONTIG 0
#endif
#ifndef XR_VEC
#define XR_VEC 0
#endif
#ifndef XR_PACK
#define XR_PACK 0
#endif

#if XR_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if XR_FINISH == 1 && XR_ACC_BYTES == 4
#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable
#elif XR_FINISH >= 2 && XR_ACC_BYTES == 4
#pragma OPENCL EXTENSION cl_khr_global_int32_extended_atomics : enable
#elif XR_FINISH == 1 && XR_ACC_BYTES == 8
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#elif XR_FINISH >= 2 && XR_ACC_BYTES == 8
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#endif

#ifndef XR_IN_HALF
#define XR_IN_HALF 0
#endif
#ifndef XR_OUT_HALF
#define XR_OUT_HALF 0
#endif
#ifndef XR_OUT_T
#define XR_OUT_T XR_ACC_T
#endif

typedef XR_IN_T in_t;
typedef XR_ACC_T acc_t;
typedef XR_OUT_T out_t;

#define XR_CAT_(a, b) a##b
#define XR_CAT(a, b) XR_CAT_(a, b)
#if XR_ACC_BYTES == 1
#define XR_ACC_BITS_T uchar
#elif XR_ACC_BYTES == 2
#define XR_ACC_BITS_T ushort
#elif XR_ACC_BYTES == 4
#define XR_ACC_BITS_T uint
#else
#define XR_ACC_BITS_T ulong
#endif

// Integer sums and products wrap without signed overflow: computed in the unsigned type of
// acc_t's size, whose bits are the two's complement result (cast back to that type: scalars
// narrower than int are promoted to int by the operator). W is the vector width suffix of the
// operands (empty for scalars).
#if XR_ACC_FLOAT
#define XR_WRAP(a, op, b, W) ((a)op(b))
#else
#define XR_WRAP(a, op, b, W)                                                                    \
  XR_CAT(as_, XR_CAT(XR_ACC_T, W))                                                              \
  ((XR_CAT(XR_ACC_BITS_T, W))(XR_CAT(as_, XR_CAT(XR_ACC_BITS_T, W))(a) op XR_CAT(as_, XR_CAT(XR_ACC_BITS_T, W))(b)))
#endif

// Min and max, exactly as core's OpFn: NaN when either side is NaN; on scalars and vectors alike
// (?: selects per lane on vectors).
#define XR_MIN_STEP(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define XR_MAX_STEP(a, b) (((a) < (b) || (b) != (b)) ? (b) : (a))

// One step of the reduction, exactly as core's OpFn: integer sums and products wrap (two's
// complement), min and max as above. Defined once for acc_t and, with XR_VEC, for acc_t vectors
// of XR_VEC lanes.
#if defined(XR_OP_SUM)
#define XR_STEP(a, b, W) XR_WRAP(a, +, b, W)
#elif defined(XR_OP_PROD)
#define XR_STEP(a, b, W) XR_WRAP(a, *, b, W)
#elif defined(XR_OP_MIN)
#define XR_STEP(a, b, W) XR_MIN_STEP(a, b)
#elif defined(XR_OP_MAX)
#define XR_STEP(a, b, W) XR_MAX_STEP(a, b)
#else
#error "no XR_OP_<NAME> given"
#endif
#define XR_DEFINE_OP(name, T, W) \
  inline T name(T a, T b) { return XR_STEP(a, b, W); }

// Reading element i of p (XR_RAW) and W elements from p + i (XR_RAWV) in their compute type:
// f16 through vload_half, bf16 by a shift (both to float), every other type as it is.
#if XR_IN_HALF == 1
#define XR_RAW(p, i) vload_half((i), (p))
#define XR_RAWV(W, p, i) XR_CAT(vload_half, W)(0, (p) + (i))
#elif XR_IN_HALF == 2
#define XR_RAW(p, i) as_float((uint)(p)[i] << 16)
#define XR_RAWV(W, p, i) XR_CAT(as_float, W)(XR_CAT(convert_uint, W)(XR_CAT(vload, W)(0, (p) + (i))) << 16)
#else
#define XR_RAW(p, i) ((p)[i])
#define XR_RAWV(W, p, i) XR_CAT(vload, W)(0, (p) + (i))
#endif
#define XR_CONVERT(W, v) XR_CAT(convert_, XR_CAT(XR_ACC_T, W))(v)
#if XR_IN_HALF
typedef float raw_t;  // the compute type of an element
#else
typedef in_t raw_t;
#endif

// A value v of the compute type as acc_t (XR_MAPPED) or as a vector of W acc_t (XR_MAPPEDV),
// through a mapped op's map where one is given (XR_MAP_<NAME>), as core's map_element:
//   XR_MAP_SQUARE    v * v in the accumulator (integers wrap)
//   XR_MAP_ABS       |v| (-0 to +0; integers wrap: |lowest| is lowest)
//   XR_MAP_SKIP_NAN  NaN to XR_NAN_AS (+0 for sums, the identity for min and max)
//   XR_MAP_NONZERO   1 where v != 0, else 0
// A comparison gives 1 for true on scalars and -1 on vectors: `& 1` makes both 1.
#if defined(XR_MAP_SQUARE)
#define XR_MAPPEDV(W, v) XR_WRAP(XR_CONVERT(W, v), *, XR_CONVERT(W, v), W)
#define XR_MAPPED(v) XR_MAPPEDV(, v)
#elif defined(XR_MAP_ABS) && XR_ACC_FLOAT
#define XR_MAPPEDV(W, v) fabs(XR_CONVERT(W, v))
#define XR_MAPPED(v) XR_MAPPEDV(, v)
#elif defined(XR_MAP_ABS)
#define XR_MAPPEDV(W, v) XR_CAT(as_, XR_CAT(XR_ACC_T, W))(abs(XR_CONVERT(W, v)))
#define XR_MAPPED(v) XR_MAPPEDV(, v)
#elif defined(XR_MAP_SKIP_NAN)
#define XR_MAPPEDV(W, v) select(XR_CONVERT(W, v), (XR_CAT(XR_ACC_T, W))(XR_NAN_AS), isnan(v))
#define XR_MAPPED(v) (isnan(v) ? (acc_t)(XR_NAN_AS) : XR_CONVERT(, v))
#elif defined(XR_MAP_NONZERO)
#define XR_MAPPEDV(W, v) (XR_CONVERT(W, (v) != (raw_t)0) & (XR_CAT(XR_ACC_T, W))(1))
#define XR_MAPPED(v) XR_MAPPEDV(, v)
#else
#define XR_MAPPEDV(W, v) XR_CONVERT(W, v)
#define XR_MAPPED(v) XR_MAPPEDV(, v)
#endif
// Element i of p as acc_t (XR_LOAD), W elements from p + i as a vector of acc_t (XR_LOADV).
#define XR_LOAD(p, i) XR_MAPPED(XR_RAW(p, i))
#define XR_LOADV(W, p, i) XR_MAPPEDV(W, XR_RAWV(W, p, i))
// Storing v as element i of an out_t array: f16 by vstore_half, bf16 as the top of its bits
// (exact either way: min and max of these types are values of the type).
#if XR_OUT_HALF == 1
#define XR_STORE(v, p, i) vstore_half((v), (i), (p))
#elif XR_OUT_HALF == 2
#define XR_STORE(v, p, i) ((p)[i] = (ushort)(as_uint(v) >> 16))
#else
#define XR_STORE(v, p, i) ((p)[i] = (v))
#endif

XR_DEFINE_OP(xr_op, acc_t, )
#if XR_VEC
typedef XR_CAT(XR_ACC_T, XR_VEC) acc_vec_t;
XR_DEFINE_OP(xr_op_vec, acc_vec_t, XR_VEC)
#endif
#if XR_PACK
typedef XR_CAT(XR_ACC_T, XR_PACK) acc_pack_t;
XR_DEFINE_OP(xr_op_pack, acc_pack_t, XR_PACK)
#if XR_IN_HALF
// A pack of f16 or bf16 is loaded as its 16 bytes of bits, then converted in registers.
typedef XR_CAT(ushort, XR_PACK) in_pack_t;
inline XR_CAT(float, XR_PACK) xr_pack_raw(in_pack_t bits) {
#if XR_IN_HALF == 1
  return XR_CAT(vload_half, XR_PACK)(0, (const __private half*)&bits);
#else
  return XR_CAT(as_float, XR_PACK)(XR_CAT(convert_uint, XR_PACK)(bits) << 16);
#endif
}
#else
typedef XR_CAT(XR_IN_T, XR_PACK) in_pack_t;
#define xr_pack_raw(bits) (bits)
#endif
#define xr_pack_value(bits) XR_MAPPEDV(XR_PACK, xr_pack_raw(bits))
#endif

__kernel void xr_reduce(__global const in_t* in, ulong offset, ulong n, __global out_t* out,
                        __local acc_t* scratch, uint k_arg) {
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
#if XR_K > 0
  const uint K = XR_K;  // a compile-time constant: the loops below unroll
#else
  const uint K = k_arg;
#endif
  const ulong tile = (ulong)L * K;
  const ulong ntiles = (n + tile - 1) / tile;
  in += offset;

#if XR_VEC
  // A contiguous run per work-item, K elements per step in K / W vector accumulators.
  acc_vec_t acc_v[XR_K / XR_VEC];
#pragma unroll
  for (uint a = 0; a < XR_K / XR_VEC; ++a) acc_v[a] = (acc_vec_t)(XR_IDENTITY);
  const ulong items = get_global_size(0);
  const ulong run = (n + items * XR_K - 1) / (items * XR_K) * XR_K;
  const ulong begin = min(n, get_global_id(0) * run), end = min(n, begin + run);
  ulong i = begin;
  for (; i + XR_K <= end; i += XR_K) {
#pragma unroll
    for (uint a = 0; a < XR_K / XR_VEC; ++a)
      acc_v[a] = xr_op_vec(acc_v[a], XR_LOADV(XR_VEC, in, i + a * XR_VEC));
  }
  acc_t acc = XR_IDENTITY;  // the ragged end of the last run, element by element
  for (; i < end; ++i) acc = xr_op(acc, XR_LOAD(in, i));
#pragma unroll
  for (uint a = 1; a < XR_K / XR_VEC; ++a) acc_v[0] = xr_op_vec(acc_v[0], acc_v[a]);
  acc_t lanes[XR_VEC];
  XR_CAT(vstore, XR_VEC)(acc_v[0], 0, lanes);
#pragma unroll
  for (uint j = 0; j < XR_VEC; ++j) acc = xr_op(acc, lanes[j]);
#elif XR_PACK
  // Tiles of K * L 16-byte packs from the first 16-byte boundary: work-item lid reads packs lid,
  // lid + L, ... (coalesced, K loads of 16 bytes in flight) into K pack accumulators. The
  // elements before the boundary and after the last whole pack go to work-group 0, one by one.
  const ulong head = min(n, (ulong)(((16 - ((ulong)(size_t)in & 15)) & 15) / sizeof(in_t)));
  const ulong npacks = (n - head) / XR_PACK;
  const ulong tail = head + npacks * XR_PACK;
  __global const in_pack_t* packs = (__global const in_pack_t*)(in + head);
  acc_pack_t acc_p[XR_K];
#pragma unroll
  for (uint j = 0; j < XR_K; ++j) acc_p[j] = (acc_pack_t)(XR_IDENTITY);
  const ulong ptile = (ulong)L * XR_K;
  const ulong nptiles = (npacks + ptile - 1) / ptile;
  for (ulong t = get_group_id(0); t < nptiles; t += get_num_groups(0)) {
    const ulong base = t * ptile + lid;
    if ((t + 1) * ptile <= npacks) {
#pragma unroll
      for (uint j = 0; j < XR_K; ++j)
        acc_p[j] = xr_op_pack(acc_p[j], xr_pack_value(packs[base + (ulong)j * L]));
    } else {
#pragma unroll
      for (uint j = 0; j < XR_K; ++j) {
        const ulong p = base + (ulong)j * L;
        if (p < npacks) acc_p[j] = xr_op_pack(acc_p[j], xr_pack_value(packs[p]));
      }
    }
  }
#pragma unroll
  for (uint j = 1; j < XR_K; ++j) acc_p[0] = xr_op_pack(acc_p[0], acc_p[j]);
  acc_t lanes[XR_PACK];
  XR_CAT(vstore, XR_PACK)(acc_p[0], 0, lanes);
  acc_t acc = lanes[0];
#pragma unroll
  for (uint j = 1; j < XR_PACK; ++j) acc = xr_op(acc, lanes[j]);
  if (get_group_id(0) == 0)
    for (ulong i = lid; i < head + (n - tail); i += L) acc = xr_op(acc, XR_LOAD(in, i < head ? i : tail + (i - head)));
#elif XR_K > 0
  // K independent accumulators: the loads of a tile and their operations do not wait on one
  // another (more loads in flight on a GPU, SIMD lanes on a CPU).
  acc_t acc_j[XR_K];
#pragma unroll
  for (uint j = 0; j < XR_K; ++j) acc_j[j] = XR_IDENTITY;
#if XR_CONTIG
  // Work-item lid reads K neighbouring elements (CPU devices: one vector load per tile).
#define XR_INDEX(t, j) ((t) * tile + (ulong)lid * XR_K + (j))
#else
  // Neighbouring work-items read neighbouring elements (coalesced on a GPU).
#define XR_INDEX(t, j) ((t) * tile + lid + (ulong)(j) * L)
#endif
  for (ulong t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
    if ((t + 1) * tile <= n) {
#pragma unroll
      for (uint j = 0; j < XR_K; ++j) acc_j[j] = xr_op(acc_j[j], XR_LOAD(in, XR_INDEX(t, j)));
    } else {
#pragma unroll
      for (uint j = 0; j < XR_K; ++j) {
        const ulong i = XR_INDEX(t, j);
        if (i < n) acc_j[j] = xr_op(acc_j[j], XR_LOAD(in, i));
      }
    }
  }
  acc_t acc = acc_j[0];
#pragma unroll
  for (uint j = 1; j < XR_K; ++j) acc = xr_op(acc, acc_j[j]);
#else
  // A run-time K: one accumulator, a loop that is not unrolled.
  acc_t acc = XR_IDENTITY;
  for (ulong t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
    const ulong base = t * tile + lid;
    if ((t + 1) * tile <= n) {
      for (uint j = 0; j < K; ++j) acc = xr_op(acc, XR_LOAD(in, base + (ulong)j * L));
    } else {
      for (uint j = 0; j < K; ++j) {
        const ulong i = base + (ulong)j * L;
        if (i < n) acc = xr_op(acc, XR_LOAD(in, i));
      }
    }
  }
#endif
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);

#if XR_TREE == 0
  // Interleaved addressing: at step s, work-items whose id is a multiple of 2s add the
  // value s places to their right. Neighbouring work-items diverge, and % is slow.
  for (uint s = 1; s < L; s *= 2) {
    if (lid % (2 * s) == 0 && lid + s < L) scratch[lid] = xr_op(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#else
  // Sequential addressing: the first s work-items add the value s places away; the active
  // work-items stay contiguous. Starting from the power of two >= L handles any L.
  uint p = 1;
  while (p < L) p *= 2;
  for (uint s = p / 2; s > 0; s /= 2) {
    if (lid < s && lid + s < L) scratch[lid] = xr_op(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif

  if (lid == 0) {
#if XR_FINISH == 0
    XR_STORE(scratch[0], out, get_group_id(0));
#elif XR_FINISH == 1
    atom_add(out, scratch[0]);
#elif XR_FINISH == 2
    atom_min(out, scratch[0]);
#else
    atom_max(out, scratch[0]);
#endif
  }
}
