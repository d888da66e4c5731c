// Building OpenCL programs, and the cache that builds each (context, device, source, options)
// once.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "embedded_sources.hpp"
#include "internal.hpp"
#include "xreduce/error.hpp"

namespace xr::opencl::detail {

std::string_view embedded_source(std::string_view name) {
  for (const auto& s : embedded_sources())
    if (name == s.name) return s.text;
  throw Error("opencl: no embedded OpenCL source named '" + std::string(name) + "'");
}

std::string program_text(std::string_view names) {
  if (names.find('+') == std::string_view::npos) return std::string(embedded_source(names));
  std::string text;
  while (!names.empty()) {
    const std::size_t plus = names.find('+');
    const std::string_view name = names.substr(0, plus);
    // Build logs then name each file and its own line numbers.
    text += "#line 1 \"" + std::string(name) + "\"\n";
    text += embedded_source(name);
    text += "\n";
    names = plus == std::string_view::npos ? std::string_view() : names.substr(plus + 1);
  }
  return text;
}

namespace {

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

struct Key {
  cl_context context;
  cl_device_id device;
  std::string source;
  std::string options;
  std::string kernel;
  bool operator<(const Key& o) const {
    return std::tie(context, device, source, options, kernel) < std::tie(o.context, o.device, o.source, o.options, o.kernel);
  }
};

struct Cache {
  std::mutex mutex;
  std::map<Key, std::unique_ptr<CachedKernel>> entries;
};

Cache& cache() {
  static auto* c = new Cache;  // never freed: releasing at static destruction can outlive the ICD
  return *c;
}

}  // namespace

Program build_program(cl_context context, cl_device_id device, std::string_view source_name,
                         std::string_view source, const std::string& options) {
  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int rc = CL_SUCCESS;
  Program program(clCreateProgramWithSource(context, 1, &text, &length, &rc));
  check(rc, "clCreateProgramWithSource", source_name);
  rc = clBuildProgram(program.get(), 1, &device, options.c_str(), nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    std::string log = build_log(program.get(), device);
    std::string what = "opencl: clBuildProgram (" + std::string(source_name) + " " + options + ") failed: " +
                       error_name(rc);
    if (!log.empty()) {
      // The start of the log in the message; all of it in log().
      std::string head = log.substr(0, 600);
      what += "\n" + head + (head.size() < log.size() ? "\n..." : "");
    }
    throw KernelBuildError(what, rc, error_name(rc), log);
  }
  return program;
}

CachedKernel& cached_kernel(cl_context context, cl_device_id device, std::string_view source_name,
                            const std::string& options, const char* kernel_name) {
  Cache& c = cache();
  const Key key{context, device, std::string(source_name), options, kernel_name};
  // Builds are serialised: simple, and a second thread asking for the same program waits for
  // the first build instead of duplicating it.
  std::lock_guard lock(c.mutex);
  if (auto it = c.entries.find(key); it != c.entries.end()) return *it->second;

  auto entry = std::make_unique<CachedKernel>();
  // Another kernel of the same program, already built, shares its program.
  const Key program_key{context, device, std::string(source_name), options, ""};
  if (auto it = c.entries.lower_bound(program_key);
      it != c.entries.end() && std::tie(it->first.context, it->first.device, it->first.source, it->first.options) ==
                                   std::tie(context, device, program_key.source, options)) {
    check(clRetainProgram(it->second->program.get()), "clRetainProgram", source_name);
    entry->program = Program(it->second->program.get());
  } else {
    entry->program = build_program(context, device, source_name, program_text(source_name), options);
  }
  cl_int rc = CL_SUCCESS;
  entry->kernel = Kernel(clCreateKernel(entry->program.get(), kernel_name, &rc));
  if (rc != CL_SUCCESS) fail(rc, "clCreateKernel", kernel_name);
  std::size_t wg = 0;
  cl_ulong local = 0;
  rc = clGetKernelWorkGroupInfo(entry->kernel.get(), device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr);
  if (rc == CL_SUCCESS)
    rc = clGetKernelWorkGroupInfo(entry->kernel.get(), device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  if (rc != CL_SUCCESS) fail(rc, "clGetKernelWorkGroupInfo", kernel_name);
  entry->work_group_max = wg ? wg : 1;
  entry->local_mem_used = local;
  return *c.entries.emplace(key, std::move(entry)).first->second;
}

}  // namespace xr::opencl::detail

namespace xr::opencl {

void clear_program_cache() {
  auto& c = detail::cache();
  std::lock_guard lock(c.mutex);
  for (auto& [key, e] : c.entries) {
    std::lock_guard use(e->mutex);  // no launch of it in flight on another thread
    e->kernel.reset();
    e->program.reset();
  }
  c.entries.clear();
}

std::size_t program_cache_size() {
  auto& c = detail::cache();
  std::lock_guard lock(c.mutex);
  return c.entries.size();
}

}  // namespace xr::opencl
