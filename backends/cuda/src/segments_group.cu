// Launchers of k_group (subwarp and warp, and binned's tiny and short bins) and k_packed_rows
// (subwarp on dense rows of 1, 2 or 4 elements): kernels_cu/segments.cuh.
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

template <bool Rows> struct Group : NoSharedMemory {
  using Src = std::conditional_t<Rows, ks::RowsSource, ks::OffsetsSource>;
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(ks::k_group<In, Acc, O, Src, policy::kSegmentsInFlight>);
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    constexpr auto kernel = ks::k_group<In, Acc, O, Src, policy::kSegmentsInFlight>;
    Src src;
    if constexpr (Rows) src = rows_source(L);
    else src = offsets_source(L);
    kernel<<<segment_grid(L, reinterpret_cast<const void*>(kernel)), L.block, 0, L.stream>>>(
        static_cast<const In*>(L.in), src, static_cast<Acc*>(L.out), L.log_group);
    check_launch("k_group");
  }
};

struct PackedRows : NoSharedMemory {
  template <class In, class Acc, Op O> static const void* kernel() {
    return reinterpret_cast<const void*>(ks::k_packed_rows<In, Acc, O, policy::kPackedRowsInFlight>);
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    constexpr auto kernel = ks::k_packed_rows<In, Acc, O, policy::kPackedRowsInFlight>;
    kernel<<<segment_grid(L, reinterpret_cast<const void*>(kernel)), L.block, 0, L.stream>>>(
        static_cast<const In*>(L.in), L.count, L.log_group, static_cast<Acc*>(L.out));
    check_launch("k_packed_rows");
  }
};

}  // namespace

void add_group_kernels(SegmentTables& t) {
  fill_segment_table<Group<true>>(t, SegmentKernel::GroupRows);
  fill_segment_table<Group<false>>(t, SegmentKernel::GroupOffsets);
  fill_segment_table<PackedRows>(t, SegmentKernel::PackedRows);
}

}  // namespace xr::cuda::detail
