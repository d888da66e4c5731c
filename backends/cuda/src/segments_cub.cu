// The cub row of the segment strategies: cub::DeviceSegmentedReduce::Reduce with xreduce's op and
// identity, over the same segments: rows as begin/end iterators (i * stride, i * stride + length),
// offsets as d_offsets and d_offsets + 1, read as given (not clamped). CUB gives an empty segment
// the initial value; for float sums that is the identity -0, so their values go through an output
// iterator that writes +0 for empty segments. Temp storage is the scratch's, grown and kept; its
// size is asked once per (instantiation, segments). f16 and bf16 reach CUB as __half and
// __nv_bfloat16 (cub_op.cuh), their sums and products in float. The baseline, never chosen by auto.
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

#include "cub_op.cuh"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

using i64 = std::int64_t;

struct RowBegin {
  i64 stride;
  __host__ __device__ i64 operator()(i64 i) const { return i * stride; }
};
struct RowEnd {
  i64 stride, length;
  __host__ __device__ i64 operator()(i64 i) const { return i * stride + length; }
};

// Writes a float sum's value, +0 where the segment is empty (rows of length 0, or offsets that
// do not increase).
template <class Acc> struct EmptySumIsZero {
  Acc* out;
  const i64* offsets;  // null: rows
  i64 length;
  __device__ void operator()(std::ptrdiff_t i, Acc v) const {
    const bool empty = offsets ? offsets[i + 1] <= offsets[i] : length == 0;
    out[i] = empty ? Acc(0) : v;
  }
};

template <bool Rows> struct CubSegments : NoSharedMemory {
  template <class In, class Acc, Op O> static const void* kernel() { return nullptr; }
  template <class In, class Acc, Op O, class Begin, class End, class Out>
  static void reduce(const SegmentLaunch& L, Begin begin, End end, Out out) {
    const auto* in = static_cast<const cub_t<In>*>(L.in);
    const auto count = static_cast<i64>(L.count);
    SegmentScratch::CubSize& size = L.scratch->cub_size();
    const void* instantiation = reinterpret_cast<const void*>(&reduce<In, Acc, O, Begin, End, Out>);
    if (size.instantiation != instantiation || size.count != L.count) {
      std::size_t query = 0;
      check(cub::DeviceSegmentedReduce::Reduce(nullptr, query, in, out, count, begin, end, CubOp<Acc, O>{},
                                               cub_identity<Acc, O>(), L.stream),
            "cub::DeviceSegmentedReduce::Reduce (temp size)");
      size = {instantiation, L.count, query};
    }
    std::size_t bytes = size.bytes;
    void* temp = L.scratch->buffer(SegmentScratch::CubTemp, bytes);
    check(cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, out, count, begin, end, CubOp<Acc, O>{},
                                             cub_identity<Acc, O>(), L.stream),
          "cub::DeviceSegmentedReduce::Reduce");
    check_launch("cub::DeviceSegmentedReduce::Reduce");
  }

  template <class In, class Acc, Op O, class Begin, class End>
  static void with_output(const SegmentLaunch& L, Begin begin, End end) {
    auto* out = static_cast<cub_t<Acc>*>(L.out);
    if constexpr (O == Op::Sum && std::is_floating_point_v<Acc>) {
      const EmptySumIsZero<Acc> write{out, Rows ? nullptr : L.offsets, static_cast<i64>(L.length)};
      reduce<In, Acc, O>(L, begin, end, thrust::make_tabulate_output_iterator(write));
    } else {
      reduce<In, Acc, O>(L, begin, end, out);
    }
  }

  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    if constexpr (Rows) {
      const auto stride = static_cast<i64>(L.stride), length = static_cast<i64>(L.length);
      const auto index = thrust::make_counting_iterator<i64>(0);
      with_output<In, Acc, O>(L, thrust::make_transform_iterator(index, RowBegin{stride}),
                              thrust::make_transform_iterator(index, RowEnd{stride, length}));
    } else {
      with_output<In, Acc, O>(L, L.offsets, L.offsets + 1);
    }
  }
};

}  // namespace

void add_cub_kernels(SegmentTables& t) {
  fill_segment_table<CubSegments<true>>(t, SegmentKernel::CubRows);
  fill_segment_table<CubSegments<false>>(t, SegmentKernel::CubOffsets);
}

}  // namespace xr::cuda::detail
