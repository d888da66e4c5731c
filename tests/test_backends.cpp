// The cross-backend suite: one test body for every backend. Run as
// `xr_test_backends --xr-backend=NAME`; it exits 77 (skipped) with the reason when NAME is not
// compiled in or has no usable device. A new backend joins by registering in core's registry.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend_suite.hpp"
#include "xreduce/reference.hpp"
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

// Elements per chunk of a streamed run: 1000 (several chunks, none aligned to a work-group), and
// 2^16 from a million elements up (17 chunks for 2^20 + 7, the last of 7 elements), where chunks
// of 1000 would make a call a thousand launches that test nothing more.
std::uint64_t stream_chunk(std::uint64_t n) { return n < (std::uint64_t(1) << 20) ? 1000 : 65536; }

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

// Sizes of a million elements and more take each type with one op, the op turning with the type
// and the size: every type and every op meets every large size, and every (op, type) pair every
// smaller one, at a quarter of the time of every pair at every size.
bool large_pair(std::uint64_t n, Op op, DType t) {
  if (n < (std::uint64_t(1) << 20)) return true;
  const std::size_t turn = static_cast<std::size_t>(std::bit_width(n));
  return (static_cast<std::size_t>(t) + turn) % kOpCount == static_cast<std::size_t>(op);
}

TEST_CASE("every kernel x op x type x size agrees with the host reference") {
  auto r = reducer();
  for (DType t : all_dtypes) {
    for (std::uint64_t n : kSizes) {
      std::map<Dist, HostBuffer> inputs;
      for (Op op : all_ops) {
        if (n == 0 && !op_info(op).empty_has_value) continue;  // no value: EmptyInput
        if (!large_pair(n, op, t)) continue;
        const Dist d = dist_for(op);
        if (!inputs.count(d)) inputs.emplace(d, generate(t, n, d, n * 31 + static_cast<int>(t)));
        check_all_kernels(*r, inputs.at(d), op);
      }
    }
  }
}

TEST_CASE("min, max and the pair ops of an empty input throw EmptyInput on every kernel") {
  auto r = reducer();
  const HostBuffer empty(DType::F32, 0);
  for (const auto& k : reducing_kernels(*r))
    for (Op op : {Op::Min, Op::Max, Op::ArgMin, Op::ArgMax, Op::MinMax, Op::NanMin, Op::NanMax})
      if (k.supports(op, DType::F32)) {
        RunOptions o;
        o.kernel = k.name;
        CHECK_THROWS_AS(r->reduce(empty.view(), op, o), EmptyInput);
      }
}

// The float sum's identity is -0: a sum whose terms are all -0 is -0 on every kernel, in plain
// and exact mode, resident and streamed; the empty sum is +0. Bits, not values, are compared.
TEST_CASE("a sum of -0 terms is -0 and the empty sum is +0, on every kernel and mode") {
  auto r = reducer();
  for (DType t : {DType::F32, DType::F64}) {
    for (std::uint64_t n : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(3000), (std::uint64_t(1) << 20) + 7}) {
      HostBuffer zeros(t, n);
      for (std::uint64_t i = 0; i < n; ++i) {
        if (t == DType::F32) zeros.as<float>()[i] = -0.0f;
        else zeros.as<double>()[i] = -0.0;
      }
      const Scalar want = t == DType::F32 ? Scalar::of(n ? -0.0f : 0.0f) : Scalar::of(n ? -0.0 : 0.0);
      CHECK(reference_reduce(zeros.view(), Op::Sum).value.same_bits(want));
      for (const auto& k : reducing_kernels(*r)) {
        if (!k.supports(Op::Sum, t)) continue;
        for (bool exact : {false, true}) {
          if (exact && !k.exact) continue;
          for (HostPath path : {HostPath::Resident, HostPath::Stream}) {
            RunOptions o;
            o.kernel = k.name;
            o.exact = exact;
            o.host_path = path;
            o.chunk_elements = stream_chunk(n);  // streamed: several chunks, combined in order
            const Result res = r->reduce(zeros.view(), Op::Sum, o);
            const std::string mode = std::string(exact ? " exact" : "") + (path == HostPath::Stream ? " streamed" : " resident");
            CHECK_MESSAGE(res.value.same_bits(want), where(k, Op::Sum, t, n), mode, ": got ", res.value.to_string());
            CHECK_MESSAGE(check_result(res, reference_reduce(zeros.view(), Op::Sum), exact).ok, where(k, Op::Sum, t, n));
          }
        }
      }
    }
  }
  // The cross-check treats the sign of a zero sum as part of the value.
  HostBuffer one(DType::F32, 1);
  one.as<float>()[0] = -0.0f;
  Result plus_zero;
  plus_zero.value = Scalar::of(0.0f);
  plus_zero.rounding_depth = 1;
  CHECK_FALSE(check_result(plus_zero, reference_reduce(one.view(), Op::Sum)).ok);
}

TEST_CASE("heavy cancellation stays within the bound of each summation order") {
  auto r = reducer();
  for (DType t : all_dtypes)
    for (std::uint64_t n : {std::uint64_t(1001), std::uint64_t(1) << 20})
      check_all_kernels(*r, generate(t, n, Dist::Cancel, 11), Op::Sum);
}

// Every integer type narrower than 64 bits, near both of its limits: the wide sum (64 bits) is
// exact far past the type's range (2^24 + 3 bytes of 255 sum to more than 2^32), the native one
// wraps in the type.
TEST_CASE("sums of narrow integers: the wide accumulator is exact past the type's range, the native one wraps") {
  auto r = reducer();
  for (DType t : all_dtypes) {
    if (!accumulator_matters(Op::Sum, t)) continue;
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      using L = std::numeric_limits<T>;
      for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(5), std::uint64_t(4099), (std::uint64_t(1) << 24) + 3}) {
        for (T near : {L::max(), L::lowest()}) {
          if (near == 0) continue;  // unsigned: the low end sums to nothing
          HostBuffer x(t, n);
          for (std::uint64_t i = 0; i < n; ++i)
            x.as<T>()[i] = static_cast<T>(near > 0 ? near - static_cast<T>(i % 3) : near + static_cast<T>(i % 3));
          CAPTURE(to_string(t));
          CAPTURE(n);
          check_all_kernels(*r, x, Op::Sum, Accumulator::Wide);
          // The native sum of bytes is a compare-and-swap loop per element on the atomic rungs:
          // slow at 2^24, and wrapped many times over at 4099 already.
          if (n < 5000) check_all_kernels(*r, x, Op::Sum, Accumulator::Native);
        }
      }
    });
  }
}

TEST_CASE("u64 sums wrap modulo 2^64 and min and max compare as unsigned near 2^64") {
  auto r = reducer();
  HostBuffer x(DType::U64, 4099);
  auto* v = x.as<std::uint64_t>();
  for (std::uint64_t i = 0; i < x.size(); ++i) v[i] = ~std::uint64_t{0} - i % 11;  // 2^64 - 1 - (i % 11)
  v[3000] = 0;
  for (Op op : {Op::Sum, Op::Min, Op::Max, Op::ArgMin, Op::ArgMax, Op::MinMax}) check_all_kernels(*r, x, op);
  const Reference max = reference_reduce(x.view(), Op::Max);
  CHECK(max.value.as<std::uint64_t>() == ~std::uint64_t{0});
  CHECK(max.value.to_string() == "18446744073709551615");
  CHECK(reference_reduce(x.view(), Op::Min).value.as<std::uint64_t>() == 0);
}

TEST_CASE("integer products wrap the same way on every kernel") {
  auto r = reducer();
  for (DType t : all_dtypes) {
    if (is_float(t)) continue;
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
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(33), std::uint64_t(4097), std::uint64_t(1) << 20}) {
      for (std::uint64_t at : {std::uint64_t(0), n / 2, n - 1}) {
        auto x = generate(t, n, Dist::Uniform, at + 1);
        visit_dtype(t, [&](auto zero) {
          using T = decltype(zero);
          x.as<T>()[at] = std::numeric_limits<T>::quiet_NaN();
        });
        for (Op op : {Op::Min, Op::Max, Op::Sum, Op::ArgMin, Op::ArgMax, Op::MinMax}) check_all_kernels(*r, x, op);
      }
      auto y = generate(t, n, Dist::Uniform, 5);
      visit_dtype(t, [&](auto zero) {
        using T = decltype(zero);
        y.as<T>()[n - 1] = -std::numeric_limits<T>::infinity();
      });
      for (Op op : {Op::Sum, Op::Min, Op::Max, Op::ArgMin, Op::ArgMax, Op::MinMax}) check_all_kernels(*r, y, op);
    }
  }
}

// The pair ops pick the first of equal values and the first NaN, whatever splits the input:
// ties at both ends and inside, NaN first, last and only, infinities, -0 beside +0, subnormals
// and one element, in every float type, on every kernel that declares the op.
TEST_CASE("argmin, argmax and minmax: ties, NaN, infinities, signed zeros and subnormals") {
  auto r = reducer();
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
      const T tiny = std::numeric_limits<T>::denorm_min();
      for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(2), std::uint64_t(37), std::uint64_t(4099),
                              (std::uint64_t(1) << 20) + 5}) {
        const auto fill = [&](T v) {
          HostBuffer x(t, n);
          for (std::uint64_t i = 0; i < n; ++i) x.template as<T>()[i] = v;
          return x;
        };
        std::vector<HostBuffer> cases;
        cases.push_back(fill(T(1.0f)));  // every element ties: index 0
        cases.push_back(fill(nan));      // only NaN
        cases.push_back(fill(-inf));
        for (std::uint64_t at : {std::uint64_t(0), n / 3, n - 1}) {
          auto x = generate(t, n, Dist::Uniform, at + 3);
          x.template as<T>()[at] = nan;  // first, inside, last
          x.template as<T>()[n - 1 - (n - 1 - at) / 2] = nan;  // a second NaN after it
          cases.push_back(std::move(x));
          auto y = fill(T(0.0f));
          y.template as<T>()[at] = T(-0.0f);  // -0 ties with +0: the first zero wins
          y.template as<T>()[n / 2] = tiny;
          y.template as<T>()[n - 1 - at / 2] = -tiny;
          cases.push_back(std::move(y));
          auto z = generate(t, n, Dist::Uniform, at + 7);
          z.template as<T>()[at] = inf;  // the extremes at both ends, repeated
          z.template as<T>()[n - 1 - at] = -inf;
          z.template as<T>()[(at + n / 2) % n] = inf;
          cases.push_back(std::move(z));
        }
        for (const auto& x : cases)
          for (Op op : pair_ops) check_all_kernels(*r, x, op);
      }
    });
  }
}

TEST_CASE("extreme integers: min and max find the type limits, at either end or inside") {
  auto r = reducer();
  for (DType t : all_dtypes) {
    if (is_float(t)) continue;
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(2), std::uint64_t(3001)}) {
      for (const auto& ends : {std::pair{n / 3, n - 1}, std::pair{n - 1, std::uint64_t(0)}}) {
        const std::uint64_t low_at = ends.first, high_at = ends.second;  // captured below: no bindings
        HostBuffer x(t, n);
        visit_dtype(t, [&](auto zero) {
          using T = decltype(zero);
          for (std::uint64_t i = 0; i < n; ++i) x.as<T>()[i] = static_cast<T>(i % 100);
          x.as<T>()[low_at] = std::numeric_limits<T>::lowest();
          x.as<T>()[high_at] = std::numeric_limits<T>::max();
        });
        CAPTURE(to_string(t));
        for (Op op : all_ops) check_all_kernels(*r, x, op);
      }
    }
  }
}

// The mapped ops on inputs that test their maps: NaN (skipped by the nan ops, a nonzero to
// count_nonzero, NaN in sumsq and asum), -0 (|-0| and (-0)^2 are +0; nansum keeps the sum's -0),
// infinities, all-NaN inputs (nanmin and nanmax give NaN, as NumPy), -inf beside NaN (the true
// extreme, though it equals the fold's identity), integer extremes (|lowest| and squares wrap);
// resident and streamed (stream_chunk).
HostBuffer filled(DType t, const std::vector<double>& values, std::uint64_t n) {
  HostBuffer x(t, n);
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t i = 0; i < n; ++i) x.as<T>()[i] = static_cast<T>(static_cast<compute_t<T>>(values[i % values.size()]));
  });
  return x;
}

TEST_CASE("mapped ops: NaN, -0, infinities, all-NaN and wrapping inputs on every kernel") {
  auto r = reducer();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<std::vector<double>> float_inputs = {
      {nan}, {-inf, nan, nan}, {nan, inf}, {-0.0}, {-0.0, nan}, {3, -4, nan, -0.0, 1.5, 0, -7.25}, {inf, -inf, 2}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::U8, DType::I64}) {
    std::vector<HostBuffer> inputs;
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(5), std::uint64_t(3001)}) {
      if (is_float(t))
        for (const auto& v : float_inputs) inputs.push_back(filled(t, v, n));
      inputs.push_back(generate(t, n, Dist::Special, n));
    }
    inputs.push_back(generate(t, (std::uint64_t(1) << 20) + 7, Dist::Special, 7));
    for (const HostBuffer& x : inputs) {
      for (Op op : mapped_ops) {
        const Reference ref = reference_reduce(x.view(), op);
        for (const auto& k : reducing_kernels(*r)) {
          if (!k.supports(op, t)) continue;
          for (HostPath path : {HostPath::Resident, HostPath::Stream}) {
            RunOptions o;
            o.kernel = k.name;
            o.host_path = path;
            o.chunk_elements = stream_chunk(x.size());
            const Result res = r->reduce(x.view(), op, o);
            const Agreement a = check_result(res, ref);
            CHECK_MESSAGE(a.ok, where(k, op, t, x.size()), path == HostPath::Stream ? " streamed" : "", ": ", a.detail);
          }
        }
      }
    }
  }
}

TEST_CASE("mapped ops: what NumPy gives on small inputs") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto r = reducer();
  const auto value = [&](Op op, DType t, const std::vector<double>& v) {
    return r->reduce(filled(t, v, v.size()).view(), op).value;
  };
  CHECK(std::isnan(value(Op::NanMax, DType::F32, {nan, nan}).f));
  CHECK(std::isnan(value(Op::NanMin, DType::F64, {nan}).f));
  CHECK(value(Op::NanMax, DType::F32, {-inf, nan}).f == -inf);
  CHECK(value(Op::NanMin, DType::F32, {nan, inf}).f == inf);
  CHECK(value(Op::NanMin, DType::F16, {nan, 2, -3}).f == -3);
  CHECK(value(Op::NanSum, DType::F64, {nan, 1.5, nan, 2}).f == 3.5);
  CHECK(value(Op::NanSum, DType::F64, {nan, nan}).same_bits(Scalar::of(0.0)));  // a NaN counts as +0, as in NumPy
  CHECK(value(Op::NanSum, DType::F32, {-0.0, nan}).same_bits(Scalar::of(0.0f)));
  CHECK(value(Op::NanSum, DType::F32, {-0.0, -0.0}).same_bits(Scalar::of(-0.0f)));
  CHECK(value(Op::ASum, DType::F32, {-0.0, -0.0}).same_bits(Scalar::of(0.0f)));
  CHECK(value(Op::ASum, DType::I32, {-3, 4, -2147483648.0}).i == 2147483648 + 7);
  CHECK(value(Op::SumSq, DType::F64, {3, -4}).f == 25);
  CHECK(value(Op::SumSq, DType::BF16, {3, -4}).same_bits(Scalar::of(25.0f)));  // f32, as sum
  CHECK(std::isnan(value(Op::SumSq, DType::F32, {1, nan}).f));
  CHECK(value(Op::CountNonzero, DType::F32, {0, -0.0, nan, 1, -2}).same_bits(Scalar::of<std::int64_t>(3)));
  CHECK(value(Op::CountNonzero, DType::U8, {0, 255, 7}).same_bits(Scalar::of<std::int64_t>(2)));
  CHECK(r->reduce(HostBuffer(DType::F32, 0).view(), Op::CountNonzero).value.same_bits(Scalar::of<std::int64_t>(0)));
  CHECK(r->reduce(HostBuffer(DType::F32, 0).view(), Op::SumSq).value.same_bits(Scalar::of(0.0f)));
  RunOptions exact;
  exact.exact = true;
  CHECK_THROWS_WITH_AS(r->reduce(filled(DType::F32, {1}, 1).view(), Op::SumSq, exact), doctest::Contains("no exact mode"),
                       InvalidArgument);
  // mean: the sum over the count; integers in f64 (no wrap), nothing NaN (+NaN, as NumPy's).
  CHECK(value(Op::Mean, DType::F32, {1, 2, 3, 4}).same_bits(Scalar::of(2.5f)));
  CHECK(value(Op::Mean, DType::F16, {1, 2}).same_bits(Scalar::of(1.5f)));
  CHECK(value(Op::Mean, DType::I32, {1, 2}).same_bits(Scalar::of(1.5)));
  CHECK(value(Op::Mean, DType::U8, {255, 255, 255, 1}).same_bits(Scalar::of(191.5)));
  CHECK(value(Op::Mean, DType::I64, {0x1p62, 0x1p62, 0x1p62}).same_bits(Scalar::of(0x1p62)));
  CHECK(std::isnan(value(Op::Mean, DType::F64, {1, nan}).f));
  const Scalar none = r->reduce(HostBuffer(DType::F64, 0).view(), Op::Mean).value;
  CHECK((std::isnan(none.f) && !std::signbit(none.f)));
  CHECK(std::isnan(r->reduce(HostBuffer(DType::I32, 0).view(), Op::Mean).value.f));
  // Exact: the exact sum over the count, rounded once; the plain sum of these overflows.
  const HostBuffer big = filled(DType::F64, {1e308, 1e308, 1e308}, 3);
  CHECK(r->reduce(big.view(), Op::Mean, exact).value.same_bits(Scalar::of(1e308)));
  CHECK(std::isinf(r->reduce(big.view(), Op::Mean).value.f));
  CHECK(r->reduce(filled(DType::F32, {1, 0x1p-24f, 0x1p-24f}, 3).view(), Op::Mean, exact).value.same_bits(
      Scalar::of(static_cast<float>((1 + 0x1p-23) / 3))));
  CHECK_THROWS_WITH_AS(r->reduce(filled(DType::I32, {1}, 1).view(), Op::Mean, exact),
                       doctest::Contains("the mean of i32 sums its values in f64"), InvalidArgument);
  // any and all: count_nonzero's count tested, 1 or 0 in i64; NaN is nonzero, -0 is zero; any of
  // nothing 0, all of nothing 1 (as NumPy's).
  const Scalar yes = Scalar::of<std::int64_t>(1), no = Scalar::of<std::int64_t>(0);
  CHECK(value(Op::Any, DType::F32, {0, -0.0}).same_bits(no));
  CHECK(value(Op::Any, DType::F32, {0, nan, -0.0}).same_bits(yes));
  CHECK(value(Op::All, DType::F64, {1, nan, -2}).same_bits(yes));
  CHECK(value(Op::All, DType::F16, {1, -0.0, 3}).same_bits(no));
  CHECK(value(Op::Any, DType::U8, {0, 0, 255}).same_bits(yes));
  CHECK(value(Op::All, DType::I64, {-1, 0x1p62, 1}).same_bits(yes));
  CHECK(value(Op::All, DType::I8, {-128, 0}).same_bits(no));
  CHECK(r->reduce(HostBuffer(DType::F32, 0).view(), Op::Any).value.same_bits(no));
  CHECK(r->reduce(HostBuffer(DType::U8, 0).view(), Op::All).value.same_bits(yes));
  CHECK_THROWS_WITH_AS(r->reduce(filled(DType::F32, {1}, 1).view(), Op::All, exact), doctest::Contains("no exact mode"),
                       InvalidArgument);
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


// ---- streamed inputs (HostPath::Stream, Reducer::reduce(ChunkSource&)) -------------------------

namespace {

// A host array that hides its memory, so that every backend reads it chunk by chunk, as it
// reads a file (host backends otherwise reduce host memory in place).
class HiddenArray final : public ChunkSource {
 public:
  explicit HiddenArray(HostArray a) : inner_(a) {}
  DType type() const override { return inner_.type(); }
  std::uint64_t size() const override { return inner_.size(); }
  std::string name() const override { return "hidden host array"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override {
    ++reads;
    inner_.read(first, count, dst);
  }
  int reads = 0;

 private:
  ArraySource inner_;
};

// Integers, min and max must equal the unchunked result bit for bit; float sums and products
// must stay within the bound of their rounding depth; exact sums must equal the reference.
void expect_same_as_whole(const Result& chunked, const Result& whole, const Reference& ref, bool exact,
                          const std::string& what) {
  const Agreement a = check_result(chunked, ref, exact);
  CHECK_MESSAGE(a.ok, what, ": ", a.detail);
  const Op fold = fold_of(chunked.op);
  const bool rounding = is_float(chunked.value.type) && (fold == Op::Sum || fold == Op::Prod) && !exact;
  if (!rounding)
    CHECK_MESSAGE(chunked.value.same_bits(whole.value), what, ": chunked ", chunked.value.to_string(), " vs whole ",
                  whole.value.to_string());
  CHECK_MESSAGE(chunked.index == whole.index, what, ": index ", chunked.index, " vs whole ", whole.index);
  if (chunked.op == Op::MinMax) CHECK_MESSAGE(chunked.maximum.same_bits(whole.maximum), what);
}

RunOptions whole_options(bool exact) {
  RunOptions o;
  o.exact = exact;
  o.host_path = HostPath::Resident;  // device backends: one copy, one reduction; host: in place
  return o;
}

}  // namespace

TEST_CASE("streamed chunks: boundaries at awkward places, last chunks of one element, misaligned starts") {
  auto r = reducer();
  const KernelInfo autok = r->kernel("auto");
  // (n, elements per chunk): one chunk of one element, chunks that do not divide n, a last
  // chunk of one element, a chunk larger than n, and many chunks.
  const std::pair<std::uint64_t, std::uint64_t> cases[] = {
      {1, 1}, {7, 1}, {7, 3}, {1000, 7}, {4097, 1000}, {4097, 4096}, {100003, 4096}, {100003, 100003}, {100003, 100004}};
  for (DType t : all_dtypes) {
    for (Op op : all_ops) {
      if (!autok.supports(op, t)) continue;
      for (const auto& [n, chunk] : cases) {
        // One element of padding in front: every chunk starts one element past where it would.
        const HostBuffer padded = generate(t, n + 1, dist_for(op), n * 7 + static_cast<int>(t));
        const HostArray view{static_cast<const unsigned char*>(padded.view().data) + size_of(t), n, t};
        const Reference ref = reference_reduce(view, op);
        for (bool exact : {false, true}) {
          if (exact && !exact_applies(op, t)) continue;
          const Result whole = r->reduce(view, op, whole_options(exact));
          RunOptions o;
          o.exact = exact;
          o.chunk_elements = chunk;
          HiddenArray hidden(view);
          const std::string what = g_backend + " " + std::string(to_string(op)) + " " + std::string(to_string(t)) +
                                   " n=" + std::to_string(n) + " chunk=" + std::to_string(chunk) +
                                   (exact ? " exact" : "");
          const Result streamed = r->reduce(hidden, op, o);
          const std::uint64_t chunks = (n + chunk - 1) / chunk;
          CHECK_MESSAGE(streamed.chunks == chunks, what);
          CHECK_MESSAGE(hidden.reads == static_cast<int>(chunks), what, ": each element read once");
          CHECK(streamed.n == n);
          CHECK(streamed.total_ms > 0);
          CHECK(streamed.path.rfind("stream: ", 0) == 0);
          expect_same_as_whole(streamed, whole, ref, exact, what);
          // A host array itself: device backends stream it through their pipeline.
          expect_same_as_whole(r->reduce(view, op, o), whole, ref, exact, what + " (host array)");
        }
      }
    }
  }
}

TEST_CASE("streamed chunks: repeats reread the source, and a 64 KiB device memory limit forces many chunks") {
  auto r = reducer();
  const HostBuffer x = generate(DType::I32, 300007, Dist::Uniform, 5);
  const Reference ref = reference_reduce(x.view(), Op::Sum);
  RunOptions o;
  o.device_mem_limit = 64 << 10;
  o.warmup = 1;
  o.repeat = 3;
  HiddenArray hidden(x.view());
  const Result res = r->reduce(hidden, Op::Sum, o);
  CHECK(check_result(res, ref).ok);
  CHECK(res.repeats == 3);
  const bool device = g_backend != "omp";
  // Device backends: 3 slots of (64 KiB / 3) bytes; the host backend ignores the device limit.
  const std::uint64_t per_chunk = device ? (64u << 10) / 3 / 4 : 300007;
  CHECK(res.chunks == (300007 + per_chunk - 1) / per_chunk);
  CHECK(hidden.reads == 4 * static_cast<int>(res.chunks));
  if (device) {
    RunOptions resident = o;
    resident.host_path = HostPath::Resident;
    CHECK_THROWS_WITH_AS(r->reduce(x.view(), Op::Sum, resident), doctest::Contains("does not fit the device memory limit"),
                         InvalidArgument);
    RunOptions tiny;
    tiny.device_mem_limit = 8;
    CHECK_THROWS_WITH_AS(r->reduce(x.view(), Op::Sum, tiny), doctest::Contains("cannot hold 3 chunks"), InvalidArgument);
    RunOptions too_big;
    too_big.device_mem_limit = 1 << 20;
    too_big.chunk_elements = 1 << 20;
    CHECK_THROWS_WITH_AS(r->reduce(x.view(), Op::Sum, too_big), doctest::Contains("more than the device memory limit"),
                         InvalidArgument);
  }
}

TEST_CASE("streamed files: raw and .npy files equal the data in memory; a file that shrinks names the byte") {
  namespace fs = std::filesystem;
  auto r = reducer();
  const fs::path dir = fs::temp_directory_path() / ("xr_stream_" + g_backend + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const HostBuffer x = generate(DType::F64, 250001, Dist::Normal, 8);
  const std::string npy = (dir / "x.npy").string(), raw = (dir / "x.f64").string();
  save_npy(npy, x.view());
  save_raw(raw, x.view());
  RunOptions o;
  o.chunk_elements = 65536;  // 4 chunks, the last of 53,393 elements
  o.exact = true;
  const Reference ref = reference_reduce(x.view(), Op::Sum);
  for (const auto& input : {std::pair{npy, std::optional<DType>{}}, std::pair{raw, std::optional{DType::F64}}}) {
    const std::string& path = input.first;  // not a structured binding: doctest's macros capture it
    FileSource file(path, input.second);
    CHECK(file.size() == x.size());
    const Result res = r->reduce(file, Op::Sum, o);
    CHECK_MESSAGE(res.value.same_bits(ref.value), path, ": ", res.value.to_string());
    CHECK(res.chunks == 4);
    CHECK(reference_reduce(file, Op::Max).value.same_bits(reference_reduce(x.view(), Op::Max).value));
    CHECK(r->reduce(file, Op::Max, o).value.same_bits(reference_reduce(x.view(), Op::Max).value));
  }
  // The file loses its last 1000 bytes after it was opened: the third chunk still reads, the
  // fourth stops where the file now ends.
  FileSource file(npy);
  const std::uint64_t size = fs::file_size(npy);
  fs::resize_file(npy, size - 1000);
  const std::string message =
      "truncated: ends at byte " + std::to_string(size - 1000) + ", expected " + std::to_string(size) + " bytes";
  CHECK_THROWS_WITH_AS(r->reduce(file, Op::Sum, o), doctest::Contains(message.c_str()), InputError);
  // The reducer is usable afterwards.
  CHECK(check_result(r->reduce(x.view(), Op::Sum), ref).ok);
  fs::remove_all(dir);
}

int main(int argc, char** argv) { return xr_suite::run(argc, argv, g_backend, g_options); }
