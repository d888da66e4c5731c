// The element-wise all-reduce of host buffers: each rank owns a slice of the elements, receives
// every rank's values of it (one MPI_Alltoallv), reduces them in rank order (or exactly), and
// every rank gathers the slices' results (one MPI_Allgatherv): the traffic of a ring all-reduce,
// and a result that depends on no algorithm or topology of the MPI library.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "errors.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/semantics.hpp"

namespace xr::mpi {
namespace {

using detail::check;

// Elements a round moves: bounds the buffers (ranks x a slice) and keeps MPI's int counts of
// bytes in range.
constexpr std::uint64_t kRoundElements = std::uint64_t{1} << 22;

std::size_t rank_count(MPI_Comm comm) {
  int size = 1;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return static_cast<std::size_t>(size);
}

// What this rank asks for, in two words that every rank must share.
struct Request {
  std::int64_t count;
  std::int64_t what;  // type, op, exact
};

std::string describe(const Request& r) {
  const auto type = static_cast<DType>(r.what & 0xff);
  const auto op = static_cast<Op>((r.what >> 8) & 0xff);
  return std::string(to_string(op)) + " of " + std::to_string(r.count) + " " + std::string(to_string(type)) +
         ((r.what >> 16) & 1 ? ", exact" : "");
}

// Every rank's request the same, or InvalidArgument on every rank naming two that differ.
void agree_on(MPI_Comm comm, const Request& mine) {
  const std::int64_t words[4] = {mine.count, mine.what, -mine.count, -mine.what};
  std::int64_t lowest[4];
  check(MPI_Allreduce(words, lowest, 4, MPI_INT64_T, MPI_MIN, comm), "MPI_Allreduce");
  if (lowest[0] == -lowest[2] && lowest[1] == -lowest[3]) return;
  int size = 1;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<Request> all(static_cast<std::size_t>(size));
  check(MPI_Allgather(&mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm), "MPI_Allgather");
  std::size_t other = 1;
  while (other + 1 < all.size() && all[other].count == all[0].count && all[other].what == all[0].what) ++other;
  throw InvalidArgument("mpi: allreduce: the ranks disagree: rank 0 asks for " + describe(all[0]) + ", rank " +
                        std::to_string(other) + " for " + describe(all[other]));
}

// The ranks' values of one element, `stride` apart, reduced: folds in rank order in the compute
// type (f16 and bf16 in f32), rounded once to T.
template <class T, class Fn> T fold_in_rank_order(const T* v, std::size_t ranks, std::size_t stride) {
  using C = compute_t<T>;
  C acc = static_cast<C>(v[0]);
  for (std::size_t r = 1; r < ranks; ++r) acc = Fn::apply(acc, static_cast<C>(v[r * stride]));
  return static_cast<T>(acc);
}

// A mapped op of the ranks' values of one element, in rank order: each value mapped into the
// result's compute type, folded, then the op's last step over the rank count. nanmin and nanmax
// of values that are all NaN give NaN, as one process does.
template <Op O, class T> allreduce_t<O, T> mapped_in_rank_order(const T* v, std::size_t ranks, std::size_t stride) {
  using R = allreduce_t<O, T>;
  using A = compute_t<R>;
  constexpr Op F = fold_of(O);
  A acc = OpFn<F>::template identity<A>();
  bool number = false;
  for (std::size_t r = 0; r < ranks; ++r) {
    const T x = v[r * stride];
    acc = OpFn<F>::apply(acc, map_element<kernel_mapped_op<O, T>, A>(x));
    number = number || !(static_cast<compute_t<T>>(x) != static_cast<compute_t<T>>(x));
  }
  if constexpr (map_of(O) == ElementMap::SkipNaN && F != Op::Sum && is_float_v<T>)
    if (!number) return static_cast<R>(std::numeric_limits<compute_t<T>>::quiet_NaN());
  return static_cast<R>(finalize_folded<finalize_of(O)>(acc, ranks));
}

// The exact sum of the ranks' f32 values in a double, where it is exact: the nonzero values'
// binary32 exponents span d binades, each is a multiple of the ulp of the lowest, and ranks of
// them need d + 24 + ceil(log2 ranks) bits, so the double sum is exact when that is at most 53.
// With inf or NaN the double sum is the exact sum's inf or NaN (no finite partial sum of floats
// overflows a double), and zeros keep their sign as the exact sum's (-0 only when every term is
// -0). False where the sum may not be exact.
bool exact_in_double(const float* v, std::size_t ranks, std::size_t stride, double& s) {
  s = v[0];
  std::uint32_t lowest = 255, highest = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    const float x = v[r * stride];
    if (r > 0) s += x;
    const std::uint32_t e = (std::bit_cast<std::uint32_t>(x) >> 23) & 0xffu;
    if (std::bit_cast<std::uint32_t>(x) << 1 != 0) {
      lowest = std::min(lowest, std::max(e, 1u));
      highest = std::max(highest, e);
    }
  }
  const int width = static_cast<int>(std::bit_width(ranks - 1));  // ceil(log2 ranks)
  return highest == 255 || highest < lowest || static_cast<int>(highest - lowest) + 24 + width <= 53;
}

// s / n rounded once to float, for an exact double s: the double quotient q is within half an ulp
// (of double) of s / n, so rounding q to float is right unless q is a midpoint between two
// floats; there the sign of m n - s (its one rounding by fma keeps the sign) says which side of
// the midpoint s / n lies, and an exact tie goes to the even float.
float rounded_quotient(double s, std::uint64_t n) {
  const double q = s / static_cast<double>(n);
  const float f = static_cast<float>(q);
  if (!std::isfinite(q) || static_cast<double>(f) == q) return f;
  const float below = q < static_cast<double>(f) ? std::nextafter(f, -INFINITY) : f;
  const float above = q < static_cast<double>(f) ? f : std::nextafter(f, INFINITY);
  const double mid = (static_cast<double>(below) + static_cast<double>(above)) / 2;  // exact
  if (q != mid) return f;
  const double side = std::fma(mid, static_cast<double>(n), -s);
  if (side > 0) return below;
  if (side < 0) return above;
  return (std::bit_cast<std::uint32_t>(below) & 1u) ? above : below;
}

// The correctly rounded sum (divide = false) or mean of the ranks' f32 or f64 values.
template <class T> T exact_of(const T* v, std::size_t ranks, std::size_t stride, bool divide, ExactSum& sum) {
  if constexpr (std::is_same_v<T, float>) {
    double s = 0;
    if (exact_in_double(v, ranks, stride, s))
      return divide ? rounded_quotient(s, ranks) : static_cast<float>(s);
  }
  sum.clear();
  for (std::size_t r = 0; r < ranks; ++r) sum.add(v[r * stride]);
  if constexpr (std::is_same_v<T, float>) return divide ? sum.quotient_to_float(ranks) : sum.to_float();
  else return divide ? sum.quotient_to_double(ranks) : sum.to_double();
}

template <class T>
void reduce_slice(const T* gathered, void* out, std::size_t length, std::size_t ranks, Op op, bool exact) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (exact) {
      ExactSum sum;
      const bool divide = finalize_of(op) == Finalize::DivideByCount;
      for (std::size_t i = 0; i < length; ++i) static_cast<T*>(out)[i] = exact_of(gathered + i, ranks, length, divide, sum);
      return;
    }
  }
  if (is_mapped(op)) {
    visit_mapped(op, [&](auto fn) {
      constexpr Op O = decltype(fn)::op;
      auto* values = static_cast<allreduce_t<O, T>*>(out);
      for (std::size_t i = 0; i < length; ++i) values[i] = mapped_in_rank_order<O>(gathered + i, ranks, length);
    });
    return;
  }
  visit_fold(op, [&](auto fn) {
    for (std::size_t i = 0; i < length; ++i)
      static_cast<T*>(out)[i] = fold_in_rank_order<T, decltype(fn)>(gathered + i, ranks, length);
  });
}

// An element-wise pair op of the ranks' values: argmin and argmax give the extreme value and the
// lowest rank holding it (NaN first, as one process), minmax the min and the max.
template <class T>
void reduce_pair_slice(const T* gathered, void* values, void* second, std::size_t length, std::size_t ranks, Op op) {
  visit_pair(op, [&](auto fn) {
    using Fn = decltype(fn);
    using Record = pair_record_t<Fn::op, T>;
    for (std::size_t i = 0; i < length; ++i) {
      Record acc = Fn::template identity<T>();
      for (std::size_t r = 0; r < ranks; ++r) {
        const T x = gathered[r * length + i];
        if constexpr (is_indexed(Fn::op)) acc = Fn::apply(acc, Record{x, static_cast<std::int64_t>(r)});
        else acc = Fn::apply(acc, Record{x, x});
      }
      if constexpr (is_indexed(Fn::op)) {
        static_cast<T*>(values)[i] = acc.value;
        static_cast<std::int64_t*>(second)[i] = acc.index;
      } else {
        static_cast<T*>(values)[i] = acc.min;
        static_cast<T*>(second)[i] = acc.max;
      }
    }
  });
}

// An array the exchange writes: its element size, and where the results go.
struct Output {
  std::size_t size;
  unsigned char* data;
};

// The exchange of every element-wise reduction: in rounds of kRoundElements, each rank gets every
// rank's values of its slice (MPI_Alltoallv), reduce(gathered, own, slices) writes its results
// into one slice a output, and every rank gathers every slice of each (MPI_Allgatherv).
template <class Reduce>
void exchange(MPI_Comm comm, const void* send, std::uint64_t count, std::size_t elem, std::span<const Output> outputs,
              Reduce reduce) {
  int rank = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  const std::size_t ranks = rank_count(comm);
  const auto* in = static_cast<const unsigned char*>(send);
  std::vector<unsigned char> gathered;
  std::vector<std::vector<unsigned char>> mine(outputs.size());
  std::vector<void*> slices(outputs.size());
  std::vector<int> send_counts(ranks), send_displs(ranks), recv_counts(ranks), recv_displs(ranks);
  std::vector<int> result_counts(ranks), result_displs(ranks);
  // The rounds go from the last to the first: a result is never narrower than its element (i64
  // counts and indices, f64 means of integers), so in place, a round's results cover only its own
  // elements and later ones, never the elements of a round still to come.
  for (std::uint64_t rounds = (count + kRoundElements - 1) / kRoundElements; rounds-- > 0;) {
    const std::uint64_t first = rounds * kRoundElements;
    const std::uint64_t round = std::min(kRoundElements, count - first);
    // Rank r owns elements [lo(r), lo(r + 1)) of the round.
    const auto lo = [&](std::size_t r) { return static_cast<std::size_t>(round * r / ranks); };
    const std::size_t own = lo(static_cast<std::size_t>(rank) + 1) - lo(static_cast<std::size_t>(rank));
    for (std::size_t r = 0; r < ranks; ++r) {
      send_counts[r] = static_cast<int>((lo(r + 1) - lo(r)) * elem);
      send_displs[r] = static_cast<int>(lo(r) * elem);
      recv_counts[r] = static_cast<int>(own * elem);
      recv_displs[r] = static_cast<int>(r * own * elem);
    }
    gathered.resize(ranks * own * elem);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      mine[k].resize(own * outputs[k].size);
      slices[k] = mine[k].data();
    }
    // Every rank's values of this rank's slice, rank by rank; read before any result is written,
    // so an output may be send.
    check(MPI_Alltoallv(in + first * elem, send_counts.data(), send_displs.data(), MPI_BYTE, gathered.data(),
                        recv_counts.data(), recv_displs.data(), MPI_BYTE, comm),
          "MPI_Alltoallv");
    reduce(gathered.data(), own, slices.data());
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const std::size_t bytes = outputs[k].size;
      for (std::size_t r = 0; r < ranks; ++r) {
        result_counts[r] = static_cast<int>((lo(r + 1) - lo(r)) * bytes);
        result_displs[r] = static_cast<int>(lo(r) * bytes);
      }
      check(MPI_Allgatherv(mine[k].data(), static_cast<int>(own * bytes), MPI_BYTE, outputs[k].data + first * bytes,
                           result_counts.data(), result_displs.data(), MPI_BYTE, comm),
            "MPI_Allgatherv");
    }
  }
}

// This rank's argument error, then every rank's: InvalidArgument on every rank where any rank has
// one (`what` names the call), then the ranks' requests compared.
template <class Check> void agree_to_run(MPI_Comm comm, const char* what, Check check_arguments, const Request& request) {
  std::exception_ptr bad;
  try {
    try {
      check_arguments();
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("mpi: " + std::string(what) + ": " + e.what());
    }
  } catch (...) {
    bad = std::current_exception();
  }
  detail::raise_if_any(comm, bad);
  agree_on(comm, request);
}

std::int64_t request_word(DType type, Op op, bool exact) {
  return static_cast<std::int64_t>(type) | static_cast<std::int64_t>(op) << 8 | static_cast<std::int64_t>(exact) << 16;
}

}  // namespace

void allreduce(MPI_Comm comm, const void* send, void* recv, std::uint64_t count, DType type, Op op,
               const RunOptions& options) {
  const bool exact = options.exact && exact_applies(op, type);
  agree_to_run(
      comm, "allreduce",
      [&] {
        if (is_pair(op))
          throw InvalidArgument(std::string(to_string(op)) +
                                " gives two values an element: allreduce_pair takes it; allreduce takes the folds and "
                                "the mapped ops");
        if (count > 0 && (send == nullptr || recv == nullptr))
          throw InvalidArgument("a null buffer for " + std::to_string(count) + " elements");
        if (options.exact) check_exact_request(op, type);
        if (exact && type != DType::F32 && type != DType::F64)
          throw InvalidArgument("exact sums and means take f32 and f64, not " + std::string(to_string(type)));
      },
      {static_cast<std::int64_t>(count), request_word(type, op, exact)});
  const Output out[] = {{size_of(allreduce_dtype(op, type)), static_cast<unsigned char*>(recv)}};
  const std::size_t ranks = rank_count(comm);
  exchange(comm, send, count, size_of(type), out, [&](const unsigned char* gathered, std::size_t own, void** slices) {
    visit_dtype(type, [&](auto t) {
      using T = decltype(t);
      reduce_slice(reinterpret_cast<const T*>(gathered), slices[0], own, ranks, op, exact);
    });
  });
}

void allreduce_pair(MPI_Comm comm, const void* send, void* values, void* second, std::uint64_t count, DType type, Op op,
                    const RunOptions& options) {
  agree_to_run(
      comm, "allreduce_pair",
      [&] {
        if (!is_pair(op))
          throw InvalidArgument(std::string(to_string(op)) +
                                " gives one value an element: allreduce takes it; allreduce_pair takes argmin, argmax "
                                "and minmax");
        if (count > 0 && (send == nullptr || values == nullptr || second == nullptr))
          throw InvalidArgument("a null buffer for " + std::to_string(count) + " elements");
        if (values != nullptr && values == second) throw InvalidArgument("values and second are one buffer");
        if (options.exact) check_exact_request(op, type);
      },
      {static_cast<std::int64_t>(count), request_word(type, op, false)});
  const std::size_t elem = size_of(type);
  const Output out[] = {{elem, static_cast<unsigned char*>(values)},
                        {is_indexed(op) ? sizeof(std::int64_t) : elem, static_cast<unsigned char*>(second)}};
  const std::size_t ranks = rank_count(comm);
  exchange(comm, send, count, elem, out, [&](const unsigned char* gathered, std::size_t own, void** slices) {
    visit_dtype(type, [&](auto t) {
      using T = decltype(t);
      reduce_pair_slice(reinterpret_cast<const T*>(gathered), slices[0], slices[1], own, ranks, op);
    });
  });
}

}  // namespace xr::mpi
