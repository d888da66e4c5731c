// xreduce: the columns kernel of segmented reductions (after segments.cl, whose header gives the
// -D options): xr_seg_columns.

#if !XR_SEG_EXACT && !XR_SEG_FINALIZE

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

#endif  // !XR_SEG_EXACT && !XR_SEG_FINALIZE
