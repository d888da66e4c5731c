// xr::ExactSum against an independent oracle: GNU MPFR at a precision that holds every exact
// sum here (2400 bits, checked: every MPFR addition must report an exact result), rounded
// once by MPFR (mpfr_get_d / mpfr_get_flt, round to nearest even, subnormals and overflow
// included). Results compare bit for bit; NaN compares by isnan.
#include <doctest/doctest.h>
#include <mpfr.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "xreduce/exact.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

namespace {

constexpr mpfr_prec_t kOraclePrec = 2400;  // >= 2098 bits of range + log2(n) + margin

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
double double_of(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The exact sum in MPFR. Starts at -0 (the identity of IEEE addition, so that a sum of only
// -0 stays -0 while -0 + +0 = +0); the empty sum is +0. MPFR follows IEEE 754 for the signs
// of zero, infinities and NaN.
class Oracle {
 public:
  Oracle() {
    mpfr_init2(acc_, kOraclePrec);
    mpfr_init2(term_, 64);
    mpfr_set_zero(acc_, +1);
  }
  ~Oracle() {
    mpfr_clear(acc_);
    mpfr_clear(term_);
  }
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  template <class T>
  void add_all(const T* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) add(x[i]);
  }
  void add(double x) {
    mpfr_set_d(term_, x, MPFR_RNDN);  // exact: 64 >= 53 bits
    add_term();
  }
  void add(float x) {
    mpfr_set_flt(term_, x, MPFR_RNDN);
    add_term();
  }
  double to_double() {
    REQUIRE(exact_);
    return mpfr_get_d(acc_, MPFR_RNDN);
  }
  float to_float() {
    REQUIRE(exact_);
    return mpfr_get_flt(acc_, MPFR_RNDN);
  }

 private:
  void add_term() {
    if (first_) {
      mpfr_set_zero(acc_, -1);
      first_ = false;
    }
    if (mpfr_add(acc_, acc_, term_, MPFR_RNDN) != 0) exact_ = false;
  }
  mpfr_t acc_, term_;
  bool first_ = true;
  bool exact_ = true;  // every addition was exact (the oracle holds the exact sum)
};

template <class T>
void check_same(T got, T want) {
  if (std::isnan(want)) {
    CHECK(std::isnan(got));
  } else {
    INFO("got " << got << " want " << want);
    CHECK(bits_of(got) == bits_of(want));
  }
}

// Sums x with ExactSum and the oracle; checks both roundings.
template <class T>
void check_against_oracle(const std::vector<T>& x) {
  xr::ExactSum s;
  s.add(x.data(), x.size());
  Oracle o;
  o.add_all(x.data(), x.size());
  INFO("n = " << x.size());
  check_same(s.to_double(), o.to_double());
  check_same(s.to_float(), o.to_float());
}

template <class T>
void check_list(std::initializer_list<T> list, T want) {
  std::vector<T> x(list);
  // want is the sum rounded to T: to_double for double terms, to_float for float terms.
  auto rounded = [](const xr::ExactSum& e) {
    if constexpr (std::is_same_v<T, float>) return e.to_float();
    else return e.to_double();
  };
  xr::ExactSum s;
  s.add(x.data(), x.size());
  check_same(rounded(s), want);
  // The same terms one at a time.
  xr::ExactSum s1;
  for (T v : x) s1.add(v);
  check_same(rounded(s1), want);
  check_against_oracle(x);
}

// Random doubles of every kind: uniform, normal, and random bit patterns over the whole
// finite range (subnormals included).
enum class Dist { Uniform, Normal, AllExponents, Cancelling, Subnormal };

std::vector<double> make_doubles(Dist d, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> x(n);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  std::normal_distribution<double> nor(0.0, 1e3);
  std::uniform_int_distribution<std::uint64_t> u64;
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case Dist::Uniform: x[i] = uni(g); break;
      case Dist::Normal: x[i] = nor(g); break;
      case Dist::AllExponents: {
        std::uint64_t b = u64(g);
        if (((b >> 52) & 0x7ff) == 0x7ff) b ^= std::uint64_t{1} << 62;  // no inf/NaN
        x[i] = double_of(b);
        break;
      }
      case Dist::Cancelling:  // pairs x, -x (shuffled below), a quarter off by one ulp
        if (i % 2 == 1) {
          x[i] = -x[i - 1];
          if (u64(g) % 4 == 0) x[i] = double_of(bits_of(x[i]) ^ 1u);
        } else {
          std::uint64_t b = u64(g) & ~(std::uint64_t{0x7ff} << 52);
          b |= (std::uint64_t{1} + u64(g) % 2046) << 52;
          x[i] = double_of(b);
          if (u64(g) % 16 == 0) x[i] = std::ldexp(uni(g), -900);
        }
        break;
      case Dist::Subnormal: {
        std::uint64_t b = u64(g) & ((std::uint64_t{1} << 52) - 1);
        b |= u64(g) & (std::uint64_t{1} << 63);
        x[i] = double_of(b);
        break;
      }
    }
  }
  if (d == Dist::Cancelling) std::shuffle(x.begin(), x.end(), g);
  return x;
}

std::vector<float> make_floats(Dist d, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> x(n);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::normal_distribution<float> nor(0.0f, 1e3f);
  std::uniform_int_distribution<std::uint32_t> u32;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t b = 0;
    switch (d) {
      case Dist::Uniform: x[i] = uni(g); continue;
      case Dist::Normal: x[i] = nor(g); continue;
      case Dist::AllExponents:
      case Dist::Cancelling:
        b = u32(g);
        if (((b >> 23) & 0xff) == 0xff) b ^= std::uint32_t{1} << 30;
        break;
      case Dist::Subnormal: b = u32(g) & 0x807fffffu; break;
    }
    std::memcpy(&x[i], &b, sizeof b);
    if (d == Dist::Cancelling && i % 2 == 1) {
      b = bits_of(-x[i - 1]);
      if (u32(g) % 4 == 0) b ^= 1u;
      std::memcpy(&x[i], &b, sizeof b);
    }
  }
  if (d == Dist::Cancelling) std::shuffle(x.begin(), x.end(), g);
  return x;
}

const double kMin = std::numeric_limits<double>::denorm_min();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const float kInfF = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("exact: heavy cancellation") {
  check_list<double>({1e300, 1.0, -1e300}, 1.0);
  check_list<double>({1.0, 1e300, -1e300, 1e-300}, 1.0 + 0.0);  // 1 + 1e-300 rounds to 1
  check_list<double>({DBL_MAX, -DBL_MAX, kMin}, kMin);
  check_list<double>({0x1p1023, 0x1p-1074, -0x1p1023}, 0x1p-1074);
  check_list<float>({1e30f, 1.0f, -1e30f}, 1.0f);
  for (std::uint64_t seed : {1, 2, 3}) {
    check_against_oracle(make_doubles(Dist::Cancelling, 4096, seed));
    check_against_oracle(make_floats(Dist::Cancelling, 4096, seed));
  }
  // Exact cancellation to zero over many values: +0.
  std::vector<double> x = make_doubles(Dist::AllExponents, 1000, 7);
  const std::size_t n = x.size();
  for (std::size_t i = 0; i < n; ++i) x.push_back(-x[i]);
  std::shuffle(x.begin(), x.end(), std::mt19937_64(8));
  xr::ExactSum s;
  s.add(x.data(), x.size());
  check_same(s.to_double(), 0.0);
  check_same(s.to_float(), 0.0f);
  check_against_oracle(x);
}

TEST_CASE("exact: range limits and overflow") {
  check_list<double>({DBL_MAX, DBL_MAX, -DBL_MAX}, DBL_MAX);
  check_list<double>({DBL_MAX, DBL_MAX}, kInf);
  check_list<double>({-DBL_MAX, -DBL_MAX}, -kInf);
  // DBL_MAX + half an ulp (2^970) is a tie; DBL_MAX is odd, so it rounds up: inf.
  check_list<double>({DBL_MAX, 0x1p970}, kInf);
  check_list<double>({DBL_MAX, 0x1p969}, DBL_MAX);
  check_list<double>({DBL_MAX, 0x1p970, -0x1p-1074}, DBL_MAX);
  check_list<double>({-DBL_MAX, -0x1p970}, -kInf);
  // Floats: their sum can pass FLT_MAX while the double result stays finite.
  {
    std::vector<float> x{FLT_MAX, FLT_MAX, FLT_MAX};
    xr::ExactSum s;
    s.add(x.data(), x.size());
    check_same(s.to_float(), kInfF);
    check_same(s.to_double(), 3.0 * static_cast<double>(FLT_MAX));
    check_against_oracle(x);
  }
  {
    // FLT_MAX + half its ulp (2^103): tie, odd: inf. A quarter ulp: FLT_MAX.
    xr::ExactSum s;
    s.add(FLT_MAX);
    s.add(0x1p103f);
    check_same(s.to_float(), kInfF);
    xr::ExactSum t;
    t.add(FLT_MAX);
    t.add(0x1p102f);
    check_same(t.to_float(), FLT_MAX);
    check_against_oracle(std::vector<float>{FLT_MAX, 0x1p103f});
    check_against_oracle(std::vector<float>{-FLT_MAX, -0x1p102f, -0x1p-149f});
  }
  // Many maximal terms: carries through the top limbs and back.
  {
    const std::size_t m = std::size_t{1} << 20;
    std::vector<double> big(m, DBL_MAX);
    std::vector<double> neg(m - 1, -DBL_MAX);
    xr::ExactSum s;
    s.add(big.data(), big.size());
    check_same(s.to_double(), kInf);
    s.add(neg.data(), neg.size());
    check_same(s.to_double(), DBL_MAX);
    s.add(-DBL_MAX);
    s.add(-DBL_MAX);
    check_same(s.to_double(), -DBL_MAX);
    std::vector<double> all = big;
    all.insert(all.end(), neg.begin(), neg.end());
    all.push_back(-DBL_MAX);
    all.push_back(-DBL_MAX);
    check_against_oracle(all);
  }
}

TEST_CASE("exact: huge dynamic range and subnormals") {
  check_list<double>({0x1p1000, 0x1p-1074, 0x1p-1000, -0x1p1000}, 0x1p-1000 + 0x1p-1074);
  check_list<double>({0x1p-1074, 0x1p-1074, 0x1p-1074}, 3 * 0x1p-1074);
  check_list<double>({DBL_MIN, -0x1p-1074}, DBL_MIN - 0x1p-1074);  // largest subnormal
  check_list<double>({0x1p-1023, 0x1p-1023}, DBL_MIN);             // subnormals to normal
  check_list<float>({0x1p-149f, 0x1p-149f, -0x1p-148f}, 0.0f);
  for (std::uint64_t seed : {11, 12}) {
    check_against_oracle(make_doubles(Dist::Subnormal, 1000, seed));
    check_against_oracle(make_floats(Dist::Subnormal, 1000, seed));
    // mixed subnormal and normal
    std::vector<double> x = make_doubles(Dist::Subnormal, 500, seed);
    std::vector<double> y = make_doubles(Dist::Uniform, 500, seed + 100);
    for (auto& v : y) v = std::ldexp(v, -1000);
    x.insert(x.end(), y.begin(), y.end());
    check_against_oracle(x);
    std::vector<double> z = make_doubles(Dist::AllExponents, 300, seed + 200);
    for (auto& v : z) v = std::ldexp(v, -1100 - std::ilogb(v) % 40);
    check_against_oracle(z);
  }
}

TEST_CASE("exact: special values") {
  xr::ExactSum empty;
  check_same(empty.to_double(), 0.0);
  check_same(empty.to_float(), 0.0f);
  check_list<double>({kNaN}, kNaN);
  check_list<double>({1.0, kNaN, 2.0}, kNaN);
  check_list<double>({kInf, kNaN}, kNaN);
  check_list<double>({kInf, 1.0, -DBL_MAX}, kInf);
  check_list<double>({-kInf, DBL_MAX, DBL_MAX}, -kInf);
  check_list<double>({kInf, kInf}, kInf);
  check_list<double>({kInf, -kInf}, kNaN);
  check_list<double>({-kInf, 5.0, kInf}, kNaN);
  check_list<double>({-0.0}, -0.0);
  check_list<double>({-0.0, -0.0}, -0.0);
  check_list<double>({-0.0, 0.0}, 0.0);
  check_list<double>({0.0, -0.0}, 0.0);
  check_list<double>({0.0}, 0.0);
  check_list<double>({1.5, -1.5}, 0.0);
  check_list<double>({-1.5, 1.5, -0.0}, 0.0);
  check_list<double>({-0x1p-1074, 0x1p-1074}, 0.0);
  check_list<float>({-0.0f, -0.0f}, -0.0f);
  check_list<float>({-0.0f, 0.0f}, 0.0f);
  check_list<float>({kInfF, -kInfF}, std::numeric_limits<float>::quiet_NaN());
  check_list<float>({-kInfF, 1.0f}, -kInfF);
  check_list<float>({std::numeric_limits<float>::quiet_NaN(), 1.0f}, std::numeric_limits<float>::quiet_NaN());
  // A tiny negative double sum rounds to -0.0f (the sign of the exact value).
  xr::ExactSum s;
  s.add(-0x1p-1074);
  check_same(s.to_float(), -0.0f);
  check_same(s.to_double(), -0x1p-1074);
  // Signalling NaN and a NaN with payload are NaN too.
  xr::ExactSum t;
  t.add(std::numeric_limits<double>::signaling_NaN());
  CHECK(std::isnan(t.to_double()));
  CHECK(std::isnan(t.to_float()));
  // Specials survive merges in any order.
  xr::ExactSum a, b, c;
  a.add(kInf);
  b.add(-kInf);
  c.add(1.0);
  xr::ExactSum ab = a;
  ab.merge(b);
  CHECK(std::isnan(ab.to_double()));
  xr::ExactSum ca = c;
  ca.merge(a);
  check_same(ca.to_double(), kInf);
  // Merging with empty states keeps -0 (empty is neutral), but a +0 makes it +0.
  xr::ExactSum nz, e2, pz;
  nz.add(-0.0);
  nz.merge(e2);
  check_same(nz.to_double(), -0.0);
  e2.merge(nz);
  check_same(e2.to_double(), -0.0);
  pz.add(0.0f);
  e2.merge(pz);
  check_same(e2.to_double(), 0.0);
}

TEST_CASE("exact: ties to even and no double rounding") {
  // double: 1 + 2^-53 is a tie to 1 (even); 1 + 3*2^-53 ties to 1 + 2^-51 (even).
  check_list<double>({1.0, 0x1p-53}, 1.0);
  check_list<double>({1.0, 0x1p-53, 0x1p-52}, 1.0 + 0x1p-51);
  check_list<double>({1.0, 0x1p-53, 0x1p-1074}, 1.0 + 0x1p-52);  // above the tie
  check_list<double>({-1.0, -0x1p-53, -0x1p-1074}, -1.0 - 0x1p-52);
  check_list<double>({1.0, 0x1p-53, -0x1p-1074}, 1.0);              // below the tie
  // float: 1 + 2^-24 ties to 1; 1 + 3*2^-24 to 1 + 2^-22.
  check_list<float>({1.0f, 0x1p-24f}, 1.0f);
  {
    xr::ExactSum s;
    s.add(1.0f);
    s.add(0x1p-24f);
    check_same(s.to_float(), 1.0f);
    s.add(0x1p-23f);
    check_same(s.to_float(), 1.0f + 0x1p-22f);
  }
  // Exact value just above a float tie: 1 + 2^-24 + 2^-80. Rounding to double first gives
  // 1 + 2^-24 (a float tie), then 1.0f: wrong. Direct rounding gives 1 + 2^-23.
  {
    xr::ExactSum s;
    s.add(1.0f);
    s.add(0x1p-24f);
    s.add(0x1p-80f);
    check_same(s.to_double(), 1.0 + 0x1p-24);
    CHECK(static_cast<float>(s.to_double()) == 1.0f);  // double rounding would give this
    check_same(s.to_float(), 1.0f + 0x1p-23f);
    check_against_oracle(std::vector<float>{1.0f, 0x1p-24f, 0x1p-80f});
    check_against_oracle(std::vector<float>{-0x1p-80f, 1.0f, 0x1p-24f});  // just below
    xr::ExactSum t;
    t.add(-0x1p-80f);
    t.add(1.0f);
    t.add(0x1p-24f);
    check_same(t.to_float(), 1.0f);
  }
  // Same from double inputs, and in the float subnormal range.
  check_against_oracle(std::vector<double>{1.0, 0x1p-24, 0x1p-1074});
  {
    xr::ExactSum s;  // 2^-150 is half the smallest float subnormal: tie to 0.
    s.add(0x1p-150);
    check_same(s.to_float(), 0.0f);
    s.add(0x1p-1074);  // just above: 2^-149
    check_same(s.to_float(), 0x1p-149f);
    xr::ExactSum t;  // 3 * 2^-150: tie between 2^-149 (odd) and 2^-148 (even)
    t.add(3 * 0x1p-150);
    check_same(t.to_float(), 0x1p-148f);
    check_against_oracle(std::vector<double>{0x1p-150, 0x1p-1074});
    check_against_oracle(std::vector<double>{-3 * 0x1p-150});
    check_against_oracle(std::vector<double>{0x1p-127, 0x1p-150});  // subnormal float ulp
  }
  // Double subnormal ties cannot arise from double inputs (all multiples of 2^-1074).
  // Near-ties everywhere: x + half an ulp of x, for random x, at both precisions.
  std::mt19937_64 g(99);
  std::uniform_int_distribution<int> ex(-1070, 1020);
  std::uniform_int_distribution<std::uint64_t> u64;
  for (int i = 0; i < 2000; ++i) {
    const double x = std::ldexp(1.0 + static_cast<double>(u64(g) >> 12) * 0x1p-52, ex(g));
    const double half = std::ldexp(1.0, std::ilogb(x) - 53);
    const double halff = std::ldexp(1.0, std::ilogb(x) - 24);
    for (double extra : {0.0, 0x1p-1074, -0x1p-1074}) {
      if (half >= 0x1p-1074) check_against_oracle(std::vector<double>{x, half, extra});
      if (halff >= 0x1p-1074) check_against_oracle(std::vector<double>{-x, -halff, extra});
    }
  }
}

TEST_CASE("exact: random data against MPFR") {
  const std::size_t sizes[] = {0, 1, 2, 31, 33, 1025, (std::size_t{1} << 20) + 7};
  const Dist dists[] = {Dist::Uniform, Dist::Normal, Dist::AllExponents, Dist::Cancelling};
  std::uint64_t seed = 1000;
  for (std::size_t n : sizes) {
    for (Dist d : dists) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(d));
      check_against_oracle(make_doubles(d, n, ++seed));
      check_against_oracle(make_floats(d, n, ++seed));
    }
  }
  // Floats at a large odd size, 2^24 + 3 elements: one distribution.
  check_against_oracle(make_floats(Dist::Uniform, (std::size_t{1} << 24) + 3, ++seed));
}

TEST_CASE("exact: merge order and splits give identical bits") {
  for (Dist d : {Dist::AllExponents, Dist::Normal, Dist::Cancelling}) {
    const std::vector<double> x = make_doubles(d, 100000, 4242 + static_cast<int>(d));
    xr::ExactSum whole;
    whole.add(x.data(), x.size());
    const auto want = whole.raw();
    std::mt19937_64 g(5);
    for (int trial = 0; trial < 8; ++trial) {
      // Random split points, partial sums merged in a random order or as a tree.
      std::vector<std::size_t> cuts{0, x.size()};
      for (int c = 0; c < 1 + trial * 5; ++c) cuts.push_back(g() % (x.size() + 1));
      std::sort(cuts.begin(), cuts.end());
      std::vector<xr::ExactSum> parts;
      for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
        xr::ExactSum p;
        if (trial % 2 == 0) {
          p.add(x.data() + cuts[c], cuts[c + 1] - cuts[c]);
        } else {
          for (std::size_t i = cuts[c]; i < cuts[c + 1]; ++i) p.add(x[i]);
        }
        parts.push_back(p);
      }
      std::shuffle(parts.begin(), parts.end(), g);
      if (trial % 3 == 0) {
        while (parts.size() > 1) {  // pairwise tree
          std::vector<xr::ExactSum> next;
          for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
            next.push_back(parts[i]);
            next.back().merge(parts[i + 1]);
          }
          if (parts.size() % 2 == 1) next.push_back(parts.back());
          parts = next;
        }
      } else {
        for (std::size_t i = 1; i < parts.size(); ++i) parts[0].merge(parts[i]);
        parts.resize(1);
      }
      const auto got = parts[0].raw();
      CHECK(got.limb == want.limb);
      CHECK(got.flags == want.flags);
      CHECK(bits_of(parts[0].to_double()) == bits_of(whole.to_double()));
      CHECK(bits_of(parts[0].to_float()) == bits_of(whole.to_float()));
    }
    // Raw export and import (the device path) give the same state.
    xr::ExactSum a, b;
    a.add(x.data(), x.size() / 3);
    b.add(x.data() + x.size() / 3, x.size() - x.size() / 3);
    xr::ExactSum c;
    c.merge_raw(b.raw());
    c.merge_raw(a.raw());
    CHECK(c.raw().limb == want.limb);
    CHECK(bits_of(c.to_double()) == bits_of(whole.to_double()));
  }
  // A raw partial in unnormalised carry-save form (as a device block would leave it).
  {
    xr::ExactSum::Raw r;
    r.limb[40] = std::int64_t{1} << 62;   // 2^62 * 2^(32*40 - 1074)
    r.limb[41] = -(std::int64_t{1} << 30);  // cancels it exactly
    r.limb[0] = -5;
    r.flags = xr::ExactSum::kFlagAny | xr::ExactSum::kFlagNotNegZero;
    xr::ExactSum s;
    s.merge_raw(r);
    check_same(s.to_double(), -5 * 0x1p-1074);
  }
  // Merging a state into itself doubles it.
  xr::ExactSum s;
  s.add(DBL_MAX);
  s.merge(s);
  check_same(s.to_double(), kInf);
  s.add(-DBL_MAX);
  check_same(s.to_double(), DBL_MAX);
}

// Crosses the carry-propagation interval (2^30 additions) several times; about 10 s.
TEST_CASE("exact: headroom past the normalisation interval" * doctest::skip()) {
  // Floats whose digits are all ones: 0x1.fffffep0 * 2^k spans two limbs at full width.
  const std::size_t chunk = std::size_t{1} << 24;
  std::vector<float> x(chunk, 0x1.fffffep-100f);
  xr::ExactSum s;
  const std::size_t reps = 200;  // 3.4e9 additions
  for (std::size_t r = 0; r < reps; ++r) s.add(x.data(), x.size());
  for (int i = 0; i < 1000; ++i) s.add(-0x1.fffffep-100f);
  // The exact value is (reps * chunk - 1000) * x.
  const double count = static_cast<double>(reps * chunk - 1000);
  mpfr_t v;
  mpfr_init2(v, 200);
  mpfr_set_d(v, count, MPFR_RNDN);
  mpfr_mul_d(v, v, static_cast<double>(0x1.fffffep-100f), MPFR_RNDN);
  check_same(s.to_double(), mpfr_get_d(v, MPFR_RNDN));
  check_same(s.to_float(), mpfr_get_flt(v, MPFR_RNDN));
  mpfr_clear(v);
}

// f16 and bf16 sums in exact mode: the exact sum of the 16-bit values, rounded once to their
// result type f32, the same bits as MPFR; through the OpenMP backend and the host reference.
TEST_CASE("exact: f16 and bf16 sums against MPFR") {
  auto omp = xr::make_reducer("omp");
  xr::RunOptions exact;
  exact.exact = true;
  std::uint64_t seed = 7;
  for (xr::DType t : {xr::DType::F16, xr::DType::BF16})
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(2), std::uint64_t(1025), (std::uint64_t{1} << 20) + 3})
      for (xr::Dist d : {xr::Dist::Uniform, xr::Dist::Cancel, xr::Dist::Wide, xr::Dist::Special}) {
        CAPTURE(n);
        CAPTURE(xr::to_string(t));
        CAPTURE(xr::to_string(d));
        const xr::HostBuffer x = xr::generate(t, n, d, ++seed);
        Oracle oracle;
        xr::visit_dtype(t, [&](auto zero) {
          using T = decltype(zero);
          if constexpr (xr::is_half_v<T>)
            for (std::uint64_t i = 0; i < n; ++i) oracle.add(static_cast<float>(x.as<T>()[i]));
        });
        const xr::Result r = omp->reduce(x.view(), xr::Op::Sum, exact);
        const xr::Reference ref = xr::reference_reduce(x.view(), xr::Op::Sum);
        REQUIRE(r.value.type == xr::DType::F32);
        CHECK(ref.value.same_bits(r.value));
        check_same(static_cast<float>(r.value.f), oracle.to_float());
      }
}
