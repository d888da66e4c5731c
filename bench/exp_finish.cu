// Tuning experiment for auto at mid n (not part of the build): the cost of the last-block
// finish and of the fence it uses, at L2-resident f64 sizes, against cub::DeviceReduce::Sum,
// interleaved, each call between CUDA events, median of 200 rounds.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/exp_finish.cu -o /tmp/exp_finish && /tmp/exp_finish
// Variants (grid = ceil(packs / (block * U)), at most SMs x resident blocks, as auto does):
//   sc      partial store, __threadfence (fence.sc.gpu), atomicAdd ticket; the last block
//           fences again and reads the partials (auto's finish at the time of writing)
//   lean    the ticket is atom.acq_rel.gpu (release fence + atomic + L1 invalidate); no
//           second fence in the last block (the acquire is the ticket's, bar.sync passes it on)
//   pollv   no ticket: each block publishes {partial, epoch} with one 128-bit atomic exchange;
//           the last block (dispatched last) polls the slots with 16-byte loads, 32 ns apart,
//           until every epoch is this launch's, then reduces in order
//   pollcas the same, each poll an atomic 128-bit compare-and-swap (a read that is atomic by the
//           PTX memory model, where a vector load is not)
//   none    partials only, no finish (a lower bound; wrong answer for grids > 1)
//   *_u8    8 loads in flight per thread (half the grid)
// Earlier runs of this file also had acqrel (fence.acq_rel.gpu in place of __threadfence) and
// atomrel (lean plus the second fence): both within 0.15 us of sc; lean with 1024-thread blocks:
// no better than lean; and poll with block 0 as the collector, spinning without a pause: best
// up to 256 blocks, 0.5-1 us worse from 512.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe_util.hpp"

#define CK(x) cuda_or_exit((x), #x)

enum Finish { kSc, kAcqRel, kAtomRel, kNone, kLean, kPoll, kPollCas };

// {value, epoch} written by one 128-bit atomic exchange (sm_90): a reader that sees the epoch
// sees the value written with it.
struct alignas(16) Slot {
  double value;
  unsigned long long epoch;
};

__device__ __forceinline__ void publish(Slot* s, double v, unsigned long long epoch) {
  asm volatile(
      "{ .reg .b128 d, b; mov.b128 b, {%1, %2}; atom.relaxed.gpu.global.exch.b128 d, [%0], b; }" ::"l"(s),
      "l"(__double_as_longlong(v)), "l"(epoch)
      : "memory");
}

template <Finish F> __device__ __forceinline__ Slot peek(Slot* s) {
  unsigned long long lo, hi;
  if (F == kPollCas)  // an atomic read: compare-and-swap {0, 0} with itself
    asm volatile(
        "{ .reg .b128 d, c; mov.b128 c, {%2, %2}; atom.relaxed.gpu.global.cas.b128 d, [%3], c, c; "
        "mov.b128 {%0, %1}, d; }"
        : "=l"(lo), "=l"(hi)
        : "l"(0ull), "l"(s)
        : "memory");
  else
    asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(s) : "memory");
  return Slot{__longlong_as_double(lo), hi};
}

template <int B> __device__ __forceinline__ double block_sum(double v) {
  __shared__ double w[B / 32];
  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(~0u, v, o);
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < B / 32 ? w[threadIdx.x] : 0.0;
    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(~0u, v, o);
  }
  __syncthreads();
  return v;
}

__device__ __forceinline__ unsigned ticket_acq_rel(unsigned* c) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(c) : "memory");
  return old;
}

template <int B, int U, Finish F>
__global__ void __launch_bounds__(B) k_sum(const double2* in, unsigned long long nvec, double* out, double* partials,
                                         unsigned* counter, Slot* slots, unsigned long long epoch) {
  const unsigned long long stride = 1ull * gridDim.x * B;
  double acc = 0;
  unsigned long long i = 1ull * blockIdx.x * B + threadIdx.x;
  for (; i + (U - 1) * stride < nvec; i += U * stride) {
    double2 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) r[u] = __ldg(in + i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) acc += r[u].x + r[u].y;
  }
  for (; i < nvec; i += stride) {
    const double2 r = __ldg(in + i);
    acc += r.x + r.y;
  }
  acc = block_sum<B>(acc);
  if (gridDim.x == 1 || F == kNone) {
    if (threadIdx.x == 0) (gridDim.x == 1 ? *out : partials[blockIdx.x]) = acc;
    return;
  }
  if (F == kPoll || F == kPollCas) {
    const unsigned collector = gridDim.x - 1;  // dispatched last: most slots are full when it looks
    if (blockIdx.x != collector) {
      if (threadIdx.x == 0) publish(slots + blockIdx.x, acc, epoch);
      return;
    }
    double v = 0.0;
    for (unsigned j = threadIdx.x; j < collector; j += B) {
      Slot s = peek<F>(slots + j);
      while (s.epoch != epoch) {
        __nanosleep(32);
        s = peek<F>(slots + j);
      }
      v += s.value;
    }
    if (threadIdx.x == 0) v += acc;
    v = block_sum<B>(v);
    if (threadIdx.x == 0) *out = v;
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    unsigned t;
    if (F == kSc) {
      __threadfence();
      t = atomicAdd(counter, 1u);
    } else if (F == kAcqRel) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      t = atomicAdd(counter, 1u);
    } else {
      t = ticket_acq_rel(counter);  // kAtomRel, kLean
    }
    is_last = t == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  if (F == kSc) __threadfence();
  else if (F != kLean) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  double v = 0;
  for (unsigned j = threadIdx.x; j < gridDim.x; j += B) v += __ldcg(partials + j);
  v = block_sum<B>(v);
  if (threadIdx.x == 0) {
    *out = v;
    *counter = 0;
  }
}

template <int B, int U, Finish F> int grid_for(unsigned long long nvec, int sms) {
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_sum<B, U, F>, B, 0);
  const unsigned long long want = (nvec + 1ull * B * U - 1) / (1ull * B * U);
  return int(std::max(1ull, std::min(want, 1ull * sms * per_sm)));
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; f64 sum; median us per call (200 rounds), ratio to cub in ()\n", prop.name, sms);
  double *out, *partials;
  unsigned* counter;
  CK(cudaMalloc(&out, 8));
  CK(cudaMalloc(&partials, 1 << 20));
  CK(cudaMalloc(&counter, 4));
  CK(cudaMemset(counter, 0, 4));
  const size_t max_n = size_t(1) << 22;
  double* d;
  CK(cudaMalloc(&d, max_n * 8));
  std::vector<double> h(max_n);
  for (size_t i = 0; i < max_n; ++i) h[i] = double((i * 2654435761u) >> 12) * 1e-6;
  CK(cudaMemcpy(d, h.data(), max_n * 8, cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  cub::DeviceReduce::Sum(nullptr, temp_bytes, d, out, max_n);
  void* temp;
  CK(cudaMalloc(&temp, temp_bytes));
  const char* names[] = {"cub", "sc", "lean", "lean_u8", "pollv", "pollv_u8", "pollcas", "pollcas_u8", "none"};
  constexpr int V = 9;
  Slot* slots;
  CK(cudaMalloc(&slots, 1 << 20));
  CK(cudaMemset(slots, 0, 1 << 20));
  unsigned long long epoch = 0;
  for (int e : {12, 16, 18, 19, 20, 21, 22}) {
    const size_t n = size_t(1) << e;
    const unsigned long long nvec = n / 2;
    const double2* v = reinterpret_cast<const double2*>(d);
    int grids[V] = {0,
                    grid_for<256, 4, kSc>(nvec, sms),
                    grid_for<256, 4, kLean>(nvec, sms),
                    grid_for<256, 8, kLean>(nvec, sms),
                    grid_for<256, 4, kPoll>(nvec, sms),
                    grid_for<256, 8, kPoll>(nvec, sms),
                    grid_for<256, 4, kPollCas>(nvec, sms),
                    grid_for<256, 8, kPollCas>(nvec, sms),
                    grid_for<256, 4, kNone>(nvec, sms)};
    auto run = [&](int which) {
      const int g = grids[which];
      switch (which) {
        case 0: cub::DeviceReduce::Sum(temp, temp_bytes, d, out, n); break;
        case 1: k_sum<256, 4, kSc><<<g, 256>>>(v, nvec, out, partials, counter, slots, 0); break;
        case 2: k_sum<256, 4, kLean><<<g, 256>>>(v, nvec, out, partials, counter, slots, 0); break;
        case 3: k_sum<256, 8, kLean><<<g, 256>>>(v, nvec, out, partials, counter, slots, 0); break;
        case 4: k_sum<256, 4, kPoll><<<g, 256>>>(v, nvec, out, partials, counter, slots, ++epoch); break;
        case 5: k_sum<256, 8, kPoll><<<g, 256>>>(v, nvec, out, partials, counter, slots, ++epoch); break;
        case 6: k_sum<256, 4, kPollCas><<<g, 256>>>(v, nvec, out, partials, counter, slots, ++epoch); break;
        case 7: k_sum<256, 8, kPollCas><<<g, 256>>>(v, nvec, out, partials, counter, slots, ++epoch); break;
        case 8: k_sum<256, 4, kNone><<<g, 256>>>(v, nvec, out, partials, counter, slots, 0); break;
      }
    };
    double check[V] = {};
    const std::vector<float> med = interleaved_medians(V, 205, 5, run, [&](int w, int r) {
      if (r == 0 || r == 204) cuda_or_exit(cudaMemcpy(&check[w], out, 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
    });
    std::printf("2^%d: cub %.2f", e, med[0] * 1e3);
    for (int w = 1; w < V; ++w)
      std::printf("  %s[g=%d] %.2f (%.3f)%s", names[w], grids[w], med[w] * 1e3, med[w] / med[0],
                  w != 8 && std::abs(check[w] - check[0]) > 1e-9 * std::abs(check[0]) ? " WRONG" : "");
    std::printf("\n");
  }
  return 0;
}
