// The ladder table, errors, and the per-device / per-stream caches.
#include "ladder.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <utility>
#include <tuple>

#include "check.hpp"
#include "exact.hpp"
#include "xreduce/error.hpp"

namespace xr::cuda::detail {

// ---- errors ----------------------------------------------------------------------------

std::string error_name(cudaError_t e) {
  const char* n = cudaGetErrorName(e);
  return n ? n : ("cudaError " + std::to_string(static_cast<int>(e)));
}

void throw_cuda(cudaError_t e, const std::string& what) {
  cudaGetLastError();  // clear a non-sticky error so it is not reported again by a later check
  const char* s = cudaGetErrorString(e);
  throw DeviceError("cuda: " + what + " failed: " + error_name(e) + ": " + (s ? s : "unknown error"),
                    static_cast<int>(e), error_name(e));
}

// ---- pointers ----------------------------------------------------------------------------

namespace {
std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}
}  // namespace

int device_of(const void* p, const char* what) {
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) throw_cuda(e, std::string("cudaPointerGetAttributes on the ") + what + " pointer " + hex(p));
  if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) return a.device;
  const std::string kind = a.type == cudaMemoryTypeHost ? "page-locked host memory (cudaMemoryTypeHost)"
                                                        : "not CUDA memory (cudaMemoryTypeUnregistered)";
  throw DeviceError("cuda: the " + std::string(what) + " pointer " + hex(p) + " is " + kind +
                        ", not device memory: cudaErrorInvalidValue",
                    static_cast<int>(cudaErrorInvalidValue), "cudaErrorInvalidValue");
}

void require_aligned(const void* p, std::size_t align, const char* what) {
  if (reinterpret_cast<std::uintptr_t>(p) % align != 0)
    throw InvalidArgument("cuda: the " + std::string(what) + " pointer " + hex(p) + " is not aligned to " +
                          std::to_string(align) + " bytes");
}

// ---- the table -------------------------------------------------------------------------

const std::vector<RungEntry>& ladder() {
  static const std::vector<RungEntry> table = [] {
    std::vector<RungEntry> t;
    for (auto& e : tree_rungs()) t.push_back(std::move(e));
    for (auto& e : grid_rungs()) t.push_back(std::move(e));
    for (auto& e : atomic_rungs()) t.push_back(std::move(e));
    for (auto& e : nested_rungs()) t.push_back(std::move(e));
    t.push_back(cub_rung());
    t.push_back(auto_rung());
    return t;
  }();
  return table;
}

const RungEntry& rung(const std::string& name) {
  for (const auto& e : ladder())
    if (e.info.name == name) return e;
  std::string names;
  for (const auto& e : ladder()) names += (names.empty() ? "" : ", ") + e.info.name;
  throw InvalidArgument("cuda: unknown kernel '" + name + "' (known: " + names + ")");
}

// ---- caches ----------------------------------------------------------------------------


Workspace::Workspace(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  DeviceGuard guard(device);
  // One allocation for the fixed part: finish slots, ticket partials, then result slot,
  // counters and epoch. Cleared on the stream itself, ahead of every kernel that uses it: the
  // first call on a stream waits for nothing the caller enqueued.
  const std::size_t slot_bytes = kMaxSinglePassGrid * 16, partial_bytes = kMaxSinglePassGrid * 8;
  const std::size_t bytes = slot_bytes + partial_bytes + 256;
  void* base = nullptr;
  check(cudaMalloc(&base, bytes), "cudaMalloc of " + format_bytes(bytes) + " (workspace)");
  char* fixed = static_cast<char*>(base) + slot_bytes + partial_bytes;
  slots_ = base;
  partials_ = static_cast<char*>(base) + slot_bytes;
  result_ = fixed;
  counter_ = reinterpret_cast<unsigned*>(fixed + 128);
  tile_counter_ = reinterpret_cast<unsigned*>(fixed + 160);
  epoch_ = reinterpret_cast<std::uint64_t*>(fixed + 192);
  try {
    check(cudaMemsetAsync(base, 0, bytes, stream_), "cudaMemsetAsync (finish state)");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  } catch (...) {
    if (start_) cudaEventDestroy(start_);
    cudaFree(base);
    throw;
  }
}

ExactAccumulator& Workspace::exact_accumulator() {
  if (!exact_) {
    DeviceGuard guard(device_);
    exact_ = std::make_unique<ExactAccumulator>(device_, stream_);
  }
  return *exact_;
}

Workspace::~Workspace() {
  // Errors are ignored: a destructor cannot report them, and at exit the runtime may be gone.
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  exact_.reset();
  for (void* p : slot_)
    if (p) cudaFree(p);
  cudaFree(slots_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  cudaGetLastError();
  cudaSetDevice(previous);
}

void* Workspace::scratch(int slot, std::size_t bytes) {
  if (slot_bytes_[slot] >= bytes) return slot_[slot];
  // Grow stream-ordered: work already queued on this stream still sees the old buffer.
  const std::size_t want = std::max<std::size_t>(bytes, slot_bytes_[slot] * 2);
  if (slot_[slot]) {
    check(cudaFreeAsync(slot_[slot], stream_), "cudaFreeAsync (scratch)");
    slot_[slot] = nullptr;
    slot_bytes_[slot] = 0;
  }
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, want, stream_);
  if (e != cudaSuccess && want > bytes) {
    cudaGetLastError();
    e = cudaMallocAsync(&p, bytes, stream_);
    if (e == cudaSuccess) slot_bytes_[slot] = bytes;
  } else {
    slot_bytes_[slot] = want;
  }
  if (e != cudaSuccess) {
    slot_bytes_[slot] = 0;
    throw_cuda(e, "cudaMallocAsync of " + format_bytes(bytes) + " (partials / temp storage)");
  }
  slot_[slot] = p;
  return p;
}

DeviceState::DeviceState(int device) {
  caps_.device = device;
  check(cudaDeviceGetAttribute(&caps_.sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SM count)");
  check(cudaDeviceGetAttribute(&caps_.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device),
        "cudaDeviceGetAttribute(threads per SM)");
  check(cudaDeviceGetAttribute(&caps_.cc_major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute(cc)");
  check(cudaDeviceGetAttribute(&caps_.cc_minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute(cc)");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  caps_.name = prop.name;
  caps_.total_mem = prop.totalGlobalMem;
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
    caps_.dram_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  cudaGetLastError();
}

Workspace& DeviceState::workspace(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = ws_[stream];
  if (!slot) {
    try {
      slot = std::make_unique<Workspace>(caps_.device, stream);
    } catch (...) {
      ws_.erase(stream);
      throw;
    }
  }
  return *slot;
}

void DeviceState::release(cudaStream_t stream) {
  std::unique_ptr<Workspace> dead;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ws_.find(stream);
    if (it == ws_.end()) return;
    dead = std::move(it->second);
    ws_.erase(it);
  }
}

DeviceState& device_state(int device) {
  static std::mutex mutex;
  // Never destroyed: CUDA calls from static destructors at exit are unsafe.
  static auto* states = new std::map<int, std::unique_ptr<DeviceState>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = (*states)[device];
  if (!s) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (device < 0 || device >= count) {
      states->erase(device);
      throw InvalidArgument("cuda: device " + std::to_string(device) + " out of range (" + std::to_string(count) +
                            " devices)");
    }
    try {
      s = std::make_unique<DeviceState>(device);
    } catch (...) {
      states->erase(device);
      throw;
    }
  }
  return *s;
}

namespace {

// A value queried from the runtime once per key and kept until exit.
template <class Key, class Query> int cached(const Key& key, Query query) {
  static std::mutex mutex;
  static auto* cache = new std::map<Key, int>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  const int value = query();
  std::lock_guard<std::mutex> lock(mutex);
  (*cache)[key] = value;
  return value;
}

}  // namespace

int blocks_per_sm(const void* kernel, unsigned block, std::size_t dyn_smem, int device) {
  return cached(std::make_tuple(kernel, block, dyn_smem, device), [&] {
    int blocks = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, static_cast<int>(block), dyn_smem),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return std::max(blocks, 1);
  });
}

void allow_dynamic_smem(const void* kernel, std::size_t bytes, int device, const char* rung) {
  cached(std::make_tuple(kernel, bytes, device), [&] {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) throw_cuda(e, std::string("cudaFuncSetAttribute (") + rung + "'s shared memory)");
    return 0;
  });
}

int ptx_version(const void* kernel, int device) {
  return cached(std::make_pair(kernel, device), [&] {
    cudaFuncAttributes a{};
    check(cudaFuncGetAttributes(&a, kernel), "cudaFuncGetAttributes");
    return a.ptxVersion;
  });
}

}  // namespace xr::cuda::detail
