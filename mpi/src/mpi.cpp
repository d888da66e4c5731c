#include "xreduce/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "combine.hpp"
#include "errors.hpp"
#include "segments.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::mpi {
namespace {

using detail::check;

int rank_of(MPI_Comm comm) {
  int rank = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

int size_of_comm(MPI_Comm comm) {
  int size = 1;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

// The device of this rank: the one named, else on a backend with GPUs the node-local rank's
// share of them, else the backend's default.
BackendOptions device_for(int local, const std::string& backend, const BackendOptions& named) {
  if (!named.device.empty() || named.platform >= 0) return named;
  std::vector<BackendOptions> gpus;
  for (const DeviceInfo& d : backend_status(backend).devices)
    if (d.gpu) gpus.push_back(d.select);
  return gpus.empty() ? named : gpus[static_cast<std::size_t>(local) % gpus.size()];
}

std::string backend_for(const std::string& asked) {
  if (asked != "auto") return asked;
  const auto usable = available_backends();
  if (usable.empty()) throw BackendUnavailable("auto", "no usable backend on this rank");
  return usable.front();
}

// A part of no elements: reducers refuse min and max of nothing, but a rank may hold nothing.
Result empty_part(Op op, DType type, const RunOptions& options) {
  Result r;
  r.op = op;
  r.type = type;
  r.value.type = result_dtype(op, type, options.accumulator);
  if (options.exact && exact_applies(op, type)) r.exact_state = ExactSum::Raw{};
  return r;
}

// One rank's row, as fixed-size bytes for the exchange.
struct RowWire {
  std::uint64_t n = 0;
  double kernel_ms = 0, total_ms = 0;
  char host[64] = {}, backend[16] = {}, device[128] = {}, kernel[64] = {};
};

template <std::size_t N> void copy_text(char (&dst)[N], const std::string& src) {
  std::memcpy(dst, src.data(), std::min(N - 1, src.size()));
}
template <std::size_t N> std::string text_of(const char (&src)[N]) { return std::string(src, strnlen(src, N)); }

// Every rank's row on every rank (root < 0) or on root. Not timed: after the combine.
std::vector<RankRow> gather_rows(MPI_Comm comm, const Result& local, const std::string& host, int root) {
  RowWire mine;
  mine.n = local.n;
  mine.kernel_ms = local.kernel_ms;
  mine.total_ms = local.total_ms;
  copy_text(mine.host, host);
  copy_text(mine.backend, local.backend);
  copy_text(mine.device, local.device);
  copy_text(mine.kernel, local.kernel);
  const int size = size_of_comm(comm);
  std::vector<RowWire> all(static_cast<std::size_t>(size));
  const int bytes = static_cast<int>(sizeof(RowWire));
  if (root < 0)
    check(MPI_Allgather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, comm), "MPI_Allgather");
  else
    check(MPI_Gather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, root, comm), "MPI_Gather");
  std::vector<RankRow> rows;
  if (root >= 0 && rank_of(comm) != root) return rows;
  std::uint64_t first = 0;
  for (int r = 0; r < size; ++r) {
    const RowWire& w = all[static_cast<std::size_t>(r)];
    rows.push_back({r, text_of(w.host), text_of(w.backend), text_of(w.device), text_of(w.kernel), first, w.n,
                    w.kernel_ms, w.total_ms});
    first += w.n;
  }
  return rows;
}

using Clock = std::chrono::steady_clock;

// Every rank passes the same root (as MPI's rooted collectives need), so a bad one throws on
// every rank before any exchange. Negative: every rank (the unrooted calls).
void check_root(MPI_Comm comm, int root, bool rooted = false) {
  const int size = size_of_comm(comm);
  if (root >= size || (rooted && root < 0)) throw InvalidArgument("mpi: root " + std::to_string(root) + " is not a rank of " + std::to_string(size));
}

// How many times the combine runs: warmup + repeat, within the limits RunOptions allows.
int combines(const RunOptions& options) {
  return std::clamp(options.warmup, 0, 1000) + std::clamp(options.repeat, 1, 1000);
}

// The combine step, warmup + repeat times from a barrier, and the record of the whole input.
std::optional<GlobalResult> finish(MPI_Comm comm, const detail::Wire& wire, const detail::Part& part, int root,
                                   const RunOptions& options, const std::string& host) {
  std::vector<double> times;
  detail::Combined c;
  // Every rank runs part.runs combines: a rank that asks for another count is found in the first.
  for (int it = 0; it < part.runs; ++it) {
    check(MPI_Barrier(comm), "MPI_Barrier");
    const auto t0 = Clock::now();
    c = wire.combine(comm, part, root);
    const auto t1 = Clock::now();
    if (it >= options.warmup) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const Result& local = part.result;
  std::vector<RankRow> rows = gather_rows(comm, local, host, root);
  if (!c.here) return std::nullopt;
  GlobalResult g;
  g.ranks = size_of_comm(comm);
  g.combine_ms = median(times);
  g.rows = std::move(rows);
  Result& r = g.result;
  r.value = c.value;
  r.index = c.index;
  r.maximum = c.maximum;
  r.n = c.n;
  r.op = local.op;
  r.type = local.type;
  r.backend = "mpi";
  r.device = local.device;
  r.kernel = local.kernel;
  r.exact_state = c.exact_state;
  r.finish = std::to_string(g.ranks) + " ranks: " +
             (c.exact_state ? "exact states merged by an MPI_Op"
              : is_float(r.value.type) && (fold_of(r.op) == Op::Sum || fold_of(r.op) == Op::Prod)
                  ? "values combined in rank order"
                  : "values merged by an MPI_Op");
  r.launches = local.launches;
  r.repeats = local.repeats;
  r.kernel_ms = c.kernel_ms;
  r.transfer_ms = local.transfer_ms;
  r.total_ms = c.total_ms + g.combine_ms;
  r.bytes_per_s = r.total_ms > 0 ? static_cast<double>(r.n) * static_cast<double>(xr::size_of(r.type)) / (r.total_ms * 1e-3) : 0;
  r.chunks = local.chunks;
  r.path = std::to_string(g.ranks) + " ranks";
  r.rounding_depth = c.depth;
  if (r.op == Op::Prod) r.rounding_depth = std::max(r.rounding_depth, r.n);
  finalize_result(r, r.op, r.type, r.n);  // a mean: the ranks' sums over the total count
  return g;
}

}  // namespace

struct Reducer::State {
  MPI_Comm comm = MPI_COMM_NULL;
  std::string host;
  std::unique_ptr<xr::Reducer> local;
  detail::Wire wire;
  std::mutex mutex;

  ~State() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  template <class Input>
  std::optional<GlobalResult> run(Input& in, std::uint64_t n, DType type, Op op, const RunOptions& options, int root) {
    std::lock_guard lock(mutex);
    check_root(comm, root);
    detail::Part part;
    part.op = op;
    part.runs = combines(options);
    try {
      part.result = n == 0 && !op_info(op).empty_has_value ? empty_part(op, type, options)
                                                            : local->reduce(in, op, options);
      part.result.backend = local->backend();
      part.result.device = local->device();
      if (part.result.kernel.empty()) part.result.kernel = options.kernel;
    } catch (...) {
      part.error = std::current_exception();
    }
    return finish(comm, wire, part, root, options, host);
  }
};

Reducer::Reducer(MPI_Comm comm, const Options& options) : state_(std::make_unique<State>()) {
  check(MPI_Comm_dup(comm, &state_->comm), "MPI_Comm_dup");
  state_->host = detail::host_name();
  const int local = node_rank(state_->comm);  // collective: before anything that may fail
  std::exception_ptr failed;
  try {
    const std::string backend = backend_for(options.backend);
    const BackendOptions device = device_for(local, backend, options.device);
    state_->local = make_reducer(backend, device);
  } catch (...) {
    failed = std::current_exception();
  }
  detail::raise_if_any(state_->comm, failed);
}

Reducer::~Reducer() = default;

GlobalResult Reducer::reduce(HostArray local, Op op, const RunOptions& options) {
  return *state_->run(local, local.n, local.type, op, options, -1);
}

GlobalResult Reducer::reduce(ChunkSource& local, Op op, const RunOptions& options) {
  return *state_->run(local, local.size(), local.type(), op, options, -1);
}

std::optional<GlobalResult> Reducer::reduce_root(int root, HostArray local, Op op, const RunOptions& options) {
  check_root(state_->comm, root, true);
  return state_->run(local, local.n, local.type, op, options, root);
}

std::optional<GlobalResult> Reducer::reduce_root(int root, ChunkSource& local, Op op, const RunOptions& options) {
  check_root(state_->comm, root, true);
  return state_->run(local, local.size(), local.type(), op, options, root);
}

GlobalSegments Reducer::reduce_axis(const HostMatrix& local, int axis, Op op, const RunOptions& options, int root) {
  std::lock_guard lock(state_->mutex);
  return detail::reduce_axis(state_->comm, *state_->local, local, axis, op, options, root);
}

GlobalSegments Reducer::reduce_segments(HostArray local, std::span<const std::int64_t> offsets, Op op,
                                        const RunOptions& options, int root) {
  std::lock_guard lock(state_->mutex);
  return detail::reduce_segments(state_->comm, *state_->local, local, offsets, op, options, root);
}

xr::Reducer& Reducer::local() { return *state_->local; }
int Reducer::rank() const { return rank_of(state_->comm); }
int Reducer::size() const { return size_of_comm(state_->comm); }

GlobalResult reduce(MPI_Comm comm, HostArray local, Op op, const Options& options, const RunOptions& run) {
  Reducer reducer(comm, options);
  return reducer.reduce(local, op, run);
}

GlobalResult reduce(MPI_Comm comm, ChunkSource& local, Op op, const Options& options, const RunOptions& run) {
  Reducer reducer(comm, options);
  return reducer.reduce(local, op, run);
}

std::optional<GlobalResult> combine(MPI_Comm comm, const Result& local, int root) {
  check_root(comm, root);
  detail::Part part;
  part.op = local.op;
  part.result = local;
  const detail::Wire wire;
  RunOptions once;
  return finish(comm, wire, part, root, once, detail::host_name());
}

void agree(MPI_Comm comm, std::exception_ptr local_error) { detail::raise_if_any(comm, local_error); }

Part partition(MPI_Comm comm, std::uint64_t n, double weight) {
  const int size = size_of_comm(comm), rank = rank_of(comm);
  std::exception_ptr bad;
  if (!(weight >= 0) || !std::isfinite(weight))
    bad = std::make_exception_ptr(InvalidArgument("mpi: a rank's weight must be finite and not negative, not " +
                                                  std::to_string(weight)));
  detail::raise_if_any(comm, bad);
  std::vector<double> weights(static_cast<std::size_t>(size));
  check(MPI_Allgather(&weight, 1, MPI_DOUBLE, weights.data(), 1, MPI_DOUBLE, comm), "MPI_Allgather");
  long double total = 0;
  for (double w : weights) total += w;
  // Boundary r is floor(n * (weights before r) / total), computed exactly for an even split.
  const auto boundary = [&](int r) -> std::uint64_t {
    if (r >= size) return n;
    if (total == 0) return static_cast<std::uint64_t>(static_cast<unsigned __int128>(n) * static_cast<unsigned>(r) / static_cast<unsigned>(size));
    long double before = 0;
    for (int i = 0; i < r; ++i) before += weights[static_cast<std::size_t>(i)];
    return std::min<std::uint64_t>(n, static_cast<std::uint64_t>(std::floor(static_cast<long double>(n) * before / total)));
  };
  const std::uint64_t first = boundary(rank);
  return {first, boundary(rank + 1) - first};
}

namespace {
template <class Input> Reference distributed_reference(MPI_Comm comm, Input& local, std::uint64_t n, DType type, Op op, Accumulator acc) {
  // any and all: the ranks' nonzero counts, combined, then tested against the total count.
  const Op counted = op;
  if (tests_count(op)) op = kernel_op(op, type);
  detail::Part part;
  part.op = op;
  try {
    RunOptions options;
    options.accumulator = acc;
    options.exact = true;  // float sums: the reference is exact
    if (n == 0 && !op_info(op).empty_has_value) {
      part.result = empty_part(op, type, options);
    } else {
      const Reference ref = xr::reference_reduce(local, op, acc);
      part.result = empty_part(op, type, options);
      part.result.n = ref.n;
      part.result.value = ref.value;
      part.result.index = ref.index;
      part.result.maximum = ref.maximum;
      part.result.exact_state = ref.exact_state;
      part.magnitude = ref.magnitude;
      // A mean's parts: their exact sums, merged below, and the magnitude of the sum.
      if (finalize_of(op) != Finalize::None) part.magnitude = ref.magnitude * static_cast<double>(ref.n);
    }
  } catch (...) {
    part.error = std::current_exception();
  }
  const detail::Wire wire;
  const detail::Combined c = wire.combine(comm, part, -1);
  Reference ref;
  ref.value = c.value;
  ref.index = c.index;
  ref.maximum = c.maximum;
  ref.n = c.n;
  ref.op = op;
  ref.type = type;
  ref.magnitude = op == Op::Prod && is_float(type) ? std::fabs(c.value.to_double()) : c.magnitude;
  ref.exact_state = c.exact_state;
  if (finalize_of(op) != Finalize::None && c.exact_state) {  // the exact mean of every rank's elements
    ExactSum sum;
    sum.merge_raw(*c.exact_state);
    ref.value = c.value.type == DType::F32 ? Scalar::of(sum.quotient_to_float(c.n)) : Scalar::of(sum.quotient_to_double(c.n));
    ref.magnitude = c.n ? c.magnitude / static_cast<double>(c.n) : 0.0;
  }
  if (counted != op) {
    ref.op = counted;
    ref.value = Scalar::of(finalize_value(counted, c.value.i, c.n));
  }
  return ref;
}
}  // namespace

Reference reference_reduce(MPI_Comm comm, HostArray local, Op op, Accumulator acc) {
  return distributed_reference(comm, local, local.n, local.type, op, acc);
}

Reference reference_reduce(MPI_Comm comm, ChunkSource& local, Op op, Accumulator acc) {
  return distributed_reference(comm, local, local.size(), local.type(), op, acc);
}

int node_rank(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int rank = 0;
  const int rc = MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  check(rc, "MPI_Comm_rank");
  return rank;
}

}  // namespace xr::mpi
