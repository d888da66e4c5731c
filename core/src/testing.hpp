// Switches for tests only. They carry no XR_API: libxreduce does not export them, and only code
// linked with the static xreduce_testing (tests, and the test build of reduce_cli) reaches them.
#pragma once

#include <string>

#include "xreduce/result.hpp"

namespace xr::detail::testing {

// From now on every result of `backend`'s kernel `kernel` is wrong, and so is auto's when it
// runs that kernel: an integer one more (wrapping), a float NaN, a NaN 1. An empty backend
// breaks nothing again.
void break_kernel(std::string backend, std::string kernel);

// What Reducer::reduce applies to each result before returning it.
void apply_broken_kernel(Result& result);

}  // namespace xr::detail::testing
