// Segmented reductions of data spread over the ranks (xr::mpi::Reducer::reduce_axis and
// reduce_segments): each rank reduces its own elements with its local reducer, and the parts of
// a segment or column that lie on several ranks are combined in rank order.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>

#include "xreduce/mpi.hpp"

namespace xr::mpi::detail {

GlobalSegments reduce_axis(MPI_Comm comm, xr::Reducer& local, const HostMatrix& in, int axis, Op op,
                           const RunOptions& options, int root);
GlobalSegments reduce_segments(MPI_Comm comm, xr::Reducer& local, HostArray in, std::span<const std::int64_t> offsets,
                               Op op, const RunOptions& options, int root);

}  // namespace xr::mpi::detail
