// The OpenCL Reducer (host data), the cl_mem entry point, and the registry's factory/status.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "backend_table.hpp"
#include "internal.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

namespace xr::opencl::detail {
namespace {

std::atomic<std::uint64_t> g_chunk_limit{0};

class OclReducer final : public Reducer {
 public:
  explicit OclReducer(const DeviceCaps& caps) : caps_(caps), context_(shared_context(caps)) {
    cl_int rc = CL_SUCCESS;
    queue_ = clCreateCommandQueue(context_, caps_.device, CL_QUEUE_PROFILING_ENABLE, &rc);
    check(rc, "clCreateCommandQueue", caps_.name);
    for (const auto& r : rung_table(caps_)) kernels_.push_back(r.info);
  }
  ~OclReducer() override {
    streamer_.reset();
    if (queue_) clReleaseCommandQueue(queue_);
  }
  OclReducer(const OclReducer&) = delete;
  OclReducer& operator=(const OclReducer&) = delete;

  std::string backend() const override { return "opencl"; }
  std::string device() const override { return caps_.name; }
  std::vector<KernelInfo> kernels() const override { return kernels_; }

 protected:
  Result run(HostArray in, Op op, const RunOptions& options, const KernelInfo& kernel) override {
    if (options.host_path == HostPath::Stream && in.n > 0) {
      ArraySource source(in);
      return run_stream(source, op, options, kernel);
    }
    const std::uint64_t in_bytes = in.n * size_of(in.type);
    if (options.device_mem_limit && in_bytes > options.device_mem_limit)
      throw InvalidArgument("opencl: a resident input of " + format_bytes(in_bytes) +
                            " does not fit the device memory limit of " + format_bytes(options.device_mem_limit) +
                            " (the streamed host path takes any size)");
    Request rq;
    rq.queue = queue_;
    rq.type = in.type;
    rq.op = op;
    rq.options = options;
    if (in.n == 0) return reduce_on_queue(rq);

    // Inputs larger than one allocation go through in chunks, combined on the host.
    const std::uint64_t elem = size_of(in.type);
    std::uint64_t chunk = g_chunk_limit.load();
    if (!chunk) chunk = std::max<std::uint64_t>(1, caps_.max_alloc / elem);
    const std::uint64_t first = std::min(in.n, chunk);
    cl_int rc = CL_SUCCESS;
    cl_mem buf = clCreateBuffer(context_, CL_MEM_READ_ONLY, first * elem, nullptr, &rc);
    check(rc, "clCreateBuffer", format_bytes(first * elem) + " of input");
    struct Release {
      cl_mem m;
      ~Release() { clReleaseMemObject(m); }
    } release{buf};

    Result total;
    std::uint64_t chunks = 0;
    // Exact mode: the chunks' raw states merge exactly; the sum is rounded once at the end.
    const bool exact = options.exact && exact_applies(op, in.type);
    ExactSum exact_acc;
    ExactSum::Raw raw;
    const auto* bytes = static_cast<const unsigned char*>(in.data);
    for (std::uint64_t start = 0; start < in.n; start += chunk, ++chunks) {
      const std::uint64_t len = std::min(chunk, in.n - start);
      cl_event write = nullptr;
      check(clEnqueueWriteBuffer(queue_, buf, CL_TRUE, 0, len * elem, bytes + start * elem, 0, nullptr, &write),
            "clEnqueueWriteBuffer", format_bytes(len * elem));
      cl_ulong t0 = 0, t1 = 0;
      rc = clGetEventProfilingInfo(write, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
      if (rc == CL_SUCCESS) rc = clGetEventProfilingInfo(write, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
      clReleaseEvent(write);
      check(rc, "clGetEventProfilingInfo", "input write");
      const double write_ms = t1 > t0 ? static_cast<double>(t1 - t0) * 1e-6 : 0.0;

      rq.buffer = buf;
      rq.n = len;
      Result r = reduce_on_queue(rq, exact ? &raw : nullptr);
      if (exact) exact_acc.merge_raw(raw);
      if (chunks == 0) {
        total = r;
        total.transfer_ms += write_ms;
      } else {
        total.value = visit_dtype(r.value.type, [&](auto t) {
          using T = decltype(t);
          return Scalar::of(combine(op, total.value.as<T>(), r.value.as<T>()));
        });
        total.kernel_ms += r.kernel_ms;
        total.transfer_ms += write_ms + r.transfer_ms;
        total.launches += r.launches;
        total.rounding_depth = std::max(total.rounding_depth, r.rounding_depth);
      }
    }
    if (exact) {
      total.value = in.type == DType::F32 ? Scalar::of(exact_acc.to_float()) : Scalar::of(exact_acc.to_double());
      total.rounding_depth = 1;
      if (chunks > 1) total.finish += " + exact host merge of " + std::to_string(chunks) + " chunks";
    } else if (chunks > 1) {
      total.rounding_depth += chunks - 1;  // the host combines the chunks in order
      total.finish += " + host combine of " + std::to_string(chunks) + " chunks";
    }
    total.n = in.n;
    total.chunks = chunks;
    total.path = "resident";
    total.bytes_per_s = total.kernel_ms > 0 ? static_cast<double>(in.n * elem) / (total.kernel_ms * 1e-3) : 0.0;
    return total;
  }

  Result run_stream(ChunkSource& source, Op op, const RunOptions& options, const KernelInfo& kernel) override {
    const HostArray whole{source.memory(), source.size(), source.type()};
    if (source.size() == 0 || options.host_path == HostPath::Resident) {
      if (source.size() && !whole.data)
        throw InvalidArgument("opencl: host_path Resident needs the input in host memory; " + source.name() +
                              " streams");
      RunOptions resident = options;
      resident.host_path = HostPath::Resident;
      return run(whole, op, resident, kernel);
    }
    if (source.type() == DType::F64 && !caps_.fp64)
      throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps_.name + " does not offer");
    std::lock_guard lock(mutex_);
    if (!streamer_) streamer_ = std::make_unique<HostStreamer>(caps_, context_, queue_);
    return streamer_->run(source, op, options);
  }

 private:
  DeviceCaps caps_;
  cl_context context_ = nullptr;  // shared per device, see shared_context
  cl_command_queue queue_ = nullptr;
  std::vector<KernelInfo> kernels_;
  std::unique_ptr<HostStreamer> streamer_;  // the streamed host path, created on first use
  std::mutex mutex_;
};

std::string strip_prefix(std::string s) {
  const std::string p = "opencl backend unavailable: ";
  return s.rfind(p, 0) == 0 ? s.substr(p.size()) : s;
}

}  // namespace

void set_chunk_limit_for_testing(std::uint64_t elements) { g_chunk_limit = elements; }
std::uint64_t chunk_limit_for_testing() { return g_chunk_limit.load(); }

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
  return detail::reduce_on_queue(rq);
}

std::vector<KernelInfo> kernels(cl_device_id device) {
  std::vector<KernelInfo> out;
  for (const auto& r : detail::rung_table(detail::caps_of(device))) out.push_back(r.info);
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
                               std::to_string(d.device_index) + ": " + d.caps.detail()});
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
