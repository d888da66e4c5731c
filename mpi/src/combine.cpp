#include "combine.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "errors.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/semantics.hpp"

namespace xr::mpi::detail {
namespace {

// One rank's record, as the int64 words the combine's MPI_Op merges. The status words let every
// rank decide, from one collective, whether to go on: the lowest failing rank, whether the ranks
// agree on what they reduce, how many elements there are.
enum Word : int {
  kFailed,     // lowest failing rank (the rank count when none): min
  kSigMin,     // signature(): min and max, equal when every rank reduces the same thing
  kSigMax,
  kCount,      // elements: sum
  kNonEmpty,   // ranks with elements: sum
  kDepth,      // rounding depth: max
  kKernelMs,   // a double: max
  kTotalMs,    // a double: max
  kMagnitude,  // a double: sum
  kHasValue,   // the value words hold a value
  kValue,      // integers, min, max and the pair ops: the value's bits (minmax: the min), merged by its op
  kSecond,     // argmin, argmax: the index from the first element of the record's ranks; minmax: the max
  kFlags,      // exact sums: the ExactSum flags, OR; then the limbs, added
  kLimb0,
  kWords = kLimb0 + ExactSum::kLimbs,
};
using Record = std::int64_t[kWords];

// What a rank reduces, in one word: op, input type, result type, exact mode, and how many
// combines the call makes (a rank that makes fewer would leave the others waiting).
std::int64_t signature(Op op, DType type, DType value_type, bool exact, int runs) {
  return static_cast<std::int64_t>(op) | static_cast<std::int64_t>(type) << 8 |
         static_cast<std::int64_t>(value_type) << 16 | static_cast<std::int64_t>(exact) << 24 |
         static_cast<std::int64_t>(runs) << 32;
}
Op sig_op(std::int64_t s) { return static_cast<Op>(s & 0xff); }
DType sig_type(std::int64_t s) { return static_cast<DType>((s >> 8) & 0xff); }
DType sig_value_type(std::int64_t s) { return static_cast<DType>((s >> 16) & 0xff); }
bool sig_exact(std::int64_t s) { return (s >> 24) & 1; }
int sig_runs(std::int64_t s) { return static_cast<int>(s >> 32); }

double as_double(std::int64_t w) { return std::bit_cast<double>(w); }
std::int64_t from_double(double d) { return std::bit_cast<std::int64_t>(d); }

template <class T> T value_of(std::int64_t w) {
  T v;
  std::memcpy(&v, &w, sizeof v);
  return v;
}
template <class T> std::int64_t word_of(T v) {
  std::int64_t w = 0;
  std::memcpy(&w, &v, sizeof v);
  return w;
}
std::int64_t word_of_scalar(const Scalar& s) {
  return visit_dtype(s.type, [&](auto t) { return word_of(s.as<decltype(t)>()); });
}
Scalar scalar_of_word(DType type, std::int64_t w) {
  return visit_dtype(type, [&](auto t) { return Scalar::of(value_of<decltype(t)>(w)); });
}

// Float sums and products are not associative: their values are combined in rank order by each
// rank itself, never inside MPI's reduction tree.
bool folded_in_rank_order(Op op, DType value_type, bool exact) {
  return is_float(value_type) && (fold_of(op) == Op::Sum || fold_of(op) == Op::Prod) && !exact;
}


// A pair op's records, left (lower ranks) and right, into right. The ranks of a record are
// contiguous and left's come first (the ordered MPI_Op), so right's index moves by left's count.
void merge_pair(Op op, DType type, const std::int64_t* left, std::int64_t* right) {
  const bool arg = op == Op::ArgMin || op == Op::ArgMax;
  if (arg && right[kHasValue]) right[kSecond] += left[kCount];
  if (!left[kHasValue]) return;
  if (!right[kHasValue]) {
    right[kHasValue] = 1;
    right[kValue] = left[kValue];
    right[kSecond] = left[kSecond];
    return;
  }
  visit_pair(op, [&](auto fn) {
    visit_dtype(type, [&](auto t) {
      using T = decltype(t);
      using Fn = decltype(fn);
      using Record = pair_record_t<Fn::op, T>;
      if constexpr (std::is_same_v<Record, Located<T>>) {
        const Record r = Fn::apply(Record{value_of<T>(left[kValue]), left[kSecond]},
                                   Record{value_of<T>(right[kValue]), right[kSecond]});
        right[kValue] = word_of<T>(r.value);
        right[kSecond] = r.index;
      } else {
        const Record r = Fn::apply(Record{value_of<T>(left[kValue]), value_of<T>(left[kSecond])},
                                   Record{value_of<T>(right[kValue]), value_of<T>(right[kSecond])});
        right[kValue] = word_of<T>(r.min);
        right[kSecond] = word_of<T>(r.max);
      }
    });
  });
}

// left (lower ranks) op right, into right: the rule of MPI's user operations.
void merge(const std::int64_t* left, std::int64_t* right) {
  const bool same = left[kSigMin] == left[kSigMax] && right[kSigMin] == right[kSigMax] && left[kSigMin] == right[kSigMin];
  const std::int64_t sig = left[kSigMin];
  if (same && is_pair(sig_op(sig))) merge_pair(sig_op(sig), sig_type(sig), left, right);  // before the counts add
  right[kFailed] = std::min(left[kFailed], right[kFailed]);
  right[kCount] = static_cast<std::int64_t>(static_cast<std::uint64_t>(left[kCount]) + static_cast<std::uint64_t>(right[kCount]));
  right[kNonEmpty] += left[kNonEmpty];
  right[kDepth] = std::max(left[kDepth], right[kDepth]);
  right[kKernelMs] = from_double(std::max(as_double(left[kKernelMs]), as_double(right[kKernelMs])));
  right[kTotalMs] = from_double(std::max(as_double(left[kTotalMs]), as_double(right[kTotalMs])));
  right[kMagnitude] = from_double(as_double(left[kMagnitude]) + as_double(right[kMagnitude]));
  right[kSigMin] = std::min(left[kSigMin], right[kSigMin]);
  right[kSigMax] = std::max(left[kSigMax], right[kSigMax]);
  if (!same || is_pair(sig_op(sig))) return;  // a failure or a disagreement: the values are not used
  if (sig_exact(sig)) {
    right[kFlags] |= left[kFlags];
    for (int i = kLimb0; i < kWords; ++i)
      right[i] = static_cast<std::int64_t>(static_cast<std::uint64_t>(left[i]) + static_cast<std::uint64_t>(right[i]));
    return;
  }
  if (!left[kHasValue] || folded_in_rank_order(sig_op(sig), sig_value_type(sig), false)) return;
  if (!right[kHasValue]) {
    right[kHasValue] = 1;
    right[kValue] = left[kValue];
    return;
  }
  visit_fold(fold_of(sig_op(sig)), [&](auto fn) {
    visit_dtype(sig_value_type(sig), [&](auto t) {
      using T = decltype(t);
      right[kValue] = word_of<T>(decltype(fn)::apply(value_of<T>(left[kValue]), value_of<T>(right[kValue])));
    });
  });
}

void merge_records(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* left = static_cast<const std::int64_t*>(in);
  auto* right = static_cast<std::int64_t*>(inout);
  for (int r = 0; r < *len; ++r) merge(left + r * kWords, right + r * kWords);
}

void fill(Record& rec, const Part& part, int rank, int size) {
  std::fill(std::begin(rec), std::end(rec), 0);
  rec[kFailed] = part.error ? rank : size;
  if (part.error) {  // neutral in every status word
    rec[kSigMin] = std::numeric_limits<std::int64_t>::max();
    rec[kSigMax] = std::numeric_limits<std::int64_t>::min();
    rec[kKernelMs] = rec[kTotalMs] = rec[kMagnitude] = from_double(0.0);
    return;
  }
  const Result& r = part.result;
  const bool exact = r.exact_state.has_value();
  rec[kSigMin] = rec[kSigMax] = signature(r.op, r.type, r.value.type, exact, part.runs);
  rec[kCount] = static_cast<std::int64_t>(r.n);
  rec[kNonEmpty] = r.n > 0;
  rec[kDepth] = static_cast<std::int64_t>(r.rounding_depth);
  rec[kKernelMs] = from_double(r.kernel_ms);
  rec[kTotalMs] = from_double(r.total_ms > 0 ? r.total_ms : r.kernel_ms);
  rec[kMagnitude] = from_double(part.magnitude);
  // A rank whose nanmin or nanmax elements are all NaN holds no number: its NaN is left out as an
  // empty rank's is, and where no rank holds one the result is NaN.
  rec[kHasValue] = r.n > 0 && !(may_be_all_nan(r.op, r.value.type) && std::isnan(r.value.f));
  // A mean's ranks combine their sums (Result::folded), then divide by the total count.
  if (r.n > 0) rec[kValue] = word_of_scalar(finalize_of(r.op) != Finalize::None ? r.folded : r.value);
  if (r.n > 0 && is_pair(r.op)) rec[kSecond] = r.op == Op::MinMax ? word_of_scalar(r.maximum) : r.index;
  if (exact) {
    rec[kFlags] = r.exact_state->flags;
    for (int i = 0; i < ExactSum::kLimbs; ++i) rec[kLimb0 + i] = r.exact_state->limb[static_cast<std::size_t>(i)];
  }
}

std::string what_is_reduced(std::int64_t sig) {
  return std::string(to_string(sig_op(sig))) + " of " + std::string(to_string(sig_type(sig))) + " into " +
         std::string(to_string(sig_value_type(sig))) + (sig_exact(sig) ? ", exact" : "") + ", " +
         std::to_string(sig_runs(sig)) + (sig_runs(sig) == 1 ? " run" : " runs");
}

// Every rank throws the same message: rank 0's reduction and the first rank whose differs.
[[noreturn]] void throw_disagreement(MPI_Comm comm, std::int64_t mine, int size) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size));
  check(MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, comm), "MPI_Allgather");
  int other = 1;
  while (other < size - 1 && all[static_cast<std::size_t>(other)] == all[0]) ++other;
  throw InvalidArgument("mpi: the ranks disagree on what they reduce: rank 0 reduces " + what_is_reduced(all[0]) +
                        ", rank " + std::to_string(other) + " " +
                        what_is_reduced(all[static_cast<std::size_t>(other)]));
}

}  // namespace

Wire::Wire() {
  check(MPI_Type_contiguous(kWords, MPI_INT64_T, &record_), "MPI_Type_contiguous");
  check(MPI_Type_commit(&record_), "MPI_Type_commit");
  check(MPI_Op_create(merge_records, 1, &commutative_), "MPI_Op_create");
  check(MPI_Op_create(merge_records, 0, &ordered_), "MPI_Op_create");
}

Wire::~Wire() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI_Finalize freed them
  MPI_Op_free(&ordered_);
  MPI_Op_free(&commutative_);
  MPI_Type_free(&record_);
}

Combined Wire::combine(MPI_Comm comm, const Part& part, int root) const {
  int rank = 0, size = 1;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  Record mine, all;
  fill(mine, part, rank, size);
  // Min, max and the pair ops go through the ordered operation, so that of equal values (+0 and
  // -0) and of NaNs the one in rank order wins, and an index moves by the counts of the ranks
  // before it, whatever tree MPI uses; every other merge is commutative. The choice follows the
  // op every rank passes (as MPI_Allreduce needs one op on every rank).
  const Op fold = fold_of(part.op);
  const MPI_Op mpi_op = fold == Op::Min || fold == Op::Max || is_pair(part.op) ? ordered_ : commutative_;
  if (root < 0) {
    check(MPI_Allreduce(mine, all, 1, record_, mpi_op, comm), "MPI_Allreduce");
  } else {
    check(MPI_Reduce(mine, all, 1, record_, mpi_op, root, comm), "MPI_Reduce");
    // Every rank needs the status words, to throw with the others.
    check(MPI_Bcast(all, kNonEmpty + 1, MPI_INT64_T, root, comm), "MPI_Bcast");
  }
  if (all[kFailed] < size) raise_if_any(comm, part.error, static_cast<int>(all[kFailed]));
  if (all[kSigMin] != all[kSigMax]) throw_disagreement(comm, mine[kSigMin], size);

  const std::int64_t sig = all[kSigMin];
  const Op op = sig_op(sig);
  const DType value_type = sig_value_type(sig);
  const bool exact = sig_exact(sig);
  Combined c;
  c.n = static_cast<std::uint64_t>(all[kCount]);
  c.nonempty = static_cast<int>(all[kNonEmpty]);
  if (!op_info(op).empty_has_value && c.n == 0)
    throw EmptyInput(std::string(to_string(op)) + " of no elements: every rank's part is empty (" +
                     std::to_string(size) + " ranks)");

  if (folded_in_rank_order(op, value_type, exact)) {
    const std::int64_t pair[2] = {mine[kHasValue], mine[kValue]};
    std::vector<std::int64_t> pairs(2 * static_cast<std::size_t>(size));
    if (root < 0)
      check(MPI_Allgather(pair, 2, MPI_INT64_T, pairs.data(), 2, MPI_INT64_T, comm), "MPI_Allgather");
    else
      check(MPI_Gather(pair, 2, MPI_INT64_T, pairs.data(), 2, MPI_INT64_T, root, comm), "MPI_Gather");
    all[kHasValue] = 0;
    if (root < 0 || rank == root)
      for (int r = 0; r < size; ++r) {
        const std::int64_t* p = pairs.data() + 2 * r;
        if (!p[0]) continue;
        if (!all[kHasValue]) {
          all[kHasValue] = 1;
          all[kValue] = p[1];
          continue;
        }
        visit_fold(fold_of(op), [&](auto fn) {
          visit_dtype(value_type, [&](auto t) {
            using T = decltype(t);
            all[kValue] = word_of<T>(decltype(fn)::apply(value_of<T>(all[kValue]), value_of<T>(p[1])));
          });
        });
      }
  }

  c.here = root < 0 || rank == root;
  if (!c.here) return c;
  c.kernel_ms = as_double(all[kKernelMs]);
  c.total_ms = as_double(all[kTotalMs]);
  c.magnitude = as_double(all[kMagnitude]);
  c.depth = static_cast<std::uint64_t>(all[kDepth]);
  if (exact) {
    ExactSum::Raw raw;
    raw.flags = static_cast<std::uint32_t>(all[kFlags]);
    for (int i = 0; i < ExactSum::kLimbs; ++i) raw.limb[static_cast<std::size_t>(i)] = all[kLimb0 + i];
    ExactSum sum;
    sum.merge_raw(raw);
    c.value = value_type == DType::F32 ? Scalar::of(sum.to_float()) : Scalar::of(sum.to_double());
    c.exact_state = sum.raw();
    c.depth = 1;
  } else if (all[kHasValue]) {
    c.value = scalar_of_word(value_type, all[kValue]);
    if (op == Op::MinMax) c.maximum = scalar_of_word(value_type, all[kSecond]);
    else if (is_pair(op)) c.index = all[kSecond];
    // Rank order adds one rounding per further rank to the deepest rank's chain.
    if (folded_in_rank_order(op, value_type, false) && c.nonempty > 1) c.depth += static_cast<std::uint64_t>(c.nonempty - 1);
  } else if (c.n > 0) {  // elements, none of them a number: nanmin or nanmax of NaNs alone
    c.value = scalar_of_word(value_type, mine[kValue]);
    c.value.f = std::numeric_limits<double>::quiet_NaN();
  } else {  // no rank held an element: the op's empty value (sum and product only get here)
    c.value = visit_dtype(value_type, [&](auto t) { return Scalar::of(empty_value<decltype(t)>(op)); });
  }
  return c;
}

}  // namespace xr::mpi::detail
