// The CUDA backend: the Reducer (host spans), the device-pointer API (xreduce/cuda.hpp), and
// the registry's factory and status. Both entry points run the same code: resolve the rung,
// run it on the (device, stream) workspace, time it with CUDA events, copy one value back.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend_table.hpp"
#include "check.hpp"
#include "exact.hpp"
#include "xreduce/exact.hpp"
#include "stream.hpp"
#include "pipeline.hpp"
#include "ladder.hpp"
#include "segments.hpp"
#include "xreduce/cuda.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda {
namespace detail {

Prepared prepare(DeviceState& ds, Workspace& ws, const void* in, u64 n, DType type, Op op,
                 const RunOptions& opt, void* out) {
  Prepared p;
  p.entry = &rung(opt.kernel);
  check_request(p.entry->info, op, type, n, "cuda", opt);  // errors name the op asked for
  const bool exact = opt.exact && exact_applies(op, type);
  op = kernel_op(op, type);  // a mean of floats runs as their sum, any and all as count_nonzero
  const BlockRule& blocks = p.entry->info.blocks;
  const unsigned block = opt.block_size ? opt.block_size : blocks.preferred;
  if (!blocks.accepts(block))
    throw InvalidArgument("cuda: kernel " + p.entry->info.name + " accepts block sizes " + blocks.describe() +
                          ", not " + std::to_string(block));
  p.fn = (n == 0 ? empty_input_entry() : *p.entry).find(op, type, opt.accumulator);
  if (!p.fn)
    throw InvalidArgument("cuda: kernel " + p.entry->info.name + " does not support " + std::string(to_string(op)) +
                          " on " + std::string(to_string(type)));
  p.op = op;
  p.type = type;
  p.exact = exact;
  p.result_type = result_dtype(op, type, opt.accumulator);
  p.launch.in = in;
  p.launch.n = n;
  p.launch.out = out;
  p.launch.block = block;
  p.launch.grid = opt.grid_size;
  p.launch.stream = ws.stream();
  p.launch.ws = &ws;
  p.launch.caps = &ds.caps();
  return p;
}

namespace {

float elapsed_ms(Workspace& ws) {
  check(cudaEventSynchronize(ws.stop_event()), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, ws.start_event(), ws.stop_event()), "cudaEventElapsedTime");
  return ms;
}

// The timing harness of the device-pointer API: options.warmup untimed launches, then
// options.repeat launches, each between the workspace's two events; `times` gets their ms.
template <class Launch> auto time_launches(Workspace& ws, const RunOptions& opt, Launch launch, std::vector<double>& times) {
  decltype(launch()) last{};
  for (int i = 0; i < opt.warmup; ++i) last = launch();
  for (int i = 0; i < std::max(1, opt.repeat); ++i) {
    check(cudaEventRecord(ws.start_event(), ws.stream()), "cudaEventRecord");
    last = launch();
    check(cudaEventRecord(ws.stop_event(), ws.stream()), "cudaEventRecord");
    times.push_back(elapsed_ms(ws));
  }
  return last;
}

// One reduction of device memory, timed; then the value (or, in exact mode, the 552-byte state,
// whose copy is inside the timed region) comes back and the host rounds it once. Fills every
// field but backend/n/op/type.
Result run_timed(DeviceState& ds, Workspace& ws, const Prepared& p, const RunOptions& opt) {
  Result r;
  std::vector<double> times;
  if (p.exact) {
    ExactAccumulator& acc = ws.exact_accumulator();
    const unsigned block = opt.block_size ? opt.block_size : kExactDefaultBlock;
    const ExactLaunch l = time_launches(ws, opt, [&] {
      return enqueue_exact_sum(p.type, p.launch.in, p.launch.n, ws.stream(), acc, block, opt.grid_size);
    }, times);
    check(cudaStreamSynchronize(ws.stream()), "cudaStreamSynchronize");
    xr::detail::set_exact(r, read_exact_state(acc, p.launch.n), p.type);
    r.kernel = p.entry->info.name + ":exact";
    r.finish = "exact: block superaccumulators, global atomics, rounded once on the host";
    r.launches = l.launches;
  } else {
    const Outcome o = time_launches(ws, opt, [&] { return p.fn(p.launch); }, times);
    unsigned char bytes[xr::detail::kMaxCellBytes] = {};
    const std::size_t cell = xr::detail::cell_bytes(p.op, p.type, opt.accumulator);
    check(cudaEventRecord(ws.start_event(), ws.stream()), "cudaEventRecord");
    check(cudaMemcpyAsync(bytes, p.launch.out, cell, cudaMemcpyDeviceToHost, ws.stream()),
          "cudaMemcpyAsync of the result");
    check(cudaEventRecord(ws.stop_event(), ws.stream()), "cudaEventRecord");
    r.transfer_ms = elapsed_ms(ws);
    check(cudaStreamSynchronize(ws.stream()), "cudaStreamSynchronize");
    xr::detail::take_cell(r, xr::detail::read_cell(p.op, p.type, opt.accumulator, bytes));
    r.kernel = *o.variant ? o.variant : p.entry->info.name;
    r.finish = o.finish;
    r.launches = o.launches;
    r.rounding_depth = o.depth;
  }
  r.device = ds.caps().name;
  r.repeats = std::max(1, opt.repeat);
  r.kernel_ms = median(times);
  return r;
}


int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

// ---- the Reducer -----------------------------------------------------------------------

class CudaReducer final : public Reducer {
 public:
  explicit CudaReducer(int device) : device_(device), state_(&device_state(device)) {
    DeviceGuard guard(device_);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    try {
      ws_ = &state_->workspace(stream_);  // temp storage allocated now, not per call
      chunks_ = std::make_unique<Chunks>(*state_, *ws_);
      segments_ = std::make_unique<Segments>(*state_, stream_);
    } catch (...) {
      segments_.reset();
      chunks_.reset();
      if (ws_) state_->release(stream_);
      cudaStreamDestroy(stream_);
      throw;
    }
  }
  ~CudaReducer() override {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    cudaSetDevice(device_);
    segments_.reset();
    chunks_.reset();
    state_->release(stream_);
    cudaStreamDestroy(stream_);
    cudaGetLastError();
    cudaSetDevice(previous);
  }

  std::string backend() const override { return "cuda"; }
  std::string device() const override { return state_->caps().name; }
  std::vector<KernelInfo> kernels() const override { return cuda::kernels(); }

 protected:
  xr::detail::ChunkDevice& chunk_device() override { return *chunks_; }
  xr::detail::SegmentDevice& segment_device() override { return *segments_; }

 private:
  int device_;
  DeviceState* state_;
  cudaStream_t stream_ = nullptr;
  Workspace* ws_ = nullptr;
  std::unique_ptr<Chunks> chunks_;  // every host input goes through it
  std::unique_ptr<Segments> segments_;  // segmented reductions of host data
};

std::string device_detail(int d) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d SMs, %.1f GiB, cc %d.%d", prop.multiProcessorCount,
                double(prop.totalGlobalMem) / double(1ull << 30), prop.major, prop.minor);
  return buf;
}

}  // namespace
}  // namespace detail

// ---- the device-pointer API --------------------------------------------------------------

std::vector<KernelInfo> kernels() {
  std::vector<KernelInfo> out;
  for (const auto& e : detail::ladder()) out.push_back(e.info);
  return out;
}

template <class T>
Result reduce(const T* dev_ptr, std::uint64_t n, Op op, cudaStream_t stream, const RunOptions& options) {
  using namespace detail;
  require_value_exists(op, n);
  const int device = n ? device_of(dev_ptr, "input") : current_device();
  if (n) require_aligned(dev_ptr, sizeof(T), "input");
  DeviceGuard guard(device);
  DeviceState& ds = device_state(device);
  Workspace& ws = ds.workspace(stream);
  // A mean of floats runs as their sum, any and all as count_nonzero; their last step follows on the host.
  const Prepared p = prepare(ds, ws, dev_ptr, n, dtype_of<T>, op, options, ws.result_slot());
  Result r = run_timed(ds, ws, p, options);
  xr::finalize_result(r, op, dtype_of<T>, n);
  xr::detail::fill_identity(r, "cuda", n, op, dtype_of<T>);
  if (xr::detail::needs_nan_twin(op, r.value)) {
    // nanmin/nanmax gave its fold's identity: all NaN, or the extreme is that infinity. The twin
    // op over the same input tells them apart (xr::detail::needs_nan_twin).
    RunOptions once = options;
    once.warmup = 0;
    once.repeat = 1;
    const Op twin_op = xr::detail::nan_twin(op);
    const Prepared twin = prepare(ds, ws, dev_ptr, n, dtype_of<T>, twin_op, once, ws.result_slot());
    r.op = op;
    xr::detail::settle_with_twin(r, run_timed(ds, ws, twin, once).value);
  }
  return r;
}

template <class T>
void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result, cudaStream_t stream,
                  const RunOptions& options) {
  using namespace detail;
  require_value_exists(op, n);
  if (may_be_all_nan(op, dtype_of<T>))
    throw InvalidArgument("cuda: reduce_async does not take " + std::string(to_string(op)) + " of " +
                          std::string(to_string(dtype_of<T>)) + ": where the input may be all NaN (NaN, not " +
                          (fold_of(op) == Op::Min ? "+inf" : "-inf") +
                          "), a second pass must follow the first once its value is on the host: use reduce()");
  if (finalize_of(op) == Finalize::DivideByCount && options.exact)
    throw InvalidArgument("cuda: reduce_async does not take an exact " + std::string(to_string(op)) +
                          ": the exact sum's quotient is rounded on the host: use reduce()");
  const int out_device = device_of(dev_result, "result");
  const std::size_t result_size = size_of(result_dtype(op, dtype_of<T>, options.accumulator));
  require_aligned(dev_result, is_indexed(op) ? alignof(Located<T>) : result_size, "result");
  if (n) {
    require_aligned(dev_ptr, sizeof(T), "input");
    const int in_device = device_of(dev_ptr, "input");
    if (in_device != out_device)
      throw InvalidArgument("cuda: input on device " + std::to_string(in_device) + " but result on device " +
                            std::to_string(out_device));
  }
  DeviceGuard guard(out_device);
  DeviceState& ds = device_state(out_device);
  Workspace& ws = ds.workspace(stream);
  const Prepared p = prepare(ds, ws, dev_ptr, n, dtype_of<T>, op, options, dev_result);
  if (p.exact) {  // rounded on the device by the exact kernel's last block
    const unsigned block = options.block_size ? options.block_size : kExactDefaultBlock;
    enqueue_exact_sum(p.type, p.launch.in, p.launch.n, ws.stream(), ws.exact_accumulator(), block, options.grid_size,
                      dev_result);
    return;
  }
  p.fn(p.launch);
  launch_finalize(finalize_of(op), p.result_type, dev_result, 1, n, nullptr, n, ws.stream());  // mean, any, all
}

template <class T>
void reduce_async(const T* dev_ptr, std::uint64_t n, Op op, void* dev_result, cudaStream_t stream,
                  Accumulator accumulator) {
  RunOptions options;
  options.accumulator = accumulator;
  reduce_async(dev_ptr, n, op, dev_result, stream, options);
}

void synchronize(cudaStream_t stream) { XR_CUDA(cudaStreamSynchronize(stream)); }

#define XR_CUDA_DEFINE(e, T, ...) XR_CUDA_ENTRY_POINTS(, T)
XR_ELEMENT_TYPES(XR_CUDA_DEFINE)
#undef XR_CUDA_DEFINE

}  // namespace xr::cuda

// ---- registry hooks ------------------------------------------------------------------------

namespace xr::cuda::detail {

BackendStatus status() {
  BackendStatus s;
  s.name = "cuda";
  s.compiled = true;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    const char* str = cudaGetErrorString(e);
    s.reason = "no CUDA device: " + error_name(e) + ": " + (str ? str : "");
    return s;
  }
  if (count == 0) {
    s.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    return s;
  }
  try {
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop{};
      check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
      s.devices.push_back({prop.name, device_detail(d), BackendOptions{-1, std::to_string(d)}, prop.totalGlobalMem, true});
    }
  } catch (const Error& err) {
    s.reason = err.what();
    return s;
  }
  s.usable = true;
  return s;
}

std::unique_ptr<Reducer> make_reducer(const BackendOptions& options) {
  const BackendStatus s = status();
  if (!s.usable) throw BackendUnavailable("cuda", s.reason);
  int device = 0;
  const std::string& want = options.device;
  if (!want.empty()) {
    const bool numeric = std::all_of(want.begin(), want.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (numeric) {
      device = want.size() > 9 ? -1 : std::stoi(want);
      if (device < 0 || device >= int(s.devices.size()))
        throw InvalidArgument("cuda: device " + want + " out of range (" + std::to_string(s.devices.size()) +
                              " devices)");
    } else {
      device = -1;
      for (std::size_t d = 0; d < s.devices.size() && device < 0; ++d)
        if (s.devices[d].name.find(want) != std::string::npos) device = int(d);
      if (device < 0) throw InvalidArgument("cuda: no device whose name contains '" + want + "'");
    }
  }
  return std::make_unique<CudaReducer>(device);
}

}  // namespace xr::cuda::detail
