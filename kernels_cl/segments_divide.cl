// xreduce: a mean's last step on the device (after segments.cl, whose header gives the -D
// options; XR_SEG_DIVIDE=1 builds this kernel alone, with double enabled): xr_seg_divide.

#if XR_SEG_DIVIDE

// values[i] (XR_DIV_T, float or double) divided by the length of segment i, as core's
// finalize_value does it on the host: the quotient in double (correctly rounded in OpenCL C),
// rounded to the value's type; 0 / 0 is NaN. The length is `length` (rows, columns), or the
// offsets' difference clamped to [0, n] as the segment kernels clamp them (by_offsets).
__kernel void xr_seg_divide(__global XR_DIV_T* values, ulong count, ulong length, __global const long* offsets,
                            ulong n, int by_offsets) {
  for (ulong i = get_global_id(0); i < count; i += get_global_size(0)) {
    ulong c = length;
    if (by_offsets) {
      const ulong b = (ulong)clamp(offsets[i], 0L, (long)n);
      const ulong e = (ulong)clamp(offsets[i + 1], (long)b, (long)n);
      c = e - b;
    }
    values[i] = c ? (XR_DIV_T)((double)values[i] / (double)c) : (XR_DIV_T)NAN;
  }
}

#endif  // XR_SEG_DIVIDE
