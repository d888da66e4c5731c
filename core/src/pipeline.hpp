// The chunk pipeline: the one loop that brings every host input (a resident array, streamed host
// data, a file) through a backend's device. A backend supplies a ChunkDevice, a small interface:
// stage a chunk, reduce it into cell k, combine the cells in order, read back the value or the
// exact state. Core chooses resident or streamed, sizes the chunks, reads the next chunk
// while the device works on the one before, repeats and times, and fills the Result. Backends include this header; applications
// never see it.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <thread>

#include "xreduce/exact.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/result.hpp"

namespace xr {

class ChunkSource;

// Throws InvalidArgument unless `kernel` supports (op, type) (and exact mode, when asked for
// a float sum), or for the Native accumulator on f16 or bf16; EmptyInput for min/max of nothing.
void check_request(const KernelInfo& kernel, Op op, DType type, std::uint64_t n, std::string_view backend,
                   const RunOptions& options);

// Reads one chunk of a source on its own thread, so that the caller can queue device work
// meanwhile. join() waits and rethrows what the read threw; the destructor waits too.
class ChunkReader {
 public:
  ChunkReader() = default;
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;
  ~ChunkReader();
  // Starts source.read(first, count, dst); a read still running is joined first.
  void start(ChunkSource& source, std::uint64_t first, std::uint64_t count, void* dst);
  void join();

 private:
  std::thread thread_;
  std::exception_ptr error_;
};

namespace detail {

// How a device wants its chunks.
struct ChunkPolicy {
  // The device computes on host memory (OpenMP): an input already in memory is reduced where it
  // lies, as one resident chunk; only streams go through staging buffers.
  bool host_memory = false;
  unsigned slots = 1;              // device slots a streamed input cycles through
  std::uint64_t chunk_bytes = std::uint64_t{64} << 20;  // default streamed chunk
  std::uint64_t max_chunk_bytes = 0;  // one device allocation at most (0: no limit)
  // Where a streamed chunk is read. true: on a second thread, while the chunk before it is
  // reduced (a device whose reduce() returns when it is done). false: by the calling thread,
  // once the chunk before it is staged and its reduction enqueued (a device that copies and
  // reduces asynchronously overlaps its own work with the read).
  bool read_ahead = false;
};

// One reduction through the pipeline, as begin() is told it.
struct ChunkPlan {
  Op op = Op::Sum;
  DType type = DType::F32;
  RunOptions options;              // options.kernel is the checked rung's name
  const KernelInfo* kernel = nullptr;
  bool exact = false;              // options.exact on an f32/f64 sum: cells hold exact states
  std::uint64_t n = 0;
  std::uint64_t chunk = 0;         // elements per chunk (the last may be shorter)
  std::uint64_t chunks = 0;
  // Every chunk keeps a slot of its own: staged once, then reduced warmup + repeat times.
  // Otherwise chunk k goes through slot k % slots.
  bool resident = false;
  bool read_ahead = false;         // ChunkPolicy::read_ahead
  const void* memory = nullptr;    // the input in host memory, or nullptr (a stream)
};

// What one pass over the chunks gave (ChunkDevice::finish).
struct ChunkOutcome {
  Scalar value;                    // the combined cells, of result_dtype(op, type, accumulator)
  std::int64_t index = -1;         // argmin, argmax: Result::index
  Scalar maximum;                  // minmax: Result::maximum
  ExactSum::Raw exact;             // plan.exact: the merged exact state, rounded by core
  double kernel_ms = 0;            // device time of this pass's reductions and combine
  double transfer_ms = 0;          // host<->device copies of this pass (the value read included)
  int launches = 0;
  std::uint64_t depth = 0;         // Result::rounding_depth of the value
  std::string kernel;              // what ran ("auto:single_pass")
  std::string finish;              // how partials and cells were combined
};

class ChunkDevice {
 public:
  virtual ~ChunkDevice() = default;
  virtual ChunkPolicy policy(DType type) const = 0;
  // Prepares slots, staging, cells and the chunk reduction for the plan.
  virtual void begin(const ChunkPlan& plan) = 0;
  // Host memory to read chunk k into, free to overwrite (waits for the copy that used it last);
  // nullptr when stage() takes the chunk straight from plan.memory.
  virtual void* staging(std::uint64_t k) = 0;
  // Chunk k's `len` elements at `host` go to its slot (asynchronously where the device can).
  virtual void stage(std::uint64_t k, const void* host, std::uint64_t len) = 0;
  // Resident plans: waits for every stage(); the copies' time in ms.
  virtual double staged() = 0;
  // Reduces chunk k's slot into cell k (asynchronously where the device can).
  virtual void reduce(std::uint64_t k, std::uint64_t len) = 0;
  // Combines the cells in order and reads back the value or the exact state; waits for all.
  virtual ChunkOutcome finish() = 0;
  // After an exception: returns once nothing in flight reads a staging buffer or slot.
  virtual void abandon() noexcept = 0;
  // How host data reaches the device, for Result::path ("3 device slots, 2 pinned staging buffers").
  virtual std::string describe(const ChunkPlan& plan) const = 0;
};

// nanmin and nanmax of a float type give their fold's identity (+inf, -inf) both where every
// element is NaN and where the extreme is that infinity. Where the value is that identity, the
// op's twin (nanmax for nanmin) over the same input settles it: the input is all NaN exactly
// when the twin gives its own identity too (no non-empty set of numbers has min +inf and max
// -inf). A second reduction in that case alone.
bool needs_nan_twin(Op op, const Scalar& value);
Op nan_twin(Op op);
// The value of `r` once its twin gave `twin`: NaN where both are their identities.
void settle_with_twin(Result& r, const Scalar& twin);

// Runs the plan: warmup + repeat passes over the chunks, timed; fills every Result field.
Result run_chunks(ChunkDevice& device, ChunkSource& source, Op op, const RunOptions& options,
                  const KernelInfo& kernel, bool resident);

// The exact state rounded once to the sum's type (f32 or f64).
Scalar round_exact(const ExactSum::Raw& state, DType type);
// An exact sum's result: the state rounded once (value, rounding depth 1) and the state itself
// (Result::exact_state).
void set_exact(Result& r, const ExactSum::Raw& state, DType type);

// A value of `type` from its bytes in memory (a result read back from a device).
Scalar scalar_from_bytes(DType type, const void* bytes);

// What a device leaves in a reduction's result cell: one value of result_dtype(op, type, acc),
// or, for a pair op, its record over the input type (pair_record_t: Located<T>, 16 bytes for
// every T, or Bounds<T>).
std::size_t cell_bytes(Op op, DType type, Accumulator acc);
inline constexpr std::size_t kMaxCellBytes = 16;
struct CellValue {
  Scalar value;
  std::int64_t index = -1;  // kNoIndex reads as -1
  Scalar maximum;
};
CellValue read_cell(Op op, DType type, Accumulator acc, const void* bytes);
// Two cells of one (op, type, accumulator) combined, `a` from before `b` in the input (indices
// are positions in the whole input).
CellValue combine_cells(Op op, DType type, Accumulator acc, const CellValue& a, const CellValue& b);
// Copies a cell's parts into a Result or a ChunkOutcome.
template <class R> void take_cell(R& out, const CellValue& cell) {
  out.value = cell.value;
  out.index = cell.index;
  out.maximum = cell.maximum;
}
// Input bytes per second over `ms`.
double bytes_per_second(std::uint64_t n, DType type, double ms);
// The fields every Result of n elements carries, whichever path made it: backend, n, op, type;
// bytes_per_s over total_ms when set (a streamed input, end to end), else over kernel_ms; and a
// float product's rounding depth, at least n. Reducer::reduce and the device-pointer APIs call it.
void fill_identity(Result& r, std::string_view backend, std::uint64_t n, Op op, DType type);

}  // namespace detail
}  // namespace xr
