#include <string>

#include "backend_table.hpp"
#include "xreduce/error.hpp"
#include "xreduce/registry.hpp"

namespace xr {
namespace {

using detail::BackendEntry;

const BackendEntry kBackends[] = {XR_BACKEND_ROWS};

const BackendEntry& find_entry(std::string_view name) {
  for (const auto& e : kBackends)
    if (name == e.name) return e;
  std::string known;
  for (const auto& e : kBackends) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw InvalidArgument("unknown backend '" + printable(name) + "' (expected " + known + ")");
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
