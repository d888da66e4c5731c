// cub: cub::DeviceSegmentedReduce::Reduce with xreduce's op and identity, over the same segments:
// rows as begin/end iterators (i * stride, i * stride + length), offsets as d_offsets and
// d_offsets + 1, read as given (not clamped). CUB gives an empty segment the initial value; for
// float sums that is the identity -0, so their values go through an output iterator that writes +0
// for empty segments. Temp storage is the scratch's, grown and kept; its size is asked once per
// (instantiation, segments). f16 and bf16 reach CUB as __half and __nv_bfloat16 (cub_op.cuh),
// their sums and products in float.
// The baseline, never chosen by auto: what the strategies are measured against.
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

#include "arith.hpp"
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

struct CubArgs {
  const void* in;
  u64 count, length, stride;  // rows: count, length, stride; offsets: count
  const std::int64_t* offsets;
  void* out;
  SegmentScratch* scratch;
  cudaStream_t stream;
};

template <bool Rows> struct CubSegments : NoSharedMemory {
  using Args = CubArgs;
  template <class In, class Acc, Op O> static const void* kernel() { return nullptr; }
  template <class In, class Acc, Op O, class Begin, class End, class Out>
  static void reduce(const Args& a, Begin begin, End end, Out out) {
    const auto* in = static_cast<const cub_t<In>*>(a.in);
    const auto count = static_cast<i64>(a.count);
    SegmentScratch::CubSize& size = a.scratch->cub_size();
    const void* instantiation = reinterpret_cast<const void*>(&reduce<In, Acc, O, Begin, End, Out>);
    if (size.instantiation != instantiation || size.count != a.count) {
      std::size_t query = 0;
      check(cub::DeviceSegmentedReduce::Reduce(nullptr, query, in, out, count, begin, end, CubOp<Acc, O>{},
                                               cub_identity<Acc, O>(), a.stream),
            "cub::DeviceSegmentedReduce::Reduce (temp size)");
      size = {instantiation, a.count, query};
    }
    std::size_t bytes = size.bytes;
    void* temp = a.scratch->buffer(SegmentScratch::CubTemp, bytes);
    check(cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, out, count, begin, end, CubOp<Acc, O>{},
                                             cub_identity<Acc, O>(), a.stream),
          "cub::DeviceSegmentedReduce::Reduce");
    check_launch("cub::DeviceSegmentedReduce::Reduce");
  }

  template <class In, class Acc, Op O, class Begin, class End>
  static void with_output(const Args& a, Begin begin, End end) {
    auto* out = static_cast<cub_t<Acc>*>(a.out);
    if constexpr (O == Op::Sum && std::is_floating_point_v<Acc>) {
      const EmptySumIsZero<Acc> write{out, Rows ? nullptr : a.offsets, static_cast<i64>(a.length)};
      reduce<In, Acc, O>(a, begin, end, thrust::make_tabulate_output_iterator(write));
    } else {
      reduce<In, Acc, O>(a, begin, end, out);
    }
  }

  template <class In, class Acc, Op O> static void run(const Args& a) {
    if constexpr (Rows) {
      const auto stride = static_cast<i64>(a.stride), length = static_cast<i64>(a.length);
      const auto index = thrust::make_counting_iterator<i64>(0);
      with_output<In, Acc, O>(a, thrust::make_transform_iterator(index, RowBegin{stride}),
                              thrust::make_transform_iterator(index, RowEnd{stride, length}));
    } else {
      with_output<In, Acc, O>(a, a.offsets, a.offsets + 1);
    }
  }
};

template <bool Rows> const Table<CubArgs>& cub_table() {
  static const auto t = make_table<CubSegments<Rows>>();
  return t;
}

Plan plan(const Task& t) {
  Plan p;
  p.kernel = "cub";
  p.launches = 1;
  p.finish = "cub";
  // Estimated from CUB's structure (its order is not exposed): one block per segment, each
  // thread reduces its items of every tile in sequence, then a block tree.
  if (t.stats.known) p.depth = xr::detail::ceil_div(t.stats.longest, 128) + 32 + 10;
  const CubArgs args{t.in, t.count, t.length, t.stride, t.offsets, t.out, t.scratch, t.stream};
  switch (t.kind) {
    case SegmentKind::Rows: p.pass.push_back(step_of(cub_table<true>(), t, args)); break;
    case SegmentKind::Offsets: p.pass.push_back(step_of(cub_table<false>(), t, args)); break;
    case SegmentKind::Columns: layout_not_reduced("cub", t.kind);
  }
  return p;
}

}  // namespace

const Strategy& strategy_cub() {
  static const Strategy s = [] {
    Strategy x{100,
               strategy_info("cub", KernelKind::Baseline, {SegmentKind::Rows, SegmentKind::Offsets},
                             BlockRule{0, 0, 0, {0}},
                             "cub::DeviceSegmentedReduce::Reduce with xreduce's NaN-propagating ops: the baseline, "
                             "not ours"),
               &plan};
    x.info.ops.assign(fold_ops.begin(), fold_ops.end());  // CUB's reduce of the raw elements: the folds
    return x;
  }();
  return s;
}

}  // namespace xr::cuda::detail
