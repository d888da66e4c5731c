// Part of reduce_cli_faulty, reduce_cli's sources linked with xreduce_testing: before main runs,
// XR_TEST_BROKEN_KERNEL=backend:kernel (omp:vector) breaks that kernel's results, so that the
// check suite can show `reduce_cli check` finding a wrong kernel and reproducing it.
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

}  // namespace
