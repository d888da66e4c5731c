// xreduce: the balanced kernels of segmented reductions (after segments.cl, whose header gives
// the -D options): xr_seg_balanced and xr_seg_balanced_fixup, present where XR_BAL_K is set.

#if !XR_SEG_EXACT && !XR_SEG_FINALIZE

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

#endif  // !XR_SEG_EXACT && !XR_SEG_FINALIZE
