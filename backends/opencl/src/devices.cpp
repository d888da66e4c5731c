// Platforms and devices: what they offer, listing them, choosing one, one context per device.
#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "internal.hpp"
#include "xreduce/error.hpp"

namespace xr::opencl::detail {
namespace {

constexpr cl_int kPlatformNotFoundKhr = -1001;  // CL_PLATFORM_NOT_FOUND_KHR (cl_ext.h)

std::string device_string(cl_device_id d, cl_device_info what, const char* name) {
  std::size_t size = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &size), "clGetDeviceInfo", name);
  std::string s(size, '\0');
  check(clGetDeviceInfo(d, what, size, s.data(), nullptr), "clGetDeviceInfo", name);
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

template <class T> T device_value(cl_device_id d, cl_device_info what, const char* name) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo", name);
  return v;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t size = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &size), "clGetPlatformInfo");
  std::string s(size, '\0');
  check(clGetPlatformInfo(p, what, size, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

bool has_extension(const std::string& list, std::string_view ext) {
  std::istringstream in(list);
  std::string word;
  while (in >> word)
    if (word == ext) return true;
  return false;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string full_name(const ListedDevice& d) { return d.caps.platform_name + " / " + d.caps.name; }

std::string describe(const std::vector<ListedDevice>& list) {
  std::string s;
  for (const auto& d : list) {
    if (!s.empty()) s += "; ";
    s += std::to_string(d.platform_index) + "." + std::to_string(d.device_index) + " " + full_name(d);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::string DeviceCaps::type_name() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

std::string DeviceCaps::detail() const {
  std::string s = type_name() + ", " + version + ", " + std::to_string(compute_units) + " compute units, " +
                  format_bytes(global_mem) + " (max alloc " + format_bytes(max_alloc) + "), work-group <= " +
                  std::to_string(max_work_group);
  s += fp64 ? ", fp64" : ", no fp64";
  s += int32_base ? ", int32 atomics" : ", no int32 atomics";
  s += int64_base ? ", int64 atomics" : ", no int64 atomics";
  if (int32_extended || int64_extended) {
    s += ", extended atomics (";
    s += int32_extended ? "int32" : "";
    s += (int32_extended && int64_extended) ? ", " : "";
    s += int64_extended ? "int64" : "";
    s += ")";
  }
  if (!available) s += ", NOT AVAILABLE";
  if (!compiler) s += ", NO COMPILER";
  return s;
}

DeviceCaps query_caps(cl_device_id d) {
  DeviceCaps c;
  c.device = d;
  c.platform = device_value<cl_platform_id>(d, CL_DEVICE_PLATFORM, "CL_DEVICE_PLATFORM");
  c.platform_name = platform_string(c.platform, CL_PLATFORM_NAME);
  c.name = device_string(d, CL_DEVICE_NAME, "CL_DEVICE_NAME");
  c.version = device_string(d, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
  c.type = device_value<cl_device_type>(d, CL_DEVICE_TYPE, "CL_DEVICE_TYPE");
  c.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS");
  c.global_mem = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE");
  c.max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  c.local_mem = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE, "CL_DEVICE_LOCAL_MEM_SIZE");
  c.max_work_group = device_value<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, "CL_DEVICE_MAX_WORK_GROUP_SIZE");
  c.available = device_value<cl_bool>(d, CL_DEVICE_AVAILABLE, "CL_DEVICE_AVAILABLE") != CL_FALSE;
  c.compiler = device_value<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE, "CL_DEVICE_COMPILER_AVAILABLE") != CL_FALSE;
  const std::string ext = device_string(d, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS");
  c.fp64 = has_extension(ext, "cl_khr_fp64");
  c.int32_base = has_extension(ext, "cl_khr_global_int32_base_atomics");
  c.int32_extended = has_extension(ext, "cl_khr_global_int32_extended_atomics");
  c.int64_base = has_extension(ext, "cl_khr_int64_base_atomics");
  c.int64_extended = has_extension(ext, "cl_khr_int64_extended_atomics");
  if (c.fp64) {
    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, nullptr) == CL_SUCCESS)
      c.fp64_denorm = (fp & CL_FP_DENORM) != 0;
  }
  if (c.compute_units == 0) c.compute_units = 1;
  if (c.max_work_group == 0) c.max_work_group = 1;
  return c;
}

const DeviceCaps& caps_of(cl_device_id device) {
  static std::mutex m;
  static auto* cache = new std::map<cl_device_id, DeviceCaps>;  // never freed: see shared_context
  std::lock_guard lock(m);
  auto it = cache->find(device);
  if (it == cache->end()) it = cache->emplace(device, query_caps(device)).first;
  return it->second;
}

namespace {

struct Discovery {
  cl_uint platforms = 0;
  std::vector<ListedDevice> devices;
};

Discovery discover() {
  cl_uint np = 0;
  const cl_int rc = clGetPlatformIDs(0, nullptr, &np);
  if (rc == kPlatformNotFoundKhr || (rc == CL_SUCCESS && np == 0))
    throw BackendUnavailable("opencl", "no OpenCL platform (is an ICD such as pocl-opencl-icd installed?)");
  if (rc != CL_SUCCESS)
    throw BackendUnavailable("opencl", std::string("clGetPlatformIDs failed: ") + error_name(rc));
  std::vector<cl_platform_id> platforms(np);
  check(clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs");
  Discovery found{np, {}};
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    const cl_int drc = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (drc == CL_DEVICE_NOT_FOUND || nd == 0) continue;
    check(drc, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(nd);
    check(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr), "clGetDeviceIDs");
    for (cl_uint d = 0; d < nd; ++d)
      found.devices.push_back({static_cast<int>(p), static_cast<int>(d), caps_of(devices[d])});
  }
  return found;
}

// Platforms and devices are discovered once per process: PoCL's first discovery is not
// thread-safe (concurrent first calls crashed in its device queries, or found no device). The
// static's initialisation serialises it; one that throws leaves it to the next caller.
const Discovery& discovery() {
  static const Discovery found = discover();
  return found;
}

}  // namespace

std::vector<ListedDevice> list_devices() { return discovery().devices; }

ListedDevice select_device(const BackendOptions& options) {
  std::vector<ListedDevice> all = list_devices();
  if (all.empty()) throw BackendUnavailable("opencl", "no OpenCL device on any platform");
  std::vector<ListedDevice> pool;
  if (options.platform >= 0) {
    const cl_uint np = discovery().platforms;
    if (options.platform >= static_cast<int>(np))
      throw InvalidArgument("opencl: platform index " + std::to_string(options.platform) + " out of range (" +
                            std::to_string(np) + " platform(s); devices: " + describe(all) + ")");
    for (const auto& d : all)
      if (d.platform_index == options.platform) pool.push_back(d);
    if (pool.empty())
      throw BackendUnavailable("opencl", "no OpenCL device on platform " + std::to_string(options.platform));
  } else {
    pool = all;
  }

  const std::string& want = options.device;
  if (!want.empty()) {
    const bool digits = std::all_of(want.begin(), want.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digits) {
      const unsigned long idx = want.size() > 9 ? ~0ul : std::stoul(want);
      if (idx >= pool.size())
        throw InvalidArgument("opencl: device index " + want + " out of range (" + std::to_string(pool.size()) +
                              " device(s)" + (options.platform >= 0 ? " on platform " + std::to_string(options.platform) : std::string()) +
                              ": " + describe(pool) + ")");
      return pool[idx];
    }
    const std::string needle = lower(want);
    for (const auto& d : pool)
      if (lower(full_name(d)).find(needle) != std::string::npos) return d;
    throw InvalidArgument("opencl: no OpenCL device matches '" + want + "' (devices: " + describe(pool) + ")");
  }
  for (const auto& d : pool)
    if (d.caps.is_gpu() && d.caps.available) return d;
  for (const auto& d : pool)
    if ((d.caps.type & CL_DEVICE_TYPE_CPU) && d.caps.available) return d;
  for (const auto& d : pool)
    if (d.caps.available) return d;
  throw BackendUnavailable("opencl", "no available OpenCL device (devices: " + describe(pool) + ")");
}

cl_context shared_context(const DeviceCaps& caps) {
  static std::mutex m;
  static auto* contexts = new std::map<cl_device_id, cl_context>;  // never freed
  std::lock_guard lock(m);
  auto it = contexts->find(caps.device);
  if (it != contexts->end()) return it->second;
  cl_int rc = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(caps.platform), 0};
  cl_context ctx = clCreateContext(props, 1, &caps.device, nullptr, nullptr, &rc);
  check(rc, "clCreateContext", caps.name);
  contexts->emplace(caps.device, ctx);
  return ctx;
}

}  // namespace xr::opencl::detail
