// Exact f32, f64, f16 and bf16 sums on a CUDA device (docs/exact.md, "Device kernels"): one
// launch leaves the exact sum as an xr::ExactSum::Raw state, which the host merges and rounds:
//
//   xr::cuda::detail::ExactAccumulator ws(device, stream);   // once per (device, stream); cached memory
//   enqueue_exact_sum(DType::F32, dev_ptr, n, stream, ws);
//   cudaStreamSynchronize(stream);
//   xr::ExactSum acc; acc.merge_raw(read_exact_state(ws, n)); float v = acc.to_float();
//
// Bit-identical results for every block size, grid and alignment (the state is exact).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "xreduce/exact.hpp"
#include "xreduce/types.hpp"

namespace xr::cuda::detail {

// Device memory for one stream of one device: the global accumulator (zero between launches:
// each launch's last block zeroes it again), the device result slot, and a page-locked host
// copy of it. The device memory is allocated in the constructor and cleared on `stream`, so
// that the first sum on a stream waits for nothing the caller enqueued; the host copy on the
// first sum that comes back to the host. Never per call. Two streams must not share one (the
// accumulator and the ticket are per launch in flight). The current device must be `device`
// when it is constructed, destroyed and used.
class ExactAccumulator {
 public:
  ExactAccumulator(int device, cudaStream_t stream);
  ~ExactAccumulator();
  ExactAccumulator(const ExactAccumulator&) = delete;
  ExactAccumulator& operator=(const ExactAccumulator&) = delete;

  int device() const { return device_; }
  void* global_state() const { return global_; }          // kern::exact::Global
  void* device_result() const { return dev_out_; }        // kern::exact::RawOut
  const void* host_result() const { return host_out_; }   // page-locked copy of it (null before)
  void* host_result_buffer();                              // that copy, allocated on first use
  int sm_count() const { return sm_count_; }

 private:
  int device_ = 0;
  int sm_count_ = 1;
  void* global_ = nullptr;
  void* dev_out_ = nullptr;
  void* host_out_ = nullptr;
};

struct ExactLaunch {
  ExactSum::Raw raw;      // limbs (carry-save, |limb| <= 2^62) and flags, as ExactSum::add would set
  int launches = 0;       // kernel launches (1)
  unsigned block = 0;     // the block size used
  std::uint64_t grid = 0; // the grid used
};

// Block sizes accepted: multiples of 32 from 32 to 512 (0: the default, 256).
// Grid: 1 .. 2^30 blocks (0: SMs x resident blocks, no more than the data needs).
constexpr unsigned kExactDefaultBlock = 256;
constexpr unsigned kExactMaxBlock = 512;
bool exact_block_ok(unsigned block);

// Enqueues the kernel on stream s. Without dev_value, then the copy of the state into
// ws.host_result(), valid after the stream synchronises (then call read_exact_state()). With
// dev_value (device memory of result_dtype(Sum, type): f32 or f64), the kernel's last block
// rounds the state into it on the device, and nothing comes back to the host. Returns what it
// ran. dev: device memory of `type` (f32, f64, f16 or bf16), aligned to its size; any n >= 0.
// Throws InvalidArgument for another type, a bad block or grid, DeviceError for CUDA errors.
ExactLaunch enqueue_exact_sum(DType type, const void* dev, std::uint64_t n, cudaStream_t s, ExactAccumulator& ws,
                              unsigned block = 0, std::uint64_t grid = 0, void* dev_value = nullptr);
// The state in ws.host_result(), with kFlagAny set for n > 0 (ExactSum's flags exactly).
ExactSum::Raw read_exact_state(const ExactAccumulator& ws, std::uint64_t n);

}  // namespace xr::cuda::detail
