// Core: names, semantics, generators, the reference and its error bound.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;

TEST_CASE("names parse and print") {
  for (Op op : all_ops) CHECK(parse_op(to_string(op)) == op);
  for (DType t : all_dtypes) CHECK(parse_dtype(to_string(t)) == t);
  CHECK(parse_op("ADD") == Op::Sum);
  CHECK(parse_dtype("double") == DType::F64);
  CHECK(parse_op("average") == Op::Mean);
  CHECK_THROWS_WITH_AS(parse_op("median"), doctest::Contains("unknown op 'median'"), InvalidArgument);
  CHECK(parse_dtype("uint8") == DType::U8);
  CHECK_THROWS_WITH_AS(parse_dtype("u16"), doctest::Contains("i32, i64, f32, f64, i8, u8, u32, u64"), InvalidArgument);
  for (Dist d : all_dists) CHECK(parse_dist(to_string(d)) == d);
  CHECK_THROWS_WITH_AS(parse_dist("gauss"), doctest::Contains("uniform, normal, ones, cancel, exact_product, special"),
                       InvalidArgument);
}

TEST_CASE("result types: i32 sums widen unless the native accumulator is asked for") {
  CHECK(result_dtype(Op::Sum, DType::I32) == DType::I64);
  CHECK(result_dtype(Op::Sum, DType::I32, Accumulator::Native) == DType::I32);
  CHECK(result_dtype(Op::Prod, DType::I32) == DType::I32);
  CHECK(result_dtype(Op::Max, DType::F32) == DType::F32);
}

TEST_CASE("identities") {
  CHECK(identity<int>(Op::Sum) == 0);
  CHECK(identity<double>(Op::Prod) == 1.0);
  CHECK(identity<float>(Op::Min) == std::numeric_limits<float>::infinity());
  CHECK(identity<double>(Op::Max) == -std::numeric_limits<double>::infinity());
  CHECK(identity<std::int32_t>(Op::Min) == std::numeric_limits<std::int32_t>::max());
  CHECK(identity<std::int64_t>(Op::Max) == std::numeric_limits<std::int64_t>::lowest());
}

TEST_CASE("integer sums and products wrap in two's complement") {
  constexpr auto imax = std::numeric_limits<std::int32_t>::max();
  CHECK(combine<std::int32_t>(Op::Sum, imax, 1) == std::numeric_limits<std::int32_t>::min());
  CHECK(combine<std::int32_t>(Op::Prod, 65536, 65536) == 0);
  CHECK(combine<std::int64_t>(Op::Prod, std::int64_t(1) << 62, 4) == 0);
  CHECK(combine<std::int32_t>(Op::Prod, -3, 5) == -15);
}

TEST_CASE("min and max propagate NaN from either side") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Op op : {Op::Min, Op::Max}) {
    CHECK(std::isnan(combine(op, nan, 1.0)));
    CHECK(std::isnan(combine(op, 1.0, nan)));
    CHECK(std::isnan(combine(op, nan, nan)));
  }
  CHECK(combine(Op::Min, 2.0f, -1.0f) == -1.0f);
  CHECK(combine(Op::Max, 2.0f, -1.0f) == 2.0f);
  CHECK(combine(Op::Min, -std::numeric_limits<double>::infinity(), 0.0) < 0);
}

TEST_CASE("min and max of nothing is an error; sum and product of nothing are identities") {
  CHECK_THROWS_AS(require_value_exists(Op::Min, 0), EmptyInput);
  CHECK_THROWS_AS(require_value_exists(Op::Max, 0), EmptyInput);
  CHECK_NOTHROW(require_value_exists(Op::Sum, 0));
  const HostBuffer empty(DType::F64, 0);
  CHECK(reference_reduce(empty.view(), Op::Sum).value.f == 0.0);
  CHECK(reference_reduce(empty.view(), Op::Prod).value.f == 1.0);
  CHECK_THROWS_AS(reference_reduce(empty.view(), Op::Max), EmptyInput);
}

TEST_CASE("Scalar prints values that read back and compares bits") {
  CHECK(Scalar::of(0.1f).to_string() == "0.1");
  CHECK(Scalar::of(0.1).to_string() == "0.1");
  CHECK(Scalar::of<std::int64_t>(-9007199254740993).to_string() == "-9007199254740993");
  CHECK(Scalar::of(0.0).same_bits(Scalar::of(0.0)));
  CHECK_FALSE(Scalar::of(0.0).same_bits(Scalar::of(-0.0)));
  CHECK_FALSE(Scalar::of(1.0f).same_bits(Scalar::of(1.0)));
  CHECK(Scalar::of(std::nan("")).same_bits(Scalar::of(-std::nan(""))));
}

TEST_CASE("generators are reproducible, seed-dependent and within their ranges") {
  const auto a = generate(DType::F32, 100003, Dist::Uniform, 7);
  const auto b = generate(DType::F32, 100003, Dist::Uniform, 7);
  const auto c = generate(DType::F32, 100003, Dist::Uniform, 8);
  CHECK(std::memcmp(a.data(), b.data(), a.bytes()) == 0);
  CHECK(std::memcmp(a.data(), c.data(), a.bytes()) != 0);
  for (std::uint64_t i = 0; i < a.size(); ++i) REQUIRE((a.as<float>()[i] >= -1.0f && a.as<float>()[i] < 1.0f));
  const auto ints = generate(DType::I32, 100000, Dist::Uniform, 1);
  for (std::uint64_t i = 0; i < ints.size(); ++i) REQUIRE(std::abs(ints.as<std::int32_t>()[i]) <= 1000);
  const auto ones = generate(DType::I64, 1000, Dist::Ones, 1);
  CHECK(reference_reduce(ones.view(), Op::Sum).value.i == 1000);
}

TEST_CASE("cancel data sums far below the sum of magnitudes") {
  const auto x = generate(DType::F64, 1 << 16, Dist::Cancel, 3);
  const Reference r = reference_reduce(x.view(), Op::Sum);
  CHECK(std::fabs(r.value.f) < 1e-3 * r.magnitude);
}

TEST_CASE("exact_product data has the same product in any order") {
  for (DType t : {DType::F32, DType::F64}) {
    auto x = generate(t, (1 << 20) + 7, Dist::ExactProduct, 5);
    const Reference forward = reference_reduce(x.view(), Op::Prod);
    CHECK(std::fabs(forward.value.f) == std::ldexp(1.0, 10));  // 40 twos, 30 halves
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      T* p = x.as<T>();
      std::reverse(p, p + x.size());
    });
    CHECK(reference_reduce(x.view(), Op::Prod).value.same_bits(forward.value));
  }
}

// Element i of every seed's special data, forward, backward and pairwise: one value for every
// product, min and max, and one kind of sum (a NaN, an infinity of one sign, or finite).
TEST_CASE("special data: each seed's family of special values, one result in any order") {
  for_each_dtype([](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t seed = 0; seed < 10; ++seed)
      for (std::uint64_t n : {1, 2, 3, 33, 1025, 65537}) {
        CAPTURE(seed);
        CAPTURE(n);
        const auto x = generate(dtype_of<T>, n, Dist::Special, seed);
        const std::span<const T> v(x.template as<T>(), n);
        CHECK(std::memcmp(generate(dtype_of<T>, n, Dist::Special, seed).data(), x.data(), x.bytes()) == 0);
        if constexpr (std::is_floating_point_v<T>) {
          const auto count = [&](auto pred) { return std::count_if(v.begin(), v.end(), pred); };
          const std::uint64_t family = seed % 5;
          CHECK((count([](T e) { return std::isnan(e); }) > 0) == (family == 0));
          if (family == 1) CHECK(count([](T e) { return std::isinf(e); }) > 0);
          if (family == 2) CHECK(count([](T e) { return std::fabs(e) == std::numeric_limits<T>::max(); }) == 1);
          if (family == 3) CHECK(count([](T e) { return std::fabs(e) > std::numeric_limits<T>::min(); }) == 0);
          if (family == 4) CHECK(count([](T e) { return e == 0 && std::signbit(e); }) == static_cast<long>(n));
          if (n == 65537 && family < 4) CHECK(count([](T e) { return e != 0 && std::fabs(e) < std::numeric_limits<T>::min(); }) > 0);
        }
        for (Op op : {Op::ArgMin, Op::ArgMax}) {  // the same index in any order, and the reference's
          CAPTURE(op);
          visit_pair(op, [&](auto fn) {
            using F = decltype(fn);
            if constexpr (F::op != Op::MinMax) {
              const auto record = [&](std::uint64_t i) { return Located<T>{v[i], static_cast<std::int64_t>(i)}; };
              Located<T> forward = F::template identity<T>(), backward = forward;
              for (std::uint64_t i = 0; i < n; ++i) {
                forward = F::apply(forward, record(i));
                backward = F::apply(record(n - 1 - i), backward);
              }
              std::vector<Located<T>> level;
              for (std::uint64_t i = 0; i < n; ++i) level.push_back(record(i));
              while (level.size() > 1) {
                std::vector<Located<T>> next;
                for (std::size_t i = 0; i < level.size(); i += 2)
                  next.push_back(i + 1 < level.size() ? F::apply(level[i + 1], level[i]) : level[i]);
                level = std::move(next);
              }
              CHECK(forward.index == backward.index);
              CHECK(forward.index == level[0].index);
              CHECK(reference_reduce(HostArray{v.data(), n, dtype_of<T>}, op).index == forward.index);
            }
          });
        }
        for (Op op : fold_ops) {
          CAPTURE(op);
          const auto kind = [&](T r) -> double {
            if constexpr (is_float_v<T>)
              if (op == Op::Sum) return std::isnan(r) ? 2.0 : std::isinf(r) ? static_cast<double>(r) : 0.0;
            return static_cast<double>(r);
          };
          const auto same = [&](T a, T b) { return kind(a) == kind(b) || (kind(a) != kind(a) && kind(b) != kind(b)); };
          T forward = identity<T>(op), backward = identity<T>(op);
          for (std::uint64_t i = 0; i < n; ++i) {
            forward = combine(op, forward, v[i]);
            backward = combine(op, backward, v[n - 1 - i]);
          }
          std::vector<T> level(v.begin(), v.end());
          while (level.size() > 1) {
            std::vector<T> next;
            for (std::size_t i = 0; i < level.size(); i += 2)
              next.push_back(i + 1 < level.size() ? combine(op, level[i], level[i + 1]) : level[i]);
            level = std::move(next);
          }
          CHECK(same(forward, backward));
          CHECK(same(forward, level[0]));
        }
      }
  });
}

TEST_CASE("check_result: integers exact, float sums within the order's bound") {
  Reference ref;
  ref.value = Scalar::of<std::int64_t>(5);
  ref.op = Op::Sum;
  ref.n = 3;
  Result r;
  r.value = Scalar::of<std::int64_t>(5);
  CHECK(check_result(r, ref).ok);
  r.value = Scalar::of<std::int64_t>(6);
  CHECK_FALSE(check_result(r, ref).ok);
  r.value = Scalar::of<std::int32_t>(5);
  CHECK_FALSE(check_result(r, ref).ok);  // wrong result type

  ref.value = Scalar::of(1.0f);
  ref.magnitude = 1000.0;
  ref.n = 1000;
  ref.type = DType::F32;
  r.rounding_depth = 10;
  r.value = Scalar::of(1.0f + 1000.0f * 11 * 0x1.0p-24f * 0.9f);
  CHECK(check_result(r, ref).ok);
  r.value = Scalar::of(1.0f + 1000.0f * 11 * 0x1.0p-24f * 1.2f);
  CHECK_FALSE(check_result(r, ref).ok);
  r.value = Scalar::of(std::numeric_limits<float>::quiet_NaN());
  CHECK_FALSE(check_result(r, ref).ok);
}

TEST_CASE("float sum reference is the correctly rounded exact sum") {
  const std::vector<double> x{1e300, 1.0, -1e300};
  CHECK(reference_reduce(HostArray::of(std::span<const double>(x)), Op::Sum).value.f == 1.0);
  const std::vector<float> y{16777216.0f, 1.0f, 1.0f};  // 2^24 + 2: a float sum in order gives 2^24
  CHECK(reference_reduce(HostArray::of(std::span<const float>(y)), Op::Sum).value.f == 16777218.0);
}

TEST_CASE("i32 sum reference: wide exact, native wraps") {
  const std::vector<std::int32_t> x(4, 1 << 30);
  const auto view = HostArray::of(std::span<const std::int32_t>(x));
  CHECK(reference_reduce(view, Op::Sum).value.i == (std::int64_t(1) << 32));
  CHECK(reference_reduce(view, Op::Sum, Accumulator::Native).value.i == 0);
}

TEST_CASE("exact comparison: bits, and the ulp distance when they differ") {
  CHECK(ulp_distance(Scalar::of(1.0f), Scalar::of(1.0f)) == 0);
  CHECK(ulp_distance(Scalar::of(1.0f), Scalar::of(std::nextafter(1.0f, 2.0f))) == 1);
  CHECK(ulp_distance(Scalar::of(-0.0), Scalar::of(0.0)) == 1);
  CHECK(ulp_distance(Scalar::of(-std::numeric_limits<double>::denorm_min()),
                     Scalar::of(std::numeric_limits<double>::denorm_min())) == 3);
  Reference ref;
  ref.value = Scalar::of(1.0);
  ref.op = Op::Sum;
  ref.type = DType::F64;
  ref.magnitude = 1e6;
  ref.n = 10;
  Result r;
  r.value = Scalar::of(std::nextafter(1.0, 2.0));
  CHECK(check_result(r, ref).ok);  // within the rounding bound
  const Agreement exact = check_result(r, ref, true);
  CHECK_FALSE(exact.ok);
  CHECK(exact.detail.find("differs by 1 ulp") != std::string::npos);
  r.value = Scalar::of(1.0);
  CHECK(check_result(r, ref, true).ok);
}

TEST_CASE("sizes in bytes: parse_bytes and format_bytes") {
  CHECK(xr::parse_bytes("4096") == 4096);
  CHECK(xr::parse_bytes("256K") == 256u << 10);
  CHECK(xr::parse_bytes("256M") == 256u << 20);
  CHECK(xr::parse_bytes("64MiB") == 64u << 20);
  CHECK(xr::parse_bytes("1.5G") == 3ull << 29);
  CHECK(xr::parse_bytes("2gb") == 2ull << 30);
  for (const char* bad : {"", "0", "-1", "1.5", "12Q", "M", "1e30T"})
    CHECK_THROWS_AS(xr::parse_bytes(bad), xr::InvalidArgument);
  CHECK(xr::format_bytes(512) == "512 B");
  CHECK(xr::format_bytes(64u << 20) == "64.0 MiB");
  CHECK(xr::format_bytes(3ull << 29) == "1.5 GiB");
}

TEST_CASE("chunk_elements: the default, a device memory limit, and explicit chunks") {
  xr::RunOptions o;
  CHECK(xr::chunk_elements(o, 4, 3) == (64u << 20) / 4);
  o.device_mem_limit = 48u << 20;
  CHECK(xr::chunk_elements(o, 4, 3) == (16u << 20) / 4);
  o.device_mem_limit = 8;
  CHECK_THROWS_WITH_AS(xr::chunk_elements(o, 4, 3), doctest::Contains("cannot hold 3 chunks"), xr::InvalidArgument);
  o.device_mem_limit = 0;
  o.chunk_elements = 7;
  CHECK(xr::chunk_elements(o, 8, 3) == 7);
  o.device_mem_limit = 100;
  CHECK_THROWS_WITH_AS(xr::chunk_elements(o, 8, 3), doctest::Contains("more than the device memory limit"),
                       xr::InvalidArgument);
}

TEST_CASE("a plain float sum that overflows where the exact sum is finite is an overflow, not an error of 0") {
  const std::vector<float> x = {3.4e38f, 3.4e38f, -3.4e38f};
  const Reference ref = reference_reduce(HostArray::of(std::span<const float>(x)), Op::Sum);
  REQUIRE(ref.value.f == doctest::Approx(3.4e38));
  for (const double plain : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN()}) {
    Result r;
    r.value = Scalar::of(static_cast<float>(plain));
    r.n = 3;
    r.type = DType::F32;
    r.rounding_depth = 2;
    const Agreement a = check_result(r, ref);
    CHECK_FALSE(a.ok);
    CHECK(a.overflow);
    CHECK(std::isinf(a.error));
    CHECK(std::isinf(a.bound));
    CHECK_MESSAGE(a.detail.find("overflowed") != std::string::npos, a.detail);
    CHECK_MESSAGE(a.detail.find("--exact") != std::string::npos, a.detail);
  }
  // A special value the exact sum shares is no overflow.
  const std::vector<float> y = {std::numeric_limits<float>::infinity(), 1.0f};
  const Reference inf_ref = reference_reduce(HostArray::of(std::span<const float>(y)), Op::Sum);
  Result r;
  r.value = Scalar::of(std::numeric_limits<float>::infinity());
  r.type = DType::F32;
  const Agreement same = check_result(r, inf_ref);
  CHECK(same.ok);
  CHECK_FALSE(same.overflow);
}

TEST_CASE("float products whose partial products overflow in some orders: NaN, inf, 0 or the product") {
  const auto product_of = [](const Reference& ref, double value) {
    Result r;
    r.value = ref.value.type == DType::F32 ? Scalar::of(static_cast<float>(value)) : Scalar::of(value);
    r.n = ref.n;
    r.type = ref.type;
    r.op = Op::Prod;
    return check_result(r, ref);
  };
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // 3e38 x 3e38 x 0: NaN in this order (as NumPy), 0 in the order 3e38 x 0 x 3e38.
  const std::vector<float> f = {3e38f, 3e38f, 0.0f};
  const Reference rf = reference_reduce(HostArray::of(std::span<const float>(f)), Op::Prod);
  CHECK(rf.order_dependent);
  const std::vector<double> d = {1e308, 1e308, 0.0};
  const Reference rd = reference_reduce(HostArray::of(std::span<const double>(d)), Op::Prod);
  CHECK(rd.order_dependent);
  for (const Reference* ref : {&rf, &rd}) {
    for (const double v : {nan, inf, -inf, 0.0, -0.0}) CHECK_MESSAGE(product_of(*ref, v).ok, product_of(*ref, v).detail);
    CHECK_FALSE(product_of(*ref, 5.0).ok);  // no order gives a finite value other than the product
  }
  // A factor below 1: inf in one order, NaN after an underflow to 0 in another, 1 in a third.
  const std::vector<double> mixed = {1e300, 1e300, 1e-300, 1e-300};
  const Reference rm = reference_reduce(HostArray::of(std::span<const double>(mixed)), Op::Prod);
  CHECK(rm.order_dependent);
  CHECK(product_of(rm, 1.0).ok);
  CHECK(product_of(rm, inf).ok);
  CHECK_FALSE(product_of(rm, 1e10).ok);
  // One factor above 1 and the rest at most 1: no partial product passes that factor.
  const std::vector<float> one_large = {std::numeric_limits<float>::max(), 0.5f, -0.75f, 0.0f};
  const Reference rl = reference_reduce(HostArray::of(std::span<const float>(one_large)), Op::Prod);
  CHECK_FALSE(rl.order_dependent);
  CHECK_FALSE(product_of(rl, nan).ok);
  // Every factor at least 1: the product only grows, its overflow is every order's.
  const std::vector<float> growing = {3e38f, 3e38f, 2.0f};
  const Reference rg = reference_reduce(HostArray::of(std::span<const float>(growing)), Op::Prod);
  CHECK_FALSE(rg.order_dependent);
  CHECK(std::isinf(rg.value.f));
  CHECK(product_of(rg, inf).ok);
  CHECK_FALSE(product_of(rg, nan).ok);
  // Far from the range's ends: the product, within its bound, and no special value.
  const std::vector<float> tame = {1e30f, 1e-30f, 0.0f, 3.0f};
  const Reference rt = reference_reduce(HostArray::of(std::span<const float>(tame)), Op::Prod);
  CHECK_FALSE(rt.order_dependent);
  CHECK(product_of(rt, 0.0).ok);
  CHECK_FALSE(product_of(rt, nan).ok);
  // Per segment: only the segment that can overflow is order-dependent.
  const std::vector<float> both = {3e38f, 3e38f, 0.0f, 2.0f, 0.5f};
  const std::vector<std::int64_t> offsets = {0, 3, 5};
  SegmentLayout layout;
  layout.kind = SegmentKind::Offsets;
  layout.count = offsets.size() - 1;
  layout.offsets = offsets.data();
  const SegmentReference rs = reference_segments(HostArray::of(std::span<const float>(both)), layout, Op::Prod);
  REQUIRE(rs.order_dependent.size() == 2);
  CHECK(rs.order_dependent[0]);
  CHECK_FALSE(rs.order_dependent[1]);
  SegmentedResult got;
  got.kind = SegmentKind::Offsets;
  got.values = HostBuffer(DType::F32, 2);
  got.values.as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  got.values.as<float>()[1] = 1.0f;
  CHECK(check_segments(got, rs, false).ok());
  got.values.as<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(check_segments(got, rs, false).ok());
}

TEST_CASE("f16 and bf16: exact widening, rounding to nearest even, limits and text") {
  // Every f16 widens to float and rounds back to itself (NaNs stay NaN).
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const f16 h = f16::from_bits(static_cast<std::uint16_t>(b));
    const float v = static_cast<float>(h);
    if (std::isnan(v)) CHECK(std::isnan(static_cast<float>(f16(v))));
    else CHECK(f16(v).bits == h.bits);
    const bf16 g = bf16::from_bits(static_cast<std::uint16_t>(b));
    if (!std::isnan(static_cast<float>(g))) CHECK(bf16(static_cast<float>(g)).bits == g.bits);
  }
  // Ties go to even; past the largest finite value lies infinity; below half the smallest
  // subnormal lies zero.
  CHECK(f16(1.0f + 0x1p-11f).bits == f16(1.0f).bits);             // tie: 1.0 is even
  CHECK(f16(1.0f + 3 * 0x1p-11f).bits == f16(1.0f + 0x1p-9f).bits);  // tie: up to the even neighbour
  CHECK(f16(65504.0f).bits == 0x7bff);
  CHECK(f16(65520.0f).bits == 0x7c00);
  CHECK(f16(0x1p-24f).bits == 0x0001);
  CHECK(f16(0x1p-25f).bits == 0x0000);
  CHECK(f16(-0.0f).bits == 0x8000);
  CHECK(bf16(1.0f + 0x1p-8f).bits == bf16(1.0f).bits);
  CHECK(bf16(std::numeric_limits<float>::max()).bits == 0x7f80);  // rounds up to infinity
  CHECK(static_cast<float>(std::numeric_limits<f16>::max()) == 65504.0f);
  CHECK(static_cast<float>(std::numeric_limits<f16>::denorm_min()) == 0x1p-24f);
  CHECK(static_cast<float>(std::numeric_limits<bf16>::lowest()) == -0x1.fep127f);
  // Accumulators: sums and products in f32, min and max in the type itself.
  CHECK(result_dtype(Op::Sum, DType::F16) == DType::F32);
  CHECK(result_dtype(Op::Prod, DType::BF16) == DType::F32);
  CHECK(result_dtype(Op::Max, DType::F16) == DType::F16);
  CHECK(parse_dtype("half") == DType::F16);
  CHECK(parse_dtype("bfloat16") == DType::BF16);
  // Text: the shortest decimal that reads back to the same value.
  CHECK(Scalar::of(f16(0.1f)).to_string() == "0.1");
  CHECK(Scalar::of(bf16(3.0f)).to_string() == "3");
  CHECK(Scalar::of(f16::from_bits(0x0001)).to_string() == "6e-08");
  CHECK(Scalar::of(-std::numeric_limits<f16>::infinity()).to_string() == "-inf");
}

TEST_CASE("f16 and bf16: the native accumulator is refused with one clear error") {
  auto r = make_reducer("omp");
  const HostBuffer x = generate(DType::F16, 10, Dist::Uniform, 1);
  RunOptions native;
  native.accumulator = Accumulator::Native;
  CHECK_THROWS_WITH_AS(r->reduce(x.view(), Op::Sum, native), doctest::Contains("accumulate in f32"), InvalidArgument);
}

namespace {

// Host memory read like a file: memory() is null, so every reader takes the streamed path.
class StreamedArray final : public ChunkSource {
 public:
  explicit StreamedArray(HostArray a) : a_(a) {}
  DType type() const override { return a_.type; }
  std::uint64_t size() const override { return a_.n; }
  std::string name() const override { return "streamed array"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override {
    REQUIRE(first + count <= a_.n);
    std::memcpy(dst, static_cast<const unsigned char*>(a_.data) + first * size_of(a_.type), count * size_of(a_.type));
  }

 private:
  HostArray a_;
};

void check_same_reference(const SegmentReference& want, const SegmentReference& got, const std::string& what) {
  INFO(what);
  REQUIRE(got.values.type() == want.values.type());
  REQUIRE(got.values.size() == want.values.size());
  if (want.values.size()) CHECK(std::memcmp(got.values.data(), want.values.data(), want.values.bytes()) == 0);
  CHECK(got.indices == want.indices);
  REQUIRE(got.maxima.size() == want.maxima.size());
  if (want.maxima.size()) CHECK(std::memcmp(got.maxima.data(), want.maxima.data(), want.maxima.bytes()) == 0);
  // Sums of |x| in the same order (no part reaches 2^20 here), |product| NaN where the product is.
  REQUIRE(got.magnitude.size() == want.magnitude.size());
  if (!want.magnitude.empty())
    CHECK(std::memcmp(got.magnitude.data(), want.magnitude.data(), want.magnitude.size() * sizeof(double)) == 0);
  CHECK(got.order_dependent == want.order_dependent);
  CHECK(got.length == want.length);
}

}  // namespace

TEST_CASE("reference_segments of a streamed source equals the in-memory reference, in any chunk") {
  // Rows with gaps (stride 60), columns of a strided C array, and CSR segments with empty ones and
  // one longer than every chunk below; chunks of 3 elements to whole inputs, so that segments split,
  // columns go one per band or all in one, and tiles span whole rows or a band's part of them.
  // A C array 700 x 3 makes tiles of whole rows, several to a column; a Fortran one, strided columns.
  const MatrixShape shapes[] = {{37, 53, 60, Order::C}, {700, 3, 0, Order::C}, {53, 37, 60, Order::Fortran}};
  const std::vector<std::int64_t> offsets{2, 2, 9, 9, 10, 700, 703, 1500, 1500, 2210};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::U8, DType::I64}) {
    for (Dist dist : {Dist::Uniform, Dist::Special}) {
      const HostBuffer data = generate(t, 2220, dist, 11);
      StreamedArray source(data.view());
      for (Op op : unmapped_ops) {
        for (int mode = 0; mode < 7; ++mode) {
          SegmentLayout layout;
          if (mode < 6) {
            layout = axis_layout(shapes[mode / 2], mode % 2);
          } else {
            layout.kind = SegmentKind::Offsets;
            layout.count = offsets.size() - 1;
            layout.offsets = offsets.data();
          }
          const SegmentReference want = reference_segments(data.view(), layout, op);
          for (std::uint64_t chunk_bytes : {std::uint64_t{3} * size_of(t), std::uint64_t{4096}, std::uint64_t{1} << 20}) {
            const SegmentReference got = reference_segments(source, layout, op, Accumulator::Wide, chunk_bytes);
            check_same_reference(want, got, std::string(to_string(t)) + " " + std::string(to_string(dist)) + " " +
                                                std::string(to_string(op)) + " " + std::string(to_string(layout.kind)) +
                                                ", chunks of " + std::to_string(chunk_bytes) + " bytes");
          }
        }
      }
    }
  }
  // The native accumulator, and a layout past the input's end.
  const HostBuffer ints = generate(DType::I32, 1000, Dist::Uniform, 3);
  StreamedArray source(ints.view());
  const SegmentLayout rows = axis_layout({10, 100}, 1);
  check_same_reference(reference_segments(ints.view(), rows, Op::Sum, Accumulator::Native),
                       reference_segments(source, rows, Op::Sum, Accumulator::Native, 64), "i32 native sums");
  CHECK_THROWS_AS(reference_segments(source, axis_layout({11, 100}, 0), Op::Max), InvalidArgument);
  // Rows of no columns, whatever their stride, read nothing.
  const HostArray nothing{nullptr, 0, DType::F32};
  StreamedArray empty(nothing);
  for (Op op : {Op::Sum, Op::ArgMax}) {
    const SegmentLayout empty_rows = axis_layout({5, 0, 3}, 1);
    check_same_reference(reference_segments(nothing, empty_rows, op),
                         reference_segments(empty, empty_rows, op, Accumulator::Wide, 8), "rows of no columns");
  }
}
