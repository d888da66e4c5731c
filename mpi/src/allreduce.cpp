// The element-wise all-reduce of host buffers: each rank owns a slice of the elements, receives
// every rank's values of it (one MPI_Alltoallv), reduces them in rank order (or exactly), and
// every rank gathers the slices' results (one MPI_Allgatherv): the traffic of a ring all-reduce,
// and a result that depends on no algorithm or topology of the MPI library.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "errors.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/semantics.hpp"

namespace xr::mpi {
namespace {

using detail::check;

// Elements a round moves: bounds the buffers (ranks x a slice) and keeps MPI's int counts of
// bytes in range.
constexpr std::uint64_t kRoundElements = std::uint64_t{1} << 22;

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
// type (f16 and bf16 in f32), rounded once to T; exact sums through ExactSum.
template <class T, class Fn> T fold_in_rank_order(const T* v, std::size_t ranks, std::size_t stride) {
  using C = compute_t<T>;
  C acc = static_cast<C>(v[0]);
  for (std::size_t r = 1; r < ranks; ++r) acc = Fn::apply(acc, static_cast<C>(v[r * stride]));
  return static_cast<T>(acc);
}
template <class T> T exact_sum(const T* v, std::size_t ranks, std::size_t stride, ExactSum& sum) {
  if constexpr (std::is_same_v<T, float>) {
    // The double sum of the floats is exact when every partial sum stays within 53 bits: the
    // nonzero values' binary32 exponents span d binades, each is a multiple of the ulp of the
    // lowest, and ranks of them need d + 24 + ceil(log2 ranks) bits. Rounded once to float, it
    // is then the correctly rounded sum; with inf or NaN the double sum gives the exact sum's
    // inf or NaN (no finite partial sum of floats overflows a double), and zeros keep their sign
    // as the exact sum's (-0 only when every term is -0).
    double s = v[0];
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
    if (highest == 255 || highest < lowest || static_cast<int>(highest - lowest) + 24 + width <= 53)
      return static_cast<float>(s);
  }
  sum.clear();
  for (std::size_t r = 0; r < ranks; ++r) sum.add(v[r * stride]);
  if constexpr (std::is_same_v<T, float>) return sum.to_float();
  else return sum.to_double();
}

template <class T>
void reduce_slice(const T* gathered, T* out, std::size_t length, std::size_t ranks, Op op, bool exact) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (exact) {
      ExactSum sum;
      for (std::size_t i = 0; i < length; ++i) out[i] = exact_sum(gathered + i, ranks, length, sum);
      return;
    }
  }
  visit_fold(op, [&](auto fn) {
    for (std::size_t i = 0; i < length; ++i) out[i] = fold_in_rank_order<T, decltype(fn)>(gathered + i, ranks, length);
  });
}

}  // namespace

void allreduce(MPI_Comm comm, const void* send, void* recv, std::uint64_t count, DType type, Op op,
               const RunOptions& options) {
  int rank = 0, size = 1;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const bool exact = options.exact && op == Op::Sum && is_float(type);
  std::exception_ptr bad;
  try {
    if (is_pair(op) || is_mapped(op))
      throw InvalidArgument("mpi: allreduce: " + std::string(to_string(op)) +
                            " is not element-wise; allreduce takes sum, prod, min and max");
    if (count > 0 && (send == nullptr || recv == nullptr))
      throw InvalidArgument("mpi: allreduce: a null buffer for " + std::to_string(count) + " elements");
    if (exact && type != DType::F32 && type != DType::F64)
      throw InvalidArgument("mpi: allreduce: exact sums take f32 and f64, not " + std::string(to_string(type)));
  } catch (...) {
    bad = std::current_exception();
  }
  detail::raise_if_any(comm, bad);
  agree_on(comm, {static_cast<std::int64_t>(count),
                  static_cast<std::int64_t>(type) | static_cast<std::int64_t>(op) << 8 |
                      static_cast<std::int64_t>(exact) << 16});

  const std::size_t elem = size_of(type), ranks = static_cast<std::size_t>(size);
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  std::vector<unsigned char> gathered, mine;
  std::vector<int> send_counts(ranks), send_displs(ranks), recv_counts(ranks), recv_displs(ranks);
  for (std::uint64_t first = 0; first < count; first += kRoundElements) {
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
    mine.resize(own * elem);
    // Every rank's values of this rank's slice, rank by rank; read before any result is written,
    // so recv may be send.
    check(MPI_Alltoallv(in + first * elem, send_counts.data(), send_displs.data(), MPI_BYTE, gathered.data(),
                        recv_counts.data(), recv_displs.data(), MPI_BYTE, comm),
          "MPI_Alltoallv");
    visit_dtype(type, [&](auto t) {
      using T = decltype(t);
      reduce_slice(reinterpret_cast<const T*>(gathered.data()), reinterpret_cast<T*>(mine.data()), own, ranks, op,
                   exact);
    });
    check(MPI_Allgatherv(mine.data(), static_cast<int>(own * elem), MPI_BYTE, out + first * elem, send_counts.data(),
                         send_displs.data(), MPI_BYTE, comm),
          "MPI_Allgatherv");
  }
}

}  // namespace xr::mpi
