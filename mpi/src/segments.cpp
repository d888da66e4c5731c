// Segmented reductions over ranks. Values travel as fixed-size records of bytes: the value (of
// the result type), then for argmin and argmax the int64 index, for minmax the max. A part of a
// segment or column that lies on another rank is one such record (or, for an exact float sum,
// its exact state), combined into the rest in rank order.
#include "segments.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "errors.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/semantics.hpp"

namespace xr::mpi::detail {
namespace {

using Clock = std::chrono::steady_clock;


// Columns an exchange of column partials carries at a time (bounds its buffers and MPI's int
// counts of bytes).
constexpr std::uint64_t kBandColumns = std::uint64_t{1} << 12;

struct Comm {
  MPI_Comm comm;
  int rank = 0, size = 1;
  explicit Comm(MPI_Comm c) : comm(c) {
    check(MPI_Comm_rank(c, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(c, &size), "MPI_Comm_size");
  }
};

// The layout of one value's record.
struct RecordShape {
  Op op;
  DType type;        // the input's
  DType value_type;  // result_dtype
  std::size_t value = 0, bytes = 0;
  RecordShape(Op o, DType t, Accumulator acc)
      : op(o), type(t), value_type(result_dtype(o, t, acc)), value(size_of(value_type)) {
    bytes = value + (is_indexed(o) ? 8 : 0) + (o == Op::MinMax ? size_of(t) : 0);
  }
};

// Value i of a segmented result as a record at `out`.
void to_record(const RecordShape& s, const SegmentedResult& r, std::uint64_t i, unsigned char* out) {
  std::memcpy(out, static_cast<const unsigned char*>(r.values.data()) + i * s.value, s.value);
  if (is_indexed(s.op)) std::memcpy(out + s.value, r.indices.as<std::int64_t>() + i, 8);
  if (s.op == Op::MinMax)
    std::memcpy(out + s.value, static_cast<const unsigned char*>(r.maxima.data()) + i * s.value, s.value);
}

// A result holding `records` (count of them, in order).
SegmentedResult from_records(const RecordShape& s, const unsigned char* records, std::uint64_t count) {
  SegmentedResult r;
  r.values = HostBuffer(s.value_type, count);
  if (is_indexed(s.op)) r.indices = HostBuffer(DType::I64, count);
  if (s.op == Op::MinMax) r.maxima = HostBuffer(s.type, count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const unsigned char* in = records + i * s.bytes;
    std::memcpy(static_cast<unsigned char*>(r.values.data()) + i * s.value, in, s.value);
    if (is_indexed(s.op)) std::memcpy(r.indices.as<std::int64_t>() + i, in + s.value, 8);
    if (s.op == Op::MinMax) std::memcpy(static_cast<unsigned char*>(r.maxima.data()) + i * s.value, in + s.value, s.value);
  }
  return r;
}

// A scalar's value as the bytes of its type.
void put(const Scalar& v, unsigned char* out) {
  visit_dtype(v.type, [&](auto t) {
    const auto x = v.as<decltype(t)>();
    std::memcpy(out, &x, sizeof x);
  });
}

// The record of an empty segment.
std::vector<unsigned char> empty_record(const RecordShape& s, Accumulator acc) {
  std::vector<unsigned char> out(s.bytes);
  put(empty_segment_value(s.op, s.type, acc), out.data());
  if (is_indexed(s.op)) {
    const std::int64_t none = -1;
    std::memcpy(out.data() + s.value, &none, 8);
  }
  if (s.op == Op::MinMax) put(empty_segment_maximum(s.type), out.data() + s.value);
  return out;
}

// Adds `shift` to the index of an argmin or argmax record that is not empty.
void shift_index(const RecordShape& s, unsigned char* record, std::int64_t shift) {
  if (!is_indexed(s.op) || shift == 0) return;
  std::int64_t i;
  std::memcpy(&i, record + s.value, 8);
  if (i >= 0) i += shift;
  std::memcpy(record + s.value, &i, 8);
}

// `later`, the part after `kept` in the input (both of at least one element), folded into kept:
// the op's combine, as one process combines the parts of a segment.
void fold_into(const RecordShape& s, unsigned char* kept, const unsigned char* later) {
  visit_dtype(s.value_type, [&](auto t) {
    using T = decltype(t);
    T a, b;
    std::memcpy(&a, kept, sizeof(T));
    std::memcpy(&b, later, sizeof(T));
    if (s.op == Op::MinMax) {
      T am, bm;
      std::memcpy(&am, kept + sizeof(T), sizeof(T));
      std::memcpy(&bm, later + sizeof(T), sizeof(T));
      const Bounds<T> r = PairFn<Op::MinMax>::apply(Bounds<T>{a, am}, Bounds<T>{b, bm});
      std::memcpy(kept, &r.min, sizeof(T));
      std::memcpy(kept + sizeof(T), &r.max, sizeof(T));
    } else if (is_indexed(s.op)) {
      std::int64_t ai, bi;
      std::memcpy(&ai, kept + sizeof(T), 8);
      std::memcpy(&bi, later + sizeof(T), 8);
      const Located<T> r = visit_pair(s.op, [&](auto fn) -> Located<T> {
        if constexpr (std::is_same_v<typename decltype(fn)::template record<T>, Located<T>>)
          return decltype(fn)::apply(Located<T>{a, ai}, Located<T>{b, bi});
        else return {a, ai};  // not reached: minmax above
      });
      std::memcpy(kept, &r.value, sizeof(T));
      std::memcpy(kept + sizeof(T), &r.index, 8);
    } else {
      const T r = combine<T>(s.op, a, b);
      std::memcpy(kept, &r, sizeof(T));
    }
  });
}

// An exact state of n terms rounded to the value of a float sum (f16 and bf16 sums are f32), or
// of a mean: its quotient by n, rounded once.
void round_state(const RecordShape& s, const ExactSum& sum, std::uint64_t n, unsigned char* out) {
  const bool mean = finalize_of(s.op) == Finalize::DivideByCount;
  if (s.value_type == DType::F64) {
    const double v = mean ? sum.quotient_to_double(n) : sum.to_double();
    std::memcpy(out, &v, 8);
  } else {
    const float v = mean ? sum.quotient_to_float(n) : sum.to_float();
    std::memcpy(out, &v, 4);
  }
}

// Mapped op `op`'s last step (mean, any, all) on a record of its fold's value over n elements.
void finalize_record(const RecordShape& s, std::uint64_t n, unsigned char* record) {
  if (finalize_of(s.op) == Finalize::None) return;
  visit_dtype(s.value_type, [&](auto t) {
    using A = decltype(t);
    A v;
    std::memcpy(&v, record, sizeof v);
    v = finalize_value(s.op, v, n);
    std::memcpy(record, &v, sizeof v);
  });
}

// What every rank must share, in words; InvalidArgument on every rank naming two that differ.
void agree_on(const Comm& c, const std::vector<std::int64_t>& mine, const char* call,
              const char* const* names) {
  const std::size_t k = mine.size();
  std::vector<std::int64_t> words(2 * k), lowest(2 * k);
  for (std::size_t i = 0; i < k; ++i) {
    words[i] = mine[i];
    words[k + i] = -mine[i];
  }
  check(MPI_Allreduce(words.data(), lowest.data(), static_cast<int>(2 * k), MPI_INT64_T, MPI_MIN, c.comm),
        "MPI_Allreduce");
  std::size_t differs = k;
  for (std::size_t i = 0; i < k && differs == k; ++i)
    if (lowest[i] != -lowest[k + i]) differs = i;
  if (differs == k) return;
  std::vector<std::int64_t> all(static_cast<std::size_t>(c.size) * k);
  check(MPI_Allgather(mine.data(), static_cast<int>(k), MPI_INT64_T, all.data(), static_cast<int>(k), MPI_INT64_T,
                      c.comm),
        "MPI_Allgather");
  std::size_t other = 1;
  while (other + 1 < static_cast<std::size_t>(c.size) && all[other * k + differs] == all[differs]) ++other;
  throw InvalidArgument(std::string("mpi: ") + call + ": the ranks disagree on " + names[differs] + ": rank 0 has " +
                        std::to_string(all[differs]) + ", rank " + std::to_string(other) + " " +
                        std::to_string(all[other * k + differs]));
}

std::int64_t options_word(Op op, DType type, const RunOptions& options, int root) {
  return static_cast<std::int64_t>(op) | static_cast<std::int64_t>(type) << 8 |
         static_cast<std::int64_t>(options.exact) << 16 | static_cast<std::int64_t>(options.accumulator) << 17 |
         static_cast<std::int64_t>(root + 1) << 24;
}

// FNV-1a over the offsets: ranks that pass different offsets disagree here.
std::int64_t checksum(std::span<const std::int64_t> offsets) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::int64_t o : offsets) {
    h ^= static_cast<std::uint64_t>(o);
    h *= 1099511628211ull;
  }
  return static_cast<std::int64_t>(h >> 1);
}

// Every rank's count of something, and their prefix sums.
struct Counts {
  std::vector<std::uint64_t> n, first;
  std::uint64_t total = 0;
  Counts(const Comm& c, std::uint64_t mine) : n(static_cast<std::size_t>(c.size)), first(n.size()) {
    check(MPI_Allgather(&mine, 1, MPI_UINT64_T, n.data(), 1, MPI_UINT64_T, c.comm), "MPI_Allgather");
    for (std::size_t r = 0; r < n.size(); ++r) {
      first[r] = total;
      total += n[r];
    }
  }
};

// Gathers each rank's records (counts[r] of them, in rank order) on every rank (root < 0) or on
// root, in pieces whose bytes fit MPI's int counts.
std::vector<unsigned char> gather_records(const Comm& c, const std::vector<unsigned char>& mine, const Counts& counts,
                                          std::size_t record, int root) {
  std::vector<unsigned char> all;
  const bool here = root < 0 || c.rank == root;
  if (here) all.resize(counts.total * record);
  // Every rank sends at most `step` records a round.
  const std::uint64_t step = std::max<std::uint64_t>(1, (std::uint64_t{1} << 28) / record / static_cast<std::uint64_t>(c.size));
  std::uint64_t most = 0;
  for (std::uint64_t n : counts.n) most = std::max(most, n);
  std::vector<int> bytes(static_cast<std::size_t>(c.size)), displs(bytes.size());
  std::vector<unsigned char> round;
  for (std::uint64_t at = 0; at < most; at += step) {
    std::size_t total = 0;
    for (std::size_t r = 0; r < bytes.size(); ++r) {
      const std::uint64_t k = counts.n[r] > at ? std::min(step, counts.n[r] - at) : 0;
      bytes[r] = static_cast<int>(k * record);
      displs[r] = static_cast<int>(total);
      total += k * record;
    }
    if (here) round.resize(total);
    const int send = bytes[static_cast<std::size_t>(c.rank)];
    const unsigned char* from = send ? mine.data() + at * record : nullptr;
    if (root < 0)
      check(MPI_Allgatherv(from, send, MPI_BYTE, round.data(), bytes.data(), displs.data(), MPI_BYTE,
                           c.comm),
            "MPI_Allgatherv");
    else
      check(MPI_Gatherv(from, send, MPI_BYTE, round.data(), bytes.data(), displs.data(), MPI_BYTE,
                        root, c.comm),
            "MPI_Gatherv");
    if (!here) continue;
    for (std::size_t r = 0; r < bytes.size(); ++r)
      if (bytes[r] > 0)
        std::memcpy(all.data() + (counts.first[r] + at) * record, round.data() + displs[r], static_cast<std::size_t>(bytes[r]));
  }
  return all;
}

// The record of the whole call, from this rank's local one.
void fill_record(SegmentedResult& out, const Result& local, const RecordShape& s, std::uint64_t n, double ms,
                 SegmentKind kind, int ranks) {
  Result& r = out.record;
  r = local;
  r.op = s.op;
  r.type = s.type;
  r.n = n;
  r.backend = "mpi";
  r.total_ms = ms;
  r.path = std::to_string(ranks) + " ranks";
  out.kind = kind;
  out.bytes_written = out.count() * s.bytes;
}

// The local reduction's failure or result; every rank throws the lowest failing rank's error.
template <class F> SegmentedResult locally(const Comm& c, F&& f) {
  std::exception_ptr bad;
  SegmentedResult r;
  try {
    r = f();
  } catch (...) {
    bad = std::current_exception();
  }
  raise_if_any(c.comm, bad);
  return r;
}

// ---- CSR segments ----

// A part of a segment that began on an earlier rank: its record and, for an exact sum, its state.
struct Continuation {
  std::int64_t segment = -1;  // -1: none
  ExactSum::Raw state;
  unsigned char record[32] = {};
};

}  // namespace

GlobalSegments reduce_segments(MPI_Comm comm, xr::Reducer& local, HostArray in, std::span<const std::int64_t> offsets,
                               Op op, const RunOptions& options, int root) {
  const Comm c(comm);
  const auto t0 = Clock::now();
  std::exception_ptr bad;
  try {
    if (root >= c.size) throw InvalidArgument("mpi: root " + std::to_string(root) + " is not a rank of " + std::to_string(c.size));
    if (offsets.empty()) throw InvalidArgument("mpi: reduce_segments: offsets holds no value (it needs count + 1)");
    if (in.n > 0 && in.data == nullptr) throw InvalidArgument("mpi: reduce_segments: null data for " + std::to_string(in.n) + " elements");
    if (options.exact && (is_pair(op) || (is_mapped(op) && !exact_applies(op, in.type))))
      throw InvalidArgument("mpi: reduce_segments: exact mode does not apply to " + std::string(to_string(op)) + " of " +
                            std::string(to_string(in.type)));
  } catch (...) {
    bad = std::current_exception();
  }
  raise_if_any(c.comm, bad);
  static const char* const names[] = {"the op, type, exact mode, accumulator and root", "the count of offsets",
                                      "the offsets"};
  agree_on(c, {options_word(op, in.type, options, root), static_cast<std::int64_t>(offsets.size()), checksum(offsets)},
           "reduce_segments", names);
  const Counts counts(c, in.n);
  try {
    check_offsets(offsets, counts.total);
  } catch (...) {
    bad = std::current_exception();
  }
  raise_if_any(c.comm, bad);

  const RecordShape s(op, in.type, options.accumulator);
  const bool exact = options.exact && exact_applies(op, in.type);
  // The parts of a segment that spans ranks combine as exact states for exact sums and means, and
  // for means of integers (their values as f64, summed on the host; one process sums them in
  // f64); else as records of the fold's value: an op with a last step (mean, any, all) then runs
  // as its kernel_op (sums, counts) and takes the step once its parts are combined.
  const bool last_step = finalize_of(op) != Finalize::None;
  const bool states = exact || (finalize_of(op) == Finalize::DivideByCount && !is_float(in.type));
  const Op local_op = last_step && !states ? kernel_op(op, in.type) : op;
  const auto length = [&](std::uint64_t i) { return static_cast<std::uint64_t>(offsets[i + 1] - offsets[i]); };
  const std::uint64_t count = offsets.size() - 1;
  const std::uint64_t a = counts.first[static_cast<std::size_t>(c.rank)], b = a + in.n;
  const auto starts_before = [&](std::uint64_t x) {  // segments that start before element x
    return static_cast<std::uint64_t>(std::lower_bound(offsets.begin(), offsets.end() - 1, static_cast<std::int64_t>(x)) -
                                      offsets.begin());
  };
  // Segment i belongs to the rank holding element offsets[i] (the last rank where it is the end).
  const std::uint64_t own_begin = starts_before(a);
  const std::uint64_t own_end = c.rank == c.size - 1 ? count : starts_before(b);
  const std::uint64_t seg_end = static_cast<std::uint64_t>(offsets[own_begin]);  // of the segment before own_begin
  const bool continues = in.n > 0 && own_begin > 0 && seg_end > a;
  const std::uint64_t lo = continues ? own_begin - 1 : own_begin;
  const auto clip = [&](std::int64_t x) {
    return static_cast<std::int64_t>(std::clamp<std::uint64_t>(static_cast<std::uint64_t>(x), a, b) - a);
  };
  // The last owned segment runs on past this rank's elements.
  const bool runs_on = own_end > own_begin && static_cast<std::uint64_t>(offsets[own_end]) > b;

  // The local reduction of this rank's segments: the continuation first, then the owned ones.
  SegmentedResult part = locally(c, [&] {
    if (in.n == 0 || own_end == lo) return SegmentedResult{};
    std::vector<std::int64_t> local_offsets;
    for (std::uint64_t j = lo; j <= own_end; ++j) local_offsets.push_back(clip(offsets[j]));
    return local.reduce_segments(in, local_offsets, local_op, options);
  });
  // Exact states of the parts that are combined with other ranks' parts.
  const auto state_of = [&](std::uint64_t from, std::uint64_t to) {
    const HostArray range{static_cast<const unsigned char*>(in.data) + from * size_of(in.type), to - from, in.type};
    if (!is_float(in.type)) {  // a mean's integers, as f64
      ExactSum sum;
      visit_dtype(in.type, [&](auto t) {
        using T = decltype(t);
        for (std::uint64_t i = 0; i < range.n; ++i) sum.add(static_cast<double>(static_cast<const T*>(range.data)[i]));
      });
      return sum.raw();
    }
    RunOptions o = options;
    o.exact = true;
    return local.reduce(range, Op::Sum, o).exact_state.value_or(ExactSum::Raw{});
  };
  std::optional<ExactSum::Raw> cont_state, last_state;
  const SegmentedResult states_done = locally(c, [&] {
    if (states && continues) cont_state = state_of(0, std::min(seg_end, b) - a);
    if (states && runs_on) last_state = state_of(static_cast<std::uint64_t>(offsets[own_end - 1]) - a, in.n);
    return SegmentedResult{};
  });

  // Every rank's continuation, on every rank.
  Continuation mine;
  if (continues) {
    mine.segment = static_cast<std::int64_t>(own_begin - 1);
    to_record(s, part, 0, mine.record);
    shift_index(s, mine.record, static_cast<std::int64_t>(a) - offsets[own_begin - 1]);
    if (cont_state) mine.state = *cont_state;
  }
  std::vector<Continuation> all(static_cast<std::size_t>(c.size));
  check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, c.comm), "MPI_Allgather");

  // This rank's owned values, the last one combined with the later ranks' parts of it.
  const std::uint64_t owned = own_end - own_begin;
  std::vector<unsigned char> records(owned * s.bytes);
  // An empty segment's record: the op's value of nothing, or its fold's where the step follows.
  const std::vector<unsigned char> empty = empty_record(RecordShape(local_op, in.type, options.accumulator), options.accumulator);
  for (std::uint64_t i = 0; i < owned; ++i) {
    if (part.count() > 0) to_record(s, part, i + (continues ? 1 : 0), records.data() + i * s.bytes);
    else std::memcpy(records.data() + i * s.bytes, empty.data(), s.bytes);
  }
  if (runs_on) {
    unsigned char* last = records.data() + (owned - 1) * s.bytes;
    ExactSum sum;
    if (last_state) sum.merge_raw(*last_state);
    for (std::size_t r = static_cast<std::size_t>(c.rank) + 1; r < all.size(); ++r) {
      if (all[r].segment != static_cast<std::int64_t>(own_end - 1)) continue;
      if (states) sum.merge_raw(all[r].state);
      else fold_into(s, last, all[r].record);
    }
    if (states) round_state(s, sum, length(own_end - 1), last);
  }
  if (local_op != op)  // the last step, on every owned segment's combined fold
    for (std::uint64_t i = 0; i < owned; ++i) finalize_record(s, length(own_begin + i), records.data() + i * s.bytes);
  const Counts owned_counts(c, owned);
  GlobalSegments g;
  g.ranks = c.size;
  g.total = count;
  const std::vector<unsigned char> gathered = gather_records(c, records, owned_counts, s.bytes, root);
  if (root < 0 || c.rank == root) g.result = from_records(s, gathered.data(), count);
  std::uint64_t depth = part.rounding_depth;
  check(MPI_Allreduce(MPI_IN_PLACE, &depth, 1, MPI_UINT64_T, MPI_MAX, c.comm), "MPI_Allreduce");
  fill_record(g.result, part.record, s, static_cast<std::uint64_t>(offsets.back() - offsets.front()),
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), SegmentKind::Offsets, c.size);
  g.result.rounding_depth = depth > 0 && !exact ? depth + static_cast<std::uint64_t>(c.size) + (local_op != op) : 0;
  g.result.bytes_read = in.n * size_of(in.type) + offsets.size() * sizeof(std::int64_t);
  (void)states_done;
  return g;
}

// ---- rows split over ranks ----

GlobalSegments reduce_axis(MPI_Comm comm, xr::Reducer& local, const HostMatrix& in, int axis, Op op,
                           const RunOptions& options, int root) {
  const Comm c(comm);
  const auto t0 = Clock::now();
  std::exception_ptr bad;
  try {
    if (root >= c.size) throw InvalidArgument("mpi: root " + std::to_string(root) + " is not a rank of " + std::to_string(c.size));
    (void)axis_layout(in.shape, axis);  // axis, stride, overflow
    if (in.shape.rows > 0 && in.shape.cols > 0 && in.data == nullptr)
      throw InvalidArgument("mpi: reduce_axis: null data for a " + std::to_string(in.shape.rows) + " x " +
                            std::to_string(in.shape.cols) + " matrix");
    if (options.exact && (is_pair(op) || (is_mapped(op) && !exact_applies(op, in.type))))
      throw InvalidArgument("mpi: reduce_axis: exact mode does not apply to " + std::string(to_string(op)) + " of " +
                            std::string(to_string(in.type)));
  } catch (...) {
    bad = std::current_exception();
  }
  raise_if_any(c.comm, bad);
  static const char* const names[] = {"the op, type, exact mode, accumulator and root", "the axis", "the column count",
                                      "the order of storage"};
  agree_on(c, {options_word(op, in.type, options, root), axis, static_cast<std::int64_t>(in.shape.cols),
               static_cast<std::int64_t>(in.shape.order)},
           "reduce_axis", names);
  const Counts rows(c, in.shape.rows);
  const RecordShape s(op, in.type, options.accumulator);
  const bool exact = options.exact && exact_applies(op, in.type);
  const std::uint64_t cols = in.shape.cols;
  GlobalSegments g;
  g.ranks = c.size;

  if (axis == 1) {  // each row where it lies
    SegmentedResult part = locally(c, [&] {
      return in.shape.rows == 0 ? SegmentedResult{} : local.reduce_axis(in, 1, op, options);
    });
    const Result local_record = part.record;
    g.total = rows.total;
    if (root < 0) {
      g.first = rows.first[static_cast<std::size_t>(c.rank)];
      g.result = in.shape.rows == 0 ? from_records(s, nullptr, 0) : std::move(part);
    } else {
      std::vector<unsigned char> records(in.shape.rows * s.bytes);
      for (std::uint64_t i = 0; i < in.shape.rows; ++i) to_record(s, part, i, records.data() + i * s.bytes);
      const std::vector<unsigned char> gathered = gather_records(c, records, rows, s.bytes, root);
      if (c.rank == root) g.result = from_records(s, gathered.data(), rows.total);
    }
    fill_record(g.result, local_record, s, rows.total * cols,
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), SegmentKind::Rows, c.size);
    g.result.bytes_read = in.shape.rows * cols * size_of(in.type);
    return g;
  }

  // axis 0: each column's parts, one a rank, combined in rank order. An op with a last step
  // (mean, any, all) combines its fold's parts (kernel_op: the sums, the counts), then takes the
  // step over the total rows; a mean of integers sums its values, as f64, exactly on the host, as
  // exact float sums do, and rounds the quotient once.
  const bool host_sums = exact || (finalize_of(op) == Finalize::DivideByCount && !is_float(in.type));
  const auto at = [&](std::uint64_t r, std::uint64_t col) {
    const std::uint64_t i = in.shape.order == Order::C ? r * in.shape.step() + col : col * in.shape.step() + r;
    return static_cast<const unsigned char*>(in.data) + i * size_of(in.type);
  };
  SegmentedResult part = locally(c, [&] {
    if (host_sums || in.shape.rows == 0 || cols == 0) return SegmentedResult{};
    return local.reduce_axis(in, 0, kernel_op(op, in.type), options);
  });
  // Exact sums: each column's exact state over this rank's rows, on the host.
  std::vector<ExactSum> sums(host_sums ? cols : 0);
  if (host_sums)
    visit_dtype(in.type, [&](auto t) {
      using T = decltype(t);
      for (std::uint64_t r = 0; r < in.shape.rows; ++r)
        for (std::uint64_t col = 0; col < cols; ++col) {
          T x;
          std::memcpy(&x, at(r, col), sizeof(T));
          if constexpr (is_float_v<T>) sums[col].add(static_cast<compute_t<T>>(x));
          else sums[col].add(static_cast<double>(x));  // a mean's integers, as f64
        }
    });
  const std::size_t unit = host_sums ? sizeof(ExactSum::Raw) : s.bytes;
  const bool here = root < 0 || c.rank == root;
  std::vector<unsigned char> values(here ? cols * s.bytes : 0);
  const std::vector<unsigned char> empty = empty_record(s, options.accumulator);
  const std::int64_t my_first_row = static_cast<std::int64_t>(rows.first[static_cast<std::size_t>(c.rank)]);
  for (std::uint64_t c0 = 0; c0 < cols; c0 += kBandColumns) {
    const std::uint64_t band = std::min(kBandColumns, cols - c0);
    std::vector<unsigned char> mine(band * unit);
    for (std::uint64_t j = 0; j < band; ++j) {
      unsigned char* out = mine.data() + j * unit;
      if (host_sums) {
        const ExactSum::Raw raw = sums[c0 + j].raw();
        std::memcpy(out, &raw, sizeof raw);
      } else if (part.count() > 0) {
        to_record(s, part, c0 + j, out);
        shift_index(s, out, my_first_row);
      }
    }
    std::vector<unsigned char> all(here ? static_cast<std::size_t>(c.size) * mine.size() : 0);
    const int bytes = static_cast<int>(mine.size());
    if (root < 0)
      check(MPI_Allgather(mine.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, c.comm), "MPI_Allgather");
    else
      check(MPI_Gather(mine.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, root, c.comm), "MPI_Gather");
    if (!here) continue;
    for (std::uint64_t j = 0; j < band; ++j) {
      unsigned char* out = values.data() + (c0 + j) * s.bytes;
      if (host_sums) {
        ExactSum sum;
        for (std::size_t r = 0; r < static_cast<std::size_t>(c.size); ++r) {
          ExactSum::Raw raw;
          std::memcpy(&raw, all.data() + (r * band + j) * unit, sizeof raw);
          sum.merge_raw(raw);
        }
        if (rows.total > 0) round_state(s, sum, rows.total, out);
        else std::memcpy(out, empty.data(), s.bytes);
        continue;
      }
      bool any = false;
      for (std::size_t r = 0; r < static_cast<std::size_t>(c.size); ++r) {
        if (rows.n[r] == 0) continue;
        const unsigned char* p = all.data() + (r * band + j) * unit;
        if (any) fold_into(s, out, p);
        else std::memcpy(out, p, s.bytes);
        any = true;
      }
      if (!any) std::memcpy(out, empty.data(), s.bytes);  // the op's own value of nothing
      else finalize_record(s, rows.total, out);
    }
  }
  g.total = cols;
  if (here) g.result = from_records(s, values.data(), cols);
  std::uint64_t depth = part.rounding_depth;
  check(MPI_Allreduce(MPI_IN_PLACE, &depth, 1, MPI_UINT64_T, MPI_MAX, c.comm), "MPI_Allreduce");
  fill_record(g.result, part.record, s, rows.total * cols,
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), SegmentKind::Columns, c.size);
  if (host_sums) g.result.record.kernel = "host exact states";
  g.result.rounding_depth =
      depth > 0 && !host_sums ? depth + static_cast<std::uint64_t>(c.size) + (finalize_of(op) == Finalize::DivideByCount) : 0;
  g.result.bytes_read = in.shape.rows * cols * size_of(in.type);
  return g;
}

}  // namespace xr::mpi::detail
