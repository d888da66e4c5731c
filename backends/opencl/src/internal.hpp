// The OpenCL backend's internals, shared by its sources and by tests/opencl (which call them
// through libxreduce). Not installed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arith.hpp"
#include "xreduce/exact.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/registry.hpp"

namespace xr::opencl::detail {

using xr::detail::ceil_div;
using xr::detail::ceil_log2;

// ---- errors ---------------------------------------------------------------------------------

// Throws DeviceError("opencl: <call>[ (<detail>)] failed: <CL_NAME>") unless code is CL_SUCCESS.
void check(cl_int code, std::string_view call, std::string_view detail = {});
[[noreturn]] void fail(cl_int code, std::string_view call, std::string_view detail = {});
using xr::format_bytes;

// ---- devices --------------------------------------------------------------------------------

struct DeviceCaps {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name;
  std::string name;
  std::string version;  // CL_DEVICE_VERSION
  cl_device_type type = 0;
  unsigned compute_units = 1;
  std::uint64_t global_mem = 0;
  std::uint64_t max_alloc = 0;
  std::uint64_t local_mem = 0;
  std::size_t max_work_group = 1;
  bool available = true;
  bool compiler = true;
  bool fp64 = false;
  bool fp64_denorm = true;  // CL_DEVICE_DOUBLE_FP_CONFIG has CL_FP_DENORM (mandatory for cl_khr_fp64)
  bool int32_base = false, int32_extended = false;  // cl_khr_global_int32_{base,extended}_atomics
  bool int64_base = false, int64_extended = false;  // cl_khr_int64_{base,extended}_atomics
  bool is_gpu() const { return (type & CL_DEVICE_TYPE_GPU) != 0; }
  bool is_cpu() const { return (type & CL_DEVICE_TYPE_CPU) != 0; }
  std::string type_name() const;  // "GPU", "CPU", "accelerator", ...
  std::string detail() const;     // one line for --list
};

DeviceCaps query_caps(cl_device_id device);
// Cached per device (the queries are cheap but repeated on every reduce call).
const DeviceCaps& caps_of(cl_device_id device);

struct ListedDevice {
  int platform_index = 0;
  int device_index = 0;  // within its platform
  DeviceCaps caps;
};
// Every device of every platform, platform by platform. Throws BackendUnavailable when there
// is no OpenCL platform (CL_PLATFORM_NOT_FOUND_KHR or zero platforms).
std::vector<ListedDevice> list_devices();
// The device BackendOptions chooses (see xreduce/opencl.hpp for the rules).
ListedDevice select_device(const BackendOptions& options);

// One context per device, shared by every Reducer of the process, so that cached programs are
// reused across Reducers. Never released (the ICD may be gone at static destruction).
cl_context shared_context(const DeviceCaps& caps);

// One owner of an OpenCL object (a buffer, an event, a queue, a program, a kernel), which releases it at scope exit;
// moved, never copied.
template <class T, cl_int(CL_API_CALL* Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T object) : object_(object) {}
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ClHandle(ClHandle&& o) noexcept : object_(std::exchange(o.object_, nullptr)) {}
  ClHandle& operator=(ClHandle&& o) noexcept {
    if (this != &o) {
      reset();
      object_ = std::exchange(o.object_, nullptr);
    }
    return *this;
  }
  ~ClHandle() { reset(); }
  T get() const { return object_; }
  // Where an OpenCL call that creates the object writes it (the one held before is released).
  T* out() {
    reset();
    return &object_;
  }
  explicit operator bool() const { return object_ != nullptr; }
  void reset() noexcept {
    if (object_) Release(std::exchange(object_, nullptr));
  }

 private:
  T object_ = nullptr;
};
using Mem = ClHandle<cl_mem, clReleaseMemObject>;
using Event = ClHandle<cl_event, clReleaseEvent>;
using Queue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using Program = ClHandle<cl_program, clReleaseProgram>;
using Kernel = ClHandle<cl_kernel, clReleaseKernel>;

// ---- programs -------------------------------------------------------------------------------

// Builds `source` for one device; throws KernelBuildError with CL_PROGRAM_BUILD_LOG on
// failure. Not cached.
Program build_program(cl_context context, cl_device_id device, std::string_view source_name,
                         std::string_view source, const std::string& options);

struct CachedKernel {
  Program program;
  Kernel kernel;
  std::size_t work_group_max = 1;   // CL_KERNEL_WORK_GROUP_SIZE
  std::uint64_t local_mem_used = 0; // CL_KERNEL_LOCAL_MEM_SIZE (static local memory)
  std::mutex mutex;                 // held from clSetKernelArg to clEnqueueNDRangeKernel
};

// The kernel `kernel_name` of the embedded source `source_name` (or of several, "a.cl+b.cl":
// program_text) built with `options`, built once per (context, device, source, options), its
// kernels sharing the program, and kept until clear_program_cache().
CachedKernel& cached_kernel(cl_context context, cl_device_id device, std::string_view source_name,
                            const std::string& options, const char* kernel_name);

// ---- the ladder -----------------------------------------------------------------------------

enum class Tree : int { Interleaved = 0, Sequential = 1 };
enum class Finish : int { Partials = 0, AtomAdd = 1, AtomMin = 2, AtomMax = 3 };

struct Rung {
  KernelInfo info;
  Tree tree = Tree::Sequential;
  unsigned k = 1;           // elements per work-item per tile; 0: RunOptions::coarsening
  bool fixed_grid = false;  // grid from the compute units (grid-stride) instead of one tile per group
  bool contiguous_on_cpu = false;  // XR_CONTIG=1 on CPU devices: each work-item reads K neighbours
  bool contiguous(const DeviceCaps& caps) const { return contiguous_on_cpu && !caps.is_gpu(); }
  // > 0: one contiguous run per work-item, read with vload<vector_width> into k / vector_width
  // vector accumulators (XR_VEC; the CPU shape), with its own grid and work-group size.
  unsigned vector_width = 0;
  // Tiles of 16-byte packs (XR_PACK: int4, float4, long2, double2) instead of elements: K
  // coalesced 16-byte loads in flight per work-item (the GPU shape of the vector rung).
  bool packed = false;
};

std::vector<Rung> rung_table(const DeviceCaps& caps);
// rung_table(caps_of(device)), built once per device: every reduce call looks its rung up there.
const std::vector<Rung>& rung_table_of(cl_device_id device);
// The rung auto runs on this device for `type` (policy::kAutoRungCpu on CPU devices; on GPUs
// kAutoRungGpuNarrow for elements under kAutoNarrowBytes, else kAutoRungGpu).
std::string auto_rung_name(const DeviceCaps& caps, DType type);
// The rung that runs the pair ops (argmin, argmax, minmax) on this device, auto's choice for them
// (policy::kPairRungCpu on CPU devices, else kPairRungGpu); it and auto declare every op, the
// other rungs the folds.
std::string pair_rung_name(const DeviceCaps& caps);
// The atomic finish this device offers for (op, accumulator type), or Partials.
Finish atomic_finish(const DeviceCaps& caps, Op op, DType acc);
// The -D options naming the input and accumulator types (OpenCL C names, size, float or not,
// fp64), from core's type table; reduce.cl and exact.cl take them.
std::string type_options(DType in, DType acc);
// The -D options of reduce.cl.
std::string program_options(DType in, DType acc, Op op, unsigned k, Tree tree, Finish finish,
                            bool contiguous = false, unsigned vector_width = 0, bool packed = false);
// Elements of one 16-byte pack of type t (XR_PACK).
constexpr unsigned pack_elements(DType t) { return static_cast<unsigned>(16 / size_of(t)); }
// " -DXR_EMPTY=<literal>": the value of an empty reduction of (op, accumulator type), from core's
// empty_value (kernels_cl/segments.cl gives it to empty segments).
std::string empty_value_option(Op op, DType acc);
// program_options for one rung on one device.
std::string rung_program_options(const Rung& rung, const DeviceCaps& caps, DType in, DType acc, Op op, Finish finish);
// Every distinct (options) of reduce.cl that some rung x fold x type x accumulator of this device
// builds, second passes included.
std::vector<std::string> all_program_options(const DeviceCaps& caps);

constexpr const char* kSource = "reduce.cl";
constexpr const char* kKernel = "xr_reduce";

// The pair ops: kernels_cl/pairs.cl after reduce.cl, one program per (rung, op, type) holding
// both kernels: xr_pair reads elements, xr_pair_records combines the records it writes.
constexpr const char* kPairSource = "reduce.cl+pairs.cl";
constexpr const char* kPairKernel = "xr_pair";
constexpr const char* kPairRecordsKernel = "xr_pair_records";
// Local memory per work-item of both: the largest pair_t (a value and a long, or two doubles).
constexpr std::size_t kPairLocalBytes = 16;
// The fold a pair op compares by (reduce.cl's XR_OP_ of its programs): max for argmax, else min.
Op pair_fold(Op op);
// The -D options pairs.cl adds for (type, op): XR_PAIR_<NAME>, and minmax's XR_MAX_IDENTITY.
std::string pair_options(DType type, Op op);
// The -D options of the pair program for (rung, op, type): reduce.cl's for the fold the op
// compares by, the type as its own accumulator, and pair_options.
std::string pair_program_options(const Rung& rung, const DeviceCaps& caps, DType type, Op op);
// Every distinct (options) of a pair program that some rung x pair op x type of this device builds.
std::vector<std::string> all_pair_program_options(const DeviceCaps& caps);

// ---- reduction ------------------------------------------------------------------------------


// A new buffer of `bytes`; DeviceError naming `what` when the device refuses it.
Mem create_buffer(cl_context context, cl_mem_flags flags, std::size_t bytes, const std::string& what);

enum class FinishPolicy { Auto, SecondPass };  // SecondPass: ignore atomics (tests, comparisons)

// Device buffers one reduction works in: partials ping-pong between two, the atomic finish
// adds into `cell`. Kept by a caller that reduces many times on one in-order queue (the chunk
// device, stream.hpp), so that no reduction creates or releases a buffer while commands are
// queued: NVIDIA's OpenCL waits in clReleaseMemObject for the commands that use the buffer
// (23-30 ms of a 35-54 ms GiB streamed on an H100 host).
struct ScratchBuffers {
  Mem partials[2];
  std::size_t partial_bytes[2] = {};
  Mem cell;
  std::size_t cell_bytes = 0;
  // Buffer `which` (0, 1: partials; 2: the cell) of at least `bytes`, replaced when smaller.
  cl_mem get(cl_context context, int which, std::size_t bytes);
};

struct Request {
  cl_command_queue queue = nullptr;
  cl_mem buffer = nullptr;
  std::uint64_t offset = 0;  // elements
  std::uint64_t n = 0;
  // Pair ops: the index that element `offset` has in the whole input (a chunk's first element);
  // Result::index counts from it.
  std::int64_t first_index = 0;
  DType type = DType::F32;
  // Checked as asked; run as its kernel_op (a mean of floats as their sum, any and all as count_nonzero).
  Op op = Op::Sum;
  RunOptions options;
  FinishPolicy finish = FinishPolicy::Auto;
  // Chunks of host data (stream.hpp): when `sink` is set, one reduction (no warmup, no repeat)
  // copies its result cell (xr::detail::cell_bytes: a pair op's record) into cell `sink_cell` of
  // `sink` instead of reading it back; the call
  // returns at once, without the value or times, and hands its events (kernels, then the
  // copy) to *events, which must be given.
  cl_mem sink = nullptr;
  std::uint64_t sink_cell = 0;
  std::vector<cl_event>* events = nullptr;
  // Where the reduction keeps its partials and cell; null: buffers of its own, released at
  // its end. Safe to share between reductions on one in-order queue only.
  ScratchBuffers* scratch = nullptr;
};

// Runs warmup + repeat reductions of the request on its queue (the rung named by
// options.kernel, already checked) and fills every Result field. transfer_ms is the result
// read only. With options.exact on an f32/f64 sum (exact_applies) it runs the exact kernels
// (exact_on_queue) and, when `exact_raw` is given, also returns the unrounded state there, so
// that callers can merge chunks before rounding once.
Result reduce_on_queue(const Request& request, ExactSum::Raw* exact_raw = nullptr);

// Shared by the plain and the exact paths.
std::uint64_t fixed_grid(const DeviceCaps& caps, std::size_t local);  // groups of a grid-stride grid
std::uint64_t rung_grid(const Rung& rung, const DeviceCaps& caps, std::size_t local);  // fixed_grid, or the runs' grid
double event_ms(cl_event e);                                          // profiling: end - start

// The events of one reduction in order (kernels, then the read of the result); each enqueue
// waits on the one before it. Released at scope exit.
struct EventChain {
  std::vector<cl_event> events;
  EventChain() = default;
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  EventChain(EventChain&& o) noexcept : events(std::exchange(o.events, {})) {}
  EventChain& operator=(EventChain&& o) noexcept {
    if (this != &o) {
      clear();
      events = std::exchange(o.events, {});
    }
    return *this;
  }
  ~EventChain() { clear(); }
  void clear() noexcept {
    for (cl_event e : events) clReleaseEvent(e);
    events.clear();
  }
  cl_uint wait_count() const { return events.empty() ? 0 : 1; }
  const cl_event* wait_list() const { return events.empty() ? nullptr : &events.back(); }
};

std::size_t floor_pow2(std::size_t x);  // the largest power of two <= x (1 for 0)

// The work-group size of a launch: the caller's (InvalidArgument naming `kernel` if above
// `limit`), else the largest power of two up to min(preferred, limit).
std::size_t choose_work_group(unsigned requested, std::size_t limit, std::size_t preferred, const DeviceCaps& caps,
                              const char* kernel);

// ---- exact sums (kernels_cl/exact.cl, docs/exact.md) -----------------------------------------

constexpr const char* kExactSource = "exact.cl";
constexpr const char* kExactKernel = "xr_exact";
constexpr const char* kExactMergeKernel = "xr_exact_merge";
// Work-groups of one exact launch at most (one 552-byte column each); more of the input is
// covered by the grid-stride loop.
constexpr std::uint64_t kExactMaxGroups = 65536;
// Elements one work-group reads in one launch at most (keeps |local limb| < 2^62; docs/exact.md);
// larger inputs take more launches, each adding to the work-groups' columns.
constexpr std::uint64_t kExactMaxPerGroup = std::uint64_t{1} << 28;
// Tests: a smaller per-group limit (0 restores kExactMaxPerGroup), to exercise several launches.
void set_exact_group_limit_for_testing(std::uint64_t elements);

struct ExactVariant {
  bool atom64 = false;       // 64-bit local atomics (cl_khr_int64_base_atomics); else 32-bit pairs
  bool f32_int = false;      // f32 window sums in integers (devices without cl_khr_fp64)
  bool denorm_safe = false;  // f64: no subnormal arithmetic (devices without CL_FP_DENORM for doubles)
  bool runs = false;         // XR_RUNS: contiguous runs in chunks, vector lanes (CPU devices)
  // XR_RUN_BINS: a run's misses into private bins, 8 KiB a work-item (f64): runs in work-groups
  // of one work-item only (their default), as PoCL keeps a copy for every work-item of a group
  // and 1024 of them overran its thread's stack.
  bool bins = false;
};
// What the device uses for `type` (unless a test forced otherwise); runs where the rung has the
// CPU shape (vector_runs, or auto on a CPU device) and neither f32_int nor denorm_safe is needed.
ExactVariant exact_variant(const DeviceCaps& caps, DType type, const Rung* rung = nullptr);
std::string exact_program_options(DType type, const ExactVariant& v);
// Tests: atomics -1 auto, 0 32-bit pairs, 1 64-bit (where the device has them);
// f32_int -1 auto, 0 doubles (where the device has fp64), 1 integers.
void set_exact_variant_for_testing(int atomics, int f32_int);

// The exact f32/f64 sum of the request (arguments checked by reduce_on_queue, n > 0): the
// Result, rounded once, and the raw state.
Result exact_on_queue(const Request& request, const Rung& rung, const DeviceCaps& caps, cl_context context,
                      cl_device_id device, bool profiling, ExactSum::Raw* raw);

// ---- host data (stream.hpp) ------------------------------------------------------------------

// Host data goes to the device in chunks of at most this many elements (default: what
// CL_DEVICE_MAX_MEM_ALLOC_SIZE allows, and for streamed inputs policy::kChunkBytes). 0 restores
// the default. For tests.
void set_chunk_limit_for_testing(std::uint64_t elements);
std::uint64_t chunk_limit_for_testing();

}  // namespace xr::opencl::detail
