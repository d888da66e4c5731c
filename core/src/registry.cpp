#include <string>

#include "backend_entry.hpp"
#include "xreduce/error.hpp"
#include "xreduce/registry.hpp"

namespace xr {
namespace {

struct BackendEntry {
  const char* name;
  const char* missing;  // why it is not compiled in
  std::unique_ptr<Reducer> (*make)(const BackendOptions&);
  BackendStatus (*status)();
};

// Backends in the order the CLI and tests list them. A backend not compiled in has null
// function pointers, so its symbols are never referenced.
const BackendEntry kBackends[] = {
#ifdef XR_WITH_CUDA
    {"cuda", "", detail::make_cuda_reducer, detail::cuda_status},
#else
    {"cuda", "built without CUDA (XREDUCE_CUDA=OFF or no CUDA toolkit at configure time)", nullptr, nullptr},
#endif
#ifdef XR_WITH_OPENCL
    {"opencl", "", detail::make_opencl_reducer, detail::opencl_status},
#else
    {"opencl", "built without OpenCL (XREDUCE_OPENCL=OFF or no OpenCL headers/loader at configure time)", nullptr, nullptr},
#endif
#ifdef XR_WITH_OPENMP
    {"omp", "", detail::make_omp_reducer, detail::omp_status},
#else
    {"omp", "built without OpenMP (XREDUCE_OPENMP=OFF or no compiler support)", nullptr, nullptr},
#endif
};

const BackendEntry& find_entry(std::string_view name) {
  for (const auto& e : kBackends)
    if (name == e.name) return e;
  throw InvalidArgument("unknown backend '" + printable(name) + "' (expected cuda, opencl or omp)");
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& e : kBackends) names.emplace_back(e.name);
  return names;
}

BackendStatus backend_status(std::string_view name) {
  const auto& e = find_entry(name);
  if (!e.status) {
    BackendStatus s;
    s.name = e.name;
    s.reason = e.missing;
    return s;
  }
  return e.status();
}

std::vector<BackendStatus> backend_statuses() {
  std::vector<BackendStatus> all;
  for (const auto& e : kBackends) all.push_back(backend_status(e.name));
  return all;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const auto& s : backend_statuses())
    if (s.usable) names.push_back(s.name);
  return names;
}

std::unique_ptr<Reducer> make_reducer(std::string_view name, const BackendOptions& options) {
  const auto& e = find_entry(name);
  if (!e.make) throw BackendUnavailable(e.name, e.missing);
  return e.make(options);
}

}  // namespace xr
