// The OpenMP backend: the Reducer over the host CPU, and the registry's factory and status.
#include <omp.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backend_table.hpp"
#include "ladder.hpp"
#include "segments.hpp"
#include "stream.hpp"

namespace xr::omp::detail {
namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "host CPU";
}

class OmpReducer final : public Reducer {
 public:
  std::string backend() const override { return "omp"; }
  std::string device() const override {
    return cpu_name() + " (" + std::to_string(omp_get_max_threads()) + " threads)";
  }
  std::vector<KernelInfo> kernels() const override {
    std::vector<KernelInfo> list;
    for (const auto& r : rungs()) list.push_back(r.info);
    return list;
  }

 protected:
  xr::detail::ChunkDevice& chunk_device() override { return device_; }
  xr::detail::SegmentDevice& segment_device() override { return segments_; }

 private:
  Chunks device_;
  Segments segments_;
};

}  // namespace


std::unique_ptr<Reducer> make_reducer(const BackendOptions&) { return std::make_unique<OmpReducer>(); }

BackendStatus status() {
  BackendStatus s;
  s.name = "omp";
  s.compiled = true;
  s.usable = true;
  s.devices.push_back({cpu_name(), std::to_string(omp_get_max_threads()) + " OpenMP threads, " +
                                       std::to_string(omp_get_num_procs()) + " processors",
                    BackendOptions{}, 0, false});
  return s;
}

}  // namespace xr::omp::detail
