// The OpenCL ladder and the one reduction path every entry point goes through: plan the
// passes, launch them on a queue, time them, read the result back.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cl_types.hpp"
#include "internal.hpp"
#include "launch.hpp"
#include "pipeline.hpp"
#include "policy.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::opencl::detail {

// ---- the ladder -----------------------------------------------------------------------------

std::string auto_rung_name(const DeviceCaps& caps, DType type) {
  if (caps.is_cpu()) return policy::kAutoRungCpu;
  return size_of(type) < policy::kAutoNarrowBytes ? policy::kAutoRungGpuNarrow : policy::kAutoRungGpu;
}

std::string pair_rung_name(const DeviceCaps& caps) {
  return caps.is_cpu() ? policy::kPairRungCpu : policy::kPairRungGpu;
}

namespace {
std::vector<Rung> plain_rung_table(const DeviceCaps& caps) {
  std::vector<DType> types, classic_types;
  for (DType t : all_dtypes)
    if (caps.fp64 || t != DType::F64) types.push_back(t);
  for (DType t : classic_dtypes)
    if (caps.fp64 || t != DType::F64) classic_types.push_back(t);
  const std::vector<Op> ops(fold_ops.begin(), fold_ops.end());
  const std::string no64 = caps.fp64 ? "" : " [no f64: device lacks cl_khr_fp64]";
  const unsigned cascade_k = caps.is_gpu() ? policy::kCascadeKGpu : policy::kCascadeKCpu;
  auto rung = [&](std::string name, std::string note, Tree tree, unsigned k, bool fixed,
                  KernelKind kind = KernelKind::Rung) {
    Rung r;
    r.contiguous_on_cpu = fixed;
    r.info.name = std::move(name);
    r.info.note = std::move(note) + no64;
    r.info.kind = kind;
    r.info.ops = ops;
    r.info.types = types;
    r.info.blocks = BlockRule{1, static_cast<unsigned>(caps.max_work_group), 1, {}, 0};
    r.tree = tree;
    r.k = k;
    r.fixed_grid = fixed;
    return r;
  };
  // The local-memory trees with a fixed factor (naive to coarse8): the classic types alone.
  auto classic_rung = [&](std::string name, std::string note, Tree tree, unsigned k) {
    Rung r = rung(std::move(name), std::move(note), tree, k, false);
    r.info.types = classic_types;
    return r;
  };
  Rung runs = rung("vector_runs",
                   "CPU shape: one contiguous run per work-item of a few one-item work-groups per compute unit, "
                   "vload" + std::to_string(policy::kRunsVectorWidth) + " into " +
                       std::to_string(policy::kRunsAccumulators) +
                       " vector accumulators: SIMD streaming instead of cascade's work-item loops and tree; "
                       "on a GPU its strided reads do not coalesce",
                   Tree::Sequential, policy::kRunsVectorWidth * policy::kRunsAccumulators, true);
  runs.contiguous_on_cpu = false;
  runs.vector_width = policy::kRunsVectorWidth;
  Rung vector = rung("vector",
                     "16-byte loads (int4, float4, long2, double2), " + std::to_string(policy::kVectorPacks) +
                         " per work-item in flight, on cascade's grid: fewer, wider loads; no faster than "
                         "coarse's 16 scalar loads in flight on an H100, and the misaligned head and the tail "
                         "go to one work-group",
                     Tree::Sequential, policy::kVectorPacks, true);
  vector.contiguous_on_cpu = false;
  vector.packed = true;
  std::vector<Rung> table = {
      classic_rung("naive",
           "interleaved tree (lid % 2s) in local memory, one element per work-item (the OpenCL "
           "chapter 'GPU parallel reduction: analysis and optimisation'); "
           "divergent work-items, slow modulo, one work-group per 256 elements",
           Tree::Interleaved, 1),
      classic_rung("divergence_free",
           "sequential addressing: active work-items stay contiguous, no modulo; "
           "still one element per work-item and half of them idle from the first step",
           Tree::Sequential, 1),
      classic_rung("coarse2",
           "each work-item first combines 2 coalesced elements: half the work-groups and tree steps per element; "
           "still one work-group (and one partial) per 512 elements",
           Tree::Sequential, 2),
      classic_rung("coarse4",
           "4 elements per work-item: a quarter of the work-groups, more loads in flight; "
           "the grid still grows with n",
           Tree::Sequential, 4),
      classic_rung("coarse8",
           "8 elements per work-item: the tree's cost spread over 8x more data; "
           "more registers, a ragged last tile on small n",
           Tree::Sequential, 8),
      rung("coarse",
           "run-time factor (RunOptions::coarsening, default " + std::to_string(policy::kRuntimeCoarsening) +
               "): tunable without a rebuild; "
           "the per-item loop is not unrolled",
           Tree::Sequential, 0, false),
      rung("cascade",
           "grid-stride loop with a fixed grid sized to the compute units (Brent), K independent accumulators "
           "(K = " + std::to_string(policy::kCascadeKGpu) + " coalesced on GPUs, " +
               std::to_string(policy::kCascadeKCpu) + " neighbours on CPUs): few partials; longer chains per work-item",
           Tree::Sequential, cascade_k, true),
      vector,
      runs,
  };
  const auto named = [&](const std::string& name) {
    return std::find_if(table.begin(), table.end(), [&](const Rung& r) { return r.info.name == name; });
  };
  const auto pairs = named(pair_rung_name(caps));
  pairs->info.ops.assign(unmapped_ops.begin(), unmapped_ops.end());
  pairs->info.note += "; argmin, argmax, minmax: value-and-index records (pairs.cl)";
  const std::string auto_name = auto_rung_name(caps, DType::F32);
  Rung automatic = *named(auto_name);
  const std::string chosen_note = automatic.info.name;
  automatic.info.name = "auto";
  automatic.info.kind = KernelKind::Auto;
  automatic.info.note = "picks " + chosen_note + " (" +
                        (caps.is_cpu() ? std::string("CPU device")
                                       : "GPU; " + std::string(policy::kAutoRungGpuNarrow) + " for elements under " +
                                             std::to_string(policy::kAutoNarrowBytes) + " bytes") +
                        "; " + pair_rung_name(caps) + " for argmin, argmax, minmax" +
                        ") with this device's grid, work-group size and K; not tuned per n" + no64;
  automatic.info.ops.assign(unmapped_ops.begin(), unmapped_ops.end());
  table.push_back(std::move(automatic));
  return table;
}
}  // namespace

std::vector<Rung> rung_table(const DeviceCaps& caps) {
  std::vector<Rung> table = plain_rung_table(caps);
  // Exact mode (RunOptions::exact, f32/f64 sums): the grid-stride rungs and auto run
  // kernels_cl/exact.cl, any work-group size and grid. The same rungs read elements through a
  // mapped op's map (reduce.cl's XR_MAP_<NAME>): a program more per (op, type) each, which the
  // trees before them, whose lesson does not change with the op, are spared.
  for (auto& r : table)
    if (r.fixed_grid || r.info.kind == KernelKind::Auto) {
      r.info.exact = true;
      for (Op op : mapped_ops)
        if (std::find(r.info.ops.begin(), r.info.ops.end(), op) == r.info.ops.end()) r.info.ops.push_back(op);
    }
  return table;
}

const std::vector<Rung>& rung_table_of(cl_device_id device) {
  static std::mutex m;
  static auto* cache = new std::map<cl_device_id, std::vector<Rung>>;  // never freed, as caps_of's
  std::lock_guard lock(m);
  auto it = cache->find(device);
  if (it == cache->end()) it = cache->emplace(device, rung_table(caps_of(device))).first;
  return it->second;
}

Finish atomic_finish(const DeviceCaps& caps, Op op, DType acc) {
  if (is_float(acc)) return Finish::Partials;
  op = fold_of(op);
  const bool base = size_of(acc) == 4 ? caps.int32_base : size_of(acc) == 8 && caps.int64_base;
  const bool extended = size_of(acc) == 4 ? caps.int32_extended : size_of(acc) == 8 && caps.int64_extended;
  if (op == Op::Sum && base) return Finish::AtomAdd;
  if ((op == Op::Min || op == Op::Max) && extended) return op == Op::Min ? Finish::AtomMin : Finish::AtomMax;
  return Finish::Partials;
}

namespace {

// `v` as an OpenCL C literal of its type: hexadecimal floats (exact), infinities by name, the
// most negative integer as an expression (its magnitude has no literal of the type).
template <class T> std::string opencl_literal(T v) {
  if constexpr (is_half_v<T>) {
    return opencl_literal(static_cast<float>(v));  // f16 and bf16 compute in float
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isinf(v)) return v < 0 ? "(-INFINITY)" : "INFINITY";
    char buf[64];
    std::snprintf(buf, sizeof buf, "(%a%s)", static_cast<double>(v), sizeof(T) == 4 ? "f" : "");
    return buf;
  } else {
    const char* suffix = sizeof(T) == 8 ? (std::is_signed_v<T> ? "L" : "UL") : (std::is_signed_v<T> ? "" : "U");
    if (std::is_signed_v<T> && v == std::numeric_limits<T>::min())
      return "(" + std::to_string(v + 1) + suffix + "-1)";
    return std::to_string(v) + suffix;
  }
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

}  // namespace

std::string type_options(DType in, DType acc) {
  // f16 and bf16 are stored as themselves (XR_IN_HALF, XR_OUT_HALF) and computed in float.
  const auto half_code = [](DType t) { return t == DType::F16 ? "1" : "2"; };
  const TypeInfo &i = type_info(in), &a = type_info(acc), &c = type_info(compute_dtype(acc));
  std::string o = " -DXR_IN_T=" + std::string(cl_type_name(in)) + " -DXR_ACC_T=" + std::string(cl_type_name(compute_dtype(acc))) +
                  " -DXR_ACC_BYTES=" + std::to_string(c.size) + " -DXR_ACC_FLOAT=" + (c.is_float ? "1" : "0") +
                  " -DXR_FP64=" + (in == DType::F64 || acc == DType::F64 ? "1" : "0");
  if (i.is_half) o += std::string(" -DXR_IN_HALF=") + half_code(in);
  if (a.is_half) o += " -DXR_OUT_T=" + std::string(cl_type_name(acc)) + " -DXR_OUT_HALF=" + half_code(acc);
  return o;
}

// A mapped op's map (reduce.cl's XR_MAP_<NAME>), as it applies to elements of `in`: none where it
// changes nothing (NaN to a number of an integer type, the absolute value of an unsigned one), so
// that the fold's program serves.
std::string map_options(Op op, DType in, DType acc) {
  const ElementMap map = map_of(op);
  switch (map) {
    case ElementMap::None: return "";
    case ElementMap::Abs: return type_info(in).is_signed ? " -DXR_MAP_ABS" : "";
    case ElementMap::Square: return " -DXR_MAP_SQUARE";
    case ElementMap::NonZero: return " -DXR_MAP_NONZERO";
    case ElementMap::Convert: return "";  // the load's conversion to the accumulator is all
    case ElementMap::SkipNaN:
      if (!is_float(in)) return "";
      return " -DXR_MAP_SKIP_NAN -DXR_NAN_AS=" + visit_dtype(acc, [&](auto t) {
               using A = decltype(t);
               return opencl_literal(fold_of(op) == Op::Sum ? A(0) : xr::identity<A>(op));
             });
  }
  return "";
}

std::string program_options(DType in, DType acc, Op op, unsigned k, Tree tree, Finish finish, bool contiguous,
                            unsigned vector_width, bool packed) {
  const std::string identity = visit_dtype(acc, [&](auto t) { return opencl_literal(xr::identity<decltype(t)>(op)); });
  return "-cl-std=CL1.2" + type_options(in, acc) + " -DXR_OP_" + upper(to_string(fold_of(op))) + map_options(op, in, acc) +
         " -DXR_IDENTITY=" + identity +
         " -DXR_K=" + std::to_string(k) + " -DXR_TREE=" + std::to_string(static_cast<int>(tree)) +
         " -DXR_FINISH=" + std::to_string(static_cast<int>(finish)) + (contiguous ? " -DXR_CONTIG=1" : "") +
         (vector_width ? " -DXR_VEC=" + std::to_string(vector_width) : "") +
         (packed ? " -DXR_PACK=" + std::to_string(pack_elements(in)) : "");
}

std::string empty_value_option(Op op, DType acc) {
  return " -DXR_EMPTY=" + visit_dtype(acc, [&](auto t) { return opencl_literal(empty_value<decltype(t)>(op)); });
}

std::string rung_program_options(const Rung& rung, const DeviceCaps& caps, DType in, DType acc, Op op, Finish finish) {
  return program_options(in, acc, op, rung.k, rung.tree, finish, rung.contiguous(caps), rung.vector_width,
                         rung.packed);
}

std::vector<std::string> all_program_options(const DeviceCaps& caps) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  auto add = [&](std::string o) {
    if (seen.insert(o).second) out.push_back(std::move(o));
  };
  for (const auto& r : rung_table(caps)) {
    for (Op op : r.info.ops)
      for (DType t : r.info.types)
        for (Accumulator a : {Accumulator::Wide, Accumulator::Native}) {
          if (is_pair(op)) continue;  // pairs.cl: all_pair_program_options
          if (a == Accumulator::Native && !accumulator_matters(op, t)) continue;
          const DType acc = result_dtype(op, t, a);
          const Finish f = atomic_finish(caps, op, acc);
          add(rung_program_options(r, caps, t, acc, op, f));
          if (f == Finish::Partials) add(rung_program_options(r, caps, acc, acc, fold_of(op), Finish::Partials));
        }
  }
  return out;
}

Op pair_fold(Op op) { return op == Op::ArgMax ? Op::Max : Op::Min; }

std::string pair_options(DType type, Op op) {
  std::string o = " -DXR_PAIR_" + upper(to_string(op));
  if (op == Op::MinMax)
    o += " -DXR_MAX_IDENTITY=" + visit_dtype(type, [](auto t) { return opencl_literal(identity<decltype(t)>(Op::Max)); });
  return o;
}

std::string pair_program_options(const Rung& rung, const DeviceCaps& caps, DType type, Op op) {
  return rung_program_options(rung, caps, type, type, pair_fold(op), Finish::Partials) + pair_options(type, op);
}

std::vector<std::string> all_pair_program_options(const DeviceCaps& caps) {
  // Only the pair rung and auto, which runs it, declare the pair ops.
  const auto table = rung_table(caps);
  const auto rung = std::find_if(table.begin(), table.end(), [&](const Rung& r) { return r.info.name == pair_rung_name(caps); });
  std::vector<std::string> out;
  for (Op op : pair_ops)
    for (DType t : rung->info.types) out.push_back(pair_program_options(*rung, caps, t, op));
  return out;
}

// ---- planning -------------------------------------------------------------------------------

// Groups of a fixed (grid-stride) grid: enough work-items to fill every compute unit.
std::uint64_t fixed_grid(const DeviceCaps& caps, std::size_t local) {
  const std::uint64_t per_cu = caps.is_gpu() ? std::max<std::uint64_t>(1, policy::kGpuWorkItemsPerComputeUnit / local)
                                             : policy::kCpuGroupsPerComputeUnit;
  return caps.compute_units * per_cu;
}

std::uint64_t rung_grid(const Rung& rung, const DeviceCaps& caps, std::size_t local) {
  if (rung.vector_width && caps.is_cpu()) return caps.compute_units * policy::kRunsGroupsPerComputeUnit;
  return fixed_grid(caps, local);
}

namespace {

constexpr unsigned kMaxCoarsening = 1u << 16;

// What a pass's kernel reads, and so the arguments it takes after (in, offset, n, out, local).
enum class Reads {
  Fold,         // xr_reduce: elements or partials; then k
  PairElements, // xr_pair: elements; then k, first_index
  PairRecords,  // xr_pair_records: records
};

// One planned pass, launched once its buffers are known.
struct Pass {
  Reads reads = Reads::Fold;
  CachedKernel* kernel = nullptr;
  std::size_t local = 1;
  std::uint64_t groups = 1;
  int in = -1;  // -1: the caller's buffer; 0, 1: scratch buffers
  std::uint64_t in_offset = 0;
  std::uint64_t n = 0;
  int out = 0;  // 0, 1: scratch buffers; 2: the result cell (atomic finish)
};

const Rung& find_rung(const std::vector<Rung>& table, const std::string& name) {
  for (const auto& r : table)
    if (r.info.name == name) return r;
  std::string known;
  for (const auto& r : table) known += (known.empty() ? "" : ", ") + r.info.name;
  throw InvalidArgument("unknown opencl kernel '" + name + "' (known: " + known + ")");
}

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::AtomAdd: return "atom_add";
    case Finish::AtomMin: return "atom_min";
    case Finish::AtomMax: return "atom_max";
    case Finish::Partials: break;
  }
  return "second pass";
}

}  // namespace

Mem create_buffer(cl_context context, cl_mem_flags flags, std::size_t bytes, const std::string& what) {
  cl_int rc = CL_SUCCESS;
  Mem m(clCreateBuffer(context, flags, bytes, nullptr, &rc));
  check(rc, "clCreateBuffer", format_bytes(bytes) + " " + what);
  return m;
}

cl_mem ScratchBuffers::get(cl_context context, int which, std::size_t bytes) {
  Mem& m = which == 2 ? cell : partials[which];
  std::size_t& have = which == 2 ? cell_bytes : partial_bytes[which];
  if (m && have >= bytes) return m.get();
  m.reset();
  have = 0;
  m = create_buffer(context, CL_MEM_READ_WRITE, bytes, which == 2 ? "result cell" : "of partials");
  have = bytes;
  return m.get();
}

// ---- the reduction --------------------------------------------------------------------------

Result reduce_on_queue(const Request& rq, ExactSum::Raw* exact_raw) {
  const RunOptions& opt = rq.options;
  check_options(opt);
  if (!rq.queue) throw InvalidArgument("opencl: null command queue");

  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue_properties qprops = 0;
  check(clGetCommandQueueInfo(rq.queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_DEVICE");
  check(clGetCommandQueueInfo(rq.queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr),
        "clGetCommandQueueInfo", "CL_QUEUE_CONTEXT");
  check(clGetCommandQueueInfo(rq.queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, nullptr),
        "clGetCommandQueueInfo", "CL_QUEUE_PROPERTIES");
  const bool profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
  const DeviceCaps& caps = caps_of(device);

  if (rq.type == DType::F64 && !caps.fp64)
    throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps.name + " does not offer");
  const std::vector<Rung>& table = rung_table_of(device);
  const Rung& asked = find_rung(table, opt.kernel);
  check_request(asked.info, rq.op, rq.type, rq.n, "opencl", opt);  // errors name the op asked for
  const Op op = kernel_op(rq.op, rq.type);  // a mean of floats runs as their sum, any and all as count_nonzero
  const bool exact = opt.exact && exact_applies(op, rq.type);
  const bool automatic = asked.info.kind == KernelKind::Auto;
  const bool pair = is_pair(op);
  // auto runs the rung it picks for this type (or for the pair ops), as that rung runs when
  // asked for by name.
  const Rung& rung =
      automatic ? find_rung(table, pair ? pair_rung_name(caps) : auto_rung_name(caps, rq.type)) : asked;
  const std::string kernel_name = automatic ? "auto:" + rung.info.name : rung.info.name;

  const DType acc = result_dtype(op, rq.type, opt.accumulator);
  // A partial and the result cell: a value of acc, or a pair op's record.
  const std::size_t cell_size = xr::detail::cell_bytes(op, rq.type, opt.accumulator);
  // The work-group tree's values.
  const std::size_t local_bytes = pair ? kPairLocalBytes : size_of(compute_dtype(acc));

  Result res;
  res.device = caps.name;
  res.kernel = kernel_name;
  res.repeats = opt.repeat;

  if (rq.n == 0) {  // only sum and prod get here: their empty value, nothing launched
    res.value = visit_dtype(acc, [&](auto t) { return Scalar::of(empty_value<decltype(t)>(op)); });
    res.finish = "none";
    if (exact) {  // the empty exact sum: +0, an empty state
      if (exact_raw) *exact_raw = ExactSum::Raw{};
      xr::detail::set_exact(res, ExactSum::Raw{}, rq.type);
    }
    xr::detail::fill_identity(res, "opencl", rq.n, op, rq.type);
    return res;
  }

  // The caller's buffer: same context, large enough.
  if (!rq.buffer) throw InvalidArgument("opencl: null buffer");
  cl_context buffer_context = nullptr;
  std::size_t buffer_size = 0;
  check(clGetMemObjectInfo(rq.buffer, CL_MEM_CONTEXT, sizeof buffer_context, &buffer_context, nullptr),
        "clGetMemObjectInfo", "CL_MEM_CONTEXT");
  check(clGetMemObjectInfo(rq.buffer, CL_MEM_SIZE, sizeof buffer_size, &buffer_size, nullptr), "clGetMemObjectInfo",
        "CL_MEM_SIZE");
  if (buffer_context != context) throw InvalidArgument("opencl: the buffer belongs to another context than the queue");
  const std::uint64_t elem = size_of(rq.type);
  const std::uint64_t capacity = buffer_size / elem;
  if (rq.offset > capacity || rq.n > capacity - rq.offset)
    throw InvalidArgument("opencl: elements [" + std::to_string(rq.offset) + ", " + std::to_string(rq.offset) + " + " +
                          std::to_string(rq.n) + ") lie beyond the buffer's " + std::to_string(capacity) + " " +
                          std::string(to_string(rq.type)) + " elements");

  if (exact) return exact_on_queue(rq, asked, caps, context, device, profiling, exact_raw);  // named as asked

  // Plan: work-group size, coarsening, grid, passes.
  const unsigned k = rung.k ? rung.k : (opt.coarsening ? opt.coarsening : policy::kRuntimeCoarsening);
  if (k > kMaxCoarsening)
    throw InvalidArgument("opencl: coarsening " + std::to_string(k) + " exceeds " + std::to_string(kMaxCoarsening));
  const Finish finish =
      rq.finish == FinishPolicy::Auto && !pair ? atomic_finish(caps, op, acc) : Finish::Partials;
  const std::string pair_options = pair ? pair_program_options(rung, caps, rq.type, op) : std::string();
  CachedKernel& first =
      pair ? cached_kernel(context, device, kPairSource, pair_options, kPairKernel)
           : cached_kernel(context, device, kSource, rung_program_options(rung, caps, rq.type, acc, op, finish), kKernel);
  const std::size_t limit = group_limit(first, caps, local_bytes);
  const std::size_t local = choose_work_group(opt.block_size, limit,
                                              rung.vector_width ? policy::kRunsWorkGroup : policy::kWorkGroup, caps,
                                              "this kernel");

  // Roundings inside one work-item that reads `tiles_each` tiles: K accumulators of one
  // element per tile, then K - 1 combines (compile-time K); one accumulator (run-time K).
  // Vector runs: K / W vector accumulators of `tiles_each` steps combined in K / W - 1 steps,
  // beside a ragged end of at most K - 1 elements, then W lanes added one by one.
  // Packs: K pack accumulators of W lanes over `tiles_each` tiles, K - 1 combines, W - 1 lane
  // combines, and in work-group 0 at most 2W head and tail elements.
  auto chain = [&](std::uint64_t tiles_each) -> std::uint64_t {
    if (rung.vector_width)
      return std::max<std::uint64_t>(tiles_each + k / rung.vector_width - 1, k - 1) + rung.vector_width;
    if (rung.packed) return tiles_each + k - 1 + 3 * pack_elements(rq.type);
    return rung.k ? tiles_each + k - 1 : tiles_each * k;
  };
  const std::uint64_t per_item = rung.packed ? std::uint64_t{k} * pack_elements(rq.type) : k;
  std::vector<Pass> passes;
  std::uint64_t depth = 0;
  std::uint64_t scratch_elems[2] = {0, 0};
  {
    const std::uint64_t tiles = ceil_div(rq.n, std::uint64_t{local} * per_item);
    std::uint64_t groups = rung.fixed_grid ? rung_grid(rung, caps, local) : tiles;
    if (opt.grid_size) groups = opt.grid_size;
    groups = std::clamp<std::uint64_t>(groups, 1, std::min(tiles, max_groups(local)));
    Pass p{pair ? Reads::PairElements : Reads::Fold, &first, local, groups, -1, rq.offset, rq.n,
           finish == Finish::Partials ? 0 : 2};
    passes.push_back(p);
    depth += chain(ceil_div(tiles, groups)) + ceil_log2(local);
    if (finish != Finish::Partials) depth += groups - 1;  // the atomics' chain (exact for integers)
    else scratch_elems[0] = groups;
  }
  if (finish == Finish::Partials && passes.back().groups > 1) {
    // The partials: reduce.cl on the accumulator type, or the pair program's records kernel (a
    // grid-stride loop over the records).
    CachedKernel& next =
        pair ? cached_kernel(context, device, kPairSource, pair_options, kPairRecordsKernel)
             : cached_kernel(context, device, kSource,
                             rung_program_options(rung, caps, acc, acc, fold_of(op), Finish::Partials), kKernel);
    const std::size_t local2 = std::min(local, group_limit(next, caps, local_bytes));
    int src = 0;
    std::uint64_t count = passes.back().groups;
    while (count > 1) {
      const std::uint64_t tiles = ceil_div(count, std::uint64_t{local2} * k);
      std::uint64_t groups = rung.fixed_grid && !pair ? rung_grid(rung, caps, local2) : tiles;
      // At most half as many groups as inputs, so that every pass makes progress (a tile of
      // one element, L = K = 1, would otherwise copy its input).
      groups = std::clamp<std::uint64_t>(groups, 1, std::min({tiles, max_groups(local2), ceil_div(count, 2)}));
      passes.push_back(
          Pass{pair ? Reads::PairRecords : Reads::Fold, &next, local2, groups, src, 0, count, 1 - src});
      scratch_elems[1 - src] = std::max(scratch_elems[1 - src], groups);
      depth += chain(ceil_div(tiles, groups)) + ceil_log2(local2);
      count = groups;
      src = 1 - src;
    }
  }

  // Buffers: partials ping-pong between two scratch buffers; the atomic finish adds into one cell.
  ScratchBuffers own;
  ScratchBuffers& scratch = rq.scratch ? *rq.scratch : own;
  cl_mem used[3] = {};
  for (int i = 0; i < 2; ++i)
    if (scratch_elems[i]) used[i] = scratch.get(context, i, scratch_elems[i] * cell_size);
  if (finish != Finish::Partials) used[2] = scratch.get(context, 2, cell_size);
  auto mem_of = [&](int which) -> cl_mem { return which < 0 ? rq.buffer : used[which]; };
  const cl_mem final_mem = mem_of(passes.back().out);

  unsigned char ident[8] = {};  // the atomic finish's starting value
  if (finish != Finish::Partials)
    visit_dtype(acc, [&](auto t) {
      const auto v = identity<decltype(t)>(op);
      std::memcpy(ident, &v, sizeof v);
    });

  std::vector<Launch> steps;
  if (finish != Finish::Partials) steps.push_back(fill_launch(used[2], cell_size, ident, cell_size, "result cell"));
  const cl_uint karg = k;
  const cl_long first_index = rq.first_index;
  for (const Pass& p : passes) {
    Launch l;
    l.kernel = p.kernel;
    l.local = p.local;
    l.global = static_cast<std::size_t>(p.groups) * p.local;
    l.args = {value_arg(mem_of(p.in)), value_arg(cl_ulong{p.in_offset}), value_arg(cl_ulong{p.n}),
              value_arg(mem_of(p.out)), local_arg(p.local * local_bytes)};
    switch (p.reads) {
      case Reads::Fold:
        l.name = kKernel;
        l.args.push_back(value_arg(karg));
        break;
      case Reads::PairElements:
        l.name = kPairKernel;
        l.args.push_back(value_arg(karg));
        l.args.push_back(value_arg(first_index));
        break;
      case Reads::PairRecords:
        l.name = kPairRecordsKernel;
        break;
    }
    steps.push_back(std::move(l));
  }

  unsigned char host[xr::detail::kMaxCellBytes] = {};
  PassTimes times;
  const bool to_sink = rq.sink != nullptr;
  if (to_sink) {
    // One pass, its events (the kernels, then the copy into the sink's cell) handed to the caller.
    if (!rq.events) throw InvalidArgument("opencl: a reduction into a sink needs an event list");
    EventChain ev;
    for (const Launch& l : steps) enqueue(rq.queue, l, ev);
    enqueue(rq.queue, copy_launch(final_mem, 0, rq.sink, rq.sink_cell * cell_size, cell_size, "chunk result"), ev);
    rq.events->insert(rq.events->end(), ev.events.begin(), ev.events.end());
    ev.events.clear();  // the caller releases them
  } else {
    const PassRead read{final_mem, cell_size, host, "result"};
    times = time_passes(rq.queue, profiling, steps, opt, &read);
  }

  xr::detail::take_cell(res, xr::detail::read_cell(op, rq.type, opt.accumulator, host));
  res.launches = static_cast<int>(passes.size());
  if (to_sink) res.repeats = 0;
  res.finish = finish != Finish::Partials ? finish_name(finish)
               : passes.size() > 1        ? "second pass"
                                          : "one work-group";
  res.kernel_ms = times.kernel_ms;
  res.transfer_ms = times.read_ms;
  res.rounding_depth = pair ? 0 : depth;  // a pair op compares and never rounds
  xr::detail::fill_identity(res, "opencl", rq.n, op, rq.type);
  return res;
}

}  // namespace xr::opencl::detail
