// Which backends exist, which were compiled in, which have a usable device now.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/export.hpp"
#include "xreduce/reducer.hpp"

namespace xr {

struct BackendOptions {
  int platform = -1;    // OpenCL platform index; -1: any
  std::string device;   // device index ("0") or a name substring; empty: the backend's default
};

struct DeviceInfo {
  std::string name;
  std::string detail;   // e.g. "132 SMs, 79.1 GiB" or "OpenCL 3.0, fp64, int64 atomics"
  BackendOptions select;  // what make_reducer needs to choose exactly this device
  // The largest input the device can hold whole (HostPath::Resident), in bytes; 0 for a host
  // device, which reduces host memory where it lies.
  std::uint64_t max_input_bytes = 0;
  bool gpu = false;       // a GPU (xr::mpi spreads a node's ranks over these)
};

struct BackendStatus {
  std::string name;
  bool compiled = false;
  bool usable = false;
  std::string reason;   // why not usable ("built without CUDA", "no CUDA device: ...")
  std::vector<DeviceInfo> devices;
};

// "cuda", "opencl", "omp": every backend xreduce knows, compiled in or not.
XR_API std::vector<std::string> backend_names();
XR_API BackendStatus backend_status(std::string_view name);
XR_API std::vector<BackendStatus> backend_statuses();
// The usable ones, in backend_names() order.
XR_API std::vector<std::string> available_backends();

// Throws InvalidArgument for an unknown name and for a platform or device in `options` that
// names none (an index out of range, a name no device matches), BackendUnavailable with the
// reason otherwise.
XR_API std::unique_ptr<Reducer> make_reducer(std::string_view name, const BackendOptions& options = {});

}  // namespace xr
