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
  // The exact sum divided by n (n >= 1), rounded once to double or float (see Quotient).
  double quotient_to_double(std::uint64_t n) {
    REQUIRE(exact_);
    Quotient q(acc_, n);
    return mpfr_get_d(q.value, MPFR_RNDN);
  }
  float quotient_to_float(std::uint64_t n) {
    REQUIRE(exact_);
    Quotient q(acc_, n);
    return mpfr_get_flt(q.value, MPFR_RNDN);
  }

 private:
  void add_term() {
    if (first_) {
      mpfr_set_zero(acc_, -1);
      first_ = false;
    }
    if (mpfr_add(acc_, acc_, term_, MPFR_RNDN) != 0) exact_ = false;
  }
  // S / n at kQuotientPrec bits, rounded to nearest. Rounding that once more to double or
  // float gives the correctly rounded S / n. S is a multiple of 2^-1074 below 2^1134 and
  // n < 2^64; every rounding boundary B of both formats (a value or a midpoint, the overflow
  // threshold included) is a multiple of 2^-1075 below 2^1025, exact at this precision. If
  // S / n != B, then |S / n - B| = |S - nB| / n >= 2^-1075 / n > 2^-1139, more than the first
  // rounding's error (at most 2^(1133 - kQuotientPrec)): the first rounding does not land on
  // B, and it does not cross B either (B would be the nearer value at this precision).
  struct Quotient {
    mpfr_t value, den;
    Quotient(const mpfr_t s, std::uint64_t n) {
      REQUIRE(n != 0);
      mpfr_init2(den, 64);
      mpfr_set_ui_2exp(den, static_cast<unsigned long>(n >> 32), 32, MPFR_RNDN);  // exact
      REQUIRE(mpfr_add_ui(den, den, static_cast<unsigned long>(n & 0xffffffffu), MPFR_RNDN) == 0);
      mpfr_init2(value, kQuotientPrec);
      mpfr_div(value, s, den, MPFR_RNDN);
    }
    ~Quotient() {
      mpfr_clear(value);
      mpfr_clear(den);
    }
    Quotient(const Quotient&) = delete;
    Quotient& operator=(const Quotient&) = delete;
  };
  static constexpr mpfr_prec_t kQuotientPrec = 4096;

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

// Checks quotient_to_double and quotient_to_float of the exact sum of x by each n against
// the oracle (and that n = 1 gives to_double / to_float).
template <class T>
void check_quotients(const std::vector<T>& x, const std::vector<std::uint64_t>& ns) {
  xr::ExactSum s;
  s.add(x.data(), x.size());
  Oracle o;
  o.add_all(x.data(), x.size());
  INFO("terms = " << x.size());
  for (std::uint64_t n : ns) {
    CAPTURE(n);
    check_same(s.quotient_to_double(n), o.quotient_to_double(n));
    check_same(s.quotient_to_float(n), o.quotient_to_float(n));
  }
  check_same(s.quotient_to_double(1), s.to_double());
  check_same(s.quotient_to_float(1), s.to_float());
}

template <class T>
T quotient_of(const std::vector<T>& x, std::uint64_t n) {
  xr::ExactSum s;
  s.add(x.data(), x.size());
  if constexpr (std::is_same_v<T, float>) return s.quotient_to_float(n);
  else return s.quotient_to_double(n);
}

// Terms of type T whose exact sum is p * 2^f (p < 2^120): 20-bit pieces of p, each exact in
// T. A power of two is moved from p to f while f is below T's smallest subnormal exponent.
template <class T>
std::vector<T> terms_of(unsigned __int128 p, int f) {
  const int min_exp = std::is_same_v<T, float> ? -149 : -1074;
  while (f < min_exp && p % 2 == 0) {
    p /= 2;
    ++f;
  }
  REQUIRE(f >= min_exp);
  std::vector<T> x;
  for (int k = 0; p != 0; ++k, p >>= 20) {
    const auto piece = static_cast<std::uint32_t>(p & 0xfffffu);
    if (piece != 0) x.push_back(std::ldexp(static_cast<T>(piece), f + 20 * k));
  }
  return x;
}

// Sums S = n * (2m + 1) * 2^(e-1) that divided by n lie halfway between m * 2^e and
// (m + 1) * 2^e, consecutive values of T with ulp 2^e; and S plus or minus the smallest
// subnormal, just off the tie. Normal results and subnormal ones (m below 2^(Prec-1) at the
// smallest ulp), positive and negative. At the smallest ulp with n odd, S is no sum of values
// of T; S +- 2^(e-1) is, and its quotient is the nearest to a tie that one can be, 2^(e-1) / n
// off it (an odd n above 2^63 puts that below 2^-1138 for doubles).
template <class T>
void check_random_ties(std::uint64_t seed, int count) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  constexpr int kPrec = kFloat ? 24 : 53;
  constexpr int kMinExp = kFloat ? -149 : -1074;
  constexpr int kMaxExp = kFloat ? 30 : 900;  // keeps every piece of S finite
  const T unit = std::ldexp(T(1), kMinExp);
  const std::uint64_t fixed[] = {2, 3, 7, 10, (std::uint64_t{1} << 40) + 1, ~std::uint64_t{0}};
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> ex(kMinExp, kMaxExp);
  for (int i = 0; i < count; ++i) {
    std::uint64_t n = g() % 3 == 0 ? g() : fixed[g() % 6];
    const bool subnormal = g() % 4 == 0;
    const std::uint64_t top = std::uint64_t{1} << (kPrec - 1);
    const std::uint64_t m = subnormal ? g() % top : top + g() % top;
    const int e = subnormal ? kMinExp : ex(g);
    if (n < 2) n = 3;
    CAPTURE(n);
    CAPTURE(m);
    CAPTURE(e);
    const auto p = static_cast<unsigned __int128>(n) * (2 * m + 1);
    const T down = std::ldexp(static_cast<T>(m), e);
    const T up = std::ldexp(static_cast<T>(m + 1), e);
    if (e == kMinExp && n % 2 == 1) {
      check_same(quotient_of(terms_of<T>(p + 1, e - 1), n), up);
      check_same(quotient_of(terms_of<T>(p - 1, e - 1), n), down);
      if (i % 8 == 0) check_quotients(terms_of<T>(p + 1, e - 1), {n});
      continue;
    }
    std::vector<T> x = terms_of<T>(p, e - 1);
    const T even = m % 2 == 0 ? down : up;
    check_same(quotient_of(x, n), even);
    std::vector<T> neg = x;
    for (T& v : neg) v = -v;
    check_same(quotient_of(neg, n), -even);
    x.push_back(unit);
    check_same(quotient_of(x, n), up);
    x.back() = -unit;
    check_same(quotient_of(x, n), down);
    if (i % 8 == 0) check_quotients(x, {n});
  }
}

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

// The exact sum divided by n, rounded once (quotient_to_double, quotient_to_float), against
// MPFR's quotient of the exact sum, and against exact expectations where they are known.
TEST_CASE("exact: quotients against MPFR") {
  const std::uint64_t kBig = (std::uint64_t{1} << 40) + 1;
  const std::uint64_t kMax64 = ~std::uint64_t{0};
  const double kMinF = static_cast<double>(std::numeric_limits<float>::denorm_min());
  // Random data of every kind, divided by its count and by other n.
  {
    const std::size_t sizes[] = {1, 2, 3, 31, 1025, 65537};
    const Dist dists[] = {Dist::Uniform, Dist::Normal, Dist::AllExponents, Dist::Cancelling,
                          Dist::Subnormal};
    std::uint64_t seed = 5000;
    for (std::size_t size : sizes) {
      for (Dist d : dists) {
        CAPTURE(static_cast<int>(d));
        const std::vector<std::uint64_t> ns{1, 2, 3, 7, 10, size, size + 1, kBig, kMax64 - 1, kMax64};
        check_quotients(make_doubles(d, size, ++seed), ns);
        check_quotients(make_floats(d, size, ++seed), ns);
      }
    }
    // Tiny sums divided by large n: subnormal quotients with many bits, and zeros.
    std::vector<double> tiny = make_doubles(Dist::Uniform, 1000, ++seed);
    for (double& v : tiny) v = std::ldexp(v, -1000);
    check_quotients(tiny, {3, 1000, kBig, std::uint64_t{1} << 50, kMax64});
    std::vector<float> tinyf = make_floats(Dist::Uniform, 1000, ++seed);
    for (float& v : tinyf) v = std::ldexp(v, -120);
    check_quotients(tinyf, {3, 1000, kBig, std::uint64_t{1} << 50, kMax64});
  }
  // Sums beyond 2^1024 whose quotients are finite again, and overflow.
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX}, 2), DBL_MAX);
  check_same(quotient_of<double>({1e308, 1e308}, 2), 1e308);
  check_same(quotient_of<double>({1e308, 1e308, 1e308}, 3), 1e308);
  check_same(quotient_of<double>({-1e308, -1e308, -1e308}, 3), -1e308);
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX}, 1), kInf);
  check_same(quotient_of<double>({-DBL_MAX, -DBL_MAX}, 1), -kInf);
  check_same(quotient_of<double>({-DBL_MAX, -DBL_MAX}, 2), -DBL_MAX);
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX, DBL_MAX}, 2), kInf);
  // 3 * (DBL_MAX + half an ulp) / 3 is a tie at the overflow threshold: inf; just below it
  // and a quarter ulp above DBL_MAX: DBL_MAX.
  const double a3 = 0x1p970;
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX, DBL_MAX, a3, a3, a3}, 3), kInf);
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX, DBL_MAX, a3, a3, a3, -kMin}, 3), DBL_MAX);
  check_same(quotient_of<double>({DBL_MAX, DBL_MAX, DBL_MAX, a3 / 2, a3 / 2, a3 / 2}, 3), DBL_MAX);
  check_quotients<double>({DBL_MAX, DBL_MAX}, {1, 2, 3, kMax64});
  check_quotients<double>({1e308, 1e308, 1e308, -0x1p-1074}, {1, 2, 3, 4});
  check_quotients<double>({DBL_MAX, DBL_MAX, DBL_MAX, a3, a3, a3}, {2, 3, 4});
  {
    const std::size_t m = std::size_t{1} << 20;
    std::vector<double> big(m, DBL_MAX);
    check_same(quotient_of(big, m), DBL_MAX);
    check_same(quotient_of(big, m - 1), kInf);
    check_quotients(big, {1, m - 1, m, m + 1, kBig, kMax64});
  }
  check_same(quotient_of<float>({FLT_MAX, FLT_MAX}, 2), FLT_MAX);
  check_same(quotient_of<float>({FLT_MAX, FLT_MAX}, 1), kInfF);
  const float b3 = 0x1p103f;  // half an ulp of FLT_MAX
  check_same(quotient_of<float>({FLT_MAX, FLT_MAX, FLT_MAX, b3, b3, b3}, 3), kInfF);
  check_same(quotient_of<float>({FLT_MAX, FLT_MAX, FLT_MAX, b3 / 2, b3 / 2, b3 / 2}, 3), FLT_MAX);
  check_quotients<float>({FLT_MAX, FLT_MAX, FLT_MAX, b3, b3, b3}, {1, 2, 3, 4});
  check_quotients<float>({-FLT_MAX, -FLT_MAX, -FLT_MAX}, {1, 2, 3, kMax64});
  // Subnormal quotients: to zero (a tie, or below half the smallest subnormal), to the
  // smallest subnormal, ties to even, signs.
  check_same(quotient_of<double>({kMin}, 1), kMin);
  check_same(quotient_of<double>({kMin}, 2), 0.0);  // 1/2 ulp: tie to 0 (even)
  check_same(quotient_of<double>({kMin}, 3), 0.0);
  check_same(quotient_of<double>({kMin}, kMax64), 0.0);
  check_same(quotient_of<double>({-kMin}, 2), -0.0);
  check_same(quotient_of<double>({-kMin}, kMax64), -0.0);
  check_same(quotient_of<double>({3 * kMin}, 2), 2 * kMin);  // 1.5: tie to 2
  check_same(quotient_of<double>({5 * kMin}, 2), 2 * kMin);  // 2.5: tie to 2
  check_same(quotient_of<double>({3 * kMin}, 4), kMin);      // 0.75
  check_same(quotient_of<double>({7 * kMin}, 7), kMin);
  check_same(quotient_of<double>({10 * kMin}, 7), kMin);       // 1.43
  check_same(quotient_of<double>({11 * kMin}, 7), 2 * kMin);   // 1.57
  check_same(quotient_of<double>({0x1p39 * kMin + kMin}, kBig + 1), 0.0);  // exactly 1/2
  check_same(quotient_of<double>({0x1p39 * kMin + 2 * kMin}, kBig + 1), kMin);
  check_same(quotient_of<double>({0x1p39 * kMin}, kBig + 1), 0.0);
  check_same(quotient_of<double>({3 * (0x1p39 * kMin + kMin)}, kBig + 1), 2 * kMin);  // 3/2
  // 2^63 * 2^-1074 / (2^64 - 1) = 2^-1075 (1 + 2^-64 + ...): the nearest a quotient gets to
  // a tie without being one (remainder 2^63 after the digits); one unit less: just below.
  check_same(quotient_of<double>({0x1p-1011}, kMax64), kMin);
  check_same(quotient_of<double>({0x1p-1011, -kMin}, kMax64), 0.0);
  check_same(quotient_of<double>({-0x1p-1011, kMin}, kMax64), -0.0);
  check_quotients<double>({0x1p-1011, -kMin}, {kMax64, kMax64 - 2});
  check_same(quotient_of<double>({DBL_MIN}, 2), DBL_MIN / 2);
  check_same(quotient_of<double>({DBL_MIN, kMin}, 2), DBL_MIN / 2);  // tie, even
  check_same(quotient_of<double>({DBL_MIN, 3 * kMin}, 2), DBL_MIN / 2 + 2 * kMin);  // tie, even
  check_same(quotient_of<double>({1.0}, kMax64), 0x1p-64);  // 2^-64 (1 + 2^-64 + ...)
  check_same(quotient_of<float>({0x1p-149f}, 2), 0.0f);
  check_same(quotient_of<float>({3 * 0x1p-149f}, 2), 0x1p-148f);
  check_same(quotient_of<float>({-0x1p-149f}, 3), -0.0f);
  check_same(quotient_of<float>({FLT_MIN}, 2), FLT_MIN / 2);
  {
    // Double sums rounded to float: at and beside the smallest float subnormal.
    xr::ExactSum s;
    s.add(kMinF);
    check_same(s.quotient_to_float(2), 0.0f);  // 2^-150: tie to 0
    s.add(kMin);
    check_same(s.quotient_to_float(2), 0x1p-149f);  // above the tie
    check_same(s.quotient_to_float(kMax64), 0.0f);
    check_same(s.quotient_to_double(kMax64), 0x1p-213);
  }
  check_quotients<double>({kMin}, {1, 2, 3, kBig, kMax64});
  check_quotients<double>({-3 * kMin}, {1, 2, 3, 4, 6});
  check_quotients<double>({DBL_MIN, kMin}, {1, 2, 3, 4, kMax64});
  check_quotients<double>({kMinF, kMin}, {1, 2, 3, kBig});
  check_quotients<double>({1.0, kMin}, {kMax64, kMax64 - 1, kBig});
  check_quotients<float>({0x1p-149f, 0x1p-148f}, {1, 2, 3, 4, 5, 6, kMax64});
  // Exact ties at both precisions: 3 (1 + 2^-53) / 3 ties to 1, 3 (1 + 3 * 2^-53) / 3 to
  // 1 + 2^-51; float likewise at 2^-24.
  check_same(quotient_of<double>({3.0, 3 * 0x1p-53}, 3), 1.0);
  check_same(quotient_of<double>({3.0, 9 * 0x1p-53}, 3), 1.0 + 0x1p-51);
  check_same(quotient_of<double>({3.0, 3 * 0x1p-53, kMin}, 3), 1.0 + 0x1p-52);
  check_same(quotient_of<double>({-3.0, -3 * 0x1p-53, kMin}, 3), -1.0);
  check_same(quotient_of<float>({3.0f, 3 * 0x1p-24f}, 3), 1.0f);
  check_same(quotient_of<float>({3.0f, 9 * 0x1p-24f}, 3), 1.0f + 0x1p-22f);
  check_same(quotient_of<float>({3.0f, 3 * 0x1p-24f, 0x1p-149f}, 3), 1.0f + 0x1p-23f);
  check_quotients<double>({3.0, 3 * 0x1p-53}, {1, 2, 3, 6});
  check_quotients<float>({3.0f, 9 * 0x1p-24f}, {1, 2, 3, 6});
  // A float tie that the double quotient would hide: 3 (1 + 2^-24 + 2^-80) / 3.
  {
    xr::ExactSum s;
    s.add(3.0f);
    s.add(3 * 0x1p-24f);
    s.add(3 * 0x1p-80f);
    check_same(s.quotient_to_double(3), 1.0 + 0x1p-24);
    check_same(s.quotient_to_float(3), 1.0f + 0x1p-23f);
  }
  check_random_ties<double>(77, 2000);
  check_random_ties<float>(78, 2000);
  // Special values: NaN, infinities, signed zeros; n = 0 gives NaN.
  {
    xr::ExactSum empty;
    check_same(empty.quotient_to_double(1), 0.0);
    check_same(empty.quotient_to_double(5), 0.0);
    check_same(empty.quotient_to_float(5), 0.0f);
    CHECK(std::isnan(empty.quotient_to_double(0)));
    CHECK(std::isnan(empty.quotient_to_float(0)));
  }
  check_same(quotient_of<double>({-0.0}, 3), -0.0);
  check_same(quotient_of<double>({-0.0, -0.0}, 2), -0.0);
  check_same(quotient_of<double>({-0.0, -0.0}, kMax64), -0.0);
  check_same(quotient_of<double>({-0.0, 0.0}, 2), 0.0);
  check_same(quotient_of<double>({1.5, -1.5}, 2), 0.0);
  check_same(quotient_of<float>({-0.0f}, 7), -0.0f);
  check_same(quotient_of<double>({kNaN, 1.0}, 2), kNaN);
  check_same(quotient_of<double>({kInf, -DBL_MAX}, 3), kInf);
  check_same(quotient_of<double>({-kInf}, kMax64), -kInf);
  check_same(quotient_of<double>({kInf, -kInf}, 2), kNaN);
  check_same(quotient_of<float>({kInfF, 1.0f}, 3), kInfF);
  check_same(quotient_of<float>({-kInfF, kInfF}, 3), std::numeric_limits<float>::quiet_NaN());
  for (const std::vector<double>& x : std::vector<std::vector<double>>{
           {1.0}, {-0.0}, {0.0}, {kInf}, {-kInf}, {kNaN}, {DBL_MAX, DBL_MAX}, {kMin}}) {
    xr::ExactSum s;
    s.add(x.data(), x.size());
    CHECK(std::isnan(s.quotient_to_double(0)));
    CHECK(std::isnan(s.quotient_to_float(0)));
    check_quotients(x, {1, 2, 3, kMax64});
  }
  check_quotients<double>({-0.0, -0.0}, {1, 2, 3});
  check_quotients<float>({-0.0f, -0.0f}, {1, 2, 3});
  check_quotients<double>({kInf, -kInf}, {1, 2});
  // Merged states give the same quotients as the whole.
  {
    const std::vector<double> x = make_doubles(Dist::AllExponents, 5000, 31);
    xr::ExactSum whole, a, b;
    whole.add(x.data(), x.size());
    a.add(x.data(), 1234);
    b.add(x.data() + 1234, x.size() - 1234);
    b.merge(a);
    for (std::uint64_t n : {std::uint64_t{3}, std::uint64_t{5000}, kMax64}) {
      CHECK(bits_of(b.quotient_to_double(n)) == bits_of(whole.quotient_to_double(n)));
      CHECK(bits_of(b.quotient_to_float(n)) == bits_of(whole.quotient_to_float(n)));
    }
  }
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

// --dist spread: magnitudes over 2^-100..2^100 (f64), 2^-48..2^48 (f32), between ordinary data and
// wide; the exact sums of it through the OpenMP backend, the same bits as MPFR.
TEST_CASE("exact: data spread over 200 binades (f64) and 96 (f32) against MPFR") {
  auto omp = xr::make_reducer("omp");
  xr::RunOptions exact;
  exact.exact = true;
  for (const xr::DType t : {xr::DType::F32, xr::DType::F64}) {
    const int top = t == xr::DType::F64 ? 100 : 48;
    const std::uint64_t n = 100003;
    const xr::HostBuffer x = xr::generate(t, n, xr::Dist::Spread, 5);
    Oracle oracle;
    int lowest = 10000, highest = -10000;
    xr::visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        for (std::uint64_t i = 0; i < n; ++i) {
          const T v = x.as<T>()[i];
          oracle.add(v);
          lowest = std::min(lowest, std::ilogb(v));
          highest = std::max(highest, std::ilogb(v));
        }
    });
    CAPTURE(xr::to_string(t));
    CHECK(lowest == -top);  // every binade of the range is drawn, and none beyond
    CHECK(highest == top);
    const xr::Result r = omp->reduce(x.view(), xr::Op::Sum, exact);
    if (t == xr::DType::F64) check_same(r.value.f, oracle.to_double());
    else check_same(static_cast<float>(r.value.f), oracle.to_float());
  }
}
