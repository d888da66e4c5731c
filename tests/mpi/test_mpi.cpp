// xr::mpi on 1, 2, 3 and 4 ranks (ctest starts this suite once per rank count): every rank runs
// every test case, collectively. Each case checks against one process's answer computed on every
// rank from the whole input, so the bits are the same for every rank count.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "xreduce/mpi.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"
#ifdef XR_TEST_OPENCL
#include "xreduce/opencl.hpp"
#endif

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

bool opencl_usable() { return xr::backend_status("opencl").usable; }

// OpenMP on even ranks, OpenCL (PoCL here) on odd ones where OpenCL has a device.
xr::mpi::Options mixed() {
  xr::mpi::Options o;
  o.backend = world_rank() % 2 == 1 && opencl_usable() ? "opencl" : "omp";
  return o;
}

// The weights of the partitions the cases run: even; rank 0 empty and the rest rising; all on
// the last rank.
std::vector<double> weight_sets(int rank, int size) {
  return {1.0, static_cast<double>(rank), rank == size - 1 ? 1.0 : 0.0};
}

// This rank's part of `whole` under `weight`.
template <class T> std::vector<T> my_part(const std::vector<T>& whole, double weight) {
  const xr::mpi::Part p = xr::mpi::partition(MPI_COMM_WORLD, whole.size(), weight);
  return std::vector<T>(whole.begin() + static_cast<std::ptrdiff_t>(p.first),
                        whole.begin() + static_cast<std::ptrdiff_t>(p.first + p.count));
}

template <class T> std::vector<T> generated(std::uint64_t n, xr::Dist dist, std::uint64_t seed) {
  const xr::HostBuffer b = xr::generate(xr::dtype_of<T>, n, dist, seed);
  return std::vector<T>(b.as<T>(), b.as<T>() + n);
}

template <class T> xr::Scalar exact_of(const std::vector<T>& whole) {
  xr::ExactSum s;
  s.add(whole.data(), whole.size());
  return std::is_same_v<T, float> ? xr::Scalar::of(s.to_float()) : xr::Scalar::of(s.to_double());
}

xr::RunOptions exact_options() {
  xr::RunOptions o;
  o.exact = true;
  return o;
}

}  // namespace

TEST_CASE("partition: every element in exactly one part, in rank order, for every weighting") {
  const int rank = world_rank(), size = world_size();
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1000003},
                          std::uint64_t{1} << 40})
    for (double w : weight_sets(rank, size)) {
      const xr::mpi::Part p = xr::mpi::partition(MPI_COMM_WORLD, n, w);
      std::uint64_t ends[2] = {p.first, p.first + p.count};
      std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
      MPI_Allgather(ends, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
      CHECK(all.front() == 0);
      CHECK(all.back() == n);
      for (int r = 1; r < size; ++r) CHECK(all[2 * static_cast<std::size_t>(r)] == all[2 * static_cast<std::size_t>(r) - 1]);
    }
  CHECK_THROWS_AS(xr::mpi::partition(MPI_COMM_WORLD, 10, rank == size - 1 ? -1.0 : 1.0), xr::InvalidArgument);
}

TEST_CASE("exact sums: the bits of one process, for every partition and mix of OpenMP and OpenCL ranks") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  for (xr::Dist dist : {xr::Dist::Uniform, xr::Dist::Cancel, xr::Dist::Normal}) {
    const auto f32 = generated<float>(100003, dist, 11);
    const auto f64 = generated<double>(100003, dist, 12);
    for (double w : weight_sets(world_rank(), world_size())) {
      const auto a = my_part(f32, w);
      const auto b = my_part(f64, w);
      const xr::mpi::GlobalResult ga = reducer.reduce(std::span<const float>(a), xr::Op::Sum, exact_options());
      const xr::mpi::GlobalResult gb = reducer.reduce(std::span<const double>(b), xr::Op::Sum, exact_options());
      CHECK(ga.result.value.same_bits(exact_of(f32)));
      CHECK(gb.result.value.same_bits(exact_of(f64)));
      CHECK(ga.result.n == f32.size());
      CHECK(ga.result.rounding_depth == 1);
      REQUIRE(ga.result.exact_state.has_value());
      REQUIRE(ga.rows.size() == static_cast<std::size_t>(world_size()));
      for (const xr::mpi::RankRow& row : ga.rows) CHECK(row.backend == (row.rank % 2 && opencl_usable() ? "opencl" : "omp"));
      CHECK(ga.ranks == world_size());
    }
  }
}

TEST_CASE("special values cross ranks: NaN, +-inf, -0") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const auto reduce = [&](const std::vector<double>& mine, xr::Op op, bool exact) {
    xr::RunOptions o;
    o.exact = exact;
    return reducer.reduce(std::span<const double>(mine), op, o).result.value;
  };
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // Every term -0 on every rank (some ranks empty): the sum is -0, plain and exact.
  const std::vector<double> zeros(rank % 2 ? 0 : 5, -0.0);
  for (bool exact : {false, true}) {
    const xr::Scalar z = reduce(zeros, xr::Op::Sum, exact);
    CHECK(z.f == 0.0);
    CHECK(std::signbit(z.f));
  }
  // One NaN on the last rank: min and max are NaN.
  std::vector<double> mine = {1.0, -2.0, 3.0};
  if (rank == size - 1) mine.push_back(nan);
  CHECK(std::isnan(reduce(mine, xr::Op::Min, false).f));
  CHECK(std::isnan(reduce(mine, xr::Op::Max, false).f));
  CHECK(std::isnan(reduce(mine, xr::Op::Sum, true).f));
  // +inf on rank 0, -inf on the last: NaN in exact mode where they meet, inf where only one does.
  std::vector<double> infs = {1.0};
  if (rank == 0) infs.push_back(inf);
  if (rank == size - 1) infs.push_back(-inf);
  CHECK(std::isnan(reduce(infs, xr::Op::Sum, true).f));
  const xr::Scalar mx = reduce(infs, xr::Op::Max, false);
  CHECK(mx.f == inf);
  // +-0 within and across ranks: the exact sum of {+0 on rank 0, -0 elsewhere} is +0.
  const std::vector<double> pz(1, rank == 0 ? 0.0 : -0.0);
  const xr::Scalar p = reduce(pz, xr::Op::Sum, true);
  CHECK(p.f == 0.0);
  CHECK(!std::signbit(p.f));
}

TEST_CASE("mapped ops across ranks: one process's value, ranks of NaNs alone left out") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> whole = generated<double>(5000, xr::Dist::Special, 3);
  for (std::size_t i = 0; i < whole.size(); i += 7) whole[i] = nan;
  auto one = xr::make_reducer("omp");
  for (xr::Op op : xr::mapped_ops) {
    CAPTURE(xr::to_string(op));
    const xr::Result want = one->reduce(whole, op);
    for (double weight : weight_sets(rank, size)) {
      const std::vector<double> mine = my_part(whole, weight);
      const xr::Result got = reducer.reduce(std::span<const double>(mine), op).result;
      const xr::Agreement a = xr::check_result(got, xr::reference_reduce(xr::HostArray::of(std::span<const double>(whole)), op));
      CHECK_MESSAGE(a.ok, a.detail);
      if (xr::fold_of(op) != xr::Op::Sum) CHECK(got.value.same_bits(want.value));
    }
  }
  // NaNs alone on every rank but the last, which holds -inf beside its NaN: -inf (a number);
  // NaNs alone on every rank: NaN.
  std::vector<double> mine = {nan, nan};
  if (rank == size - 1) mine.push_back(-inf);
  CHECK(reducer.reduce(std::span<const double>(mine), xr::Op::NanMax).result.value.f == -inf);
  CHECK(reducer.reduce(std::span<const double>(mine), xr::Op::NanMin).result.value.f == -inf);
  const std::vector<double> nans(rank == 0 ? 0 : 3, nan);
  if (size > 1) CHECK(std::isnan(reducer.reduce(std::span<const double>(nans), xr::Op::NanMin).result.value.f));
  CHECK(reducer.reduce(std::span<const double>(nans), xr::Op::NanSum).result.value.f == 0.0);
  CHECK(reducer.reduce(std::span<const double>(nans), xr::Op::CountNonzero).result.value.i == 3 * (size - 1));
  // any and all: the ranks' counts, tested against the total count (NaN is nonzero; rank 0 holds
  // nothing above, which changes neither); the distributed reference agrees.
  CHECK(reducer.reduce(std::span<const double>(nans), xr::Op::All).result.value.i == 1);
  std::vector<double> ones(3, 1.0);
  if (rank == size - 1) ones[1] = -0.0;
  const auto truth = [&](const std::vector<double>& v, xr::Op op) {
    const std::int64_t got = reducer.reduce(std::span<const double>(v), op).result.value.i;
    CHECK(xr::mpi::reference_reduce(MPI_COMM_WORLD, xr::HostArray::of(std::span<const double>(v)), op).value.i == got);
    return got;
  };
  CHECK(truth(ones, xr::Op::All) == 0);
  CHECK(truth(ones, xr::Op::Any) == 1);
  const std::vector<double> zeros(rank == 0 ? 0 : 2, 0.0);
  CHECK(truth(zeros, xr::Op::Any) == 0);
  CHECK(truth(zeros, xr::Op::All) == (size == 1 ? 1 : 0));
}

TEST_CASE("mean across ranks: the ranks' sums over the total count; exact: one process's bits") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const auto one = xr::make_reducer("omp");
  const auto f32 = generated<float>(100003, xr::Dist::Cancel, 21);
  const auto f64 = generated<double>(30011, xr::Dist::Wide, 22);
  const auto i64 = generated<std::int64_t>(10007, xr::Dist::Uniform, 23);
  for (double w : weight_sets(world_rank(), world_size())) {
    const auto a = my_part(f32, w);
    const auto b = my_part(f64, w);
    const xr::Result ga = reducer.reduce(std::span<const float>(a), xr::Op::Mean, exact_options()).result;
    const xr::Result gb = reducer.reduce(std::span<const double>(b), xr::Op::Mean, exact_options()).result;
    CHECK(ga.value.same_bits(one->reduce(f32, xr::Op::Mean, exact_options()).value));
    CHECK(gb.value.same_bits(one->reduce(f64, xr::Op::Mean, exact_options()).value));
    CHECK(ga.n == f32.size());
    CHECK(ga.op == xr::Op::Mean);
    const auto c = my_part(i64, w);
    const xr::Result gc = reducer.reduce(std::span<const std::int64_t>(c), xr::Op::Mean).result;
    CHECK(gc.value.type == xr::DType::F64);
    const xr::Agreement agree = xr::check_result(gc, xr::reference_reduce(xr::HostArray::of(std::span<const std::int64_t>(i64)), xr::Op::Mean));
    CHECK_MESSAGE(agree.ok, agree.detail);
  }
  // Nothing on any rank: NaN, as one process's mean of nothing.
  const std::vector<float> none;
  CHECK(std::isnan(reducer.reduce(std::span<const float>(none), xr::Op::Mean).result.value.f));
}

TEST_CASE("integer sums and products wrap as in one process") {
  const int rank = world_rank();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() - 5;
  std::vector<std::int64_t> whole;
  for (int r = 0; r < world_size(); ++r)
    for (int i = 0; i < 3; ++i) whole.push_back(r % 2 ? big : -big / 3 + i);
  const std::vector<std::int64_t> mine(whole.begin() + 3 * rank, whole.begin() + 3 * rank + 3);
  for (xr::Op op : {xr::Op::Sum, xr::Op::Prod, xr::Op::Min, xr::Op::Max}) {
    const xr::Reference ref = xr::reference_reduce(xr::HostArray::of(std::span<const std::int64_t>(whole)), op);
    const xr::mpi::GlobalResult g = reducer.reduce(std::span<const std::int64_t>(mine), op);
    CHECK_MESSAGE(g.result.value.same_bits(ref.value), to_string(op));
  }
  // i32 sums accumulate in 64 bits across ranks as within one.
  const std::vector<std::int32_t> i32(1000, std::numeric_limits<std::int32_t>::max());
  const xr::mpi::GlobalResult g = reducer.reduce(std::span<const std::int32_t>(i32), xr::Op::Sum);
  CHECK(g.result.value.type == xr::DType::I64);
  CHECK(g.result.value.i == std::int64_t{std::numeric_limits<std::int32_t>::max()} * 1000 * world_size());
}

TEST_CASE("plain float sums: ranks combined in rank order, within the stated bound of the exact sum") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const auto whole = generated<float>(200001, xr::Dist::Uniform, 5);
  const xr::Reference ref = xr::reference_reduce(xr::HostArray::of(std::span<const float>(whole)), xr::Op::Sum);
  for (double w : weight_sets(world_rank(), world_size())) {
    const auto mine = my_part(whole, w);
    const xr::mpi::GlobalResult g = reducer.reduce(std::span<const float>(mine), xr::Op::Sum);
    const xr::Agreement a = xr::check_result(g.result, ref);
    CHECK_MESSAGE(a.ok, a.detail);
    CHECK(!g.result.exact_state);
  }
}

TEST_CASE("the distributed reference equals one process's reference") {
  const auto whole = generated<double>(50001, xr::Dist::Cancel, 9);
  for (xr::Op op : {xr::Op::Sum, xr::Op::Min, xr::Op::Max, xr::Op::Mean}) {
    const xr::Reference one = xr::reference_reduce(xr::HostArray::of(std::span<const double>(whole)), op);
    const auto mine = my_part(whole, world_rank());  // rank 0 holds nothing
    const xr::Reference dist = xr::mpi::reference_reduce(MPI_COMM_WORLD, xr::HostArray::of(std::span<const double>(mine)), op);
    CHECK(dist.value.same_bits(one.value));
    CHECK(dist.n == one.n);
  }
}

TEST_CASE("the rooted form: the value on root only") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const std::vector<double> mine(10, 0.5);
  const int root = size - 1;
  const auto g = reducer.reduce_root(root, xr::HostArray::of(std::span<const double>(mine)), xr::Op::Sum, exact_options());
  CHECK(g.has_value() == (rank == root));
  if (g) CHECK(g->result.value.f == 5.0 * size);
  CHECK_THROWS_AS(reducer.reduce_root(size, xr::HostArray::of(std::span<const double>(mine)), xr::Op::Sum), xr::InvalidArgument);
}

TEST_CASE("results of the ranks' own reductions combine (data on a device, reduced through a backend header)") {
  const int rank = world_rank();
  auto local = xr::make_reducer("omp");
  const std::vector<float> mine(1000 + rank, 0.25f);
  const xr::Result r = local->reduce(mine, xr::Op::Sum, exact_options());
  const auto g = xr::mpi::combine(MPI_COMM_WORLD, r);
  REQUIRE(g.has_value());
  std::uint64_t n = 0;
  for (int q = 0; q < world_size(); ++q) n += 1000 + q;
  CHECK(g->result.value.f == 0.25 * static_cast<double>(n));
  CHECK(g->result.n == n);
}

#ifdef XR_TEST_OPENCL
TEST_CASE("exact sums of cl_mem buffers reduced through xreduce/opencl.hpp combine to one process's bits") {
  const int rank = world_rank();
  const auto whole = generated<float>(40009, xr::Dist::Cancel, 21);
  const auto mine = my_part(whole, rank + 1.0);
  // Each rank's part lives in an OpenCL buffer of its own context, as an application's data would.
  std::exception_ptr failed;
  xr::Result local;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_mem buffer = nullptr;
  try {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    cl_int rc = clGetPlatformIDs(1, &platform, nullptr);
    if (rc == CL_SUCCESS) rc = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
    if (rc == CL_SUCCESS) context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
    if (rc == CL_SUCCESS) queue = clCreateCommandQueue(context, device, 0, &rc);
    const std::size_t bytes = std::max<std::size_t>(1, mine.size()) * sizeof(float);
    if (rc == CL_SUCCESS) buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &rc);
    if (rc == CL_SUCCESS && !mine.empty())
      rc = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, mine.size() * sizeof(float), mine.data(), 0, nullptr, nullptr);
    if (rc != CL_SUCCESS) throw xr::DeviceError("test: OpenCL setup", rc, xr::opencl::error_name(rc));
    local = xr::opencl::reduce<float>(queue, buffer, 0, mine.size(), xr::Op::Sum, exact_options());
  } catch (...) {
    failed = std::current_exception();
  }
  xr::mpi::agree(MPI_COMM_WORLD, failed);
  const auto g = xr::mpi::combine(MPI_COMM_WORLD, local);
  REQUIRE(g.has_value());
  CHECK(g->result.value.same_bits(exact_of(whole)));
  CHECK(g->result.n == whole.size());
  if (buffer) clReleaseMemObject(buffer);
  if (queue) clReleaseCommandQueue(queue);
  if (context) clReleaseContext(context);
}
#endif

TEST_CASE("a failing rank makes every rank throw its error, naming it; nothing hangs") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const std::vector<float> mine(100, 1.0f);
  xr::RunOptions bad;
  if (rank == size - 1) bad.kernel = "no_such_rung";
  try {
    reducer.reduce(std::span<const float>(mine), xr::Op::Sum, bad);
    FAIL("no exception");
  } catch (const xr::InvalidArgument& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find("rank " + std::to_string(size - 1) + " of " + std::to_string(size)) == 0, what);
    CHECK_MESSAGE(what.find("no_such_rung") != std::string::npos, what);
  }
  // A rank whose backend is unavailable: BackendUnavailable everywhere.
  xr::mpi::Options gone;
  gone.backend = rank == size - 1 ? "no_such_backend" : "omp";
  CHECK_THROWS_AS(xr::mpi::Reducer(MPI_COMM_WORLD, gone), xr::InvalidArgument);
  // The same reducer goes on working after a failure.
  const xr::mpi::GlobalResult ok = reducer.reduce(std::span<const float>(mine), xr::Op::Sum, exact_options());
  CHECK(ok.result.value.f == 100.0 * size);
}

TEST_CASE("ranks that disagree on what they reduce, and min of nothing, throw on every rank") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const std::vector<float> f(4, 1.0f);
  const std::vector<double> d(4, 1.0);
  if (size > 1) {
    if (rank == size - 1) CHECK_THROWS_AS(reducer.reduce(std::span<const double>(d), xr::Op::Sum), xr::InvalidArgument);
    else CHECK_THROWS_AS(reducer.reduce(std::span<const float>(f), xr::Op::Sum), xr::InvalidArgument);
  }
  const std::vector<float> none;
  CHECK_THROWS_AS(reducer.reduce(std::span<const float>(none), xr::Op::Min), xr::EmptyInput);
  // Empty parts give the op's empty value.
  const xr::mpi::GlobalResult s = reducer.reduce(std::span<const float>(none), xr::Op::Sum);
  CHECK(s.result.value.f == 0.0);
  CHECK(!std::signbit(s.result.value.f));
  const xr::mpi::GlobalResult p = reducer.reduce(std::span<const float>(none), xr::Op::Prod);
  CHECK(p.result.value.f == 1.0);
  // The pair ops of nothing: EmptyInput on every rank, as min and max.
  for (xr::Op op : xr::pair_ops)
    CHECK_THROWS_AS(reducer.reduce(std::span<const float>(none), op), xr::EmptyInput);
}

namespace {

// A pair op over the ranks' parts of `whole` against one process's answer on all of it: the
// value's bits, and the global index (argmin, argmax) or the max's bits (minmax).
template <class T> void check_pair_ops(xr::mpi::Reducer& reducer, const std::vector<T>& whole, const char* what) {
  for (double w : weight_sets(world_rank(), world_size())) {
    const auto mine = my_part(whole, w);
    for (xr::Op op : xr::pair_ops) {
      const xr::Reference want = xr::reference_reduce(xr::HostArray::of(std::span<const T>(whole)), op);
      const xr::mpi::GlobalResult got = reducer.reduce(std::span<const T>(mine), op);
      const xr::Reference dist = xr::mpi::reference_reduce(MPI_COMM_WORLD, xr::HostArray::of(std::span<const T>(mine)), op);
      INFO(what << ", " << xr::to_string(op) << " of " << xr::to_string(xr::dtype_of<T>) << ", weight " << w
                << ": got " << got.result.value.to_string() << " at " << got.result.index << ", want "
                << want.value.to_string() << " at " << want.index);
      CHECK(got.result.value.same_bits(want.value));
      CHECK(dist.value.same_bits(want.value));
      CHECK(got.result.n == whole.size());
      if (op == xr::Op::MinMax) {
        CHECK(got.result.maximum.same_bits(want.maximum));
        CHECK(dist.maximum.same_bits(want.maximum));
      } else {
        CHECK(got.result.index == want.index);
        CHECK(dist.index == want.index);
      }
    }
  }
}

}  // namespace

TEST_CASE("argmin, argmax and minmax across ranks: one process's value, global index and bounds") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const std::size_t n = 100003;
  // Ties: the extremes at several places, in different ranks' parts under most partitions; the
  // smallest global index wins.
  auto ties = generated<float>(n, xr::Dist::Uniform, 21);
  for (std::size_t i : {std::size_t{5}, n / 3, n / 2, n - 2}) ties[i] = 7.0f;
  for (std::size_t i : {std::size_t{9}, n / 4, n - 1}) ties[i] = -7.0f;
  check_pair_ops(reducer, ties, "ties across ranks");
  // NaN: the first NaN wins argmin and argmax, and minmax is NaN, wherever the NaNs sit.
  auto nans = generated<double>(n, xr::Dist::Normal, 22);
  for (std::size_t i : {n / 2 + 1, n - 5}) nans[i] = std::numeric_limits<double>::quiet_NaN();
  check_pair_ops(reducer, nans, "NaN after the middle");
  // Signed zeros only: which zero is kept follows the input order.
  std::vector<double> zeros(n);
  for (std::size_t i = 0; i < n; ++i) zeros[i] = i % 3 ? 0.0 : -0.0;
  check_pair_ops(reducer, zeros, "signed zeros");
  // Integers, and 16-bit floats (compared in f32).
  check_pair_ops(reducer, generated<std::int32_t>(n, xr::Dist::Uniform, 23), "int32");
  check_pair_ops(reducer, generated<std::uint8_t>(n, xr::Dist::Uniform, 24), "uint8, many ties");
  check_pair_ops(reducer, generated<xr::f16>(n, xr::Dist::Special, 25), "f16 with specials");
}

namespace {

// Every rank's send buffer, computable on every rank: rank r's values are generated from seed + r.
template <class T> std::vector<T> send_of(int r, std::size_t count, xr::Dist dist, std::uint64_t seed) {
  return generated<T>(count, dist, seed + static_cast<std::uint64_t>(r));
}

// allreduce against what it promises, computed here from every rank's buffer: one process's
// reduction of the columns of the ranks' buffers stacked as rows (OpenMP, the native accumulator:
// the ranks' values folded in rank order in the compute type, results in the element type but
// for counts and means of integers), or, for exact sums and means, ExactSum rounded once.
// `order[r]` is the rank whose buffer rank r sends (exact: any order gives the same bits).
template <class T, xr::Op O = xr::Op::Sum>
void check_allreduce(xr::Op op, bool exact, std::size_t count, xr::Dist dist, const std::vector<int>& order) {
  using R = std::conditional_t<xr::map_of(O) == xr::ElementMap::NonZero, std::int64_t,
                               std::conditional_t<xr::map_of(O) == xr::ElementMap::Convert && !xr::is_float_v<T>, double, T>>;
  REQUIRE(xr::mpi::allreduce_dtype(op, xr::dtype_of<T>) == xr::dtype_of<R>);
  const int rank = world_rank(), size = world_size();
  const std::uint64_t seed = 40 + static_cast<std::uint64_t>(op) * 8;
  std::vector<std::vector<T>> all;
  for (int r = 0; r < size; ++r) all.push_back(send_of<T>(order[static_cast<std::size_t>(r)], count, dist, seed));
  xr::RunOptions o;
  o.exact = exact;
  std::vector<R> got(count);
  xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const T>(all[static_cast<std::size_t>(rank)]), std::span<R>(got), op, o);
  // In place: the buffer holds the sent elements, then the results (of R, never narrower).
  std::vector<R> in_place(count);
  std::memcpy(in_place.data(), all[static_cast<std::size_t>(rank)].data(), count * sizeof(T));
  xr::mpi::allreduce(MPI_COMM_WORLD, in_place.data(), in_place.data(), count, xr::dtype_of<T>, op, o);
  std::vector<T> stacked;
  for (const auto& row : all) stacked.insert(stacked.end(), row.begin(), row.end());
  xr::RunOptions native;
  if (!xr::is_half(xr::dtype_of<T>)) native.accumulator = xr::Accumulator::Native;  // halves: f32 either way
  const xr::SegmentedResult columns =
      count ? xr::make_reducer("omp")->reduce_axis(xr::HostMatrix::of(stacked.data(), static_cast<std::uint64_t>(size), count),
                                                 0, op, native)
            : xr::SegmentedResult{};
  std::size_t wrong = 0, first_wrong = count;
  for (std::size_t i = 0; i < count; ++i) {
    R want = static_cast<R>(columns.value(i).as<xr::compute_t<R>>());
    if constexpr (std::is_floating_point_v<T>) {
      if (exact) {
        xr::ExactSum s;
        for (int r = 0; r < size; ++r) s.add(all[static_cast<std::size_t>(r)][i]);
        const auto n = static_cast<std::uint64_t>(size);
        if constexpr (std::is_same_v<T, float>) want = op == xr::Op::Mean ? s.quotient_to_float(n) : s.to_float();
        else want = op == xr::Op::Mean ? s.quotient_to_double(n) : s.to_double();
      }
    }
    const bool same = xr::Scalar::of(got[i]).same_bits(xr::Scalar::of(want)) &&
                      xr::Scalar::of(in_place[i]).same_bits(xr::Scalar::of(want));
    if (!same && wrong++ == 0) first_wrong = i;
  }
  const std::string what = std::string(xr::to_string(op)) + " of " + std::to_string(count) + " " +
                           std::string(xr::to_string(xr::dtype_of<T>)) + (exact ? ", exact, " : ", ") +
                           std::string(xr::to_string(xr::dtype_of<R>)) + " results, " + std::string(xr::to_string(dist)) +
                           ": first wrong element " + std::to_string(first_wrong);
  INFO(what);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("allreduce: every fold and type, element by element, in place or not") {
  std::vector<int> ranks(static_cast<std::size_t>(world_size()));
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{10007}}) {
    for (xr::Op op : xr::fold_ops) {
      check_allreduce<float>(op, false, count, xr::Dist::Normal, ranks);
      check_allreduce<double>(op, false, count, xr::Dist::Special, ranks);
      check_allreduce<std::int32_t>(op, false, count, op == xr::Op::Prod ? xr::Dist::ExactProduct : xr::Dist::Uniform, ranks);
      check_allreduce<std::uint8_t>(op, false, count, xr::Dist::Uniform, ranks);
      check_allreduce<xr::f16>(op, false, count, xr::Dist::Normal, ranks);
      check_allreduce<xr::bf16>(op, false, count, xr::Dist::Special, ranks);
    }
  }
}

TEST_CASE("allreduce: every mapped op, element by element, in place or not, with the results' own type") {
  std::vector<int> ranks(static_cast<std::size_t>(world_size()));
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int>(r);
  xr::for_each_mapped([&](auto fn) {
    constexpr xr::Op O = decltype(fn)::op;
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{10007}}) {
      check_allreduce<float, O>(O, false, count, xr::Dist::Special, ranks);
      check_allreduce<double, O>(O, false, count, xr::Dist::Normal, ranks);
      check_allreduce<std::int32_t, O>(O, false, count, xr::Dist::Uniform, ranks);
      check_allreduce<std::uint8_t, O>(O, false, count, xr::Dist::Uniform, ranks);
      check_allreduce<xr::f16, O>(O, false, count, xr::Dist::Special, ranks);
    }
  });
  // Results wider than the elements, in place, over more than one round (2^22 elements).
  check_allreduce<std::uint8_t, xr::Op::CountNonzero>(xr::Op::CountNonzero, false, (std::size_t{1} << 22) + 3,
                                                      xr::Dist::Uniform, ranks);
}

// allreduce_pair against one process's pair op over the columns of the ranks' buffers stacked as
// rows: the value and the row (the rank), or the min and the max; in place (values is send) or not.
template <class T> void check_allreduce_pair(xr::Op op, std::size_t count, xr::Dist dist) {
  const int rank = world_rank(), size = world_size();
  std::vector<std::vector<T>> all;
  std::vector<T> stacked;
  for (int r = 0; r < size; ++r) {
    all.push_back(send_of<T>(r, count, dist, 90 + static_cast<std::uint64_t>(op)));
    stacked.insert(stacked.end(), all.back().begin(), all.back().end());
  }
  const xr::SegmentedResult columns =
      count ? xr::make_reducer("omp")->reduce_axis(xr::HostMatrix::of(stacked.data(), static_cast<std::uint64_t>(size), count),
                                                 0, op)
            : xr::SegmentedResult{};
  const bool indexed = xr::is_indexed(op);
  std::vector<T> values(count), in_place = all[static_cast<std::size_t>(rank)], maxima(count), in_place_maxima(count);
  std::vector<std::int64_t> ranks(count), in_place_ranks(count);
  xr::mpi::allreduce_pair(MPI_COMM_WORLD, all[static_cast<std::size_t>(rank)].data(), values.data(),
                          indexed ? static_cast<void*>(ranks.data()) : maxima.data(), count, xr::dtype_of<T>, op);
  xr::mpi::allreduce_pair(MPI_COMM_WORLD, in_place.data(), in_place.data(),
                          indexed ? static_cast<void*>(in_place_ranks.data()) : in_place_maxima.data(), count,
                          xr::dtype_of<T>, op);
  std::size_t wrong = 0, first_wrong = count;
  for (std::size_t i = 0; i < count; ++i) {
    const xr::Scalar want = columns.value(i);
    bool same = xr::Scalar::of(values[i]).same_bits(want) && xr::Scalar::of(in_place[i]).same_bits(want);
    if (indexed) same = same && ranks[i] == columns.index(i) && in_place_ranks[i] == columns.index(i);
    else
      same = same && xr::Scalar::of(maxima[i]).same_bits(columns.maximum(i)) &&
             xr::Scalar::of(in_place_maxima[i]).same_bits(columns.maximum(i));
    if (!same && wrong++ == 0) first_wrong = i;
  }
  const std::string what = std::string(xr::to_string(op)) + " of " + std::to_string(count) + " " +
                           std::string(xr::to_string(xr::dtype_of<T>)) + ", " + std::string(xr::to_string(dist)) +
                           ": first wrong element " + std::to_string(first_wrong);
  INFO(what);
  CHECK(wrong == 0);
}

TEST_CASE("allreduce_pair: argmin, argmax and minmax element by element, the lowest rank on ties and NaN") {
  for (const xr::Op op : xr::pair_ops)
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5003}}) {
      check_allreduce_pair<float>(op, count, xr::Dist::Special);
      check_allreduce_pair<double>(op, count, xr::Dist::Normal);
      check_allreduce_pair<std::int32_t>(op, count, xr::Dist::ExactProduct);  // +-1 mostly: ties
      check_allreduce_pair<std::uint8_t>(op, count, xr::Dist::Uniform);
      check_allreduce_pair<xr::f16>(op, count, xr::Dist::Special);
    }
  std::vector<float> f(8, 1.0f), v(8);
  std::vector<std::int64_t> r(8);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce_pair(MPI_COMM_WORLD, f.data(), v.data(), r.data(), 8, xr::DType::F32,
                                               xr::Op::Sum),
                       doctest::Contains("mpi: allreduce_pair: sum gives one value an element"), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce_pair(MPI_COMM_WORLD, f.data(), v.data(), r.data(), 8, xr::DType::F32,
                                               xr::Op::ArgMax, exact_options()),
                       doctest::Contains("argmax compares values and is exact without it"), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce_pair(MPI_COMM_WORLD, f.data(), v.data(), v.data(), 8, xr::DType::F32,
                                               xr::Op::MinMax),
                       doctest::Contains("values and second are one buffer"), xr::InvalidArgument);
}

TEST_CASE("allreduce, exact: the correctly rounded sum of the ranks' values, for any order of the ranks") {
  const int size = world_size();
  std::vector<int> order(static_cast<std::size_t>(size));
  for (int shift = 0; shift < size; ++shift) {  // every rotation of the ranks' buffers
    for (int r = 0; r < size; ++r) order[static_cast<std::size_t>(r)] = (r + shift) % size;
    for (xr::Dist dist : {xr::Dist::Cancel, xr::Dist::Wide, xr::Dist::Special}) {
      check_allreduce<float>(xr::Op::Sum, true, 20011, dist, order);
      check_allreduce<double>(xr::Op::Sum, true, 20011, dist, order);
      check_allreduce<float, xr::Op::Mean>(xr::Op::Mean, true, 20011, dist, order);
      check_allreduce<double, xr::Op::Mean>(xr::Op::Mean, true, 20011, dist, order);
    }
  }
  // A mean on a float tie (1 + 2^-24, between 1 and 1 + 2^-23: to the even 1), and just beside it:
  // three ranks whose sum is 3 (1 + 2^-24), or that plus or minus 2^-40.
  if (size == 3) {
    for (const float nudge : {0.0f, std::ldexp(1.0f, -40), -std::ldexp(1.0f, -40)}) {
      const float mine[3] = {1.0f + std::ldexp(1.0f, -23), 2.0f, std::ldexp(1.0f, -24) + nudge};
      float got = 0;
      xr::mpi::allreduce(MPI_COMM_WORLD, &mine[world_rank()], &got, 1, xr::DType::F32, xr::Op::Mean, exact_options());
      xr::ExactSum s;
      for (float x : mine) s.add(x);
      CHECK_MESSAGE(got == s.quotient_to_float(3), "nudge " << nudge);
      CHECK(got == (nudge > 0 ? 1.0f + std::ldexp(1.0f, -23) : 1.0f));
    }
  }
  // A double sum that lands on a float tie: 1 + 2^-24 + 2^-34 (1 + 2^-23) - 2^-34 is 1 + 2^-24 +
  // 2^-57, above the tie, but in doubles the 2^-57 is lost before the -2^-34 comes: a double sum
  // rounded to float would give 1. Four ranks, 34 binades apart: more than 53 bits.
  if (size == 4) {
    const float mine[4] = {1.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f + std::ldexp(1.0f, -23), -34),
                           -std::ldexp(1.0f, -34)};
    const float x = mine[world_rank()], neg = -x;
    float got = 0, got_neg = 0;
    xr::mpi::allreduce(MPI_COMM_WORLD, &x, &got, 1, xr::DType::F32, xr::Op::Sum, exact_options());
    xr::mpi::allreduce(MPI_COMM_WORLD, &neg, &got_neg, 1, xr::DType::F32, xr::Op::Sum, exact_options());
    CHECK(got == std::nextafter(1.0f, 2.0f));
    CHECK(got_neg == -std::nextafter(1.0f, 2.0f));
  }
  // More elements than one round moves (2^22), with few ranks' values each.
  std::vector<int> ranks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  check_allreduce<float>(xr::Op::Sum, true, (std::size_t{1} << 22) + 5, xr::Dist::Uniform, ranks);
}

TEST_CASE("allreduce: bad arguments and disagreeing ranks throw on every rank") {
  const int rank = world_rank(), size = world_size();
  std::vector<float> f(8, 1.0f), out(8);
  std::vector<xr::f16> h(8, xr::f16(1.0f)), hout(8);
  xr::RunOptions exact;
  exact.exact = true;
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const float>(f), std::span<float>(out), xr::Op::ArgMax),
                       doctest::Contains("argmax gives two values an element: allreduce_pair takes it"),
                       xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const xr::f16>(h), std::span<xr::f16>(hout),
                                          xr::Op::Sum, exact),
                       doctest::Contains("exact sums and means take f32 and f64"), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const float>(f), std::span<float>(out), xr::Op::SumSq,
                                          exact),
                       doctest::Contains("mpi: allreduce: exact mode covers sum and mean; sumsq has no exact mode"),
                       xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const float>(f), std::span<float>(out),
                                          xr::Op::CountNonzero),
                       doctest::Contains("count_nonzero of f32 gives i64 values, not f32"), xr::InvalidArgument);
  CHECK_THROWS_AS(xr::mpi::allreduce(MPI_COMM_WORLD, nullptr, nullptr, 5, xr::DType::F32, xr::Op::Sum),
                  xr::InvalidArgument);
  if (size > 1) {
    // The last rank asks for fewer elements, then for another op: every rank throws.
    const std::size_t count = rank == size - 1 ? 7 : 8;
    CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, f.data(), out.data(), count, xr::DType::F32, xr::Op::Sum),
                         doctest::Contains("the ranks disagree"), xr::InvalidArgument);
    const xr::Op op = rank == size - 1 ? xr::Op::Max : xr::Op::Sum;
    CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, f.data(), out.data(), 8, xr::DType::F32, op),
                         doctest::Contains("the ranks disagree"), xr::InvalidArgument);
    // One rank's spans of different sizes: its error on every rank.
    std::vector<float> short_out(rank == 0 ? 7 : 8);
    CHECK_THROWS_WITH_AS(xr::mpi::allreduce(MPI_COMM_WORLD, std::span<const float>(f), std::span<float>(short_out),
                                            xr::Op::Sum),
                         doctest::Contains("rank 0 of"), xr::InvalidArgument);
  }
}

// Small integers (exact in every float type, so sums in any order agree), with many ties.
template <class T> std::vector<T> small_ints(std::uint64_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t h = ((i + seed) * 0x9e3779b97f4a7c15ull) >> 59;  // 0..31
    if constexpr (xr::is_float_v<T>) v[i] = T(static_cast<float>(static_cast<int>(h % 9) - 4));
    else if constexpr (std::is_signed_v<T>) v[i] = static_cast<T>(static_cast<int>(h % 9) - 4);
    else v[i] = static_cast<T>(h % 9);
  }
  return v;
}

// CSR offsets over n elements: elements before the first segment and after the last, empty
// segments (one at the very end), short ones, and long ones that cross several ranks' parts.
std::vector<std::int64_t> offsets_over(std::uint64_t n) {
  if (n < 8) return {0, static_cast<std::int64_t>(n), static_cast<std::int64_t>(n)};
  const std::uint64_t lengths[] = {0, 7, 1, 0, 13, n / 3, 2, 5, n / 5, 1};
  std::vector<std::int64_t> o{3};
  for (std::size_t k = 0; static_cast<std::uint64_t>(o.back()) + lengths[k % 10] < n - 1; ++k)
    o.push_back(o.back() + static_cast<std::int64_t>(lengths[k % 10]));
  o.push_back(static_cast<std::int64_t>(n - 1));
  o.push_back(o.back());
  return o;
}

// Values first .. first + got.count() - 1 of `want`, bit for bit, with their indices and maxima.
void check_same_values(const xr::SegmentedResult& got, const xr::SegmentedResult& want, std::uint64_t first) {
  REQUIRE(first + got.count() <= want.count());
  for (std::uint64_t i = 0; i < got.count(); ++i) {
    INFO("value " << first + i << " of " << want.count());
    CHECK(got.value(i).same_bits(want.value(first + i)));
    CHECK(got.index(i) == want.index(first + i));
    CHECK(got.maximum(i).same_bits(want.maximum(first + i)));
  }
}

xr::mpi::Options omp_ranks() {
  xr::mpi::Options o;
  o.backend = "omp";
  return o;
}

template <class T>
void check_segments(xr::mpi::Reducer& reducer, const std::vector<T>& whole, xr::Op op, bool exact) {
  const std::vector<std::int64_t> offsets = offsets_over(whole.size());
  xr::RunOptions options;
  options.exact = exact;
  const auto one = xr::make_reducer("omp")->reduce_segments(xr::HostArray::of(std::span<const T>(whole)), offsets, op, options);
  for (double weight : weight_sets(world_rank(), world_size())) {
    INFO(xr::to_string(op) << " of " << whole.size() << " " << xr::to_string(xr::dtype_of<T>) << (exact ? " exact" : "")
                           << ", weight " << weight);
    const std::vector<T> mine = my_part(whole, weight);
    const auto local = xr::HostArray::of(std::span<const T>(mine));
    const xr::mpi::GlobalSegments g = reducer.reduce_segments(local, offsets, op, options);
    CHECK(g.first == 0);
    CHECK(g.total == offsets.size() - 1);
    CHECK(g.result.count() == g.total);
    check_same_values(g.result, one, 0);
    const xr::mpi::GlobalSegments at_root = reducer.reduce_segments(local, offsets, op, options, world_size() - 1);
    CHECK(at_root.result.count() == (world_rank() == world_size() - 1 ? g.total : 0));
    check_same_values(at_root.result, one, 0);
  }
}

TEST_CASE("segments over ranks: CSR segments across rank boundaries give one process's values") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, omp_ranks());
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{1000}, std::uint64_t{200003}}) {
    auto f = small_ints<float>(n, 1);
    if (n > 600) f[n / 2] = std::numeric_limits<float>::quiet_NaN();  // inside a long segment
    for (xr::Op op : {xr::Op::Sum, xr::Op::Min, xr::Op::Max, xr::Op::ArgMin, xr::Op::ArgMax, xr::Op::MinMax})
      check_segments(reducer, f, op, false);
    for (xr::Op op : {xr::Op::Sum, xr::Op::Prod, xr::Op::ArgMax}) check_segments(reducer, small_ints<std::int32_t>(n, 2), op, false);
    for (xr::Op op : {xr::Op::Sum, xr::Op::ArgMin}) check_segments(reducer, small_ints<std::uint8_t>(n, 3), op, false);
    check_segments(reducer, small_ints<xr::f16>(n, 4), xr::Op::Max, false);
    // Exact sums: the bits of one process for every partition, segments crossing ranks included.
    check_segments(reducer, generated<float>(n, xr::Dist::Cancel, 5), xr::Op::Sum, true);
    check_segments(reducer, generated<double>(n, xr::Dist::Wide, 6), xr::Op::Sum, true);
    check_segments(reducer, generated<xr::bf16>(n, xr::Dist::Normal, 7), xr::Op::Sum, true);
    // Ops with a last step: a spanning segment's parts combined, then the step over its length;
    // exact means, and means of integers, from the parts' exact states.
    for (xr::Op op : {xr::Op::Mean, xr::Op::Any, xr::Op::All}) check_segments(reducer, f, op, false);
    check_segments(reducer, generated<double>(n, xr::Dist::Wide, 8), xr::Op::Mean, true);
    check_segments(reducer, small_ints<std::int32_t>(n, 9), xr::Op::Mean, false);
    check_segments(reducer, small_ints<std::uint8_t>(n, 10), xr::Op::All, false);
  }
}

template <class T> void check_axes(xr::mpi::Reducer& reducer, std::uint64_t rows, std::uint64_t cols, xr::Op op, bool exact,
                                   const std::vector<T>& whole) {
  xr::RunOptions options;
  options.exact = exact;
  const auto one_reducer = xr::make_reducer("omp");
  const auto matrix = xr::HostMatrix::of(whole.data(), rows, cols);
  for (double weight : weight_sets(world_rank(), world_size())) {
    const xr::mpi::Part p = xr::mpi::partition(MPI_COMM_WORLD, rows, weight);
    // This rank's rows, in C order with a padded stride and in Fortran order.
    std::vector<T> c_rows(p.count * (cols + 2)), f_rows((p.count + 1) * cols);
    for (std::uint64_t r = 0; r < p.count; ++r)
      for (std::uint64_t c = 0; c < cols; ++c) {
        c_rows[r * (cols + 2) + c] = whole[(p.first + r) * cols + c];
        f_rows[c * (p.count + 1) + r] = whole[(p.first + r) * cols + c];
      }
    const xr::HostMatrix locals[] = {xr::HostMatrix::of(c_rows.data(), p.count, cols, cols + 2),
                                     xr::HostMatrix::of(f_rows.data(), p.count, cols, p.count + 1, xr::Order::Fortran)};
    for (int axis : {0, 1}) {
      const auto one = one_reducer->reduce_axis(matrix, axis, op, options);
      for (int k = 0; k < 2; ++k) {
        INFO(xr::to_string(op) << " of " << rows << " x " << cols << " " << xr::to_string(xr::dtype_of<T>)
                               << (exact ? " exact" : "") << ", axis " << axis << (k ? ", Fortran" : ", C")
                               << ", weight " << weight);
        const xr::mpi::GlobalSegments g = reducer.reduce_axis(locals[k], axis, op, options);
        CHECK(g.total == (axis == 0 ? cols : rows));
        CHECK(g.first == (axis == 0 ? 0 : p.first));
        CHECK(g.result.count() == (axis == 0 ? cols : p.count));
        check_same_values(g.result, one, g.first);
        const xr::mpi::GlobalSegments at_root = reducer.reduce_axis(locals[k], axis, op, options, 0);
        CHECK(at_root.result.count() == (world_rank() == 0 ? g.total : 0));
        check_same_values(at_root.result, one, 0);
      }
    }
  }
}

TEST_CASE("segments over ranks: rows split over ranks, reduced per row and per column") {
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, omp_ranks());
  for (const auto& [rows, cols] : {std::pair<std::uint64_t, std::uint64_t>{0, 3}, {1, 5}, {37, 11}, {1003, 3}, {6, 4100}}) {
    auto f = small_ints<float>(rows * cols, 8);
    if (rows * cols > 100) f[rows * cols / 2] = std::numeric_limits<float>::quiet_NaN();
    for (xr::Op op : {xr::Op::Sum, xr::Op::Max, xr::Op::ArgMin, xr::Op::ArgMax, xr::Op::MinMax})
      check_axes(reducer, rows, cols, op, false, f);
    check_axes(reducer, rows, cols, xr::Op::Prod, false, small_ints<std::int32_t>(rows * cols, 9));
    check_axes(reducer, rows, cols, xr::Op::Sum, false, small_ints<std::uint8_t>(rows * cols, 10));
    check_axes(reducer, rows, cols, xr::Op::Sum, true, generated<float>(rows * cols, xr::Dist::Cancel, 11));
    check_axes(reducer, rows, cols, xr::Op::Sum, true, generated<double>(rows * cols, xr::Dist::Wide, 12));
    check_axes(reducer, rows, cols, xr::Op::Sum, true, generated<xr::f16>(rows * cols, xr::Dist::Normal, 13));
    // Ops with a last step: the fold's parts combined, then the step over the total rows; an
    // exact mean rounds each column's exact quotient once, a mean of integers too.
    for (xr::Op op : {xr::Op::Mean, xr::Op::Any, xr::Op::All}) check_axes(reducer, rows, cols, op, false, f);
    check_axes(reducer, rows, cols, xr::Op::Mean, true, generated<float>(rows * cols, xr::Dist::Cancel, 14));
    check_axes(reducer, rows, cols, xr::Op::Mean, false, small_ints<std::int32_t>(rows * cols, 15));
    check_axes(reducer, rows, cols, xr::Op::All, false, small_ints<std::uint8_t>(rows * cols, 16));
  }
}

TEST_CASE("segments over ranks: bad arguments and disagreeing ranks throw on every rank") {
  const int rank = world_rank(), size = world_size();
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, omp_ranks());
  const std::vector<float> mine(10, 1.0f);
  const auto local = xr::HostArray::of(std::span<const float>(mine));
  const std::int64_t total = 10 * size;
  const std::vector<std::int64_t> offsets{0, 4, total};
  CHECK_THROWS_WITH_AS(reducer.reduce_segments(local, offsets, xr::Op::ArgMax, exact_options()),
                       doctest::Contains("exact mode does not apply to argmax"), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(reducer.reduce_segments(local, std::vector<std::int64_t>{0, total + 1}, xr::Op::Sum),
                       doctest::Contains("rank 0 of"), xr::InvalidArgument);
  CHECK_THROWS_AS(reducer.reduce_segments(local, offsets, xr::Op::Sum, {}, size), xr::InvalidArgument);
  CHECK_THROWS_AS(reducer.reduce_axis(xr::HostMatrix::of(mine.data(), 2, 5), 2, xr::Op::Sum), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(reducer.reduce_segments(local, offsets, xr::Op::Any, exact_options()),
                       doctest::Contains("exact mode does not apply to any of f32"), xr::InvalidArgument);
  CHECK_THROWS_WITH_AS(reducer.reduce_axis(xr::HostMatrix::of(mine.data(), 2, 5), 0, xr::Op::All, exact_options()),
                       doctest::Contains("exact mode does not apply to all of f32"), xr::InvalidArgument);
  const xr::mpi::GlobalSegments rows = reducer.reduce_axis(xr::HostMatrix::of(mine.data(), 2, 5), 1, xr::Op::Mean);
  CHECK(rows.result.count() == 2);
  CHECK(rows.result.value(1).f == 1.0);
  if (size > 1) {
    const std::vector<std::int64_t> other{0, rank == size - 1 ? 5 : 4, total};
    CHECK_THROWS_WITH_AS(reducer.reduce_segments(local, other, xr::Op::Sum), doctest::Contains("disagree on the offsets"),
                         xr::InvalidArgument);
    CHECK_THROWS_WITH_AS(reducer.reduce_axis(xr::HostMatrix::of(mine.data(), 2, rank == size - 1 ? 4 : 5), 0, xr::Op::Sum),
                         doctest::Contains("disagree on the column count"), xr::InvalidArgument);
    CHECK_THROWS_WITH_AS(reducer.reduce_segments(local, offsets, rank == 0 ? xr::Op::Sum : xr::Op::Max),
                         doctest::Contains("the ranks disagree"), xr::InvalidArgument);
  }
}

TEST_CASE("a file's slices: each rank streams its own byte range") {
  const int rank = world_rank();
  const auto whole = generated<double>(300007, xr::Dist::Normal, 3);
  const std::string path = std::string(XR_TEST_TMP) + "/slices_" + std::to_string(world_size()) + ".npy";
  if (rank == 0) xr::save_npy(path, xr::HostArray::of(std::span<const double>(whole)));
  MPI_Barrier(MPI_COMM_WORLD);
  xr::FileSource file(path);
  const xr::mpi::Part part = xr::mpi::partition(MPI_COMM_WORLD, file.size(), 1.0 + rank);
  xr::SliceSource mine(file, part.first, part.count);
  xr::mpi::Reducer reducer(MPI_COMM_WORLD, mixed());
  const xr::mpi::GlobalResult g = reducer.reduce(mine, xr::Op::Sum, exact_options());
  CHECK(g.result.value.same_bits(exact_of(whole)));
  const xr::mpi::GlobalResult mx = reducer.reduce(mine, xr::Op::Max);
  CHECK(mx.result.value.f == *std::max_element(whole.begin(), whole.end()));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  doctest::Context context(argc, argv);
  // Every rank runs every case (they are collective); rank 0 reports all, the others failures only.
  if (world_rank() != 0) context.setOption("minimal", true);
  int failed = context.run();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
