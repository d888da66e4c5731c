// xreduce: the CPU kernels of segmented reductions (after segments.cl, whose header gives the
// -D options): xr_seg_serial, xr_seg_serial_fixup and xr_seg_columns_serial (the serial strategy).

#if !XR_SEG_EXACT && !XR_SEG_FINALIZE

// ---- CPU devices: one work-item per block --------------------------------------------------

typedef XR_CAT(XR_ACC_T, XR_RUN_W) run_acc_t;
XR_DEFINE_OP(run_op, run_acc_t, XR_RUN_W)
#define XR_RUN_LOAD(p) XR_LOADV(XR_RUN_W, (p), 0)

// The lanes of a vector accumulator combined pairwise, halves first: log2 XR_RUN_W dependent
// steps where one lane after another took XR_RUN_W, for every segment.
inline acc_t run_total(run_acc_t v) {
  acc_t lanes[XR_RUN_W];
  XR_CAT(vstore, XR_RUN_W)(v, 0, lanes);
#pragma unroll
  for (uint h = XR_RUN_W / 2; h > 0; h /= 2) {
#pragma unroll
    for (uint j = 0; j < h; ++j) lanes[j] = xr_op(lanes[j], lanes[j + h]);
  }
  return lanes[0];
}

#if XR_RUN_W > 16
#error "XR_RUN_W lanes need as many entries in xr_lane_index"
#endif
#if XR_ACC_BYTES == 1
#define XR_MASK_T char
#elif XR_ACC_BYTES == 2
#define XR_MASK_T short
#elif XR_ACC_BYTES == 4
#define XR_MASK_T int
#else
#define XR_MASK_T long
#endif
typedef XR_CAT(XR_MASK_T, XR_RUN_W) run_mask_t;
__constant int xr_lane_index[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// The XR_RUN_W elements that end at element e (e >= XR_RUN_W), those before element `from` as the
// identity: a ragged end (or a short segment) in one vector load instead of a chain of scalar
// steps, reading only elements of the input.
inline run_acc_t run_last(__global const in_t* in, ulong from, ulong e) {
  const run_mask_t lane =
      XR_CAT(convert_, XR_CAT(XR_MASK_T, XR_RUN_W))(XR_CAT(vload, XR_RUN_W)(0, xr_lane_index));
  const run_mask_t keep = lane >= (run_mask_t)((XR_MASK_T)(from - (e - XR_RUN_W)));
  return select((run_acc_t)(XR_IDENTITY), XR_RUN_LOAD(in + e - XR_RUN_W), keep);
}

// op over [b, e) of in, contiguous: XR_RUN_ACCS vector accumulators of XR_RUN_W lanes (one SIMD
// load each per step, the loops a CPU compiler keeps in registers), the ragged end as one masked
// vector (run_last), then the lanes pairwise. A segment shorter than a vector is one masked
// vector too, except in the first XR_RUN_W elements of the input, where it goes element by
// element. These per-segment steps are what rows of 32 to 128 elements and CSR segments of ~64
// spend beside their loads: 2^20 segments of mean length 64 (2^26 f32) took 14.7 ms on PoCL
// (2-core EPYC) with a scalar ragged end, 11.9 ms with the masked vector (the whole array is read
// in 8.1-9.1 ms).
inline acc_t run_range(__global const in_t* in, ulong b, ulong e) {
  if (e - b < XR_RUN_W) {
    if (e >= XR_RUN_W && e > b) return run_total(run_last(in, b, e));
    acc_t acc = XR_IDENTITY;
    for (ulong i = b; i < e; ++i) acc = xr_op(acc, XR_LOAD(in, i));
    return acc;
  }
  run_acc_t a[XR_RUN_ACCS];
#pragma unroll
  for (uint k = 0; k < XR_RUN_ACCS; ++k) a[k] = (run_acc_t)(XR_IDENTITY);
  ulong i = b;
  for (; i + XR_RUN_W * XR_RUN_ACCS <= e; i += XR_RUN_W * XR_RUN_ACCS) {
#pragma unroll
    for (uint k = 0; k < XR_RUN_ACCS; ++k) a[k] = run_op(a[k], XR_RUN_LOAD(in + i + k * XR_RUN_W));
  }
  for (; i + XR_RUN_W <= e; i += XR_RUN_W) a[0] = run_op(a[0], XR_RUN_LOAD(in + i));
  if (i < e) a[1 % XR_RUN_ACCS] = run_op(a[1 % XR_RUN_ACCS], run_last(in, i, e));
#pragma unroll
  for (uint k = 1; k < XR_RUN_ACCS; ++k) a[0] = run_op(a[0], a[k]);
  return run_total(a[0]);
}

#if XR_ROW_LEN
// Short dense rows: 16 rows at a time, XR_ROW_LEN vectors of 16 elements, each halving step
// combining neighbouring elements (.even with .odd) of two vectors into one, until one vector
// holds the 16 row values. On PoCL (2-core EPYC, 2^26 f32) rows of 2 took 12.6-13.0 ms this way
// and 58.8-59.6 ms row by row, rows of 8 9.8-10.0 and 15.5-16.0 (the whole array is read in
// 8.4-9.6).
typedef XR_CAT(XR_ACC_T, 16) acc16_t;
typedef XR_CAT(XR_ACC_T, 8) acc8_t;
XR_DEFINE_OP(op8, acc8_t, 8)
#endif

// The first segment whose start is at or after element x (count when none).
inline ulong first_segment(ulong x, __global const long* offsets, ulong n, ulong count, ulong stride) {
#if XR_SEG_MODE == XR_ROWS
  return min(count, (x + stride - 1) / stride);
#else
  ulong lo = 0, hi = count;
  while (lo < hi) {
    const ulong mid = lo + (hi - lo) / 2;
    if ((ulong)clamp(offsets[mid], 0L, (long)n) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
#endif
}

inline void segment_bounds(ulong s, __global const long* offsets, ulong n, ulong length, ulong stride, ulong* b,
                           ulong* e) {
#if XR_SEG_MODE == XR_ROWS
  *b = s * stride;
  *e = *b + length;
#else
  offset_bounds(offsets, s, n, b, e);
#endif
}

// xr_seg_serial (XR_ROWS or XR_OFFSETS): work-item w covers elements [w * block, (w + 1) * block)
// and writes every segment that starts there; the part of a segment that runs past the block's end
// is reduced by the work-items it reaches, each into carry[w] (carry_seg[w] its segment), and
// xr_seg_serial_fixup adds those to the segment's value in order.
__kernel void xr_seg_serial(__global const in_t* in, ulong offset, ulong n, __global const long* offsets, ulong count,
                            ulong length, ulong stride, ulong block, __global out_t* out, __global out_t* carry,
                            __global ulong* carry_seg) {
  in += offset;
  const ulong w = get_global_id(0), items = get_global_size(0);
  const ulong lo = w * block;
  const int last = w + 1 == items;
  const ulong hi = last ? XR_NONE : lo + block;
  const ulong s0 = w == 0 ? 0 : first_segment(lo, offsets, n, count, stride);
  const ulong s1 = last ? count : first_segment(hi, offsets, n, count, stride);
  carry_seg[w] = XR_NONE;
  if (s0 > 0 && s0 <= count) {
    ulong b, e;
    segment_bounds(s0 - 1, offsets, n, length, stride, &b, &e);
    if (e > lo) {
      XR_STORE(run_range(in, lo, min(e, hi)), carry, w);
      carry_seg[w] = s0 - 1;
    }
  }
  ulong s = s0;
#if XR_ROW_LEN && XR_SEG_MODE == XR_ROWS
  for (; s + 16 <= s1; s += 16) {
    acc16_t v[XR_ROW_LEN];
#pragma unroll
    for (uint j = 0; j < XR_ROW_LEN; ++j) v[j] = XR_LOADV(16, in, s * XR_ROW_LEN + 16 * j);
#pragma unroll
    for (uint m = XR_ROW_LEN; m > 1; m /= 2) {
#pragma unroll
      for (uint j = 0; j < m / 2; ++j)
        v[j] = (acc16_t)(op8(v[2 * j].even, v[2 * j].odd), op8(v[2 * j + 1].even, v[2 * j + 1].odd));
    }
    XR_STOREV(16, v[0], out + s);
  }
#endif
  for (; s < s1; ++s) {
    ulong b, e;
    segment_bounds(s, offsets, n, length, stride, &b, &e);
    XR_STORE(b == e ? XR_EMPTY_ACC : run_range(in, b, min(e, hi)), out, s);
  }
}

// Adds the carries to the segments they continue: the first work-item of a run of carries of
// segment s adds them all, in order, to out[s].
__kernel void xr_seg_serial_fixup(__global const out_t* carry, __global const ulong* carry_seg, ulong items,
                                  __global out_t* out) {
  const ulong w = get_global_id(0);
  if (w >= items) return;
  const ulong s = carry_seg[w];
  if (s == XR_NONE || (w > 0 && carry_seg[w - 1] == s)) return;
  acc_t v = XR_LOAD_OUT(out, s);
  for (ulong k = w; k < items && carry_seg[k] == s; ++k) v = xr_op(v, XR_LOAD_OUT(carry, k));
  XR_STORE(v, out, s);
}

// xr_seg_columns_serial: work-item (band, block) reduces rows [band * band_rows, ...) of columns
// [block * block_cols, ...), row after row into their values in dst (out with one band, else
// partials[band * cols + c]; the first row is stored, the next ones combined, XR_RUN_W columns per
// SIMD step: the rows of a band stream through the cache while dst stays in it). XR_NARROW (dense
// rows of XR_NARROW columns, a divisor of XR_RUN_W): the band is one contiguous run whose vector
// lanes each keep one column (lane j: column j % XR_NARROW).
__kernel void xr_seg_columns_serial(__global const in_t* in, ulong offset, ulong rows, ulong cols, ulong stride,
                                    ulong band_rows, ulong bands, ulong block_cols, __global out_t* out,
                                    __global out_t* partials) {
  in += offset;
  const ulong blocks = (cols + block_cols - 1) / block_cols;
  for (ulong id = get_global_id(0); id < blocks * bands; id += get_global_size(0)) {
    const ulong band = id / blocks, block = id % blocks;
    const ulong r0 = band * band_rows, r1 = min(rows, r0 + band_rows);
    __global out_t* dst = bands == 1 ? out : partials + band * cols;
#if XR_NARROW
    run_acc_t a[XR_RUN_ACCS];
#pragma unroll
    for (uint k = 0; k < XR_RUN_ACCS; ++k) a[k] = (run_acc_t)(XR_IDENTITY);
    ulong i = r0 * XR_NARROW;
    const ulong e = r1 * XR_NARROW;
    for (; i + XR_RUN_W * XR_RUN_ACCS <= e; i += XR_RUN_W * XR_RUN_ACCS) {
#pragma unroll
      for (uint k = 0; k < XR_RUN_ACCS; ++k) a[k] = run_op(a[k], XR_RUN_LOAD(in + i + k * XR_RUN_W));
    }
    for (; i + XR_RUN_W <= e; i += XR_RUN_W) a[0] = run_op(a[0], XR_RUN_LOAD(in + i));
#pragma unroll
    for (uint k = 1; k < XR_RUN_ACCS; ++k) a[0] = run_op(a[0], a[k]);
    acc_t lanes[XR_RUN_W];
    XR_CAT(vstore, XR_RUN_W)(a[0], 0, lanes);
    acc_t col[XR_NARROW];
#pragma unroll
    for (uint c = 0; c < XR_NARROW; ++c) col[c] = lanes[c];
#pragma unroll
    for (uint j = XR_NARROW; j < XR_RUN_W; ++j) col[j % XR_NARROW] = xr_op(col[j % XR_NARROW], lanes[j]);
    for (; i < e; ++i) col[i % XR_NARROW] = xr_op(col[i % XR_NARROW], XR_LOAD(in, i));
#pragma unroll
    for (uint c = 0; c < XR_NARROW; ++c) XR_STORE(col[c], dst, c);
#else
    const ulong c0 = block * block_cols, c1 = min(cols, c0 + block_cols);
    __global const in_t* row = in + r0 * stride;
    ulong c = c0;
    for (; c + XR_RUN_W <= c1; c += XR_RUN_W)
      XR_STOREV(XR_RUN_W, run_op((run_acc_t)(XR_IDENTITY), XR_RUN_LOAD(row + c)), dst + c);
    for (; c < c1; ++c) XR_STORE(xr_op(XR_IDENTITY, XR_LOAD(row, c)), dst, c);
    // XR_COLUMN_ROWS rows per pass over the values: one load and store of them per that many rows.
    ulong r = r0 + 1;
    for (; r + XR_COLUMN_ROWS <= r1; r += XR_COLUMN_ROWS) {
      row = in + r * stride;
      for (c = c0; c + XR_RUN_W <= c1; c += XR_RUN_W) {
        run_acc_t v = XR_LOADV_OUT(XR_RUN_W, dst + c);
#pragma unroll
        for (uint k = 0; k < XR_COLUMN_ROWS; ++k) v = run_op(v, XR_RUN_LOAD(row + k * stride + c));
        XR_STOREV(XR_RUN_W, v, dst + c);
      }
      for (; c < c1; ++c) {
        acc_t v = XR_LOAD_OUT(dst, c);
#pragma unroll
        for (uint k = 0; k < XR_COLUMN_ROWS; ++k) v = xr_op(v, XR_LOAD(row, k * stride + c));
        XR_STORE(v, dst, c);
      }
    }
    for (; r < r1; ++r) {
      row = in + r * stride;
      c = c0;
      for (; c + XR_RUN_W <= c1; c += XR_RUN_W)
        XR_STOREV(XR_RUN_W, run_op(XR_LOADV_OUT(XR_RUN_W, dst + c), XR_RUN_LOAD(row + c)), dst + c);
      for (; c < c1; ++c) XR_STORE(xr_op(XR_LOAD_OUT(dst, c), XR_LOAD(row, c)), dst, c);
    }
#endif
  }
}

#endif  // !XR_SEG_EXACT && !XR_SEG_FINALIZE
