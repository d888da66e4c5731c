// xreduce: a mapped op's last step on the device (after segments.cl, whose header gives the -D
// options; XR_SEG_FINALIZE=1 builds this kernel alone): xr_seg_finalize.

#if XR_SEG_FINALIZE

// values[i] (XR_FIN_T) through step XR_FIN_STEP (the value of xr::Finalize) with the length of
// segment i, as core's finalize_folded does it on the host:
//   1 (DivideByCount, a mean; float or double, with double enabled): the quotient in double
//     (correctly rounded in OpenCL C), rounded to the value's type; 0 / 0 is NaN;
//   2 (IsPositive, any; long): 1 where the count is above 0, else 0;
//   3 (EqualsCount, all; long): 1 where the count is the segment's length, else 0.
// The length is `length` (rows, columns), or the offsets' difference clamped to [0, n] as the
// segment kernels clamp them (by_offsets).
__kernel void xr_seg_finalize(__global XR_FIN_T* values, ulong count, ulong length, __global const long* offsets,
                              ulong n, int by_offsets) {
  for (ulong i = get_global_id(0); i < count; i += get_global_size(0)) {
    ulong c = length;
    if (by_offsets) {
      const ulong b = (ulong)clamp(offsets[i], 0L, (long)n);
      const ulong e = (ulong)clamp(offsets[i + 1], (long)b, (long)n);
      c = e - b;
    }
#if XR_FIN_STEP == 1
    values[i] = c ? (XR_FIN_T)((double)values[i] / (double)c) : (XR_FIN_T)NAN;
#elif XR_FIN_STEP == 2
    values[i] = values[i] > 0 ? 1 : 0;
#elif XR_FIN_STEP == 3
    values[i] = (ulong)values[i] == c ? 1 : 0;
#else
#error "XR_FIN_STEP: 1, 2 or 3"
#endif
  }
}

#endif  // XR_SEG_FINALIZE
