// The OpenCL Reducer (host data), the cl_mem entry point, and the registry's factory/status.
#include <memory>
#include <string>
#include <vector>

#include "backend_table.hpp"
#include "internal.hpp"
#include "segments.hpp"
#include "stream.hpp"
#include "xreduce/error.hpp"

namespace xr::opencl::detail {
namespace {

// The reducer's queue: in order, with profiling (Result times come from its events).
Queue profiling_queue(cl_context context, const DeviceCaps& caps) {
  cl_int rc = CL_SUCCESS;
  Queue queue(clCreateCommandQueue(context, caps.device, CL_QUEUE_PROFILING_ENABLE, &rc));
  check(rc, "clCreateCommandQueue", caps.name);
  return queue;
}

class OclReducer final : public Reducer {
 public:
  explicit OclReducer(const DeviceCaps& caps)
      : caps_(caps),
        context_(shared_context(caps_)),
        queue_(profiling_queue(context_, caps_)),
        device_(caps_, context_, queue_.get()),
        segments_(caps_, context_, queue_.get(), true) {
    for (const auto& r : rung_table(caps_)) kernels_.push_back(r.info);
  }

  std::string backend() const override { return "opencl"; }
  std::string device() const override { return caps_.name; }
  std::vector<KernelInfo> kernels() const override { return kernels_; }

 protected:
  xr::detail::ChunkDevice& chunk_device() override { return device_; }
  xr::detail::SegmentDevice& segment_device() override { return segments_; }

 private:
  DeviceCaps caps_;
  cl_context context_ = nullptr;  // shared per device, see shared_context
  Queue queue_;                   // released after device_ (which drains it) and segments_
  std::vector<KernelInfo> kernels_;
  Chunks device_;
  Segments segments_;
};

std::string strip_prefix(std::string s) {
  const std::string p = "opencl backend unavailable: ";
  return s.rfind(p, 0) == 0 ? s.substr(p.size()) : s;
}

}  // namespace

}  // namespace xr::opencl::detail

namespace xr::opencl {

Result reduce(cl_command_queue queue, cl_mem buffer, std::uint64_t offset, std::uint64_t n, DType type, Op op,
              const RunOptions& options) {
  detail::Request rq;
  rq.queue = queue;
  rq.buffer = buffer;
  rq.offset = offset;
  rq.n = n;
  rq.type = type;
  rq.op = op;
  rq.options = options;
  Result r = detail::reduce_on_queue(rq);
  if (xr::detail::needs_nan_twin(op, r.value)) {  // every element NaN, or the extreme an infinity
    rq.op = xr::detail::nan_twin(op);
    rq.options.warmup = 0;
    rq.options.repeat = 1;
    xr::detail::settle_with_twin(r, detail::reduce_on_queue(rq).value);
  }
  xr::finalize_result(r, op, type, n);
  return r;
}

std::vector<KernelInfo> segment_kernels(cl_device_id device) {
  return detail::segment_strategies(detail::caps_of(device));
}

std::vector<KernelInfo> kernels(cl_device_id device) {
  std::vector<KernelInfo> out;
  for (const auto& r : detail::rung_table_of(device)) out.push_back(r.info);
  return out;
}

}  // namespace xr::opencl

namespace xr::opencl::detail {

std::unique_ptr<Reducer> make_reducer(const BackendOptions& options) {
  const auto chosen = select_device(options);
  const auto& caps = chosen.caps;
  if (!caps.available) throw BackendUnavailable("opencl", caps.platform_name + " / " + caps.name + " is not available");
  if (!caps.compiler)
    throw BackendUnavailable("opencl", caps.platform_name + " / " + caps.name + " has no OpenCL C compiler");
  return std::make_unique<OclReducer>(caps);
}

BackendStatus status() {
  BackendStatus s;
  s.name = "opencl";
  s.compiled = true;
  try {
    const auto list = list_devices();
    for (const auto& d : list) {
      s.devices.push_back({d.caps.platform_name + " / " + d.caps.name,
                           "platform " + std::to_string(d.platform_index) + ", device " +
                               std::to_string(d.device_index) + ": " + d.caps.detail(),
                           BackendOptions{d.platform_index, std::to_string(d.device_index)}, d.caps.max_alloc,
                           d.caps.is_gpu()});
      if (d.caps.available && d.caps.compiler) s.usable = true;
    }
    if (list.empty()) s.reason = "no OpenCL device on any platform";
    else if (!s.usable) s.reason = "no available OpenCL device with a compiler";
  } catch (const BackendUnavailable& e) {
    s.reason = strip_prefix(e.what());
  } catch (const std::exception& e) {
    s.reason = e.what();
  }
  return s;
}

}  // namespace xr::opencl::detail
