#include "testing.hpp"

#include <cmath>
#include <limits>
#include <mutex>
#include <type_traits>

#include "xreduce/error.hpp"

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

std::array<std::atomic<std::uint64_t>, kRegions.size()> region_fault_counts{};

}  // namespace

std::atomic<int> armed_region{-1};

void region_fault(Region region) {
  int armed = static_cast<int>(region);
  // Only the first thread to enter the armed region takes its fault.
  if (!armed_region.compare_exchange_strong(armed, -1, std::memory_order_acq_rel, std::memory_order_relaxed)) return;
  region_fault_counts[static_cast<std::size_t>(region)].fetch_add(1, std::memory_order_relaxed);
  throw DeviceError("injected fault inside the OpenMP region " + std::string(region_name(region)), kInjectedFault,
                    "injected fault");
}

void arm_region(Region region) { armed_region.store(static_cast<int>(region), std::memory_order_release); }

void disarm_regions() { armed_region.store(-1, std::memory_order_release); }

std::uint64_t region_faults(Region region) {
  return region_fault_counts[static_cast<std::size_t>(region)].load(std::memory_order_relaxed);
}

bool region_armed(Region region) { return armed_region.load(std::memory_order_acquire) == static_cast<int>(region); }

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
