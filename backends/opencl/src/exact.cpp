// Exact f32/f64 sums on an OpenCL device (kernels_cl/exact.cl, whose header describes the
// method): per-work-group superaccumulators in local memory written to one column each of a
// [69][G] array, the columns merged by a second kernel, the 69 words read back and rounded once
// on the host by xr::ExactSum.
#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "internal.hpp"
#include "launch.hpp"
#include "pipeline.hpp"
#include "policy.hpp"
#include "xreduce/error.hpp"

namespace xr::opencl::detail {

namespace {

constexpr int kRows = ExactSum::kLimbs + 1;  // 68 limbs, then the flags
// Elements a work-item reads per tile (kernels_cl/exact.cl: XR_PER_PACK * XR_PACKS).
constexpr std::uint64_t per_item_tile(DType type) { return type == DType::F64 ? 16 : 8; }
constexpr std::uint64_t kRunChunk = 16384;   // XR_RUNS: elements per chunk (XR_CHUNK)

std::atomic<int> g_force_atomics{-1};
std::atomic<int> g_force_f32_int{-1};
std::atomic<std::uint64_t> g_per_group{0};

}  // namespace

ExactVariant exact_variant(const DeviceCaps& caps, DType type, const Rung* rung) {
  ExactVariant v;
  const int atomics = g_force_atomics.load();
  v.atom64 = caps.int64_base && atomics != 0;
  if (compute_dtype(type) == DType::F32) {  // f16 and bf16 are summed as f32
    const int f32_int = g_force_f32_int.load();
    v.f32_int = !caps.fp64 || f32_int == 1;
  } else {
    v.denorm_safe = !caps.fp64_denorm;
  }
  v.runs = rung && rung->vector_width && caps.is_cpu() && !v.f32_int && !v.denorm_safe;
  return v;
}

std::string exact_program_options(DType type, const ExactVariant& v) {
  return "-cl-std=CL1.2" + type_options(type, type) +
         " -DXR_ATOM64=" + std::to_string(v.atom64 ? 1 : 0) + " -DXR_F32_INT=" + std::to_string(v.f32_int ? 1 : 0) +
         " -DXR_DENORM_SAFE=" + std::to_string(v.denorm_safe ? 1 : 0) + (v.runs ? " -DXR_RUNS=1" : "") +
         (v.bins ? " -DXR_RUN_BINS=1" : "");
}

void set_exact_group_limit_for_testing(std::uint64_t elements) { g_per_group = elements; }

void set_exact_variant_for_testing(int atomics, int f32_int) {
  g_force_atomics = atomics;
  g_force_f32_int = f32_int;
}

Result exact_on_queue(const Request& rq, const Rung& rung, const DeviceCaps& caps, cl_context context,
                      cl_device_id device, bool profiling, ExactSum::Raw* raw_out) {
  const RunOptions& opt = rq.options;
  ExactVariant variant = exact_variant(caps, rq.type, &rung);
  static_assert(policy::kRunsWorkGroup == 1, "runs take their bins in work-groups of one work-item");
  variant.bins = variant.runs && opt.block_size <= 1;
  const std::string options = exact_program_options(rq.type, variant);
  CachedKernel& main = cached_kernel(context, device, kExactSource, options, kExactKernel);
  CachedKernel& merge = cached_kernel(context, device, kExactSource, options, kExactMergeKernel);

  // Work-group size: any the kernel allows (its local memory is static).
  const std::size_t limit = group_limit(main, caps, 0);
  const std::size_t local = choose_work_group(opt.block_size, limit,
                                              variant.runs ? policy::kRunsWorkGroup : policy::kExactWorkGroup, caps,
                                              "the exact kernel");
  // Grid: the rung's grid-stride grid (or runs' grid) or the one asked for, never more groups
  // than tiles (chunks, for runs).
  const std::uint64_t tiles = ceil_div(rq.n, std::uint64_t{local} * (variant.runs ? kRunChunk : per_item_tile(rq.type)));
  // GPUs: halves of the groups the device holds at once, by type (policy.hpp); CPUs: one such grid.
  const std::uint64_t halves = rq.type == DType::F64   ? policy::kExactGpuGridHalvesF64
                               : rq.type == DType::F32 ? policy::kExactGpuGridHalvesF32
                                                       : policy::kExactGpuGridHalvesF16;
  const std::uint64_t default_groups = variant.runs    ? rung_grid(rung, caps, local)
                                       : caps.is_gpu() ? std::max<std::uint64_t>(1, fixed_grid(caps, local) * halves / 2)
                                                       : fixed_grid(caps, local);
  std::uint64_t groups = opt.grid_size ? opt.grid_size : default_groups;
  groups = std::clamp<std::uint64_t>(groups, 1, std::min(tiles, kExactMaxGroups));
  // Launches: each work-group reads at most kExactMaxPerGroup elements per launch.
  const std::uint64_t per_group = g_per_group.load() ? std::min(g_per_group.load(), kExactMaxPerGroup) : kExactMaxPerGroup;
  const std::uint64_t segment = groups * ((per_group + 7) / 8 * 8);
  const std::uint64_t segments = ceil_div(rq.n, segment);
  const std::size_t local2 =
      floor_pow2(std::min(policy::kExactMergeWorkGroup, group_limit(merge, caps, sizeof(cl_long))));
  const bool merged = groups > 1;

  const Mem part = create_buffer(context, CL_MEM_READ_WRITE, std::uint64_t{kRows} * groups * sizeof(cl_long),
                                 "of exact-sum columns");
  const Mem out =
      merged ? create_buffer(context, CL_MEM_READ_WRITE, kRows * sizeof(cl_long), "exact-sum state") : Mem();
  const cl_mem part_mem = part.get(), out_mem = out.get();
  const cl_mem result_mem = merged ? out_mem : part_mem;  // one column is already [69][1]

  std::vector<Launch> steps;
  for (std::uint64_t s = 0; s < segments; ++s) {
    Launch l;
    l.name = kExactKernel;
    l.kernel = &main;
    l.local = local;
    l.global = static_cast<std::size_t>(groups) * local;
    const cl_uint accumulate = s > 0;
    l.args = {value_arg(rq.buffer), value_arg(cl_ulong{rq.offset + s * segment}),
              value_arg(cl_ulong{std::min(segment, rq.n - s * segment)}), value_arg(part_mem), value_arg(accumulate)};
    steps.push_back(std::move(l));
  }
  if (merged) {
    Launch l;
    l.name = kExactMergeKernel;
    l.kernel = &merge;
    l.local = local2;
    l.global = kRows * local2;
    l.args = {value_arg(part_mem), value_arg(static_cast<cl_uint>(groups)), value_arg(out_mem),
              local_arg(local2 * sizeof(cl_long))};
    steps.push_back(std::move(l));
  }
  std::vector<cl_long> host(kRows, 0);
  const PassRead read{result_mem, kRows * sizeof(cl_long), host.data(), "exact-sum state"};
  const PassTimes times = time_passes(rq.queue, profiling, steps, opt, &read);

  ExactSum::Raw raw;
  for (int i = 0; i < ExactSum::kLimbs; ++i) raw.limb[static_cast<std::size_t>(i)] = host[static_cast<std::size_t>(i)];
  raw.flags = static_cast<std::uint32_t>(host[ExactSum::kLimbs]) | ExactSum::kFlagAny;  // n > 0 here
  if (raw_out) *raw_out = raw;

  Result res;
  res.device = caps.name;
  res.kernel = rung.info.name + ":exact";
  xr::detail::set_exact(res, raw, rq.type);
  res.finish = std::string("exact: work-group superaccumulators (") +
               (variant.atom64 ? "64-bit local atomics" : "32-bit local atomic pairs") +
               (compute_dtype(rq.type) == DType::F32 ? (variant.f32_int ? ", integer window sums" : ", double window sums") : "") +
               (variant.runs ? ", contiguous runs in chunks" : "") +
               "), " + std::to_string(groups) + " x " + std::to_string(local) +
               (merged ? ", columns merged on the device" : "") + ", rounded once on the host";
  res.launches = static_cast<int>(segments) + (merged ? 1 : 0);
  res.repeats = opt.repeat;
  res.kernel_ms = times.kernel_ms;
  res.transfer_ms = times.read_ms;
  xr::detail::fill_identity(res, "opencl", rq.n, rq.op, rq.type);
  return res;
}

}  // namespace xr::opencl::detail
