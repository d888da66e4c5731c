#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"

namespace xr {

HostBuffer::HostBuffer(DType type, std::uint64_t n) : type_(type), n_(n) {
  if (n > std::numeric_limits<std::uint64_t>::max() / 16)
    throw InvalidArgument("host buffer of " + std::to_string(n) + " elements is too large");
  const std::uint64_t bytes = (n * size_of(type) + 63) / 64 * 64;
  if (bytes == 0) return;
  void* p = std::aligned_alloc(64, bytes);
  if (!p)
    throw Error("host allocation of " + std::to_string(bytes) + " bytes (" + std::to_string(n) + " " +
                std::string(to_string(type)) + ") failed");
  data_.reset(p);
}

std::uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{1} << 35;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

void HostBuffer::Free::operator()(void* p) const { std::free(p); }

namespace {

// SplitMix64: a counter-based generator, so element i needs no state from element i - 1.
constexpr std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct ElementRandom {
  std::uint64_t seed;
  std::uint64_t bits(std::uint64_t i, std::uint64_t stream) const {
    return mix(seed ^ mix(i * 4 + stream));
  }
  double unit(std::uint64_t i, std::uint64_t stream) const {  // [0, 1), 53 random bits
    return static_cast<double>(bits(i, stream) >> 11) * 0x1.0p-53;
  }
};

constexpr double kCancelMagnitude = 1048576.0;  // 2^20
// Few enough factors of 2 and 1/2 that no partial product over- or underflows a float in any
// order; integer products wrap, which is order-independent anyway.
constexpr std::uint64_t kProductTwos = 40, kProductHalves = 30;
constexpr std::uint64_t kIntProductTwos = 20, kIntProductThrees = 10;

template <class T> T element(Dist dist, const ElementRandom& rng, std::uint64_t i, std::uint64_t n) {
  constexpr bool is_fp = std::is_floating_point_v<T>;
  const auto uniform = [&](std::uint64_t stream) -> T {
    if constexpr (is_fp) {
      if constexpr (sizeof(T) == 4) return static_cast<T>((rng.bits(i, stream) >> 40) * 0x1.0p-23 - 1.0);
      else return static_cast<T>(rng.unit(i, stream) * 2.0 - 1.0);
    } else {
      return static_cast<T>(static_cast<std::int64_t>(rng.bits(i, stream) % 2001) - 1000);
    }
  };
  switch (dist) {
    case Dist::Uniform: return uniform(0);
    case Dist::Normal: {
      const double u1 = 1.0 - rng.unit(i, 0), u2 = rng.unit(i, 1);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      if constexpr (is_fp) return static_cast<T>(z);
      else return static_cast<T>(std::llround(z * 100.0));
    }
    case Dist::Ones: return T(1);
    case Dist::Cancel: {
      // Elements 2k and 2k+1 carry +-2^20 with opposite signs: they cancel exactly.
      const double sign = (rng.bits(i / 2, 2) & 1) ? 1.0 : -1.0;
      const double big = (i % 2 == 0 ? sign : -sign) * kCancelMagnitude;
      return static_cast<T>(big + static_cast<double>(uniform(3)));
    }
    case Dist::ExactProduct: break;
  }
  const std::uint64_t stride = n / 64 > 2 ? n / 64 : 3;
  if (i % stride == 1 && i / stride < (is_fp ? kProductTwos : kIntProductTwos)) return T(2);
  if (i % stride == 2 && i / stride < (is_fp ? kProductHalves : kIntProductThrees)) {
    if constexpr (is_fp) return T(0.5);
    else return T(3);
  }
  return (rng.bits(i, 1) & 1) ? T(1) : T(-1);
}

}  // namespace

std::string_view to_string(Dist d) {
  static constexpr const char* names[] = {"uniform", "normal", "ones", "cancel", "exact_product"};
  return names[static_cast<int>(d)];
}

Dist parse_dist(std::string_view text) {
  for (Dist d : {Dist::Uniform, Dist::Normal, Dist::Ones, Dist::Cancel, Dist::ExactProduct})
    if (text == to_string(d)) return d;
  throw InvalidArgument("unknown distribution '" + printable(text) +
                        "' (expected uniform, normal, ones, cancel or exact_product)");
}

HostBuffer generate(DType type, std::uint64_t n, Dist dist, std::uint64_t seed) {
  return generate_slice(type, n, 0, n, dist, seed);
}

HostBuffer generate_slice(DType type, std::uint64_t total, std::uint64_t first, std::uint64_t count, Dist dist,
                          std::uint64_t seed) {
  if (first > total || count > total - first)
    throw InvalidArgument("generate: elements [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                          std::to_string(count) + ") lie beyond the " + std::to_string(total) + " of the sequence");
  HostBuffer buf(type, count);
  const ElementRandom rng{mix(seed)};
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    T* out = buf.as<T>();
    const auto len = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < len; ++i)
      out[i] = element<T>(dist, rng, first + static_cast<std::uint64_t>(i), total);
  });
  return buf;
}

}  // namespace xr
