// xreduce: segmented reductions (xreduce/segments.hpp) on OpenCL devices. A program is reduce.cl
// followed by this file (the part every strategy's kernels share) and each segments_*.cl (the
// kernels of one strategy family), built with reduce.cl's -D options and these (build_options in
// backends/opencl/src/segment_plan.cpp), so the element and accumulator types (in_t, acc_t), the op
// (xr_op, XR_STEP, XR_DEFINE_OP), its identity (XR_IDENTITY), the loads of inputs (XR_LOAD,
// XR_LOADV) and stores of values (XR_STORE, out_t) and XR_CAT come from there, from the same
// definitions as the whole-array kernels. f16 and bf16 inputs are read as their bits and widened
// to float (acc_t); the min and max of them are stored back as the input type (out_t), the values
// of sums and products as float. This file adds:
//
//   XR_EMPTY      the value of an empty segment (xr::empty_value: +0 for float sums)
//   XR_SEG_MODE   what the items of xr_seg_team are (below)
//   XR_TEAM       work-items per item (a power of two dividing the work-group); 0: run-time
//   XR_SEGS       items each team reduces per round, their first loads issued together
//   XR_PACK_W     elements per load: 1, or a vector of up to 16 bytes (rows and columns whose
//                 start, length and stride are multiples of it; the host checks)
//   XR_UNROLL     loads of one lane in flight within one item
//   XR_FIT        1: every lane reads exactly XR_UNROLL loads of every item (rows whose length
//                 is team * pack * unroll)
//   XR_RUN_W, XR_RUN_ACCS  CPU kernels: vector width and vector accumulators of a contiguous run
//   XR_ROW_LEN    CPU rows: a power of two <= 16 when every row is that long and rows are dense
//   XR_NARROW     CPU columns: the column count when it divides 16 and rows are dense
//   XR_COLUMN_ROWS  CPU columns: rows combined per pass over a block's values
//   XR_BAL_K      balanced: elements each work-item adds per tile (a divisor of 32); 0: no
//                 balanced kernels in the program (with it XR_PACK_W is a 16-byte unit)
//   XR_SEG_EXACT  1: only xr_seg_exact, for an f32, f64, f16 or bf16 input
//   XR_SEG_FINALIZE 1: only xr_seg_finalize, a mapped op's last step (XR_FIN_STEP) on XR_FIN_T values
//
// A segment of the Offsets layout is [clamp(offsets[i], 0, n), clamp(offsets[i + 1], begin, n)):
// the host validates offsets, and the device never reads outside [0, n) whatever they hold.
// Every value starts from the op's identity (-0 for float sums, so that a sum of -0 terms is
// -0); a segment with no element gets XR_EMPTY instead. Values, partials and carries are out_t,
// written by XR_STORE and read back by XR_LOAD_OUT.

#ifndef XR_SEG_MODE
#define XR_SEG_MODE 0
#endif
#ifndef XR_TEAM
#define XR_TEAM 1
#endif
#ifndef XR_SEGS
#define XR_SEGS 1
#endif
#ifndef XR_PACK_W
#define XR_PACK_W 1
#endif
#ifndef XR_UNROLL
#define XR_UNROLL 4
#endif
#ifndef XR_FIT
#define XR_FIT 0
#endif
#ifndef XR_RUN_W
#define XR_RUN_W 16
#endif
#ifndef XR_RUN_ACCS
#define XR_RUN_ACCS 4
#endif
#ifndef XR_ROW_LEN
#define XR_ROW_LEN 0
#endif
#ifndef XR_NARROW
#define XR_NARROW 0
#endif
#ifndef XR_COLUMN_ROWS
#define XR_COLUMN_ROWS 4
#endif
#ifndef XR_BAL_K
#define XR_BAL_K 0
#endif

// The items of xr_seg_team. Rows, offsets and binned items are whole segments written to
// out[segment]; row parts and tasks are parts of segments, written to partials[item] when the
// segment has more than one part; spans combine those partials (the program's input type is then
// the accumulator) into out[segment].
#define XR_ROWS 0       // item s: elements [s * stride, s * stride + length)
#define XR_OFFSETS 1    // item s: segment s of the offsets
#define XR_BINNED 2     // items of three lists of segments (xr_seg_plan), each with its team size
#define XR_ROW_PARTS 3  // item k: part k % parts of row k / parts, `parts` equal parts per row
#define XR_TASKS 4      // item k: tasks[2k] = segment, tasks[2k + 1] = part << 32 | parts
#define XR_SPANS 5      // item k: spans[3k] = segment, its partials [spans[3k + 1], + spans[3k + 2])

#define XR_NONE (~0UL)
#define XR_EMPTY_ACC ((acc_t)(XR_EMPTY))

// ---- values: out_t in memory, acc_t in registers ---------------------------------------------

// Element i of an out_t array as acc_t (XR_LOAD_OUT), W of them from p as a vector of acc_t
// (XR_LOADV_OUT), and W values stored at p (XR_STOREV): XR_STORE and its inverse, f16 through
// vload_half and vstore_half, bf16 as the top of a float's bits (exact: values stored as f16 or
// bf16 are the min or max of such inputs).
#if XR_OUT_HALF == 1
#define XR_LOAD_OUT(p, i) vload_half((i), (p))
#define XR_LOADV_OUT(W, p) XR_CAT(vload_half, W)(0, (p))
#define XR_STOREV(W, v, p) XR_CAT(vstore_half, W)((v), 0, (p))
#elif XR_OUT_HALF == 2
#define XR_LOAD_OUT(p, i) as_float((uint)(p)[i] << 16)
#define XR_LOADV_OUT(W, p) XR_CAT(as_float, W)(XR_CAT(convert_uint, W)(XR_CAT(vload, W)(0, (p))) << 16)
#define XR_STOREV(W, v, p) XR_CAT(vstore, W)(XR_CAT(convert_ushort, W)(XR_CAT(as_uint, W)(v) >> 16), 0, (p))
#else
#define XR_LOAD_OUT(p, i) ((p)[i])
#define XR_LOADV_OUT(W, p) XR_CAT(vload, W)(0, (p))
#define XR_STOREV(W, v, p) XR_CAT(vstore, W)((v), 0, (p))
#endif

// ---- loads of XR_PACK_W elements ("units") -------------------------------------------------

#if XR_PACK_W > 1
typedef XR_CAT(XR_ACC_T, XR_PACK_W) unit_acc_t;
XR_DEFINE_OP(unit_op, unit_acc_t, XR_PACK_W)
// The lanes of a unit accumulator combined in order.
inline acc_t unit_total(unit_acc_t v) {
  acc_t lanes[XR_PACK_W];
  XR_CAT(vstore, XR_PACK_W)(v, 0, lanes);
  acc_t a = lanes[0];
#pragma unroll
  for (uint j = 1; j < XR_PACK_W; ++j) a = xr_op(a, lanes[j]);
  return a;
}
#define XR_UNIT_STORE(v, dst) XR_STOREV(XR_PACK_W, (v), (dst))
#else
typedef acc_t unit_acc_t;
#define unit_op xr_op
inline acc_t unit_total(acc_t v) { return v; }
#define XR_UNIT_STORE(v, dst) XR_STORE((v), (dst), 0)
#endif
#if XR_IN_HALF
// f16 and bf16: a unit is loaded as its bits (ushort, or a vector of them: one load of up to 16
// bytes), then widened in registers by XR_LOAD or XR_LOADV.
#if XR_PACK_W > 1
typedef XR_CAT(ushort, XR_PACK_W) unit_t;
inline unit_acc_t unit_value(unit_t bits) { return XR_LOADV(XR_PACK_W, (const __private in_t*)&bits, 0); }
#else
typedef ushort unit_t;
inline acc_t unit_value(unit_t bits) { return XR_LOAD((const __private in_t*)&bits, 0); }
#endif
#define XR_UNIT(x) unit_value(x)
#elif XR_PACK_W > 1
typedef XR_CAT(XR_IN_T, XR_PACK_W) unit_t;
#define XR_UNIT(x) XR_MAPPEDV(XR_PACK_W, x)
#else
typedef in_t unit_t;
#define XR_UNIT(x) XR_MAPPED(x)
#endif
#define XR_UNIT_IDENTITY ((unit_acc_t)(XR_IDENTITY))

// Segment s of the offsets, clamped into [0, n).
inline void offset_bounds(__global const long* offsets, ulong s, ulong n, ulong* b, ulong* e) {
  const long lo = clamp(offsets[s], 0L, (long)n);
  *b = (ulong)lo;
  *e = (ulong)clamp(offsets[s + 1], lo, (long)n);
}

// Part `part` of `parts` equal parts of [b, e) (the last ones may be short or empty).
inline void part_bounds(ulong part, ulong parts, ulong* b, ulong* e) {
  const ulong chunk = (*e - *b + parts - 1) / parts;
  *b = min(*e, *b + part * chunk);
  *e = min(*e, *b + chunk);
}
