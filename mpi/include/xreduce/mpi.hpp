// Distributed reductions over MPI: the data is spread over the ranks of a communicator, each rank
// reduces its own part with a reducer of its own (any backend, any device), and the ranks combine
// their results into the value of the whole input, on every rank or on one.
//
//   MPI_Init(&argc, &argv);
//   xr::mpi::Reducer reducer(MPI_COMM_WORLD, {.backend = "cuda"});   // device: node-local rank % GPUs
//   std::vector<float> mine = ...;                                    // this rank's part
//   xr::mpi::GlobalResult g = reducer.reduce(std::span<const float>(mine), xr::Op::Sum);
//   g.result.value;                                                   // the sum over every rank
//
// How each op combines (the semantics of xreduce/semantics.hpp hold for the whole input):
//   integer sums and products  exact, wrapping as one process would (a custom commutative MPI_Op)
//   min, max                   a custom MPI_Op that keeps NaN (MPI_MIN and MPI_MAX do not), in rank order
//   argmin, argmax, minmax     the same, each rank's index moved by the counts of the ranks before it:
//                              Result::index is the global index (Result::maximum the max), as one process
//   float sums and products    the ranks' values combined in rank order on every rank, so the value does
//                              not depend on MPI's reduction tree; Result::rounding_depth bounds it
//   exact float sums           the ranks' ExactSum states merged by a custom commutative MPI_Op: the same
//                              bits for any rank count, partition and mix of backends, equal to the exact
//                              sum of one process
//
// Failures never hang: every call is collective, and the ranks agree on their status before any
// value is exchanged. A rank that fails (an unreadable file, a device error, a bad argument, an
// unavailable backend) makes every rank throw the same exception, of the failing rank's class
// (InvalidArgument, InputError, BackendUnavailable, DeviceError, ...), whose message names it:
// "rank 2 of 4 (node7): cannot open 'x.npy': No such file or directory". Ranks that disagree on
// the op, the element type, the accumulator or exact mode throw InvalidArgument on every rank.
//
// Ranks exchange fixed-layout records as bytes: every rank of a communicator must share one byte
// order (as every homogeneous cluster does). A GlobalResult's per-rank rows are exchanged once
// per call, after the timed combine.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/result.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/source.hpp"
#include "xreduce/types.hpp"

namespace xr::mpi {

struct Options {
  // "cuda", "opencl", "omp", or "auto": the first usable of cuda, opencl and omp on this rank.
  std::string backend = "auto";
  // The device. Left empty on a backend with GPUs, each rank takes GPU (node-local rank modulo
  // the node's GPU count), so the ranks of one node spread over its GPUs; otherwise the
  // backend's own default.
  BackendOptions device;
};

// One rank's part in a distributed reduction.
struct RankRow {
  int rank = 0;
  std::string host, backend, device, kernel;
  std::uint64_t first = 0;  // its elements are [first, first + n) of the whole input
  std::uint64_t n = 0;
  double kernel_ms = 0;     // its local reduction's Result::kernel_ms
  double total_ms = 0;      // its local reduction's Result::total_ms (0: not streamed)
};

struct GlobalResult {
  // The value of the whole input, with: n, the global count; backend "mpi"; device and kernel as
  // this rank ran them; rounding_depth, the global chain (the deepest rank's plus the combine);
  // exact_state in exact mode; kernel_ms, the slowest rank's; total_ms, the slowest rank's end to
  // end (its total_ms, or kernel_ms where it did not stream) plus combine_ms; bytes_per_s, the
  // input's bytes over that total_ms.
  Result result;
  int ranks = 1;
  // The combine step: from a barrier after the local results until this rank holds the value
  // (status agreed, values exchanged). The median over the reduction's warmup + repeat
  // combines, the first `warmup` untimed.
  double combine_ms = 0;
  std::vector<RankRow> rows;  // every rank's part, in rank order
};

// A segmented reduction of data spread over the ranks (xreduce/segments.hpp): the values this
// rank holds, and where they lie among the values of the whole input.
struct GlobalSegments {
  // Values first .. first + count() - 1 of the whole input's `total`, with their indices (argmin,
  // argmax: within their segment, row or column of the whole input) and maxima (minmax), as one
  // process gives them. record: n, the elements reduced over every rank; kernel, the local
  // strategy; kernel_ms, this rank's local reduction; total_ms, until this rank holds its values.
  SegmentedResult result;
  std::uint64_t first = 0;
  std::uint64_t total = 0;
  int ranks = 1;
};

// A reducer on every rank of a communicator. Every member function is collective: all ranks call
// it, in the same order, each with its own part of the input. A Reducer serialises its own
// calls; the communicator is duplicated, so its traffic never mixes with the caller's.
class XR_API Reducer {
 public:
  // Makes each rank's local reducer (xr::make_reducer with options.backend and the device the
  // rule above gives). A rank that cannot makes every rank throw.
  explicit Reducer(MPI_Comm comm, const Options& options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // The whole input's value on every rank. `local` is this rank's part (any size, 0 included);
  // the parts follow one another in rank order (rank r's elements come after rank r-1's).
  GlobalResult reduce(HostArray local, Op op, const RunOptions& options = {});
  template <class T> GlobalResult reduce(std::span<const T> local, Op op, const RunOptions& options = {}) {
    return reduce(HostArray::of(local), op, options);
  }
  // A streamed part: a file's slice (SliceSource over a FileSource reads only its byte range).
  GlobalResult reduce(ChunkSource& local, Op op, const RunOptions& options = {});

  // The same, with the value on `root` only: std::nullopt on every other rank (which still
  // throws when any rank fails).
  std::optional<GlobalResult> reduce_root(int root, HostArray local, Op op, const RunOptions& options = {});
  std::optional<GlobalResult> reduce_root(int root, ChunkSource& local, Op op, const RunOptions& options = {});

  // Segmented reductions of data spread over the ranks, collective like reduce; RunOptions as in
  // one process (kernel names a local segment strategy; exact: every float sum correctly rounded,
  // the same bits for any rank count and partition). root < 0: the values on every rank (axis 1:
  // each rank its own rows' values); root >= 0: every value on root, none on the other ranks.
  //
  // A 2-D array split by rows: `local` holds this rank's rows (any number, 0 included; the same
  // column count, element type and order of storage on every rank), rank r's rows after rank
  // r - 1's. axis 1: one value per row, reduced where the row lies. axis 0: one value per column
  // over the rows of every rank: min, max, the pair ops and integer ops combine the ranks' partial
  // values exactly (argmin and argmax: the index is the row in the whole array, ties to the
  // smallest); plain float sums and products fold the ranks' partials in rank order; exact float
  // sums merge each column's exact state over the ranks (summed on the host, ExactSum). mean, any
  // and all combine their fold's partials (sums, counts), then take their last step over the
  // total rows; exact means and means of integers merge exact states (the integers as f64) and
  // round each column's quotient once.
  GlobalSegments reduce_axis(const HostMatrix& local, int axis, Op op, const RunOptions& options = {},
                             int root = -1);
  // CSR segments of a 1-D array split over the ranks as in reduce (rank r's elements after rank
  // r - 1's): every rank passes the same `offsets`, over the whole input (they end at or below
  // its size), so a segment may start on one rank and end on another. Each rank reduces the
  // segments that start among its elements, and the part of a segment that began before them;
  // each such part goes to the rank where its segment starts, which combines the parts in rank
  // order (exact sums: their exact states, so the bits equal one process's). mean, any and all
  // combine their fold's parts (sums, counts), then take their last step over the segment's
  // length; exact means, and means of integers, merge the exact states of a spanning segment's
  // parts (integers as f64) and round its quotient once.
  GlobalSegments reduce_segments(HostArray local, std::span<const std::int64_t> offsets, Op op,
                                 const RunOptions& options = {}, int root = -1);

  // The local reducer (its backend and device).
  xr::Reducer& local();
  int rank() const;
  int size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One call, with a Reducer made for it (a CUDA context or OpenCL program cache then lives as long
// as the process, but the device is chosen again: keep a Reducer for repeated calls).
XR_API GlobalResult reduce(MPI_Comm comm, HostArray local, Op op, const Options& options = {},
                           const RunOptions& run = {});
XR_API GlobalResult reduce(MPI_Comm comm, ChunkSource& local, Op op, const Options& options = {},
                           const RunOptions& run = {});

// Combines results that the ranks computed themselves: data already on a rank's device, reduced
// through xreduce/cuda.hpp or xreduce/opencl.hpp (exact sums need Result::exact_state, which
// exact mode fills). Each rank passes its own Result of its own part, in rank order; a rank with
// nothing passes a Result with n = 0 (an exact sum's with an empty exact_state). `root` < 0: on
// every rank; otherwise on root only. Collective; failures as above (pass the local error of a
// rank that could not compute its Result through agree() first).
XR_API std::optional<GlobalResult> combine(MPI_Comm comm, const Result& local, int root = -1);

// Collective: returns when no rank passes an error; otherwise every rank throws the error of the
// lowest failing rank (its class, its message prefixed with "rank R of P (host): "). For a
// caller's own steps before a reduction (reading arguments, opening files).
XR_API void agree(MPI_Comm comm, std::exception_ptr local_error);

// Where rank r's part lies when `n` elements are split by the ranks' weights (each rank passes
// its own; 0: it holds nothing; all 0: an even split): the first and the count of this rank's
// elements, every element in exactly one part, in rank order. Collective.
struct Part {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};
XR_API Part partition(MPI_Comm comm, std::uint64_t n, double weight = 1.0);

// The host reference of the whole input, computed distributed: each rank's reference_reduce of
// its part, combined as results are (float sums through their exact states, so the reference is
// the exact sum rounded once, as in one process). Collective; the value is on every rank.
XR_API Reference reference_reduce(MPI_Comm comm, HostArray local, Op op, Accumulator acc = Accumulator::Wide);
XR_API Reference reference_reduce(MPI_Comm comm, ChunkSource& local, Op op, Accumulator acc = Accumulator::Wide);

// The element-wise all-reduce of host buffers: recv[i] = op over the ranks' send[i], i < count, the
// same on every rank; recv may be send (in place). send holds `count` elements of `type`, recv
// `count` values of allreduce_dtype(op, type). Ops: the folds and the mapped ops (the pair ops:
// allreduce_pair). Each rank owns a slice of the elements, gets every rank's values of it (MPI_Alltoallv),
// reduces them, and the slices' results go to every rank (MPI_Allgatherv): a ring all-reduce's
// traffic. Plain results fold the ranks' values in rank order (f16 and bf16 in f32, rounded
// once), so the result depends on no algorithm or topology of the MPI library, only on the order
// of the ranks: min, max and integer sums and products as MPI_Allreduce gives them (integers wrap
// in their type); a mapped op maps each rank's value first (sumsq, asum, nansum, nanmin, nanmax,
// count_nonzero), and mean, any and all take their last step over the rank count (mean: the
// average, as torch.distributed's AVG; any, all: whether some, every rank's value is nonzero).
// options.exact: each f32 and f64 sum, or mean, is the correctly rounded sum, or mean, of the
// ranks' values, the same bits for any rank count and any order of the ranks (other ops as
// exact mode in one process: min and max are exact anyway, the others refuse it). Collective;
// failures as for reduce (a bad argument on any rank, or ranks that disagree on count, type, op
// or exact mode, throw on every rank before any value moves).
XR_API void allreduce(MPI_Comm comm, const void* send, void* recv, std::uint64_t count, DType type, Op op,
                      const RunOptions& options = {});

// The element-wise argmin, argmax and minmax over the ranks: values[i] is the min (argmin,
// minmax) or max (argmax) of the ranks' send[i], of `type`; second[i] is, for argmin and argmax,
// the lowest rank whose send[i] it is (int64; NaN wins as in one process: the first rank's NaN),
// for minmax the max (of `type`). values may be send (in place); second is another buffer. As
// allreduce otherwise (the exchange, its agreement on count, type and op, its failures); exact
// mode is refused, as in one process (the pair ops compare values and are exact).
XR_API void allreduce_pair(MPI_Comm comm, const void* send, void* values, void* second, std::uint64_t count,
                           DType type, Op op, const RunOptions& options = {});

// The type of allreduce's results: the element type (as MPI_Allreduce), but i64 for
// count_nonzero, any and all (counts and their tests), and f64 for the mean of integers.
template <Op O, class T>
using allreduce_t = std::conditional_t<map_of(O) == ElementMap::NonZero, std::int64_t,
                                       std::conditional_t<map_of(O) == ElementMap::Convert && !is_float_v<T>, double, T>>;
constexpr DType allreduce_dtype(Op op, DType type) {
  if (map_of(op) == ElementMap::NonZero) return DType::I64;
  if (map_of(op) == ElementMap::Convert && !is_float(type)) return DType::F64;
  return type;
}

template <class T, class R>
void allreduce(MPI_Comm comm, std::span<const T> send, std::span<R> recv, Op op, const RunOptions& options = {}) {
  std::string problem;
  if (send.size() != recv.size())
    problem = "send has " + std::to_string(send.size()) + " elements, recv " + std::to_string(recv.size());
  else if (dtype_of<R> != allreduce_dtype(op, dtype_of<T>))
    problem = std::string(to_string(op)) + " of " + std::string(to_string(dtype_of<T>)) + " gives " +
              std::string(to_string(allreduce_dtype(op, dtype_of<T>))) + " values, not " +
              std::string(to_string(dtype_of<R>));
  agree(comm, problem.empty() ? nullptr : std::make_exception_ptr(InvalidArgument("mpi: allreduce: " + problem)));
  allreduce(comm, send.data(), recv.data(), send.size(), dtype_of<T>, op, options);
}

// The rank's index among the ranks of its node (MPI_COMM_TYPE_SHARED), and how many there are.
XR_API int node_rank(MPI_Comm comm);

}  // namespace xr::mpi
