// Launchers of k_columns_wide and k_columns_narrow (kernels_cu/segments_columns.cuh), with one
// element or one 16-byte pack per lane.
#include "kernels_cu/segments_columns.cuh"
#include "policy.hpp"
#include "segment_launch.cuh"

namespace xr::cuda::detail {
namespace {

namespace ks = xr::kern::seg;

template <bool Narrow, bool Vec> struct Columns {
  template <class In> static constexpr unsigned W = Vec ? 16 / sizeof(In) : 1;
  template <class In> static constexpr unsigned U = std::max<unsigned>(1, policy::kColumnBytesInFlight / (W<In> * sizeof(In)));
  template <class In, class Acc> static constexpr std::size_t smem_per_thread() { return W<In> * sizeof(Acc); }
  template <class In, class Acc, Op O> static const void* kernel() {
    if constexpr (Narrow) return reinterpret_cast<const void*>(ks::k_columns_narrow<In, Acc, O, W<In>, U<In>>);
    else return reinterpret_cast<const void*>(ks::k_columns_wide<In, Acc, O, W<In>, U<In>>);
  }
  template <class In, class Acc, Op O> static void run(const SegmentLaunch& L) {
    constexpr unsigned W = Columns::W<In>, U = Columns::U<In>;
    const std::size_t smem = std::size_t(L.block) * smem_per_thread<In, Acc>();
    const unsigned grid = static_cast<unsigned>(std::clamp<u64>(L.grid, 1, INT_MAX));
    const In* in = static_cast<const In*>(L.in);
    Acc* out = static_cast<Acc*>(L.out);
    Acc* partials = static_cast<Acc*>(L.partials);
    if constexpr (Narrow) {
      ks::k_columns_narrow<In, Acc, O, W, U><<<grid, L.block, smem, L.stream>>>(in, L.count, L.length, L.stride,
                                                                               L.band_rows, out, partials, L.tickets);
      check_launch("k_columns_narrow");
    } else {
      ks::k_columns_wide<In, Acc, O, W, U><<<grid, L.block, smem, L.stream>>>(in, L.count, L.length, L.stride, L.tiles,
                                                                             L.band_rows, out, partials, L.tickets);
      check_launch("k_columns_wide");
    }
  }
};

}  // namespace

void add_column_kernels(SegmentTables& t) {
  fill_segment_table<Columns<false, false>>(t, SegmentKernel::ColumnsWide);
  fill_segment_table<Columns<false, true>>(t, SegmentKernel::ColumnsWideVec);
  fill_segment_table<Columns<true, false>>(t, SegmentKernel::ColumnsNarrow);
  fill_segment_table<Columns<true, true>>(t, SegmentKernel::ColumnsNarrowVec);
}

}  // namespace xr::cuda::detail
