// xreduce: the pair ops (argmin, argmax, minmax) of segmented reductions (xreduce/segments.hpp).
// A program is reduce.cl, pairs.cl, then this file, built with pairs.cl's options (the input type
// as its own accumulator, the fold the op compares by, XR_PAIR_<NAME>), so that pair_t, cell_t,
// xr_pair_identity, xr_pair_step, xr_pair_combine, xr_pair_tree and xr_store_record come from
// there: the same semantics as the whole-array pair ops. Records are written as pairs.cl writes
// them (core's Located<T>, Bounds<T>), one per segment, with the index WITHIN the segment and -1
// for an empty segment (whose value is the identity).

// Record i of `out`: the identity's XR_NO_INDEX (an empty segment) stored as -1.
inline void xr_seg_store_pair(__global cell_t* out, ulong i, pair_t p) {
#if !defined(XR_PAIR_MINMAX)
  if (p.index == XR_NO_INDEX) p.index = -1;
#endif
  xr_store_record(out, i, p);
}

// xr_seg_pairs: a work-group per segment (grid-stride over the segments). Rows (by_offsets 0):
// segment i is elements [i * stride, i * stride + length); offsets: [clamp(offsets[i], 0, n),
// clamp(offsets[i + 1], begin, n)), so that no offset reads outside the input. Work-item lid steps
// through elements lid, lid + L, ... of the segment in index order (neighbours read neighbours),
// then the work-group's records meet in a local tree (they compare indices: any order).
// Improves on nothing before it (the fold kernels take no pair ops); costs a work-group per
// segment, idle work-items on segments shorter than it.
__kernel void xr_seg_pairs(__global const in_t* in, ulong offset, ulong n, __global const long* offsets, uint by_offsets,
                           ulong count, ulong length, ulong stride, __global cell_t* out, __local pair_t* scratch) {
  in += offset;
  const uint L = (uint)get_local_size(0);
  const uint lid = (uint)get_local_id(0);
  for (ulong i = get_group_id(0); i < count; i += get_num_groups(0)) {
    ulong begin, end;
    if (by_offsets) {
      const long b = offsets[i], e = offsets[i + 1];
      begin = b <= 0 ? 0 : min((ulong)b, n);
      end = e <= (long)begin ? begin : min((ulong)e, n);
    } else {
      begin = i * stride;
      end = begin + length;
    }
    pair_t acc = xr_pair_identity();
    for (ulong k = begin + lid; k < end; k += L) acc = xr_pair_step(acc, XR_LOAD(in, k), (long)(k - begin));
    acc = xr_pair_tree(scratch, acc);
    if (lid == 0) xr_seg_store_pair(out, i, acc);
    barrier(CLK_LOCAL_MEM_FENCE);  // scratch is the next segment's
  }
}

// xr_seg_pair_columns: column c is in[r * stride + c] for r < rows, its index r. A work-item per
// column walks the rows in order, neighbouring work-items on neighbouring columns (coalesced).
// Improves on xr_seg_pairs for columns: reads along rows; costs a whole column per work-item, so
// few columns leave the device idle.
__kernel void xr_seg_pair_columns(__global const in_t* in, ulong offset, ulong rows, ulong cols, ulong stride,
                                  __global cell_t* out) {
  in += offset;
  for (ulong c = get_global_id(0); c < cols; c += get_global_size(0)) {
    pair_t acc = xr_pair_identity();
    for (ulong r = 0; r < rows; ++r) acc = xr_pair_step(acc, XR_LOAD(in, r * stride + c), (long)r);
    xr_seg_store_pair(out, c, acc);
  }
}
