// The cross-backend suite: one test body for every backend. Run as
// `xr_test_backends --xr-backend=NAME`; it exits 77 (skipped) with the reason when NAME is not
// compiled in or has no usable device. A new backend joins by registering in core's registry.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"

using namespace xr;

namespace {

std::string g_backend = "omp";
BackendOptions g_options;  // --xr-platform=N, --xr-device=INDEX|NAME

const std::vector<std::uint64_t> kSizes = {0,    1,    2,    3,    31,   32,         33,
                                           1000, 1023, 1024, 1025, (1u << 20) + 7, (1u << 24) + 3};

std::unique_ptr<Reducer> reducer() { return make_reducer(g_backend, g_options); }

// Our rungs and the baseline; probes measure and do not reduce.
std::vector<KernelInfo> reducing_kernels(const Reducer& r) {
  std::vector<KernelInfo> list;
  for (const auto& k : r.kernels())
    if (k.kind != KernelKind::Probe) list.push_back(k);
  return list;
}

Dist dist_for(Op op) { return op == Op::Prod ? Dist::ExactProduct : Dist::Uniform; }

std::string where(const KernelInfo& k, Op op, DType t, std::uint64_t n) {
  return g_backend + "/" + k.name + " " + std::string(to_string(op)) + " " + std::string(to_string(t)) +
         " n=" + std::to_string(n);
}

// Checks every kernel of the backend that supports (op, input type) on `input`.
void check_all_kernels(Reducer& r, const HostBuffer& input, Op op, Accumulator acc = Accumulator::Wide) {
  const Reference ref = reference_reduce(input.view(), op, acc);
  for (const auto& k : reducing_kernels(r)) {
    if (!k.supports(op, input.type())) continue;
    RunOptions o;
    o.kernel = k.name;
    o.accumulator = acc;
    const Result res = r.reduce(input.view(), op, o);
    const Agreement a = check_result(res, ref);
    CHECK_MESSAGE(a.ok, where(k, op, input.type(), input.size()), ": ", a.detail);
    CHECK(res.n == input.size());
    CHECK(res.value.type == result_dtype(op, input.type(), acc));
  }
}

}  // namespace

TEST_CASE("every kernel x op x type x size agrees with the host reference") {
  auto r = reducer();
  for (DType t : all_dtypes) {
    for (std::uint64_t n : kSizes) {
      std::map<Dist, HostBuffer> inputs;
      for (Op op : all_ops) {
        if (n == 0 && (op == Op::Min || op == Op::Max)) continue;
        const Dist d = dist_for(op);
        if (!inputs.count(d)) inputs.emplace(d, generate(t, n, d, n * 31 + static_cast<int>(t)));
        check_all_kernels(*r, inputs.at(d), op);
      }
    }
  }
}

TEST_CASE("min and max of an empty input throw EmptyInput on every kernel") {
  auto r = reducer();
  const HostBuffer empty(DType::F32, 0);
  for (const auto& k : reducing_kernels(*r))
    for (Op op : {Op::Min, Op::Max})
      if (k.supports(op, DType::F32)) {
        RunOptions o;
        o.kernel = k.name;
        CHECK_THROWS_AS(r->reduce(empty.view(), op, o), EmptyInput);
      }
}

TEST_CASE("heavy cancellation stays within the bound of each summation order") {
  auto r = reducer();
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (std::uint64_t n : {std::uint64_t(1001), std::uint64_t(1) << 20})
      check_all_kernels(*r, generate(t, n, Dist::Cancel, 11), Op::Sum);
}

TEST_CASE("i32 sums: the wide accumulator is exact past 2^31, the native one wraps") {
  auto r = reducer();
  for (std::uint64_t n : {std::uint64_t(5), std::uint64_t(4099), std::uint64_t(1) << 20}) {
    HostBuffer x(DType::I32, n);
    for (std::uint64_t i = 0; i < n; ++i) x.as<std::int32_t>()[i] = (1 << 30) + static_cast<std::int32_t>(i % 7);
    check_all_kernels(*r, x, Op::Sum, Accumulator::Wide);
    check_all_kernels(*r, x, Op::Sum, Accumulator::Native);
  }
}

TEST_CASE("integer products wrap the same way on every kernel") {
  auto r = reducer();
  for (DType t : {DType::I32, DType::I64}) {
    HostBuffer x(t, 1000);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      for (std::uint64_t i = 0; i < x.size(); ++i) x.as<T>()[i] = static_cast<T>(i % 5 == 0 ? 3 : (i % 3 ? 1 : -1));
    });
    check_all_kernels(*r, x, Op::Prod);
  }
}

TEST_CASE("any NaN makes min and max NaN; infinities sum like IEEE") {
  auto r = reducer();
  for (DType t : {DType::F32, DType::F64}) {
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(33), std::uint64_t(4097), std::uint64_t(1) << 20}) {
      for (std::uint64_t at : {std::uint64_t(0), n / 2, n - 1}) {
        auto x = generate(t, n, Dist::Uniform, at + 1);
        visit_dtype(t, [&](auto zero) {
          using T = decltype(zero);
          x.as<T>()[at] = std::numeric_limits<T>::quiet_NaN();
        });
        for (Op op : {Op::Min, Op::Max, Op::Sum}) check_all_kernels(*r, x, op);
      }
      auto y = generate(t, n, Dist::Uniform, 5);
      visit_dtype(t, [&](auto zero) {
        using T = decltype(zero);
        y.as<T>()[n - 1] = -std::numeric_limits<T>::infinity();
      });
      for (Op op : {Op::Sum, Op::Min, Op::Max}) check_all_kernels(*r, y, op);
    }
  }
}

TEST_CASE("extreme integers: min and max find the type limits") {
  auto r = reducer();
  for (DType t : {DType::I32, DType::I64}) {
    HostBuffer x(t, 3001);
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      for (std::uint64_t i = 0; i < x.size(); ++i) x.as<T>()[i] = static_cast<T>(i);
      x.as<T>()[1234] = std::numeric_limits<T>::lowest();
      x.as<T>()[2999] = std::numeric_limits<T>::max();
    });
    for (Op op : {Op::Min, Op::Max, Op::Sum}) check_all_kernels(*r, x, op);
  }
}

TEST_CASE("kernels() describes a usable ladder") {
  auto r = reducer();
  const auto list = r->kernels();
  REQUIRE_FALSE(list.empty());
  bool has_auto = false;
  for (const auto& k : list) {
    CHECK_MESSAGE(!k.note.empty(), k.name);
    CHECK_MESSAGE(k.note.find('\n') == std::string::npos, k.name, " note is one line");
    if (k.kind == KernelKind::Auto) {
      has_auto = true;
      for (Op op : all_ops)
        for (DType t : all_dtypes) CHECK_MESSAGE(k.supports(op, t), "auto supports every op and type");
    }
  }
  CHECK(has_auto);
  CHECK_THROWS_WITH_AS(r->kernel("no_such_rung"), doctest::Contains("known:"), InvalidArgument);
}

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--xr-backend=", 13) == 0) g_backend = argv[i] + 13;
    else if (std::strncmp(argv[i], "--xr-platform=", 14) == 0) g_options.platform = std::atoi(argv[i] + 14);
    else if (std::strncmp(argv[i], "--xr-device=", 12) == 0) g_options.device = argv[i] + 12;
    else rest.push_back(argv[i]);
  }
  try {
    const BackendStatus s = backend_status(g_backend);
    if (!s.usable) {
      std::printf("SKIP %s: %s\n", g_backend.c_str(), s.reason.c_str());
      return 77;
    }
    std::printf("backend %s on %s\n", g_backend.c_str(), make_reducer(g_backend, g_options)->device().c_str());
  } catch (const Error& e) {
    std::printf("SKIP %s: %s\n", g_backend.c_str(), e.what());
    return 77;
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
