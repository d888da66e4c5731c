#include "testing.hpp"

#include <cmath>
#include <limits>
#include <mutex>
#include <type_traits>

namespace xr::detail::testing {
namespace {

struct Broken {
  std::mutex mutex;
  std::string backend, kernel;
};

Broken& broken() {
  static Broken b;
  return b;
}

}  // namespace

void break_kernel(std::string backend, std::string kernel) {
  Broken& b = broken();
  std::lock_guard lock(b.mutex);
  b.backend = std::move(backend);
  b.kernel = std::move(kernel);
}

void apply_broken_kernel(Result& result) {
  Broken& b = broken();
  {
    std::lock_guard lock(b.mutex);
    if (b.backend.empty() || result.backend != b.backend ||
        (result.kernel != b.kernel && result.kernel != "auto:" + b.kernel))
      return;
  }
  result.value = visit_dtype(result.value.type, [&](auto zero) {
    using T = decltype(zero);
    const T v = result.value.as<T>();
    if constexpr (is_float_v<T>) {
      return Scalar::of<T>(std::isnan(static_cast<double>(v)) ? T(1) : std::numeric_limits<T>::quiet_NaN());
    } else {
      using U = std::make_unsigned_t<T>;
      return Scalar::of<T>(static_cast<T>(static_cast<U>(v) + 1));
    }
  });
}

}  // namespace xr::detail::testing
