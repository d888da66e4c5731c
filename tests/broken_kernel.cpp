// Part of reduce_cli_faulty, reduce_cli's sources linked with xreduce_testing. Before main runs:
//   XR_TEST_BROKEN_KERNEL=backend:kernel (omp:vector) breaks that kernel's results, so that the
//     check suite can show `reduce_cli check` finding a wrong kernel and reproducing it;
//   XR_TEST_FAULT_REGION=name (omp.vector, a name of testing.hpp's kRegions) arms that OpenMP
//     region: the first thread to enter it throws, and reduce_cli reports the error.
#include <cstdlib>
#include <string>

#include "testing.hpp"

namespace {

const bool kernel_broken = [] {
  const char* spec = std::getenv("XR_TEST_BROKEN_KERNEL");
  if (!spec) return false;
  const std::string text = spec;
  const auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  xr::detail::testing::break_kernel(text.substr(0, colon), text.substr(colon + 1));
  return true;
}();

const bool region_armed = [] {
  const char* name = std::getenv("XR_TEST_FAULT_REGION");
  if (!name) return false;
  for (const auto& info : xr::detail::testing::kRegions)
    if (info.name == name) {
      xr::detail::testing::arm_region(info.region);
      return true;
    }
  return false;
}();

}  // namespace
