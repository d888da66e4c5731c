// The main() of a suite that runs one test body against the backend named on its command line
// (--xr-backend=NAME, --xr-platform=N, --xr-device=INDEX|NAME): it exits 77 (skipped) with the
// reason when NAME is not compiled in or has no usable device. `body` runs the doctest context
// (a suite that opens something around the run passes its own; it may return 77 with a reason).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "xreduce/xreduce.hpp"

namespace xr_suite {

inline int run(int argc, char** argv, std::string& backend, xr::BackendOptions& options,
               const std::function<int(doctest::Context&)>& body = [](doctest::Context& c) { return c.run(); }) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--xr-backend=", 13) == 0) backend = argv[i] + 13;
    else if (std::strncmp(argv[i], "--xr-platform=", 14) == 0) options.platform = std::atoi(argv[i] + 14);
    else if (std::strncmp(argv[i], "--xr-device=", 12) == 0) options.device = argv[i] + 12;
    else rest.push_back(argv[i]);
  }
  try {
    const xr::BackendStatus s = xr::backend_status(backend);
    if (!s.usable) {
      std::printf("SKIP %s: %s\n", backend.c_str(), s.reason.c_str());
      return 77;
    }
    std::printf("backend %s on %s\n", backend.c_str(), xr::make_reducer(backend, options)->device().c_str());
  } catch (const xr::Error& e) {
    std::printf("SKIP %s: %s\n", backend.c_str(), e.what());
    return 77;
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  return body(context);
}

}  // namespace xr_suite
