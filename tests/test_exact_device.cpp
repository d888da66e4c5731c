// Exact mode (RunOptions::exact) on every backend: every result must have the bits of
// xr::ExactSum on the host (itself checked against GNU MPFR in test_exact.cpp), for every
// thread count, block size and grid. The device cases (CUDA, OpenCL) skip with a message where
// the backend has no usable device; the OpenMP cases run everywhere.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "exact_inputs.hpp"
#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/registry.hpp"

using namespace xr::test_inputs;

namespace {

using u64 = std::uint64_t;

template <class T> T host_exact(const T* x, std::size_t n) {
  xr::ExactSum acc;
  acc.add(x, n);
  if constexpr (sizeof(T) == 4) return acc.to_float();
  else return acc.to_double();
}

// The launch shapes each backend is run with: OpenMP thread counts; CUDA block sizes and grids.
std::vector<xr::RunOptions> shapes(const std::string& backend, bool many) {
  std::vector<xr::RunOptions> out;
  auto base = [] {
    xr::RunOptions o;
    o.kernel = "auto";
    o.exact = true;
    return o;
  };
  if (backend == "omp") {
    for (unsigned t : {1u, 2u, 3u, 7u}) {
      auto o = base();
      o.threads = t;
      out.push_back(o);
    }
    auto v = base();
    v.kernel = "vector";
    v.threads = 2;
    out.push_back(v);
  } else {
    out.push_back(base());
    if (many) {
      // Block sizes every device backend's exact kernel takes (NVIDIA's OpenCL caps it at 256).
      for (unsigned b : {32u, 64u, 96u, 256u})
        for (u64 g : {u64{0}, u64{1}, u64{7}, u64{1000}}) {
          auto o = base();
          o.block_size = b;
          o.grid_size = g;
          out.push_back(o);
        }
    } else {
      for (auto [b, g] : {std::pair<unsigned, u64>{64, 3}, {96, 0}, {256, 1}}) {
        auto o = base();
        o.block_size = b;
        o.grid_size = g;
        out.push_back(o);
      }
    }
  }
  return out;
}

std::string describe(const xr::RunOptions& o) {
  return "kernel " + o.kernel + ", threads " + std::to_string(o.threads) + ", block " +
         std::to_string(o.block_size) + ", grid " + std::to_string(o.grid_size);
}

// Runs x on every shape of the backend and compares with the host ExactSum, bit for bit.
template <class T>
void expect_exact(xr::Reducer& r, const std::string& backend, const std::vector<T>& x, const std::string& what,
                  bool many_shapes = false, std::size_t offset = 0) {
  const std::span<const T> view(x.data() + offset, x.size() - offset);
  const T want = host_exact(view.data(), view.size());
  for (const auto& o : shapes(backend, many_shapes)) {
    const xr::Result res = r.reduce(view, xr::Op::Sum, o);
    const T got = res.value.as<T>();
    INFO(backend << ": " << what << " (n = " << view.size() << ", " << (sizeof(T) == 4 ? "f32" : "f64") << ", "
                 << describe(o) << "): got " << got << ", want " << want);
    CHECK(same_bits(got, want));
    // The state behind the value (what xr::mpi merges): the host's exact sum, limb for limb.
    REQUIRE(res.exact_state.has_value());
    xr::ExactSum host;
    host.add(view.data(), view.size());
    CHECK(res.exact_state->limb == host.raw().limb);
  }
}

template <class T> void special_values(xr::Reducer& r, const std::string& b) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (const auto& c : special_value_cases<T>()) expect_exact(r, b, c, "special values");
  // Specials and -0 inside long arrays (in the middle of a front end's chunk), and all -0.
  for (const T s : {nan, inf, -inf}) {
    std::vector<T> v(100003, T(0.25));
    v[50001] = s;
    expect_exact(r, b, v, "a special in a long array");
  }
  std::vector<T> negzero(70001, T(-0.0));
  expect_exact(r, b, negzero, "all -0");
  CHECK(std::signbit(host_exact(negzero.data(), negzero.size())));
  negzero[40000] = T(0);
  expect_exact(r, b, negzero, "-0 and one +0");
  std::vector<T> both(65536 * 3 + 5, T(1));
  both[70000] = inf;
  both[150000] = -inf;
  expect_exact(r, b, both, "+inf and -inf far apart");
}

template <class T> void adversarial(xr::Reducer& r, const std::string& b) {
  if constexpr (sizeof(T) == 8) {
    expect_exact(r, b, std::vector<double>{1e300, 1.0, -1e300}, "[1e300, 1, -1e300]", true);
    expect_exact(r, b, std::vector<double>{DBL_MAX, DBL_MAX, -DBL_MAX}, "[DBL_MAX, DBL_MAX, -DBL_MAX]", true);
  } else {
    expect_exact(r, b, std::vector<float>{1e30f, 1.0f, -1e30f}, "[1e30, 1, -1e30]", true);
    expect_exact(r, b, std::vector<float>{FLT_MAX, FLT_MAX, -FLT_MAX}, "[FLT_MAX, FLT_MAX, -FLT_MAX]", true);
  }
  const T big = std::numeric_limits<T>::max();
  // Near the top of the range in long arrays (double's window front end cannot take these
  // chunks), with cancellation back into range and beyond it.
  {
    std::vector<T> v(100000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (i % 2 ? -big : big) * T(i % 3 == 0 ? 1 : 0.75);
    expect_exact(r, b, v, "huge values, cancelling");
    v.push_back(big);
    v.push_back(big);
    expect_exact(r, b, v, "huge values, overflowing");
  }
  // Every binade at once (nearly every element below its chunk's window: the OpenMP front end's
  // bins), subnormals, zeros of both signs, both signs, over more than one flush of the bins
  // (2^18 terms a thread) and a partial chunk.
  {
    std::mt19937_64 g(11);
    constexpr int lowest = sizeof(T) == 8 ? -1074 : -149;
    constexpr int highest = sizeof(T) == 8 ? 990 : 120;
    std::uniform_int_distribution<int> exponent(lowest, highest);
    std::uniform_real_distribution<T> mantissa(T(0.5), T(1));
    std::vector<T> v((u64{1} << 19) + 4099);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const T x = std::ldexp(mantissa(g), exponent(g));
      v[i] = i % 97 == 0 ? T(i % 2 ? -0.0 : 0.0) : g() % 2 ? -x : x;
    }
    expect_exact(r, b, v, "every binade");
  }
  // Heavy cancellation: x and -x (one ulp off for some), shuffled, plus a tiny remainder.
  {
    std::mt19937_64 g(7);
    std::vector<T> v = exponent_band<T>(150000, 40, 80, g);
    const std::size_t half = v.size();
    for (std::size_t i = 0; i < half; ++i) v.push_back(i % 97 ? -v[i] : -std::nextafter(v[i], T(0)));
    v.push_back(std::numeric_limits<T>::denorm_min());
    std::shuffle(v.begin(), v.end(), g);
    expect_exact(r, b, v, "heavy cancellation");
  }
  // Subnormals only, and mixed subnormal and normal values.
  {
    std::mt19937_64 g(11);
    const auto mant_bits = sizeof(T) == 4 ? 23 : 52;
    std::vector<T> sub(200003);
    for (auto& x : sub) {
      const auto m = static_cast<decltype(bits(T{}))>(g() & ((decltype(bits(T{})){1} << mant_bits) - 1));
      x = from_bits<T>(m) * ((g() & 1) ? T(1) : T(-1));
    }
    expect_exact(r, b, sub, "subnormals only");
    std::vector<T> mixed = sub;
    for (std::size_t i = 0; i < mixed.size(); i += 5) mixed[i] = std::numeric_limits<T>::min() * T(i % 7 + 1);
    expect_exact(r, b, mixed, "subnormal and normal");
  }
  // The window edges of the CPU front ends: bands 20..40 binades wide below several tops,
  // and whole chunks at the largest significand of one binade (the widest exact lane sums).
  {
    std::mt19937_64 g(13);
    for (int span : {19, 20, 21, 31, 32, 33, 40})
      for (int top : {0, 60, sizeof(T) == 4 ? 100 : 1000, sizeof(T) == 4 ? -100 : -1000})
        expect_exact(r, b, exponent_band<T>(40000, top, span, g), "band " + std::to_string(span) + " below 2^" +
                                                                    std::to_string(top));
    std::vector<T> full(65536 * 2 + 1, std::nextafter(T(2), T(0)));
    expect_exact(r, b, full, "largest significand everywhere");
    for (std::size_t i = 1; i < full.size(); i += 2) full[i] = std::ldexp(std::nextafter(T(2), T(0)), -32);
    expect_exact(r, b, full, "two binades far apart");
    // Window edges: lane sums as large as they get (tops with all significand bits set,
    // + in the first half of each 16384-element block and - in the second, so they cancel
    // exactly) while values from the binades around the window's lower edge arrive as +m in
    // the first half and -(m - ulp) at the same place in the second half (the same lane of
    // every front end): the exact sum is a sum of ulps, so any rounding shows in the result.
    for (const int top : {0, sizeof(T) == 4 ? -100 : -1000, sizeof(T) == 4 ? 120 : 1000}) {
      // f64 tops: 1 + 2^-41 - 2^-52, whose part below 2^-40 (what double's front end carries
      // in its low lane sums) is as large as it gets.
      const T m_top = sizeof(T) == 4 ? std::ldexp(std::nextafter(T(2), T(0)), top)
                                     : std::ldexp(T(1) + std::ldexp(T(1), -41) - std::ldexp(T(1), -52), top);
      const int first = sizeof(T) == 4 ? 17 : 29;  // binades below the top: 17..24 / 29..36
      std::vector<T> edge(16384 * 5);
      for (std::size_t i = 0; i < edge.size(); ++i) {
        const std::size_t p = i % 16384, q = p % 8192;
        if (q % 3 == 0) {
          const int below = first + static_cast<int>((q / 3 + q / 96 + q / 768) % 8);
          const T m = std::ldexp(std::nextafter(T(2), T(0)), top - below);
          edge[i] = p < 8192 ? m : -std::nextafter(m, T(0));
        } else {
          edge[i] = p < 8192 ? m_top : -m_top;
        }
      }
      expect_exact(r, b, edge, "window edges below 2^" + std::to_string(top));
    }
  }
  // Windows carried from one 16384-element chunk to the next (the CPU front ends start each
  // chunk's pass from the window of the chunk before): tops that rise by one binade or many,
  // fall by less than the window lowers for and by more, and come back, each chunk a band of
  // its own; the whole sequence, and then shifted by a part of a chunk.
  {
    std::mt19937_64 g(19);
    std::vector<T> v;
    for (const int top : {0, 1, 3, 2, -4, -30, 40, 39, 38, -60, -61, 20, 20, 90, -90})
      for (const T x : exponent_band<T>(16384, top, 18, g)) v.push_back(x);
    expect_exact(r, b, v, "chunk tops rising and falling");
    expect_exact(r, b, v, "chunk tops rising and falling, shifted", false, 5000);
  }
  // A misaligned start.
  {
    std::mt19937_64 g(17);
    const auto v = exponent_band<T>(100001, 5, 30, g);
    for (std::size_t off : {1u, 3u}) expect_exact(r, b, v, "misaligned by " + std::to_string(off), false, off);
  }
}

template <class T> void random_sizes(xr::Reducer& r, const std::string& b) {
  std::mt19937_64 g(sizeof(T) == 4 ? 21 : 23);
  for (u64 n : {u64{0}, u64{1}, u64{2}, u64{31}, u64{33}, u64{1025}, (u64{1} << 20) + 7, (u64{1} << 24) + 3}) {
    const bool huge = n > (u64{1} << 21);
    std::vector<T> u(n);
    std::uniform_real_distribution<T> d(T(0), T(1));
    for (auto& x : u) x = d(g);
    expect_exact(r, b, u, "uniform [0,1)", !huge);
    std::normal_distribution<T> nd(T(0), T(1e3));
    for (auto& x : u) x = nd(g) * std::ldexp(T(1), static_cast<int>(g() % 40) - 20);
    expect_exact(r, b, u, "normal, wide range", false);
    if (!huge) expect_exact(r, b, random_bits<T>(n, g), "random bit patterns", !huge);
  }
}

template <class Fn> void for_backend(const std::string& backend, Fn&& fn) {
  const xr::BackendStatus s = xr::backend_status(backend);
  if (!s.usable) {
    MESSAGE("skipped: backend " << backend << " is not usable: " << s.reason);
    return;
  }
  auto r = xr::make_reducer(backend);
  fn(*r, backend);
}

// Both OpenMP front ends (AVX2 where the CPU has it, and the portable one).
template <class Fn> void for_omp_front_ends(Fn&& fn) {
  for_backend("omp", fn);
  ::setenv("XREDUCE_OMP_EXACT_PORTABLE", "1", 1);
  for_backend("omp", fn);
  ::unsetenv("XREDUCE_OMP_EXACT_PORTABLE");
}

}  // namespace

TEST_CASE("exact omp: special values and signed zeros") {
  for_omp_front_ends([](xr::Reducer& r, const std::string& b) {
    special_values<double>(r, b);
    special_values<float>(r, b);
  });
}

TEST_CASE("exact omp: adversarial inputs") {
  for_omp_front_ends([](xr::Reducer& r, const std::string& b) {
    adversarial<double>(r, b);
    adversarial<float>(r, b);
  });
}

TEST_CASE("exact omp: random sizes, every thread count") {
  for_omp_front_ends([](xr::Reducer& r, const std::string& b) {
    random_sizes<double>(r, b);
    random_sizes<float>(r, b);
  });
}

TEST_CASE("exact omp: which kernels honour exact mode") {
  for_backend("omp", [](xr::Reducer& r, const std::string&) {
    CHECK(r.kernel("vector").exact);
    CHECK(r.kernel("auto").exact);
    CHECK_FALSE(r.kernel("clause").exact);
    const std::vector<double> v{1.0, 2.0};
    xr::RunOptions o;
    o.exact = true;
    o.kernel = "clause";
    CHECK_THROWS_AS(r.reduce(v, xr::Op::Sum, o), xr::InvalidArgument);
    o.kernel = "auto";
    CHECK_THROWS_AS(r.reduce(v, xr::Op::Prod, o), xr::InvalidArgument);
    // Integer sums and min/max are exact anyway: the flag changes nothing.
    const std::vector<std::int32_t> ints{1, 2, 3};
    CHECK(r.reduce(ints, xr::Op::Sum, o).value.as<std::int64_t>() == 6);
    CHECK(r.reduce(v, xr::Op::Max, o).value.as<double>() == 2.0);
  });
}

// One body per property for every device backend; each skips with a message where unusable.
constexpr const char* kDeviceBackends[] = {"cuda", "opencl"};

TEST_CASE("exact on every device backend: special values and signed zeros") {
  for (const char* backend : kDeviceBackends)
    for_backend(backend, [](xr::Reducer& r, const std::string& b) {
      special_values<double>(r, b);
      special_values<float>(r, b);
    });
}

TEST_CASE("exact on every device backend: adversarial inputs") {
  for (const char* backend : kDeviceBackends)
    for_backend(backend, [](xr::Reducer& r, const std::string& b) {
      adversarial<double>(r, b);
      adversarial<float>(r, b);
    });
}

TEST_CASE("exact on every device backend: random sizes, block sizes and grids") {
  for (const char* backend : kDeviceBackends)
    for_backend(backend, [](xr::Reducer& r, const std::string& b) {
      random_sizes<double>(r, b);
      random_sizes<float>(r, b);
    });
}

// f16 and bf16 sums, summed as the f32 values they are: the bits of the host reference (its exact
// sum, checked against MPFR in test_exact.cpp), on every shape, from an aligned start and from
// one 2 bytes past it.
TEST_CASE("exact on every device backend: f16 and bf16 sums") {
  for (const char* backend : kDeviceBackends)
    for_backend(backend, [](xr::Reducer& r, const std::string& b) {
      std::uint64_t seed = 31;
      for (const xr::DType t : {xr::DType::F16, xr::DType::BF16})
        for (const u64 n : {u64{1}, u64{7}, u64{1025}, (u64{1} << 20) + 3})
          for (const xr::Dist d : {xr::Dist::Uniform, xr::Dist::Cancel, xr::Dist::Wide, xr::Dist::Special}) {
            const xr::HostBuffer x = xr::generate(t, n + 1, d, ++seed);
            for (const u64 skip : {u64{0}, u64{1}}) {
              const xr::HostArray in{static_cast<const char*>(x.view().data) + skip * 2, n, t};
              const xr::Reference ref = xr::reference_reduce(in, xr::Op::Sum);
              for (const auto& o : shapes(b, n < 2000)) {
                const xr::Result res = r.reduce(in, xr::Op::Sum, o);
                INFO(b << ": " << xr::to_string(t) << " " << xr::to_string(d) << " n = " << n << " skip " << skip
                       << ", " << describe(o) << ": got " << res.value.to_string() << ", want "
                       << ref.value.to_string());
                CHECK(res.value.same_bits(ref.value));
              }
            }
          }
    });
}

// More than 2^31 elements (8.6 GB of floats on host and device): ones plus 2^-20, whose exact
// sum n + 2^-20 is a double (n < 2^32), so (float) of it is the correctly rounded result.
TEST_CASE("exact cuda: more than 2^31 elements") {
  for_backend("cuda", [](xr::Reducer& r, const std::string&) {
    const u64 n = (u64{1} << 31) + 77;
    std::vector<float> v;
    try {
      v.assign(n, 1.0f);
    } catch (const std::bad_alloc&) {
      MESSAGE("skipped: not enough host memory for 2^31 floats");
      return;
    }
    v[n - 1] = std::ldexp(1.0f, -20);
    const double exact = static_cast<double>(n - 1) + std::ldexp(1.0, -20);
    xr::RunOptions o;
    o.exact = true;
    try {
      const xr::Result res = r.reduce(v, xr::Op::Sum, o);
      CHECK(same_bits(res.value.as<float>(), static_cast<float>(exact)));
    } catch (const xr::DeviceError& e) {
      MESSAGE("skipped: " << e.what());
    }
  });
}
