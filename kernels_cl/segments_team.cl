// xreduce: the team kernels of segmented reductions (after segments.cl, whose header gives the
// -D options): xr_seg_team (lanes, workgroup, multigroup, binned) and xr_seg_plan (binned and
// multigroup on offsets).

#if !XR_SEG_EXACT && !XR_SEG_FINALIZE

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

#endif  // !XR_SEG_EXACT && !XR_SEG_FINALIZE
