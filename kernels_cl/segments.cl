// xreduce: segmented reductions (xreduce/segments.hpp) on OpenCL devices. A program is reduce.cl
// followed by this file, built with reduce.cl's -D options and these (build_options in
// backends/opencl/src/segments.cpp), so the element and accumulator types (in_t, acc_t), the op
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
#define XR_UNIT(x) XR_CAT(convert_, XR_CAT(XR_ACC_T, XR_PACK_W))(x)
#else
typedef in_t unit_t;
#define XR_UNIT(x) ((acc_t)(x))
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

#if !XR_SEG_EXACT

// ---- teams: XR_TEAM work-items per item ----------------------------------------------------

typedef struct {
  ulong b, e;  // units of the item
  ulong seg;   // its segment
  ulong slot;  // partials[slot], for a part of a split segment
  int dest;    // 0: partials[slot]; 1: out[seg], XR_EMPTY when the segment is empty; 2: out[seg]
  int valid;
} seg_item;

// Item k of `total` (k beyond: item total - 1's units, read but never written). Segment numbers
// read from lists, tasks and spans are kept below `segments` and spans inside [0, n), so that
// entries the planning kernel did not write (offsets other than the host planned from) read
// nothing outside the buffers.
inline seg_item item_at(ulong k, ulong total, ulong n, __global const long* offsets, __global const ulong* items,
                        ulong segments, ulong length, ulong stride, ulong parts) {
  seg_item it;
  it.valid = k < total;
  if (!it.valid) k = total - 1;
  it.slot = k;
  it.dest = 1;
#if XR_SEG_MODE == XR_ROWS
  it.seg = k;
  it.b = k * (stride / XR_PACK_W);
  it.e = it.b + length / XR_PACK_W;
#elif XR_SEG_MODE == XR_OFFSETS
  it.seg = k;
  offset_bounds(offsets, k, n, &it.b, &it.e);
#elif XR_SEG_MODE == XR_BINNED
  it.seg = min(items[k], segments - 1);
  offset_bounds(offsets, it.seg, n, &it.b, &it.e);
#elif XR_SEG_MODE == XR_ROW_PARTS
  it.seg = k / parts;
  it.b = it.seg * (stride / XR_PACK_W);
  it.e = it.b + length / XR_PACK_W;
  part_bounds(k % parts, parts, &it.b, &it.e);
  if (parts > 1) it.dest = 0;
#elif XR_SEG_MODE == XR_TASKS
  it.seg = min(items[2 * k], segments - 1);
  const ulong packed = items[2 * k + 1];
  const ulong task_parts = packed & 0xffffffffUL;
  offset_bounds(offsets, it.seg, n, &it.b, &it.e);
  part_bounds(packed >> 32, task_parts, &it.b, &it.e);
  if (task_parts > 1) it.dest = 0;
#elif XR_SEG_MODE == XR_SPANS
  it.seg = min(items[3 * k], segments - 1);
  it.b = min(items[3 * k + 1], n);
  it.e = min(n, it.b + min(items[3 * k + 2], n));
  it.dest = 2;
#else
#error "unknown XR_SEG_MODE"
#endif
  return it;
}

// xr_seg_team: teams of G work-items, each team reducing XR_SEGS items per round (grid-stride over
// rounds). Lane t of a team reads units b + t, b + t + G, ... of its item (neighbouring lanes read
// neighbouring units: coalesced), first XR_UNROLL units of each of the XR_SEGS items, all issued
// together, then the rest of each item XR_UNROLL at a time. The team's G values are combined in
// local memory, neighbours first (lanes 1, 2, 4, ... apart; a team of the whole work-group need
// not be a power of two), and lane 0 writes: an item of at most G units is summed pairwise in its
// own order, as close to the order of a sequential sum as a tree gets (a segment [x, -max, max,
// y, max] stays finite, where pairing lanes G/2 apart adds max to max). With G = 1 the work-item is the team; with
// G = the work-group size, one work-group reduces one item.
//
// XR_BINNED: work-groups [first[b], first[b + 1]) reduce list b (items + b * count, bin_items[b]
// long) with teams of bin_team[b].
__kernel void xr_seg_team(__global const in_t* in, ulong offset, ulong n, __global const long* offsets,
                          __global const ulong* items, ulong segments, ulong count, ulong length, ulong stride,
                          ulong parts, uint team_arg, uint4 bin_team, uint4 bin_first, ulong4 bin_items,
                          __global out_t* out, __global out_t* partials, __local acc_t* scratch) {
  in += offset;
  __global const unit_t* units = (__global const unit_t*)in;
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  ulong group = get_group_id(0), groups = get_num_groups(0), total = count;
#if XR_SEG_MODE == XR_BINNED
  const uint g = (uint)group;
  const uint bin = g < bin_first.y ? 0u : g < bin_first.z ? 1u : 2u;
  const uint G = bin == 0u ? bin_team.x : bin == 1u ? bin_team.y : bin_team.z;
  const uint first = bin == 0u ? 0u : bin == 1u ? bin_first.y : bin_first.z;
  const uint end = bin == 0u ? bin_first.y : bin == 1u ? bin_first.z : bin_first.w;
  group -= first;
  groups = end - first;
  total = bin == 0u ? bin_items.x : bin == 1u ? bin_items.y : bin_items.z;
  items += bin * count;
#elif XR_TEAM > 0
  const uint G = XR_TEAM;
#else
  const uint G = team_arg;
#endif
#if XR_SEG_MODE == XR_ROW_PARTS
  total = count * parts;
#endif
  const uint teams = L / G;
  const uint t = lid % G, team = lid / G;
  const ulong per_round = (ulong)teams * XR_SEGS;

  for (ulong round = group; round * per_round < total; round += groups) {
    seg_item it[XR_SEGS];
    unit_acc_t acc[XR_SEGS];
#pragma unroll
    for (uint i = 0; i < XR_SEGS; ++i) {
      it[i] = item_at(round * per_round + (ulong)i * teams + team, total, n, offsets, items, segments, length, stride,
                      parts);
      acc[i] = XR_UNIT_IDENTITY;
    }
#pragma unroll
    for (uint i = 0; i < XR_SEGS; ++i) {
#pragma unroll
      for (uint u = 0; u < XR_UNROLL; ++u) {
        const ulong j = it[i].b + t + (ulong)u * G;
#if XR_FIT
        acc[i] = unit_op(acc[i], XR_UNIT(units[j]));
#else
        acc[i] = unit_op(acc[i], j < it[i].e ? XR_UNIT(units[j]) : XR_UNIT_IDENTITY);
#endif
      }
    }
#if !XR_FIT
#pragma unroll
    for (uint i = 0; i < XR_SEGS; ++i) {
      const ulong e = it[i].e;
      ulong j = it[i].b + t + (ulong)XR_UNROLL * G;
      for (; j + (ulong)(XR_UNROLL - 1) * G < e; j += (ulong)XR_UNROLL * G) {
        unit_t x[XR_UNROLL];
#pragma unroll
        for (uint u = 0; u < XR_UNROLL; ++u) x[u] = units[j + (ulong)u * G];
#pragma unroll
        for (uint u = 0; u < XR_UNROLL; ++u) acc[i] = unit_op(acc[i], XR_UNIT(x[u]));
      }
      for (; j < e; j += G) acc[i] = unit_op(acc[i], XR_UNIT(units[j]));
    }
#endif
    acc_t v[XR_SEGS];
#pragma unroll
    for (uint i = 0; i < XR_SEGS; ++i) v[i] = unit_total(acc[i]);
#if XR_TEAM != 1
    if (G > 1) {
#pragma unroll
      for (uint i = 0; i < XR_SEGS; ++i) scratch[i * L + lid] = v[i];
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint h = 1; h < G; h *= 2) {
        if ((t & (2 * h - 1)) == 0 && t + h < G) {
#pragma unroll
          for (uint i = 0; i < XR_SEGS; ++i)
            scratch[i * L + lid] = xr_op(scratch[i * L + lid], scratch[i * L + lid + h]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
#pragma unroll
      for (uint i = 0; i < XR_SEGS; ++i) v[i] = scratch[i * L + lid];
    }
#endif
    if (t == 0) {
#pragma unroll
      for (uint i = 0; i < XR_SEGS; ++i) {
        if (!it[i].valid) continue;
        if (it[i].dest == 0) XR_STORE(v[i], partials, it[i].slot);
        else XR_STORE((it[i].dest == 1 && it[i].b == it[i].e) ? XR_EMPTY_ACC : v[i], out, it[i].seg);
      }
    }
  }
}

// The inclusive sum of v over the work-group (log2 L steps in `scan`, which then holds every
// work-item's sum: scan[L - 1] is the group's total).
inline ulong group_scan(__local ulong* scan, ulong v, uint lid, uint L) {
  scan[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint d = 1; d < L; d *= 2) {
    const ulong x = lid >= d ? scan[lid - d] : 0UL;
    barrier(CLK_LOCAL_MEM_FENCE);
    scan[lid] += x;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scan[lid];
}

// xr_seg_plan: sorts the segments into the lists of the binned strategy and the tasks of split
// segments. Segment s of length len goes to list b, the first with len <= limits[b] (b < 3), or
// else to parts = max(1, ceil(len / part)) consecutive tasks (XR_TASKS), and when parts > 1 to one
// span (XR_SPANS) that combines their partials. A work-group places its segments in order (scans
// of their counts: 16-bit fields of one word for the lists and spans, a word for the tasks) and
// reserves their places with one global atomic per kind, counters[0..2] the lists, counters[3]
// the tasks, counters[4] the spans (zero before the launch): a list is runs of segments in order,
// one per work-group, so that teams read neighbouring segments. The host sized the tasks and
// spans from the same offsets (task_room, span_room); nothing is written beyond them whatever the
// offsets hold.
__kernel void xr_seg_plan(__global const long* offsets, ulong n, ulong count, long4 limits, ulong part,
                          __global ulong* lists, __global ulong* tasks, ulong task_room, __global ulong* spans,
                          ulong span_room, __global uint* counters, __local ulong* scan) {
  __local ulong bases[5];
  const uint lid = (uint)get_local_id(0);
  const uint L = (uint)get_local_size(0);
  for (ulong base = get_group_id(0) * L; base < count; base += get_num_groups(0) * L) {
    const ulong s = base + lid;
    const int valid = s < count;
    ulong b = 0, e = 0;
    if (valid) offset_bounds(offsets, s, n, &b, &e);
    const long len = (long)(e - b);
    const uint kind = len <= limits.x ? 0u : len <= limits.y ? 1u : len <= limits.z ? 2u : 3u;
    const ulong parts = valid && kind == 3u ? max(1UL, (e - b + part - 1) / part) : 0UL;
    const ulong mine = !valid ? 0UL : kind < 3u ? 1UL << (16 * kind) : parts > 1UL ? 1UL << 48 : 0UL;
    const ulong before = group_scan(scan, mine, lid, L) - mine;
    if (lid == 0) {
      const ulong total = scan[L - 1];
      for (uint k = 0; k < 3; ++k) bases[k] = atomic_add(&counters[k], (uint)((total >> (16 * k)) & 0xffffUL));
      bases[4] = atomic_add(&counters[4], (uint)(total >> 48));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong task = group_scan(scan, parts, lid, L) - parts;
    if (lid == 0) bases[3] = atomic_add(&counters[3], (uint)scan[L - 1]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      if (kind < 3u) {
        lists[kind * count + bases[kind] + ((before >> (16 * kind)) & 0xffffUL)] = s;
      } else {
        const ulong first = bases[3] + task;
        for (ulong p = 0; p < parts && first + p < task_room; ++p) {
          tasks[2 * (first + p)] = s;
          tasks[2 * (first + p) + 1] = (p << 32) | parts;
        }
        const ulong span = bases[4] + (before >> 48);
        if (parts > 1UL && span < span_room) {
          spans[3 * span] = s;
          spans[3 * span + 1] = first;
          spans[3 * span + 2] = parts;
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// ---- columns -------------------------------------------------------------------------------

// xr_seg_columns: value c = op over rows r < rows of in[r * stride + c]. A work-group is W
// columns units wide (neighbouring work-items read neighbouring units: coalesced) and L / W rows
// tall, and covers one band of band_rows rows of one block of W units (grid-stride over blocks x
// bands); its rows go in turn to its row lanes, XR_UNROLL loads in flight each, and the row lanes
// of a unit are combined in local memory, neighbours first (as xr_seg_team's teams). A narrow
// matrix (W small) has many row lanes, so that a work-group still reads L neighbouring units. One
// band writes the values; several write partials[band * cols + c], which a second launch reduces
// as a matrix of `bands` rows.
__kernel void xr_seg_columns(__global const in_t* in, ulong offset, ulong rows, ulong cols, ulong stride, uint W,
                             ulong band_rows, ulong bands, __global out_t* out, __global out_t* partials,
                             __local unit_acc_t* scratch) {
  in += offset;
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  const uint lanes = L / W;
  const uint w = lid % W, lane = lid / W;
  const ulong units = cols / XR_PACK_W;
  const ulong unit_stride = stride / XR_PACK_W;
  const ulong blocks = (units + W - 1) / W;
  __global const unit_t* base = (__global const unit_t*)in;
  for (ulong g = get_group_id(0); g < blocks * bands; g += get_num_groups(0)) {
    const ulong block = g % blocks, band = g / blocks;
    const ulong c = block * W + w;
    const ulong r_end = min(rows, (band + 1) * band_rows);
    unit_acc_t acc = XR_UNIT_IDENTITY;
    if (c < units && lane < lanes) {
      ulong r = band * band_rows + lane;
      for (; r + (ulong)(XR_UNROLL - 1) * lanes < r_end; r += (ulong)XR_UNROLL * lanes) {
        unit_t x[XR_UNROLL];
#pragma unroll
        for (uint u = 0; u < XR_UNROLL; ++u) x[u] = base[(r + (ulong)u * lanes) * unit_stride + c];
#pragma unroll
        for (uint u = 0; u < XR_UNROLL; ++u) acc = unit_op(acc, XR_UNIT(x[u]));
      }
      for (; r < r_end; r += lanes) acc = unit_op(acc, XR_UNIT(base[r * unit_stride + c]));
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = 1; h < lanes; h *= 2) {
      if ((lane & (2 * h - 1)) == 0 && lane + h < lanes) scratch[lid] = unit_op(scratch[lid], scratch[lid + h * W]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && c < units) {
      __global out_t* dst = bands == 1 ? out : partials + band * cols;
      XR_UNIT_STORE(scratch[w], dst + c * XR_PACK_W);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// ---- balanced: tiles of the segments' elements, whatever their lengths ---------------------

#if XR_BAL_K
#if 32 % XR_BAL_K != 0
#error "XR_BAL_K divides 32: a work-item's end marks lie in one word"
#endif
#if XR_PACK_W < 2
#error "balanced loads 16-byte units: XR_PACK_W is 16 bytes of elements"
#endif
// Elements as loaded and staged: f16 and bf16 as their bits.
#if XR_IN_HALF
typedef ushort elem_t;
#else
typedef in_t elem_t;
#endif
#define XR_BAL_UNITS ((XR_BAL_K + XR_PACK_W - 1) / XR_PACK_W)
#if XR_BAL_K == 32
#define XR_BAL_MASK 0xffffffffu
#else
#define XR_BAL_MASK ((1u << XR_BAL_K) - 1u)
#endif

// Local slot of element k of a tile: one element of padding per 128 bytes, so that the units
// stored by neighbouring work-items and the XR_BAL_K neighbouring elements each work-item reads
// back fall in different banks.
inline uint bal_slot(uint k) { return k + k / (128 / (uint)sizeof(elem_t)); }

// The end of segment i, counted from the first element of segment 0 (base): clamped into
// [0, n - base], so that every position lies in the input whatever the offsets hold.
inline ulong bal_end(__global const long* offsets, ulong i, ulong base, ulong n) {
  return (ulong)clamp(offsets[i + 1], (long)base, (long)n) - base;
}

// The end of segment k and of the one before it (0 for the first; k past the last: ~0 and 0).
inline void bal_ends(__global const long* offsets, ulong k, ulong count, ulong base, ulong n, ulong* at,
                     ulong* before) {
  *at = k < count ? bal_end(offsets, k, base, n) : XR_NONE;
  *before = k < count && k > 0 ? bal_end(offsets, k - 1, base, n) : 0UL;
}

// The first segment that ends at position p or later (count where none does), searched by the
// whole work-group: L ends probed a step (the first one at or after p found with atomic_min), so
// that 2^20 segments take 3 dependent loads with 128 work-items. Every work-item returns it.
inline ulong bal_first_segment(__global const long* offsets, ulong count, ulong base, ulong n, ulong p,
                               __local uint* found, uint lid, uint L) {
  ulong lo = 0, hi = count;  // the segment lies in [lo, hi]
  for (;;) {
    const int last = hi - lo <= L;
    const ulong step = last ? 1UL : (hi - lo + L - 1) / L;
    const ulong q = last ? lo + lid : min(lo + (ulong)(lid + 1) * step - 1, hi - 1);
    const int at_or_after = q < hi && bal_end(offsets, q, base, n) >= p;
    if (lid == 0) *found = L;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (at_or_after) atomic_min(found, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint f = *found;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (f == L) return hi;
    if (last) return lo + f;
    hi = min(lo + (ulong)(f + 1) * step - 1, hi - 1);
    lo += (ulong)f * step;
  }
}

// Issues the loads of the tile at position p (elements [p, p + tile) of the segments laid end to
// end, cut at `elements`) into registers: the 16-byte units that lie wholly in it (work-item lid
// loads units lid, lid + L, ...), and one of the elements before the first unit or after the last
// (`edge`).
inline void bal_load(__global const elem_t* data, ulong p, ulong elements, uint tile, uint lid, uint L, unit_t* units,
                     elem_t* edge, uint* length, uint* head, uint* nvec) {
  const uint len = p < elements ? (uint)min(elements - p, (ulong)tile) : 0u;
  __global const elem_t* at = data + p;
  const uint into = (uint)(((size_t)at % 16) / sizeof(elem_t));
  const uint h = min(len, into ? XR_PACK_W - into : 0u);
  const uint v = (len - h) / XR_PACK_W;
  __global const unit_t* from = (__global const unit_t*)(at + h);
#pragma unroll
  for (uint r = 0; r < XR_BAL_UNITS; ++r)
    if (lid + r * L < v) units[r] = from[lid + r * L];
  if (lid < len - v * XR_PACK_W) *edge = at[lid < h ? lid : lid + v * XR_PACK_W];
  *length = len;
  *head = h;
  *nvec = v;
}

// Writes the tile bal_load loaded at position p to its local slots (edge elements beyond the
// first L, which only work-groups narrower than two units have, are loaded here).
inline void bal_store(__local elem_t* vals, __global const elem_t* data, ulong p, uint lid, uint L, const unit_t* units,
                      elem_t edge, uint length, uint head, uint nvec) {
#pragma unroll
  for (uint r = 0; r < XR_BAL_UNITS; ++r) {
    const uint u = lid + r * L;
    if (u < nvec) {
      elem_t x[XR_PACK_W];
      XR_CAT(vstore, XR_PACK_W)(units[r], 0, x);
#pragma unroll
      for (uint j = 0; j < XR_PACK_W; ++j) vals[bal_slot(head + u * XR_PACK_W + j)] = x[j];
    }
  }
  const uint edges = length - nvec * XR_PACK_W;
  for (uint e = lid; e < edges; e += L) {
    const uint k = e < head ? e : e + nvec * XR_PACK_W;
    vals[bal_slot(k)] = e == lid ? edge : data[p + k];
  }
}

// Exclusive segmented scan over the work-group, in work-item order, of the runs (v, ended): a run
// that ended restarts the value. `before` gets the runs of the work-items before lid, `total`
// the whole group's. Kogge-Stone over two halves of `value` and `ended` (2L each), one barrier
// a step.
inline void bal_scan(__local acc_t* value, __local uint* ended, acc_t v, uint e, uint lid, uint L, acc_t* before,
                     uint* before_ended, acc_t* total, uint* total_ended) {
  value[lid] = v;
  ended[lid] = e;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint src = 0;
  for (uint d = 1; d < L; d *= 2) {
    if (lid >= d) {
      if (!e) v = xr_op(value[src + lid - d], v);
      e |= ended[src + lid - d];
    }
    src = L - src;
    value[src + lid] = v;
    ended[src + lid] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *total = value[src + L - 1];
  *total_ended = ended[src + L - 1];
  *before = lid ? value[src + lid - 1] : (acc_t)(XR_IDENTITY);
  *before_ended = lid ? ended[src + lid - 1] : 0u;
}

// xr_seg_balanced (XR_OFFSETS, XR_BAL_K elements a work-item, XR_PACK_W a 16-byte unit): the
// elements of the segments laid end to end (from clamp(offsets[0], 0, n)) are cut into tiles of
// T = L * XR_BAL_K, `tiles` of them (the last holds the end of the input), and work-group g takes
// the run of consecutive tiles [tiles * g / G, tiles * (g + 1) / G), owning the segment ends at
// their positions, so that its work does not depend on how lengths vary. A work-group issues the
// loads of its next tile before it works on the current one, staged in local memory. Only the
// first tile of a run searches for its first segment: each tile's last segment is where the next
// starts. The ends that lie in a tile become bits (and the segment of each), found as the group
// reads the ends from its first segment on (empty segments are written there); each work-item
// adds its XR_BAL_K neighbouring elements, closing a segment at each marked end; its first
// segment takes the work-items before it through a segmented scan, and the tiles before it in the
// run through the part carried from tile to tile. The segment open at the end of the run leaves
// its part in carry[g] (carry_key[g] its segment, XR_NONE for none) for xr_seg_balanced_fixup,
// and carry_key[G + g] is the run's first segment where the run wrote its value (else XR_NONE),
// so that the fix-up adds to values written by this launch only, whatever the offsets hold.
// Local memory: ends (ceil(T / 32) words), segment_at (T words), vals (bal_slot(T) + 1 elements),
// scan_value and scan_ended (2L each).
__kernel void xr_seg_balanced(__global const in_t* in, ulong offset, ulong n, __global const long* offsets,
                              ulong count, ulong tiles, __global out_t* out, __global out_t* carry,
                              __global ulong* carry_key, __local uint* ends, __local uint* segment_at,
                              __local elem_t* vals, __local acc_t* scan_value, __local uint* scan_ended) {
  __local uint found;
  __local uint counted[3];
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  const uint tile = L * XR_BAL_K;
  const ulong base = (ulong)clamp(offsets[0], 0L, (long)n);
  const ulong elements = (ulong)clamp(offsets[count], (long)base, (long)n) - base;
  __global const elem_t* data = (__global const elem_t*)in + offset + base;
  const ulong g = get_group_id(0), groups = get_num_groups(0);
  const ulong t_begin = tiles * g / groups, t_end = tiles * (g + 1) / groups;

  unit_t units[XR_BAL_UNITS];
  elem_t edge = 0;
  uint length = 0, head = 0, nvec = 0;
  if (t_begin < t_end) bal_load(data, t_begin * tile, elements, tile, lid, L, units, &edge, &length, &head, &nvec);
  if (lid == 0) counted[0] = 0;
  const ulong lo_first = bal_first_segment(offsets, count, base, n, t_begin * tile, &found, lid, L);
  ulong lo = lo_first;
  int wrote_first = 0;  // this work-item wrote out[lo_first]
  // The end of segment lo + lid and of the one before it, read a tile ahead.
  ulong end_at, end_before;
  bal_ends(offsets, lo + lid, count, base, n, &end_at, &end_before);
  acc_t carried = XR_IDENTITY;
  uint round = 0;  // counted[round % 3] counts this round's ends; the next one's is cleared
  for (ulong t = t_begin; t < t_end; ++t) {
    const ulong p0 = t * tile;
    const uint len = length;
    for (uint w = lid; w < (tile + 31) / 32; w += L) ends[w] = 0;
    bal_store(vals, data, p0, lid, L, units, edge, length, head, nvec);
    if (t + 1 < t_end) bal_load(data, p0 + tile, elements, tile, lid, L, units, &edge, &length, &head, &nvec);
    barrier(CLK_LOCAL_MEM_FENCE);

    // Mark the end of every non-empty segment that ends in the tile; write the empty ones. The
    // ends from lo on are at p0 or later and those in the tile come first, so they are counted.
    ulong hi = lo;
    for (ulong k = lo + lid;; k += L) {
      const int here = end_at < p0 + tile;
      if (here) {
        if (end_at == end_before) {
          XR_STORE(XR_EMPTY_ACC, out, k);
          wrote_first |= k == lo_first;
        } else if (end_at >= p0) {
          const uint q = (uint)(end_at - p0);
          atomic_or(&ends[q / 32], 1u << (q % 32));
          segment_at[q] = (uint)(k - lo);
        }
      }
      if (lid == 0) counted[(round + 1) % 3] = 0;
      if (here) atomic_inc(&counted[round % 3]);
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint c = counted[round % 3];
      ++round;
      hi += c;
      if (c < L) break;
      bal_ends(offsets, k + L, count, base, n, &end_at, &end_before);
    }
    bal_ends(offsets, hi + lid, count, base, n, &end_at, &end_before);  // the next tile's, in flight

    // This work-item's XR_BAL_K elements; each marked end closes a segment.
    const uint first = lid * XR_BAL_K;
    const uint marks = (ends[first / 32] >> (first % 32)) & XR_BAL_MASK;
    acc_t acc = XR_IDENTITY, head_value = XR_IDENTITY;
    uint head_at = XR_BAL_K;  // where this work-item's first end lies (XR_BAL_K: none)
#pragma unroll
    for (uint i = 0; i < XR_BAL_K; ++i) {
      if (marks & (1u << i)) {
        if (head_at == XR_BAL_K) {
          head_at = i;
          head_value = acc;
        } else {
          const ulong s = lo + segment_at[first + i];
          XR_STORE(acc, out, s);
          wrote_first |= s == lo_first;
        }
        acc = XR_IDENTITY;
      }
      if (first + i < len) acc = xr_op(acc, XR_LOAD((__local const in_t*)vals, bal_slot(first + i)));
    }
    const ulong head_segment = head_at != XR_BAL_K ? lo + segment_at[first + head_at] : 0UL;
    acc_t before, total;
    uint before_ended, total_ended;
    bal_scan(scan_value, scan_ended, acc, head_at != XR_BAL_K, lid, L, &before, &before_ended, &total, &total_ended);
    if (head_at != XR_BAL_K) {
      const acc_t value = xr_op(before, head_value);
      XR_STORE(before_ended ? value : xr_op(carried, value), out, head_segment);
      wrote_first |= head_segment == lo_first;
    }
    carried = total_ended ? total : xr_op(carried, total);
    lo = hi;
  }
  if (groups > 1) {
    if (lid == 0) found = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (wrote_first) atomic_or(&found, 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
      XR_STORE(carried, carry, g);
      carry_key[g] = t_begin < t_end && lo < count ? lo : XR_NONE;
      carry_key[groups + g] = found ? lo_first : XR_NONE;
    }
  }
}

// balanced's finish: a work-group for each run of work-groups that left a part of the same
// segment (the first of the run) combines their parts, in order, L at a time (each work-item's in
// sequence, then neighbours first), into the value the work-group after the run wrote (it holds
// the segment's end; carry_key[parts + that group] says so), or stores them where it wrote none
// (offsets on the device other than the host checked).
__kernel void xr_seg_balanced_fixup(__global const out_t* carry, __global const ulong* carry_key, ulong parts,
                                    __global out_t* out, __local acc_t* scratch) {
  __local uint run_end;
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  for (ulong t = get_group_id(0); t < parts; t += get_num_groups(0)) {
    const ulong key = carry_key[t];
    if (key == XR_NONE || (t > 0 && carry_key[t - 1] == key)) continue;
    acc_t acc = XR_IDENTITY;
    ulong after = parts;  // the work-group after the run
    for (ulong b = t;; b += L) {
      // The run ends at the first part of another segment: parts after it belong to other runs.
      const int other = b + lid >= parts || carry_key[b + lid] != key;
      if (lid == 0) run_end = L;
      barrier(CLK_LOCAL_MEM_FENCE);
      if (other) atomic_min(&run_end, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
      const uint end = run_end;
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid < end) acc = xr_op(acc, XR_LOAD_OUT(carry, b + lid));
      if (end < L) {
        after = b + end;
        break;
      }
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = 1; h < L; h *= 2) {
      if ((lid & (2 * h - 1)) == 0 && lid + h < L) scratch[lid] = xr_op(scratch[lid], scratch[lid + h]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
      const int closed = after < parts && carry_key[parts + after] == key;
      XR_STORE(closed ? xr_op(scratch[0], XR_LOAD_OUT(out, key)) : scratch[0], out, key);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif  // XR_BAL_K

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

#else  // XR_SEG_EXACT

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
