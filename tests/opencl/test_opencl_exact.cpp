// OpenCL exact mode (RunOptions::exact, kernels_cl/exact.cl): every result has the bits of the
// host xr::ExactSum (itself checked against GNU MPFR in tests/test_exact.cpp), and the raw
// state read back from the device normalises to the host's state, flags included. Runs on the
// default device of every OpenCL platform, with each kernel variant the device can run
// (64-bit local atomics or 32-bit pairs; f32 window sums in doubles or integers), every
// work-group size and grid, the cl_mem path with offsets, the chunked host path and launches
// split per work-group.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "internal.hpp"
#include "targets.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/opencl.hpp"
#include "exact_inputs.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
namespace od = xr::opencl::detail;
using namespace xr::ocl_test;
using u64 = std::uint64_t;

using namespace xr::test_inputs;

namespace {

// The kernel variants a device can run: its own choice first, then the forced alternatives.
struct Variant {
  int atomics = -1, f32_int = -1;
  std::string name;
};
std::vector<Variant> variants(const od::DeviceCaps& caps) {
  std::vector<Variant> v{{-1, -1, "device default"}};
  if (caps.int64_base) v.push_back({0, -1, "32-bit atomic pairs"});
  if (caps.fp64) v.push_back({-1, 1, "f32 integer window sums"});
  return v;
}
struct ForceVariant {
  explicit ForceVariant(const Variant& v) { od::set_exact_variant_for_testing(v.atomics, v.f32_int); }
  ~ForceVariant() { od::set_exact_variant_for_testing(-1, -1); }
};

template <class T> ExactSum host_state(const T* x, std::size_t n) {
  ExactSum acc;
  acc.add(x, n);
  return acc;
}
template <class T> T rounded(const ExactSum& s) {
  if constexpr (sizeof(T) == 4) return s.to_float();
  else return s.to_double();
}

struct Shape {
  std::string kernel = "auto";
  unsigned block = 0;
  u64 grid = 0;
};
std::string describe(const Shape& s) {
  return s.kernel + ", work-group " + std::to_string(s.block) + ", grid " + std::to_string(s.grid);
}
// PoCL compiles a kernel once per work-group size: the forced (non-default) variants run only
// the few shapes, so that a cold kernel cache stays cheap.
bool g_many_shapes = true;
std::vector<Shape> shapes(bool many) {
  std::vector<Shape> out{{"auto", 0, 0}, {"cascade", 0, 0}};
  if (many && g_many_shapes) {
    for (unsigned b : {1u, 3u, 32u, 100u, 256u, 1024u})
      for (u64 g : {u64{1}, u64{7}, u64{1000}}) out.push_back({"auto", b, g});
  } else {
    out.push_back({"auto", 100, 3});
    out.push_back({"cascade", 3, 1});
    out.push_back({"auto", 256, 7});
  }
  return out;
}

// Work-group sizes beyond what the exact kernel allows on this device (registers, device limit)
// are rejected (InvalidArgument, tested below); the shape lists skip them.
template <class T> bool fits(const Target& t, const Shape& s) {
  const DType type = dtype_of<T>;
  const std::string o = od::exact_program_options(type, od::exact_variant(t.caps, type));
  const auto& k = od::cached_kernel(od::shared_context(t.caps), t.caps.device, od::kExactSource, o, od::kExactKernel);
  return s.block <= std::min(k.work_group_max, t.caps.max_work_group);
}

// Host path: every shape, bits equal to the host ExactSum.
template <class T>
void expect_exact(Target& t, const std::vector<T>& x, const std::string& what, bool many = false) {
  const ExactSum want_state = host_state(x.data(), x.size());
  const T want = rounded<T>(want_state);
  for (const Shape& s : shapes(many)) {
    if (!fits<T>(t, s)) continue;
    RunOptions o;
    o.exact = true;
    o.kernel = s.kernel;
    o.block_size = s.block;
    o.grid_size = s.grid;
    const Result r = t.reducer->reduce(x, Op::Sum, o);
    const T got = r.value.as<T>();
    INFO(t.label() << ": " << what << " (n = " << x.size() << ", " << (sizeof(T) == 4 ? "f32" : "f64") << ", "
                   << describe(s) << "): got " << got << ", want " << want << "; " << r.finish);
    CHECK(same_bits(got, want));
    CHECK(r.rounding_depth == 1);
  }
}

// Device path (cl_mem): the raw state equals the host's after normalisation (limbs and flags).
template <class T>
void expect_raw(Target& t, cl_command_queue q, cl_mem mem, u64 offset, const std::vector<T>& x, const Shape& s,
                const std::string& what) {
  od::Request rq;
  rq.queue = q;
  rq.buffer = mem;
  rq.offset = offset;
  rq.n = x.size() - offset;
  rq.type = dtype_of<T>;
  rq.op = Op::Sum;
  rq.options.exact = true;
  rq.options.kernel = s.kernel;
  rq.options.block_size = s.block;
  rq.options.grid_size = s.grid;
  ExactSum::Raw raw;
  const Result r = od::reduce_on_queue(rq, &raw);
  const ExactSum want = host_state(x.data() + offset, x.size() - offset);
  ExactSum got;
  got.merge_raw(raw);
  INFO(t.label() << ": " << what << " (cl_mem, offset " << offset << ", n = " << rq.n << ", " << describe(s)
                 << "; " << r.finish << ")");
  CHECK(got.raw().limb == want.raw().limb);
  CHECK(got.raw().flags == want.raw().flags);
  CHECK(same_bits(r.value.as<T>(), rounded<T>(want)));
}

struct DeviceBuffer {
  cl_mem mem = nullptr;
  template <class T> DeviceBuffer(const Target& t, const std::vector<T>& data) {
    cl_int rc = CL_SUCCESS;
    mem = clCreateBuffer(t.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                         std::max<std::size_t>(1, data.size()) * sizeof(T), const_cast<T*>(data.data()), &rc);
    od::check(rc, "clCreateBuffer");
  }
  ~DeviceBuffer() { clReleaseMemObject(mem); }
};

template <class T> void special_values(Target& t) {
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (const auto& c : special_value_cases<T>()) expect_exact(t, c, "special values");
  for (const T s : {nan, inf, -inf, -std::numeric_limits<T>::signaling_NaN()}) {
    std::vector<T> v(30003, T(0.25));
    v[15001] = s;
    expect_exact(t, v, "a special in a long array");
  }
  std::vector<T> negzero(20001, T(-0.0));
  expect_exact(t, negzero, "all -0");
  negzero[10000] = T(0);
  expect_exact(t, negzero, "-0 and one +0");
  std::vector<T> both(65536 + 5, T(1));
  both[7000] = inf;
  both[60000] = -inf;
  expect_exact(t, both, "+inf and -inf far apart");
}

template <class T> void adversarial(Target& t) {
  if constexpr (sizeof(T) == 8) {
    expect_exact(t, std::vector<double>{1e300, 1.0, -1e300}, "[1e300, 1, -1e300]", true);
    const std::vector<double> dmax{DBL_MAX, DBL_MAX, -DBL_MAX};
    expect_exact(t, dmax, "[DBL_MAX, DBL_MAX, -DBL_MAX]", true);
    RunOptions o;
    o.exact = true;
    CHECK(t.reducer->reduce(dmax, Op::Sum, o).value.as<double>() == DBL_MAX);
  } else {
    expect_exact(t, std::vector<float>{1e30f, 1.0f, -1e30f}, "[1e30, 1, -1e30]", true);
    expect_exact(t, std::vector<float>{FLT_MAX, FLT_MAX, -FLT_MAX}, "[FLT_MAX, FLT_MAX, -FLT_MAX]", true);
  }
  const T big = std::numeric_limits<T>::max();
  std::vector<T> huge(20000);
  for (std::size_t i = 0; i < huge.size(); ++i) huge[i] = (i % 2 ? -big : big) * T(i % 3 == 0 ? 1 : 0.75);
  expect_exact(t, huge, "huge values, cancelling");
  huge.push_back(big);
  huge.push_back(big);
  expect_exact(t, huge, "huge values, overflowing");
  std::mt19937_64 g(7);
  std::vector<T> c = exponent_band<T>(30000, 40, 80, g);
  const std::size_t half = c.size();
  for (std::size_t i = 0; i < half; ++i) c.push_back(i % 97 ? -c[i] : -std::nextafter(c[i], T(0)));
  c.push_back(std::numeric_limits<T>::denorm_min());
  std::shuffle(c.begin(), c.end(), g);
  expect_exact(t, c, "heavy cancellation");
  const std::vector<T> sub = subnormals<T>(50003, g);
  expect_exact(t, sub, "subnormals only", true);
  std::vector<T> mixed = sub;
  for (std::size_t i = 0; i < mixed.size(); i += 5) mixed[i] = std::numeric_limits<T>::min() * T(i % 7 + 1);
  expect_exact(t, mixed, "subnormal and normal", true);
  for (int span : {19, 20, 21, 31, 32, 33, 40})
    for (int top : {0, sizeof(T) == 4 ? 120 : 1020, sizeof(T) == 4 ? -100 : -1000})
      expect_exact(t, exponent_band<T>(12000, top, span, g),
                   "band " + std::to_string(span) + " below 2^" + std::to_string(top));
  std::vector<T> full(40001, std::nextafter(T(2), T(0)));
  expect_exact(t, full, "largest significand everywhere");
  for (std::size_t i = 1; i < full.size(); i += 2) full[i] = std::ldexp(std::nextafter(T(2), T(0)), -32);
  expect_exact(t, full, "two binades far apart");
  // Magnitudes that fall within a work-item's tiles (the window moves down, then up).
  std::vector<T> steps(40000);
  for (std::size_t i = 0; i < steps.size(); ++i)
    steps[i] = std::ldexp(T(1.5), static_cast<int>((i / 2048) % 5) * (sizeof(T) == 4 ? -9 : -25)) *
               ((i % 3) ? T(1) : T(-1));
  expect_exact(t, steps, "magnitudes changing along the array", true);
}

template <class T> void random_sizes(Target& t, bool big) {
  std::mt19937_64 g(sizeof(T) == 4 ? 21 : 23);
  std::vector<u64> sizes{0, 1, 2, 31, 33, 1025, (u64{1} << 20) + 7};
  if (big) sizes.push_back((u64{1} << 24) + 3);
  for (u64 n : sizes) {
    const bool large = n > (u64{1} << 16);
    std::vector<T> u(n);
    std::uniform_real_distribution<T> d(T(0), T(1));
    for (auto& x : u) x = d(g);
    expect_exact(t, u, "uniform [0,1)", !large);
    if (n > (u64{1} << 21)) continue;
    std::normal_distribution<T> nd(T(0), T(1e3));
    for (auto& x : u) x = nd(g) * std::ldexp(T(1), static_cast<int>(g() % 40) - 20);
    expect_exact(t, u, "normal, wide range");
    expect_exact(t, random_bits<T>(n, g), "random bit patterns", !large);
  }
}

template <class Fn> void for_each_variant(Fn&& fn) {
  for (auto& t : targets()) {
    for (const Variant& v : variants(t.caps)) {
      CAPTURE(t.label());
      CAPTURE(v.name);
      ForceVariant force(v);
      g_many_shapes = v.atomics < 0 && v.f32_int < 0;
      fn(t);
      g_many_shapes = true;
    }
  }
}

}  // namespace

TEST_CASE("exact opencl: which rungs honour exact mode; what it rejects") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    CHECK(r.kernel("auto").exact);
    CHECK(r.kernel("cascade").exact);
    CHECK_FALSE(r.kernel("naive").exact);
    const std::vector<float> v{1.0f, 2.0f};
    RunOptions o;
    o.exact = true;
    o.kernel = "naive";
    CHECK_THROWS_AS(r.reduce(v, Op::Sum, o), InvalidArgument);
    {
      DeviceBuffer b(t, v);
      CHECK_THROWS_AS(opencl::reduce<float>(t.queue, b.mem, 0, v.size(), Op::Sum, o), InvalidArgument);
    }
    o.kernel = "auto";
    CHECK_THROWS_AS(r.reduce(v, Op::Prod, o), InvalidArgument);
    o.block_size = static_cast<unsigned>(t.caps.max_work_group) + 1;
    CHECK_THROWS_AS(r.reduce(v, Op::Sum, o), InvalidArgument);
    o.block_size = 0;
    // Integer sums and min/max are exact anyway; naive's integer sum is fine in exact mode.
    const std::vector<std::int32_t> ints{1, 2, 3};
    CHECK(r.reduce(ints, Op::Sum, o).value.as<std::int64_t>() == 6);
    CHECK(r.reduce(v, Op::Max, o).value.as<float>() == 2.0f);
    o.kernel = "naive";
    CHECK(r.reduce(ints, Op::Sum, o).value.as<std::int64_t>() == 6);
    o.kernel = "auto";
    const Result res = r.reduce(v, Op::Sum, o);
    CHECK(res.value.as<float>() == 3.0f);
    CHECK(res.finish.find("exact") != std::string::npos);
    CHECK(res.finish.find(t.caps.int64_base ? "64-bit local atomics" : "32-bit local atomic pairs") !=
          std::string::npos);
    CHECK(res.kernel == "auto:exact");
    // The empty sum is +0, without a launch.
    const Result e = r.reduce(std::vector<double>{}, Op::Sum, o);
    CHECK(same_bits(e.value.as<double>(), 0.0));
    CHECK(e.launches == 0);
    if (!t.caps.fp64) {
      const std::vector<double> d{1.0};
      CHECK_THROWS_AS(r.reduce(d, Op::Sum, o), InvalidArgument);
    }
  }
}

TEST_CASE("exact opencl: every exact program builds") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const cl_context ctx = od::shared_context(t.caps);
    std::vector<DType> types{DType::F32};
    if (t.caps.fp64) types.push_back(DType::F64);
    for (DType type : types)
      for (const Variant& v : variants(t.caps)) {
        ForceVariant force(v);
        const std::string o = od::exact_program_options(type, od::exact_variant(t.caps, type));
        CAPTURE(o);
        CHECK_NOTHROW(od::cached_kernel(ctx, t.caps.device, od::kExactSource, o, od::kExactKernel));
        CHECK_NOTHROW(od::cached_kernel(ctx, t.caps.device, od::kExactSource, o, od::kExactMergeKernel));
      }
    // A device without fp64 sums floats in integers.
    od::DeviceCaps no64 = t.caps;
    no64.fp64 = false;
    CHECK(od::exact_variant(no64, DType::F32).f32_int);
  }
}

TEST_CASE("exact opencl: special values and signed zeros") {
  for_each_variant([](Target& t) {
    special_values<float>(t);
    if (t.caps.fp64) special_values<double>(t);
  });
}

TEST_CASE("exact opencl: adversarial inputs") {
  for_each_variant([](Target& t) {
    adversarial<float>(t);
    if (t.caps.fp64) adversarial<double>(t);
  });
}

TEST_CASE("exact opencl: random sizes, work-group sizes and grids") {
  for_each_variant([](Target& t) {
    random_sizes<float>(t, false);
    if (t.caps.fp64) random_sizes<double>(t, false);
  });
  // 2^24 + 3 once per device, with its own variant.
  for (auto& t : targets()) {
    CAPTURE(t.label());
    random_sizes<float>(t, true);
  }
}

TEST_CASE("exact opencl: cl_mem path with offsets, both queues; raw state equals the host's") {
  for_each_variant([](Target& t) {
    std::mt19937_64 g(31);
    const auto f = exponent_band<float>(70001, 10, 30, g);
    auto d = t.caps.fp64 ? random_bits<double>(50001, g) : std::vector<double>{};
    if (!d.empty()) d[777] = -std::numeric_limits<double>::infinity();
    DeviceBuffer bf(t, f);
    std::unique_ptr<DeviceBuffer> bd = d.empty() ? nullptr : std::make_unique<DeviceBuffer>(t, d);
    for (cl_command_queue q : {t.queue, t.plain_queue})
      for (u64 off : {u64{0}, u64{1}, u64{3}, u64{5}, u64{70000}})
        for (const Shape& s : {Shape{"auto", 0, 0}, Shape{"cascade", 3, 5}, Shape{"auto", 100, 1}}) {
          expect_raw(t, q, bf.mem, off, f, s, "f32 band");
          if (bd) expect_raw(t, q, bd->mem, std::min<u64>(off, d.size()), d, s, "f64 random bits, one -inf");
        }
    // A range of -0 only, inside a buffer that holds other values.
    std::vector<float> z(1000, -0.0f);
    z[0] = 1.0f;
    DeviceBuffer bz(t, z);
    expect_raw(t, t.queue, bz.mem, 1, z, Shape{}, "-0 after an offset");
    RunOptions o;
    o.exact = true;
    CHECK(std::signbit(opencl::reduce<float>(t.queue, bz.mem, 1, z.size() - 1, Op::Sum, o).value.f));
    CHECK(opencl::reduce<float>(t.queue, bz.mem, 0, z.size(), Op::Sum, o).value.f == 1.0f);
  });
}

TEST_CASE("exact opencl: host chunks and per-group launch limits merge exactly, never rounded per part") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    std::mt19937_64 g(41);
    // 2^-30 + 1 - 1 + ... : rounding any chunk on its own would lose the tiny terms.
    std::vector<double> d(10007, 1.0);
    for (std::size_t i = 0; i < d.size(); i += 2) d[i] = -1.0;
    for (std::size_t i = 5; i < d.size(); i += 1000) d[i] = std::ldexp(1.0, -60) * static_cast<double>(i);
    d[3] = 1e300;
    d[9000] = -1e300;
    std::vector<float> f = exponent_band<float>(10007, 50, 60, g);
    od::set_chunk_limit_for_testing(1000);
    if (t.caps.fp64) {
      RunOptions o;
      o.exact = true;
      o.host_path = HostPath::Resident;
      const Result r = t.reducer->reduce(d, Op::Sum, o);
      CHECK(r.finish.find("11 chunks") != std::string::npos);
      CHECK(same_bits(r.value.as<double>(), rounded<double>(host_state(d.data(), d.size()))));
      expect_exact(t, d, "chunked f64");
    }
    expect_exact(t, f, "chunked f32");
    od::set_chunk_limit_for_testing(0);
    od::set_exact_group_limit_for_testing(100);  // many launches adding into the columns
    if (t.caps.fp64) expect_exact(t, d, "per-group launch limit, f64", true);
    expect_exact(t, f, "per-group launch limit, f32", true);
    RunOptions o;
    o.exact = true;
    o.grid_size = 2;
    CHECK(t.reducer->reduce(f, Op::Sum, o).launches > 40);
    od::set_exact_group_limit_for_testing(0);
  }
}

int main(int argc, char** argv) { return xr::ocl_test::run_on_targets(argc, argv, "opencl exact"); }
