// Owned host memory holding n elements of one DType, and the seeded generators that fill it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/types.hpp"

namespace xr {

class XR_API HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(DType type, std::uint64_t n);  // 64-byte aligned, uninitialised
  DType type() const { return type_; }
  std::uint64_t size() const { return n_; }
  std::uint64_t bytes() const { return n_ * size_of(type_); }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }
  HostArray view() const { return {data(), n_, type_}; }

 private:
  struct Free { void operator()(void* p) const; };
  DType type_ = DType::F32;
  std::uint64_t n_ = 0;
  std::unique_ptr<void, Free> data_;
};

// This machine's physical memory in bytes (inputs read whole into memory may take half of it).
XR_API std::uint64_t host_memory_bytes();

// The input distributions, one row each: enumerator, name.
//   uniform        floats in [-1, 1); integers in [-1000, 1000]
//   normal         mean 0, standard deviation 1 (integers: rounded, times 100)
//   ones           every element 1
//   cancel         +-2^20 pairs in random places plus uniform noise: sums far below sum|x|
//   exact_product  mostly +-1, a few 2 and 1/2 (floats) or 2 and 3 (integers): every order of
//                  multiplication gives the same exact product, no overflow
//   special        special values among uniform ones. Floats: seed % 5 picks the family,
//                  0 a NaN with everything else (infinities, signed zeros, subnormals, the
//                  largest and smallest normal values), 1 infinities of one sign with zeros and
//                  subnormals, 2 one largest finite value of either sign with zeros and
//                  subnormals, 3 zeros, subnormals and smallest normals alone, 4 -0 alone.
//                  Integers: the type's limits, 0 and +-1. Every op has one result in any order.
//   wide           magnitudes spread evenly over the exponents of the range, random signs:
//                  f64 from 1e-300 to 1e300, f32 from 1e-29 to 1e29 (the dynamic range that
//                  exact sums find hardest); integers +-2^k, k evenly over the type's bits
//   spread         as wide over fewer binades, between ordinary data and wide: f64 from 1e-30
//                  to 1e30 (2^-100 to 2^100), f32 and bf16 from 4e-15 to 3e14 (2^-48 to 2^48),
//                  f16 from 2^-7 to 2^8; integers +-2^k, k over the lower half of the bits.
//                  New rows go last: the enumerators' values are part of the ABI.
#define XR_DISTS(X)                    \
  X(Uniform, "uniform")                \
  X(Normal, "normal")                  \
  X(Ones, "ones")                      \
  X(Cancel, "cancel")                  \
  X(ExactProduct, "exact_product")     \
  X(Special, "special")                \
  X(Wide, "wide")                      \
  X(Spread, "spread")

#define XR_ENUMERATOR(e, ...) e,
enum class Dist : std::uint8_t { XR_DISTS(XR_ENUMERATOR) };
#undef XR_ENUMERATOR
#define XR_QUALIFIED(e, ...) Dist::e,
inline constexpr std::array all_dists{XR_DISTS(XR_QUALIFIED)};
#undef XR_QUALIFIED

XR_API std::string_view to_string(Dist d);
XR_API Dist parse_dist(std::string_view text);  // throws InvalidArgument

// Element i depends only on (seed, i, dist, type): the same bytes on every machine and for
// every thread count.
XR_API HostBuffer generate(DType type, std::uint64_t n, Dist dist, std::uint64_t seed);
// Elements [first, first + count) of generate(type, total, dist, seed), made alone: the pieces
// of a sequence split over processes (xr::mpi) join into the same bytes whatever the split.
XR_API HostBuffer generate_slice(DType type, std::uint64_t total, std::uint64_t first, std::uint64_t count, Dist dist,
                                 std::uint64_t seed);

}  // namespace xr
