// Segmented reductions on an OpenCL device (segments.hpp; the kernels are described in
// kernels_cl/segments.cl): the strategy table, the plan of each strategy (its launches, their
// shapes and the rounding depth), the timed run, exact piece states, the Reducer's SegmentDevice
// and the cl_mem entry points.
#include "segments.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "pipeline.hpp"
#include "policy.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::opencl::detail {

using xr::detail::ExactPiece;

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }
unsigned ceil_log2(std::uint64_t x) {
  unsigned d = 0;
  while ((std::uint64_t{1} << d) < x) ++d;
  return d;
}
std::size_t lowest_bit(std::size_t x) { return x & (~x + 1); }
// The planning kernel counts segments, tasks and spans in 32-bit counters.
constexpr std::uint64_t kMostPlannedSegments = (std::uint64_t{1} << 31) - 1;
// Work-groups of one launch at most, so that global sizes stay below 2^31 work-items; the kernels
// loop over whatever the grid does not cover.
std::uint64_t max_groups(std::size_t local) { return std::max<std::uint64_t>(1, ((1ull << 31) - 1) / local); }

// ---- the strategies ------------------------------------------------------------------------

enum class Strategy { Auto, Lanes, Workgroup, Multigroup, Binned, Balanced, Columns, Serial };

struct StrategyRow {
  Strategy strategy;
  const char* name;
  std::vector<SegmentKind> layouts;
  const char* note;
};

const std::vector<StrategyRow>& strategy_rows() {
  using K = SegmentKind;
  static const std::vector<StrategyRow> rows = {
      {Strategy::Auto,
       "auto",
       {K::Rows, K::Columns, K::Offsets},
       "GPUs: rows: lanes up to 256 loads a row, then workgroup, multigroup when fewer rows than fill the device; "
       "offsets: lanes while the longest segment is at most 4 times the mean and would not hold its team too long, "
       "else balanced; columns: columns. CPU devices: serial"},
      {Strategy::Lanes,
       "lanes",
       {K::Rows, K::Offsets},
       "a team of G work-items per segment (a power of two up to 32, about 4 loads a lane), several segments per "
       "team, coalesced (vector loads on aligned rows), combined in local memory: short segments without idle "
       "work-items; a long segment holds its team alone"},
      {Strategy::Workgroup,
       "workgroup",
       {K::Rows, K::Offsets},
       "one work-group per segment, each work-item reading every L-th load: long segments at full width; short "
       "ones leave the group idle, and fewer segments than work-groups the device holds leave it idle"},
      {Strategy::Multigroup,
       "multigroup",
       {K::Rows, K::Offsets},
       "long segments cut into parts of several work-groups each, whose partials a second kernel combines in "
       "order: a few long segments fill the device; one more launch (offsets: two, with the planning kernel)"},
      {Strategy::Binned,
       "binned",
       {K::Offsets},
       "a planning kernel sorts segments by length into lists for teams of 8, of 32, of a work-group, and parts "
       "of several work-groups, reduced by one launch (parts: two more): any mix of lengths; two launches at least, "
       "and the lists written and read"},
      {Strategy::Balanced,
       "balanced",
       {K::Offsets},
       "equal tiles of the segments' elements per work-group whatever their lengths (persistent work-groups, runs of "
       "consecutive tiles, the next tile's loads in flight), staged in local memory, each work-item's run cut at "
       "marked ends, a work-group segmented scan and a fix-up kernel for parts across work-groups: any mix of "
       "lengths at one rate; a search of the offsets per work-group, about 35 KiB of local memory per work-group, "
       "a dozen barriers per tile and 2 launches"},
      {Strategy::Columns,
       "columns",
       {K::Columns},
       "a work-group per block of columns and band of rows, neighbouring work-items on neighbouring columns (narrow "
       "matrices: several rows per work-group), bands combined by a second kernel: coalesced at any width; one "
       "partial per band and column"},
      {Strategy::Serial,
       "serial",
       {K::Rows, K::Columns, K::Offsets},
       "CPU shape: one work-item per contiguous block, vector accumulators over each segment (short dense rows: 16 "
       "rows a step), a segment cut by a block's end finished by a fix-up kernel; columns: a band of rows into "
       "values kept in cache; on a GPU nothing coalesces"},
  };
  return rows;
}

const StrategyRow& find_strategy(const std::string& name) {
  for (const auto& r : strategy_rows())
    if (name == r.name) return r;
  std::string known;
  for (const auto& r : strategy_rows()) known += (known.empty() ? "" : ", ") + std::string(r.name);
  throw InvalidArgument("unknown opencl segment kernel '" + name + "' (known: " + known + ")");
}

// ---- programs and launches -----------------------------------------------------------------

// The -D options of segments.cl beyond reduce.cl's (see its header).
enum class Mode : int { Rows = 0, Offsets = 1, Binned = 2, RowParts = 3, Tasks = 4, Spans = 5 };
struct Build {
  Mode mode = Mode::Rows;
  unsigned team = 0;  // 0: run-time
  unsigned segs = 1;
  unsigned pack = 1;
  unsigned unroll = policy::kSegUnroll;
  bool fit = false;
  unsigned row_len = 0;
  unsigned narrow = 0;
  unsigned balanced = 0;  // XR_BAL_K; 0: no balanced kernels
};

std::string build_options(DType in, DType acc, Op op, const Build& b) {
  return program_options(in, acc, op, 1, Tree::Sequential, Finish::Partials) + empty_value_option(op, acc) +
         " -DXR_SEG_MODE=" + std::to_string(static_cast<int>(b.mode)) + " -DXR_TEAM=" + std::to_string(b.team) +
         " -DXR_SEGS=" + std::to_string(b.segs) + " -DXR_PACK_W=" + std::to_string(b.pack) +
         " -DXR_UNROLL=" + std::to_string(b.unroll) + " -DXR_FIT=" + (b.fit ? "1" : "0") +
         " -DXR_RUN_W=" + std::to_string(policy::kRunsVectorWidth) +
         " -DXR_RUN_ACCS=" + std::to_string(policy::kRunsAccumulators) + " -DXR_ROW_LEN=" + std::to_string(b.row_len) +
         " -DXR_NARROW=" + std::to_string(b.narrow) + " -DXR_COLUMN_ROWS=" + std::to_string(policy::kCpuColumnRows) +
         (b.balanced ? " -DXR_BAL_K=" + std::to_string(b.balanced) : "");
}

std::string exact_options(DType type) {
  return program_options(type, type, Op::Sum, 1, Tree::Sequential, Finish::Partials) + " -DXR_SEG_EXACT=1";
}

struct KernelArg {
  std::size_t size = 0;
  std::array<unsigned char, 32> bytes{};
  bool local = false;  // `size` bytes of local memory
};
template <class T>
KernelArg value_arg(const T& v) {
  static_assert(sizeof(T) <= 32);
  KernelArg a;
  a.size = sizeof v;
  std::memcpy(a.bytes.data(), &v, sizeof v);
  return a;
}
KernelArg local_arg(std::size_t bytes) {
  KernelArg a;
  a.size = bytes;
  a.local = true;
  return a;
}

// One command of a pass: a kernel launch, or (kernel null) a fill of `fill` with `pattern`.
struct Step {
  CachedKernel* kernel = nullptr;
  const char* name = "";
  std::size_t global = 0, local = 1;
  std::size_t limit = 1;  // the most work-items this launch's kernel allows per work-group
  std::vector<KernelArg> args;
  cl_mem fill = nullptr;
  std::size_t fill_bytes = 0;
  std::array<unsigned char, 8> pattern{};
  std::size_t pattern_bytes = 0;
};

struct Plan {
  std::string finish;
  std::vector<Step> steps;
  std::uint64_t depth = 0;
  int launches() const {
    return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& s) { return s.kernel; }));
  }
};

// The most work-items of `k` in one work-group, each with `local_per_item` bytes of local memory.
std::size_t group_limit(const CachedKernel& k, const DeviceCaps& caps, std::size_t local_per_item) {
  std::size_t limit = std::min(k.work_group_max, caps.max_work_group);
  if (local_per_item) {
    const std::uint64_t left = caps.local_mem > k.local_mem_used ? caps.local_mem - k.local_mem_used : 0;
    limit = std::min<std::uint64_t>(limit, left / local_per_item);
  }
  return std::max<std::size_t>(limit, 1);
}

// Enqueues one step after the chain's last command and appends its event.
void enqueue(cl_command_queue queue, const Step& st, EventChain& chain) {
  cl_event e = nullptr;
  if (!st.kernel) {
    check(clEnqueueFillBuffer(queue, st.fill, st.pattern.data(), st.pattern_bytes, 0, st.fill_bytes, chain.wait_count(),
                              chain.wait_list(), &e),
          "clEnqueueFillBuffer", st.name);
    chain.events.push_back(e);
    return;
  }
  std::lock_guard lock(st.kernel->mutex);
  cl_kernel k = st.kernel->kernel.get();
  for (std::size_t i = 0; i < st.args.size(); ++i) {
    const KernelArg& a = st.args[i];
    check(clSetKernelArg(k, static_cast<cl_uint>(i), a.size, a.local ? nullptr : a.bytes.data()), "clSetKernelArg",
          std::string(st.name) + " argument " + std::to_string(i));
  }
  check(clEnqueueNDRangeKernel(queue, k, 1, nullptr, &st.global, &st.local, chain.wait_count(), chain.wait_list(), &e),
        "clEnqueueNDRangeKernel",
        std::string(st.name) + ": " + std::to_string(st.global / st.local) + " work-groups of " +
            std::to_string(st.local));
  chain.events.push_back(e);
}

// options.warmup + options.repeat passes of `steps`; the median time of a timed pass (device time
// of every command with profiling, else the host's clock around the pass).
double time_passes(const SegmentQueue& q, const std::vector<Step>& steps, const RunOptions& opt) {
  using clock = std::chrono::steady_clock;
  std::vector<double> times;
  for (int it = 0; it < opt.warmup + opt.repeat; ++it) {
    EventChain chain;
    const auto t0 = clock::now();
    for (const Step& st : steps) enqueue(q.queue, st, chain);
    if (!chain.events.empty())
      check(clWaitForEvents(static_cast<cl_uint>(chain.events.size()), chain.events.data()), "clWaitForEvents",
            "segmented reduction");
    const auto t1 = clock::now();
    if (it < opt.warmup) continue;
    if (q.profiling) {
      double ms = 0;
      for (cl_event e : chain.events) ms += event_ms(e);
      times.push_back(ms);
    } else {
      times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  return times.empty() ? 0.0 : median(times);
}

// ---- planning ------------------------------------------------------------------------------

// What every plan works from.
struct Setting {
  const SegmentQueue& q;
  const DeviceCaps& caps;
  const SegmentCall& call;
  SegmentBuffers& buffers;
  DType acc;
  std::size_t acc_bytes;
  // Bytes of a value in registers and local memory (acc_t): acc_bytes, but 4 for the min and max
  // of f16 and bf16, which are computed in float and stored as the input type.
  std::size_t compute_bytes;
  // Offsets: the longest segment and the mean length.
  std::uint64_t max_len = 0;
  double mean_len = 0;
};

CachedKernel& segment_kernel(const Setting& s, DType in, const Build& b, const char* name) {
  return cached_kernel(s.q.context, s.caps.device, kSegmentsSource, build_options(in, s.acc, s.call.op, b), name);
}

// Work-groups a launch aims at: kSegWaves times what the device holds at once.
std::uint64_t target_groups(const DeviceCaps& caps, std::size_t local) {
  const std::uint64_t per_cu = caps.is_gpu() ? std::max<std::uint64_t>(1, policy::kGpuWorkItemsPerComputeUnit / local)
                                             : policy::kCpuGroupsPerComputeUnit;
  return caps.compute_units * per_cu * policy::kSegWaves;
}

// The widest load (1, 2 or 4 elements, at most 16 bytes) that every value of `multiples` is a
// multiple of: then every load of a row (column) of that layout is aligned.
unsigned pack_width(DType t, std::initializer_list<std::uint64_t> multiples) {
  unsigned v = pack_elements(t);
  while (v > 1 && std::any_of(multiples.begin(), multiples.end(), [&](std::uint64_t m) { return m % v != 0; })) v /= 2;
  return v;
}

// A team for items of `units` loads of `unit_bytes` each (their mean when not `uniform`):
// `whole_group` a work-group, else a power of two up to max_team (about kLanesUnitsPerLane loads a
// lane, and at least a sector's worth of neighbouring loads per instruction), dividing L. Uniform
// items that split evenly into at most kSegLoadsInFlight loads a lane read them all in the first
// step (XR_FIT); the team then takes enough items per round to have kSegLoadsInFlight loads in
// flight.
struct TeamShape {
  unsigned team = 1, segs = 1, unroll = policy::kSegUnroll;
  bool fit = false;
};
TeamShape team_shape(double units, std::size_t unit_bytes, std::size_t L, unsigned max_team, bool uniform,
                     bool whole_group) {
  TeamShape t;
  if (whole_group) {
    t.team = static_cast<unsigned>(L);
  } else {
    const auto want = static_cast<std::size_t>(std::max(1.0, units / policy::kLanesUnitsPerLane));
    const auto sector = static_cast<std::size_t>(
        std::max(1.0, std::min(units, static_cast<double>(ceil_div(policy::kSectorBytes, unit_bytes)))));
    t.team =
        static_cast<unsigned>(std::min({floor_pow2(std::max(want, sector)), std::size_t{max_team}, lowest_bit(L)}));
  }
  const auto whole = static_cast<std::uint64_t>(units);
  const std::uint64_t per_lane = ceil_div(std::max<std::uint64_t>(whole, 1), t.team);
  if (uniform && whole > 0 && whole % t.team == 0 && per_lane <= policy::kSegLoadsInFlight) {
    t.fit = true;
    t.unroll = static_cast<unsigned>(per_lane);
    t.segs = static_cast<unsigned>(std::max<std::uint64_t>(1, policy::kSegLoadsInFlight / per_lane));
  } else {
    t.segs = std::max(1u, policy::kSegLoadsInFlight / policy::kSegUnroll);
  }
  return t;
}

// Roundings behind a team's value of an item of `units` loads of `pack` elements: each lane's
// chain, the pack's lanes, the team's tree.
std::uint64_t team_depth(std::uint64_t units, unsigned team, unsigned pack) {
  return ceil_div(std::max<std::uint64_t>(units, 1), team) + (pack - 1) + ceil_log2(team);
}

// A launch of xr_seg_team.
struct TeamLaunch {
  DType in = DType::F32;  // the program's input (the accumulator when it combines partials)
  Build build;
  unsigned team = 1;  // the team (the run-time one when build.team is 0)
  cl_mem data = nullptr;
  std::uint64_t offset = 0, n = 0;
  cl_mem offsets = nullptr, items = nullptr;
  std::uint64_t segments = 0;  // of the layout: values in `out`
  std::uint64_t count = 0, length = 0, stride = 0, parts = 1;
  std::uint64_t total = 0;  // items of the launch
  cl_uint4 bin_team{}, bin_first{};
  cl_ulong4 bin_items{};
  std::uint64_t groups = 0;  // 0: enough for every item
  cl_mem out = nullptr, partials = nullptr;
};

// The program of a team launch. A CPU device runs the team strategies only when they are asked for
// by name (its auto takes serial), so there one program per (mode, pack) serves every team
// shape: the team at run time, one item per round, no fitted rows. Each lane still reads units
// t, t + G, ... into one accumulator, so the values keep their bits; PoCL builds fewer programs.
Build team_build(const Setting& s, const TeamLaunch& t) {
  Build b = t.build;
  if (s.caps.is_cpu()) {
    b.team = 0;
    b.segs = 1;
    b.unroll = policy::kSegUnroll;
    b.fit = false;
  }
  return b;
}

Step team_step(const Setting& s, const TeamLaunch& t, std::size_t L) {
  Step st;
  st.name = "xr_seg_team";
  const Build build = team_build(s, t);
  st.kernel = &segment_kernel(s, t.in, build, st.name);
  const std::size_t scratch = std::size_t{build.segs} * s.compute_bytes;
  st.limit = group_limit(*st.kernel, s.caps, scratch);
  st.local = L;
  const std::uint64_t per_round = std::uint64_t{L / t.team} * build.segs;
  const std::uint64_t groups = t.groups ? t.groups : ceil_div(std::max<std::uint64_t>(t.total, 1), per_round);
  st.global = static_cast<std::size_t>(std::min(groups, max_groups(L))) * L;
  const cl_uint team = t.team;
  st.args = {value_arg(t.data),
             value_arg(cl_ulong{t.offset}),
             value_arg(cl_ulong{t.n}),
             value_arg(t.offsets),
             value_arg(t.items),
             value_arg(cl_ulong{t.segments}),
             value_arg(cl_ulong{t.count}),
             value_arg(cl_ulong{t.length}),
             value_arg(cl_ulong{t.stride}),
             value_arg(cl_ulong{t.parts}),
             value_arg(team),
             value_arg(t.bin_team),
             value_arg(t.bin_first),
             value_arg(t.bin_items),
             value_arg(t.out),
             value_arg(t.partials),
             local_arg(L * scratch)};
  return st;
}

Step fill_step(cl_mem buffer, std::size_t bytes, const void* pattern, std::size_t pattern_bytes, const char* name) {
  Step st;
  st.name = name;
  st.fill = buffer;
  st.fill_bytes = bytes;
  std::memcpy(st.pattern.data(), pattern, pattern_bytes);
  st.pattern_bytes = pattern_bytes;
  return st;
}

std::string team_finish(unsigned team) {
  return team == 1 ? "one work-item" : "team of " + std::to_string(team) + " work-items";
}

// A team (lanes, or the whole work-group) per row.
Plan plan_row_teams(const Setting& s, std::size_t L, bool whole_group) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const unsigned pack = pack_width(c.type, {lay.length, lay.stride, c.offset});
  const std::uint64_t units = lay.length / pack;
  const TeamShape shape =
      team_shape(static_cast<double>(units), pack * size_of(c.type), L, policy::kLanesMaxTeam, true, whole_group);
  TeamLaunch t;
  t.in = c.type;
  t.build = {Mode::Rows, whole_group ? 0u : shape.team, shape.segs, pack, shape.unroll, shape.fit};
  t.team = shape.team;
  t.data = c.data;
  t.offset = c.offset;
  t.n = c.n;
  t.count = t.total = lay.count;
  t.length = lay.length;
  t.stride = lay.stride;
  t.out = c.out;
  t.segments = c.layout.count;
  Plan p;
  p.steps.push_back(team_step(s, t, L));
  p.depth = team_depth(units, shape.team, pack);
  p.finish = whole_group ? "one work-group" : team_finish(shape.team);
  return p;
}

// A team per segment of the offsets.
Plan plan_offset_teams(const Setting& s, std::size_t L, bool whole_group) {
  const SegmentCall& c = s.call;
  const TeamShape shape = team_shape(s.mean_len, size_of(c.type), L, policy::kLanesMaxTeam, false, whole_group);
  TeamLaunch t;
  t.in = c.type;
  t.build = {Mode::Offsets, whole_group ? 0u : shape.team, shape.segs, 1, shape.unroll, false};
  t.team = shape.team;
  t.data = c.data;
  t.offset = c.offset;
  t.n = c.n;
  t.offsets = c.offsets;
  t.count = t.total = c.layout.count;
  t.out = c.out;
  t.segments = c.layout.count;
  Plan p;
  p.steps.push_back(team_step(s, t, L));
  p.depth = team_depth(s.max_len, shape.team, 1);
  p.finish = whole_group ? "one work-group" : team_finish(shape.team);
  return p;
}

// A launch that combines, for each of `count` values, `parts` consecutive partials (rows of the
// partials buffer), or the spans the planning kernel listed (of `partials` partials).
Step combine_step(const Setting& s, std::size_t L, Mode mode, std::uint64_t count, std::uint64_t parts,
                  std::uint64_t max_parts, std::uint64_t partials, cl_mem items, std::uint64_t* depth) {
  const unsigned pack = mode == Mode::Rows ? pack_width(s.acc, {parts}) : 1;
  const std::uint64_t units = (mode == Mode::Rows ? parts : max_parts) / pack;
  const TeamShape shape = team_shape(static_cast<double>(units), pack * s.acc_bytes, L, static_cast<unsigned>(L),
                                     mode == Mode::Rows, false);
  TeamLaunch t;
  t.in = s.acc;
  t.build = {mode, 0, shape.segs, pack, shape.unroll, shape.fit};
  t.team = shape.team;
  t.data = s.buffers.memory[SegmentBuffers::Partials].get();
  t.n = partials;
  t.items = items;
  t.count = t.total = count;
  t.length = t.stride = parts;
  t.out = s.call.out;
  t.segments = s.call.layout.count;
  *depth = team_depth(units, shape.team, pack);
  return team_step(s, t, L);
}

Plan plan_row_parts(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const unsigned pack = pack_width(c.type, {lay.length, lay.stride, c.offset});
  const std::uint64_t units = lay.length / pack;
  const std::uint64_t most = std::max<std::uint64_t>(1, units / (L * policy::kPartMinLoadsPerItem));
  const std::uint64_t parts = std::clamp<std::uint64_t>(ceil_div(target_groups(s.caps, L), lay.count), 1, most);
  if (parts == 1) return plan_row_teams(s, L, true);
  TeamLaunch t;
  t.in = c.type;
  t.build = {Mode::RowParts, 0, 1, pack, policy::kSegUnroll, false};
  t.team = static_cast<unsigned>(L);
  t.data = c.data;
  t.offset = c.offset;
  t.n = c.n;
  t.count = lay.count;
  t.total = lay.count * parts;
  t.length = lay.length;
  t.stride = lay.stride;
  t.parts = parts;
  t.out = c.out;
  t.segments = c.layout.count;
  t.partials = s.buffers.get(s.q.context, SegmentBuffers::Partials, t.total * s.acc_bytes);
  Plan p;
  p.steps.push_back(team_step(s, t, L));
  std::uint64_t combine_depth = 0;
  p.steps.push_back(combine_step(s, L, Mode::Rows, lay.count, parts, parts, t.total, nullptr, &combine_depth));
  p.depth = team_depth(ceil_div(units, parts), t.team, pack) + combine_depth;
  p.finish = std::to_string(parts) + " parts a row, second kernel";
  return p;
}

// The planning kernel's sorting of the offsets, as the host predicts it: segments per list, tasks,
// spans, the most parts of one segment and the longest segment of each list.
struct Sorting {
  std::array<std::uint64_t, 3> listed{};
  std::array<std::uint64_t, 3> longest{};
  std::uint64_t tasks = 0, spans = 0, max_parts = 1, part = 1;
  std::array<std::int64_t, 3> limits{-1, -1, -1};
};
Sorting sort_segments(const SegmentLayout& lay, std::array<std::int64_t, 3> limits, std::uint64_t part) {
  Sorting r;
  r.limits = limits;
  r.part = part;
  for (std::uint64_t i = 0; i < lay.count; ++i) {
    const auto len = static_cast<std::int64_t>(lay.offsets[i + 1] - lay.offsets[i]);
    int k = 0;
    while (k < 3 && len > limits[k]) ++k;
    if (k < 3) {
      ++r.listed[k];
      r.longest[k] = std::max(r.longest[k], static_cast<std::uint64_t>(len));
      continue;
    }
    const std::uint64_t parts = std::max<std::uint64_t>(1, ceil_div(static_cast<std::uint64_t>(len), part));
    r.tasks += parts;
    r.max_parts = std::max(r.max_parts, parts);
    if (parts > 1) ++r.spans;
  }
  return r;
}

// The planning kernel (its counters zeroed first).
void add_sorting_steps(const Setting& s, std::size_t L, const Sorting& sorting, Plan& p) {
  const SegmentCall& c = s.call;
  const std::uint64_t count = c.layout.count;
  cl_mem counters = s.buffers.get(s.q.context, SegmentBuffers::Counters, 8 * sizeof(cl_uint));
  const cl_uint zero = 0;
  p.steps.push_back(fill_step(counters, 8 * sizeof(cl_uint), &zero, sizeof zero, "planning counters"));
  Step st;
  st.name = "xr_seg_plan";
  st.kernel = &segment_kernel(s, c.type, Build{Mode::Offsets}, st.name);
  st.limit = group_limit(*st.kernel, s.caps, sizeof(cl_ulong));
  // Scans of 16-bit fields: at most 65535 work-items.
  st.local = std::min<std::size_t>(L, 65535);
  st.global = static_cast<std::size_t>(std::min(ceil_div(count, st.local), max_groups(st.local))) * st.local;
  const cl_long4 limits{{sorting.limits[0], sorting.limits[1], sorting.limits[2], 0}};
  const std::uint64_t listed = sorting.listed[0] + sorting.listed[1] + sorting.listed[2];
  cl_mem lists = s.buffers.get(s.q.context, SegmentBuffers::Lists, (listed ? 3 * count : 1) * sizeof(cl_ulong));
  cl_mem tasks = s.buffers.get(s.q.context, SegmentBuffers::Tasks, std::max<std::uint64_t>(1, 2 * sorting.tasks) * 8);
  cl_mem spans = s.buffers.get(s.q.context, SegmentBuffers::Spans, std::max<std::uint64_t>(1, 3 * sorting.spans) * 8);
  st.args = {value_arg(c.offsets),
             value_arg(cl_ulong{c.n}),
             value_arg(cl_ulong{count}),
             value_arg(limits),
             value_arg(cl_ulong{sorting.part}),
             value_arg(lists),
             value_arg(tasks),
             value_arg(cl_ulong{sorting.tasks}),
             value_arg(spans),
             value_arg(cl_ulong{sorting.spans}),
             value_arg(counters),
             local_arg(st.local * sizeof(cl_ulong))};
  p.steps.push_back(std::move(st));
}

// The tasks of split (or, for multigroup, every) segment: a work-group each, then the spans.
void add_task_steps(const Setting& s, std::size_t L, const Sorting& sorting, Plan& p) {
  const SegmentCall& c = s.call;
  TeamLaunch t;
  t.in = c.type;
  t.build = {Mode::Tasks, 0, 1, 1, policy::kSegUnroll, false};
  t.team = static_cast<unsigned>(L);
  t.data = c.data;
  t.offset = c.offset;
  t.n = c.n;
  t.offsets = c.offsets;
  t.items = s.buffers.memory[SegmentBuffers::Tasks].get();
  t.count = t.total = sorting.tasks;
  t.out = c.out;
  t.segments = c.layout.count;
  t.partials =
      s.buffers.get(s.q.context, SegmentBuffers::Partials, std::max<std::uint64_t>(1, sorting.tasks) * s.acc_bytes);
  p.steps.push_back(team_step(s, t, L));
  std::uint64_t depth = team_depth(std::min(sorting.part, s.max_len), t.team, 1);
  if (sorting.spans) {
    std::uint64_t combine_depth = 0;
    p.steps.push_back(combine_step(s, L, Mode::Spans, sorting.spans, 0, sorting.max_parts, sorting.tasks,
                                   s.buffers.memory[SegmentBuffers::Spans].get(), &combine_depth));
    depth += combine_depth;
  }
  p.depth = std::max(p.depth, depth);
}

Plan plan_offset_parts(const Setting& s, std::size_t L) {
  const std::uint64_t least = std::uint64_t{L} * policy::kSegUnroll * policy::kPartMinLoadsPerItem;
  const std::uint64_t part = std::max(least, ceil_div(s.call.n, target_groups(s.caps, L)));
  const Sorting sorting = sort_segments(s.call.layout, {-1, -1, -1}, part);
  Plan p;
  add_sorting_steps(s, L, sorting, p);
  add_task_steps(s, L, sorting, p);
  p.finish = sorting.spans ? "parts of " + std::to_string(part) + " elements, second kernel" : "one work-group";
  return p;
}

Plan plan_binned(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const std::array<std::int64_t, 3> limits{static_cast<std::int64_t>(policy::kBinShortLength),
                                           static_cast<std::int64_t>(policy::kBinMediumLength),
                                           static_cast<std::int64_t>(policy::kBinLongLength)};
  const Sorting sorting = sort_segments(c.layout, limits, policy::kBinPartLength);
  Plan p;
  add_sorting_steps(s, L, sorting, p);
  const unsigned segs = policy::kBinnedSegs;
  const std::array<unsigned, 3> teams{
      static_cast<unsigned>(std::min<std::size_t>(policy::kBinShortTeam, lowest_bit(L))),
      static_cast<unsigned>(std::min<std::size_t>(policy::kLanesMaxTeam, lowest_bit(L))), static_cast<unsigned>(L)};
  std::array<std::uint64_t, 4> first{};
  for (int b = 0; b < 3; ++b) {
    const std::uint64_t per_round = std::uint64_t{L / teams[b]} * segs;
    first[b + 1] = first[b] + std::min(ceil_div(sorting.listed[b], per_round), max_groups(L) / 3);
    if (sorting.listed[b]) p.depth = std::max(p.depth, team_depth(sorting.longest[b], teams[b], 1));
  }
  if (first[3] > 0) {
    TeamLaunch t;
    t.in = c.type;
    t.build = {Mode::Binned, 0, segs, 1, policy::kSegUnroll, false};
    t.team = teams[2];
    t.data = c.data;
    t.offset = c.offset;
    t.n = c.n;
    t.offsets = c.offsets;
    t.items = s.buffers.memory[SegmentBuffers::Lists].get();
    t.count = c.layout.count;
    t.bin_team = {{teams[0], teams[1], teams[2], 0}};
    t.bin_first = {{0, static_cast<cl_uint>(first[1]), static_cast<cl_uint>(first[2]), static_cast<cl_uint>(first[3])}};
    t.bin_items = {{sorting.listed[0], sorting.listed[1], sorting.listed[2], 0}};
    t.groups = first[3];
    t.out = c.out;
    t.segments = c.layout.count;
    p.steps.push_back(team_step(s, t, L));
  }
  if (sorting.tasks) add_task_steps(s, L, sorting, p);
  p.finish = "teams of " + std::to_string(teams[0]) + ", " + std::to_string(teams[1]) + " and " + std::to_string(L) +
             (sorting.spans ? "; parts of " + std::to_string(sorting.part) + " elements, second kernel" : "");
  return p;
}

// Columns: a work-group of W units (at most `width`) by L / W row lanes per block and band.
Step columns_step(const Setting& s, DType in, cl_mem data, std::uint64_t offset, std::uint64_t rows, std::uint64_t cols,
                  std::uint64_t stride, std::size_t L, std::uint64_t width, unsigned pack, std::uint64_t bands_wanted,
                  std::uint64_t* bands, std::uint64_t* depth) {
  const std::uint64_t units = cols / pack;
  const std::uint64_t W = std::min<std::uint64_t>({units, L, width});
  const std::uint64_t lanes = L / W;
  const std::uint64_t blocks = ceil_div(units, W);
  std::uint64_t band_rows = std::max(lanes * policy::kColumnsMinRowsPerItem, ceil_div(rows, bands_wanted));
  band_rows = std::min(ceil_div(band_rows, lanes) * lanes, rows);
  *bands = ceil_div(rows, band_rows);
  *depth = ceil_div(band_rows, lanes) + ceil_log2(lanes);
  Step st;
  st.name = "xr_seg_columns";
  Build b;
  b.pack = pack;
  st.kernel = &segment_kernel(s, in, b, st.name);
  const std::size_t scratch = pack * s.compute_bytes;
  st.limit = group_limit(*st.kernel, s.caps, scratch);
  st.local = static_cast<std::size_t>(W * lanes);
  st.global = static_cast<std::size_t>(std::min(blocks * *bands, max_groups(st.local))) * st.local;
  cl_mem partials =
      *bands > 1 ? s.buffers.get(s.q.context, SegmentBuffers::Partials, *bands * cols * s.acc_bytes) : nullptr;
  st.args = {value_arg(data),
             value_arg(cl_ulong{offset}),
             value_arg(cl_ulong{rows}),
             value_arg(cl_ulong{cols}),
             value_arg(cl_ulong{stride}),
             value_arg(static_cast<cl_uint>(W)),
             value_arg(cl_ulong{band_rows}),
             value_arg(cl_ulong{*bands}),
             value_arg(s.call.out),
             value_arg(partials),
             local_arg(st.local * scratch)};
  return st;
}

Plan plan_columns(const Setting& s, std::size_t L) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const std::uint64_t rows = lay.length, cols = lay.count;
  const unsigned pack = pack_width(c.type, {cols, lay.stride, c.offset});
  const std::uint64_t blocks = ceil_div(cols / pack, std::min<std::uint64_t>(cols / pack, L));
  const std::uint64_t bands_wanted = std::max<std::uint64_t>(1, target_groups(s.caps, L) / blocks);
  Plan p;
  std::uint64_t bands = 1, depth = 0;
  p.steps.push_back(
      columns_step(s, c.type, c.data, c.offset, rows, cols, lay.stride, L, L, pack, bands_wanted, &bands, &depth));
  p.depth = depth;
  p.finish = "one band";
  if (bands > 1) {
    std::uint64_t one = 1, combine_depth = 0;
    // As many row lanes as bands, at most L / kColumnsCombineWidth of them.
    const std::uint64_t width = std::max<std::uint64_t>(policy::kColumnsCombineWidth, L / bands);
    p.steps.push_back(columns_step(s, s.acc, s.buffers.memory[SegmentBuffers::Partials].get(), 0, bands, cols, cols, L,
                                   width, pack_width(s.acc, {cols}), 1, &one, &combine_depth));
    p.depth += combine_depth;
    p.finish = std::to_string(bands) + " row bands, second kernel";
  }
  return p;
}

// ---- balanced ------------------------------------------------------------------------------

// Segments balanced can number: xr_seg_balanced keeps a segment's place in its tile in 32 bits.
constexpr std::uint64_t kBalancedMostSegments = (std::uint64_t{1} << 32) - 1;

// Local memory of xr_seg_balanced at L work-items of K elements of `elem` bytes: the end marks, the
// segment of each, the padded elements (kernels_cl/segments.cl: bal_slot) and the scan's two
// halves of values and flags.
std::uint64_t balanced_local_bytes(std::uint64_t L, unsigned K, std::size_t elem, std::size_t compute) {
  const std::uint64_t tile = L * K;
  return ceil_div(tile, 32) * 4 + tile * 4 + (tile + tile / (128 / elem) + 1) * elem + 2 * L * (compute + 4);
}

Plan plan_balanced(const Setting& s, std::size_t L_default) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  if (lay.count > kBalancedMostSegments)
    throw InvalidArgument("opencl: segment kernel balanced reduces at most " + std::to_string(kBalancedMostSegments) +
                          " segments, not " + std::to_string(lay.count));
  const std::size_t L = c.options.block_size ? L_default : std::min(L_default, policy::kBalancedWorkGroup);
  const std::size_t elem = size_of(c.type);
  unsigned K = std::min<unsigned>(policy::kBalancedMaxItems, static_cast<unsigned>(policy::kBalancedItemBytes / elem));
  const std::uint64_t room =
      s.caps.local_mem > policy::kBalancedStaticLocal ? s.caps.local_mem - policy::kBalancedStaticLocal : 0;
  while (K > 1 && balanced_local_bytes(L, K, elem, s.compute_bytes) > room) K /= 2;
  const std::uint64_t tile = std::uint64_t{L} * K;
  const auto elements = static_cast<std::uint64_t>(lay.offsets[lay.count] - lay.offsets[0]);
  // One tile more than whole tiles: the end of the input lies in one.
  const std::uint64_t tiles = elements / tile + 1;
  if (tiles > std::numeric_limits<std::uint32_t>::max())
    throw InvalidArgument("opencl: segment kernel balanced: " + std::to_string(elements) + " elements is too many");
  const std::uint64_t per_cu = std::max<std::uint64_t>(1, policy::kBalancedItemsPerComputeUnit / L);
  const std::uint64_t wanted = c.options.grid_size ? c.options.grid_size : s.caps.compute_units * per_cu;
  const std::uint64_t groups = std::clamp<std::uint64_t>(wanted, 1, std::min(tiles, max_groups(L)));

  Build b;
  b.mode = Mode::Offsets;
  b.pack = pack_elements(c.type);
  b.balanced = K;
  Step st;
  st.name = "xr_seg_balanced";
  st.kernel = &segment_kernel(s, c.type, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, ceil_div(balanced_local_bytes(L, K, elem, s.compute_bytes), L));
  st.local = L;
  st.global = static_cast<std::size_t>(groups) * L;
  cl_mem carry = nullptr, carry_key = nullptr;
  if (groups > 1) {
    carry = s.buffers.get(s.q.context, SegmentBuffers::Carry, groups * s.acc_bytes);
    carry_key = s.buffers.get(s.q.context, SegmentBuffers::CarrySeg, 2 * groups * sizeof(cl_ulong));
  }
  const std::size_t vals = static_cast<std::size_t>(tile + tile / (128 / elem) + 1) * elem;
  st.args = {value_arg(c.data),
             value_arg(cl_ulong{c.offset}),
             value_arg(cl_ulong{c.n}),
             value_arg(c.offsets),
             value_arg(cl_ulong{lay.count}),
             value_arg(cl_ulong{tiles}),
             value_arg(c.out),
             value_arg(carry),
             value_arg(carry_key),
             local_arg(static_cast<std::size_t>(ceil_div(tile, 32)) * sizeof(cl_uint)),
             local_arg(static_cast<std::size_t>(tile) * sizeof(cl_uint)),
             local_arg(vals),
             local_arg(2 * L * s.compute_bytes),
             local_arg(2 * L * sizeof(cl_uint))};
  Plan p;
  p.steps.push_back(std::move(st));
  // A work-item's chain, the scan, the parts carried from tile to tile, the fix-up's chains and tree.
  const std::uint64_t spanned = ceil_div(s.max_len, tile) + 1;
  p.depth = K + ceil_log2(L) + 2 + spanned;
  p.finish = "runs of tiles of " + std::to_string(tile) + " elements, a work-group segmented scan";
  if (groups > 1) {
    Step fix;
    fix.name = "xr_seg_balanced_fixup";
    fix.kernel = &segment_kernel(s, c.type, b, fix.name);
    fix.limit = group_limit(*fix.kernel, s.caps, s.compute_bytes);
    fix.local = L;
    fix.global = static_cast<std::size_t>(groups) * L;
    fix.args = {value_arg(carry), value_arg(carry_key), value_arg(cl_ulong{groups}), value_arg(c.out),
                local_arg(L * s.compute_bytes)};
    p.steps.push_back(std::move(fix));
    p.depth += ceil_div(std::min(spanned, groups), L) + ceil_log2(L) + 1;
    p.finish += ", parts across " + std::to_string(groups) + " work-groups combined by a fix-up kernel";
  }
  return p;
}

// ---- serial (CPU devices) ------------------------------------------------------------------

// Roundings of run_range over `len` elements: the vector accumulators' chains and combination,
// the lanes in order, the ragged end.
std::uint64_t run_depth(std::uint64_t len) {
  const std::uint64_t w = policy::kRunsVectorWidth, a = policy::kRunsAccumulators;
  return len / (w * a) + (w * a) / w + a + w + w;
}

// The first segment starting at or after element x, as the kernel finds it.
std::uint64_t first_segment(const SegmentLayout& lay, std::uint64_t x) {
  if (lay.kind == SegmentKind::Rows) return std::min(lay.count, ceil_div(x, lay.stride));
  const std::int64_t* begin = lay.offsets;
  return static_cast<std::uint64_t>(std::lower_bound(begin, begin + lay.count, static_cast<std::int64_t>(x)) - begin);
}

Plan plan_serial_segments(const Setting& s) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const bool rows = lay.kind == SegmentKind::Rows;
  const std::uint64_t want = std::max<std::uint64_t>(1, s.caps.compute_units * policy::kSerialItemsPerComputeUnit);
  const std::uint64_t stride = rows ? std::max<std::uint64_t>(1, lay.stride) : 1;
  std::uint64_t block = 0, items = 0;
  Build b;
  b.mode = rows ? Mode::Rows : Mode::Offsets;
  if (rows && lay.count >= want) {
    // Whole rows per work-item: no row is cut.
    const std::uint64_t per_item = ceil_div(lay.count, want);
    block = per_item * stride;
    items = ceil_div(lay.count, per_item);
    if (lay.stride == lay.length && lay.length <= 16 && (lay.length & (lay.length - 1)) == 0)
      b.row_len = static_cast<unsigned>(lay.length);
  } else {
    const std::uint64_t span = rows ? (lay.count - 1) * stride + lay.length : c.n;
    block = ceil_div(span, want);
    items = ceil_div(span, block);
  }
  const std::uint64_t longest = rows ? lay.length : s.max_len;
  // Segments cut by a block's end, and the most blocks one segment reaches.
  bool cut = false;
  for (std::uint64_t w = 1; w < items && !cut; ++w) {
    const std::uint64_t lo = w * block, s0 = first_segment(lay, lo);
    if (s0 == 0) continue;
    const std::uint64_t end = rows ? (s0 - 1) * stride + lay.length : static_cast<std::uint64_t>(lay.offsets[s0]);
    cut = end > lo;
  }
  Step st;
  st.name = "xr_seg_serial";
  st.kernel = &segment_kernel(s, c.type, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, 0);
  st.global = static_cast<std::size_t>(items);
  st.local = 1;
  cl_mem carry = s.buffers.get(s.q.context, SegmentBuffers::Carry, items * s.acc_bytes);
  cl_mem carry_seg = s.buffers.get(s.q.context, SegmentBuffers::CarrySeg, items * sizeof(cl_ulong));
  st.args = {value_arg(c.data),
             value_arg(cl_ulong{c.offset}),
             value_arg(cl_ulong{c.n}),
             value_arg(c.offsets),
             value_arg(cl_ulong{lay.count}),
             value_arg(cl_ulong{lay.length}),
             value_arg(cl_ulong{stride}),
             value_arg(cl_ulong{block}),
             value_arg(c.out),
             value_arg(carry),
             value_arg(carry_seg)};
  Plan p;
  p.steps.push_back(std::move(st));
  p.depth = (b.row_len ? ceil_log2(b.row_len) : run_depth(longest)) + (cut ? ceil_div(longest, block) + 1 : 0);
  p.finish = "one work-item";
  if (cut) {
    Step fix;
    fix.name = "xr_seg_serial_fixup";
    fix.kernel = &segment_kernel(s, c.type, b, fix.name);
    fix.limit = group_limit(*fix.kernel, s.caps, 0);
    fix.global = static_cast<std::size_t>(items);
    fix.local = 1;
    fix.args = {value_arg(carry), value_arg(carry_seg), value_arg(cl_ulong{items}), value_arg(c.out)};
    p.steps.push_back(std::move(fix));
    p.finish = "blocks of " + std::to_string(block) + " elements, fix-up kernel";
  }
  return p;
}

// Columns on a CPU device: xr_seg_columns_serial over bands x blocks of columns.
Step columns_serial_step(const Setting& s, DType in, cl_mem data, std::uint64_t offset, std::uint64_t rows,
                         std::uint64_t cols, std::uint64_t stride, std::uint64_t bands_wanted, std::uint64_t* bands,
                         std::uint64_t* depth) {
  Build b;
  if (stride == cols && policy::kRunsVectorWidth % cols == 0) b.narrow = static_cast<unsigned>(cols);
  const std::uint64_t block_cols = b.narrow ? cols : std::min<std::uint64_t>(cols, policy::kCpuColumnBlock);
  const std::uint64_t blocks = ceil_div(cols, block_cols);
  const std::uint64_t band_rows = ceil_div(rows, std::max<std::uint64_t>(1, bands_wanted));
  *bands = ceil_div(rows, band_rows);
  *depth = band_rows + (b.narrow ? policy::kRunsVectorWidth / b.narrow + band_rows % policy::kRunsVectorWidth : 0);
  Step st;
  st.name = "xr_seg_columns_serial";
  st.kernel = &segment_kernel(s, in, b, st.name);
  st.limit = group_limit(*st.kernel, s.caps, 0);
  st.local = 1;
  st.global = static_cast<std::size_t>(std::min(blocks * *bands, max_groups(1)));
  cl_mem partials =
      *bands > 1 ? s.buffers.get(s.q.context, SegmentBuffers::Partials, *bands * cols * s.acc_bytes) : nullptr;
  st.args = {value_arg(data),
             value_arg(cl_ulong{offset}),
             value_arg(cl_ulong{rows}),
             value_arg(cl_ulong{cols}),
             value_arg(cl_ulong{stride}),
             value_arg(cl_ulong{band_rows}),
             value_arg(cl_ulong{*bands}),
             value_arg(cl_ulong{block_cols}),
             value_arg(s.call.out),
             value_arg(partials)};
  return st;
}

Plan plan_serial_columns(const Setting& s) {
  const SegmentCall& c = s.call;
  const SegmentLayout& lay = c.layout;
  const std::uint64_t rows = lay.length, cols = lay.count;
  const std::uint64_t want = std::max<std::uint64_t>(1, s.caps.compute_units * policy::kSerialItemsPerComputeUnit);
  const bool narrow = lay.stride == cols && policy::kRunsVectorWidth % cols == 0;
  const std::uint64_t blocks = narrow ? 1 : ceil_div(cols, std::min<std::uint64_t>(cols, policy::kCpuColumnBlock));
  Plan p;
  std::uint64_t bands = 1, depth = 0;
  p.steps.push_back(
      columns_serial_step(s, c.type, c.data, c.offset, rows, cols, lay.stride, ceil_div(want, blocks), &bands, &depth));
  p.depth = depth;
  p.finish = "one band";
  if (bands > 1) {
    std::uint64_t one = 1, combine_depth = 0;
    p.steps.push_back(columns_serial_step(s, s.acc, s.buffers.memory[SegmentBuffers::Partials].get(), 0, bands, cols,
                                          cols, 1, &one, &combine_depth));
    p.depth += combine_depth;
    p.finish = std::to_string(bands) + " row bands, second kernel";
  }
  return p;
}

// ---- choosing ------------------------------------------------------------------------------

Strategy auto_strategy(const Setting& s, std::size_t L) {
  const SegmentLayout& lay = s.call.layout;
  if (s.caps.is_cpu()) return Strategy::Serial;
  switch (lay.kind) {
    case SegmentKind::Columns:
      return Strategy::Columns;
    case SegmentKind::Rows: {
      const unsigned pack = pack_width(s.call.type, {lay.length, lay.stride, s.call.offset});
      if (lay.length / pack <= policy::kAutoLanesMaxUnits) return Strategy::Lanes;
      return lay.count >= target_groups(s.caps, L) ? Strategy::Workgroup : Strategy::Multigroup;
    }
    case SegmentKind::Offsets: {
      // Lanes while the lengths are about even and no segment holds its team too long; else
      // balanced, whatever the mix.
      const TeamShape shape = team_shape(s.mean_len, size_of(s.call.type), L, policy::kLanesMaxTeam, false, false);
      const std::uint64_t rounds = ceil_div(s.max_len, std::uint64_t{shape.team} * policy::kSegUnroll);
      const bool even = static_cast<double>(s.max_len) <= static_cast<double>(policy::kAutoLanesMaxSpread) * s.mean_len;
      const bool balanceable = lay.count <= kBalancedMostSegments;
      return (even && rounds <= policy::kAutoLanesMaxRounds) || !balanceable ? Strategy::Lanes : Strategy::Balanced;
    }
  }
  return Strategy::Serial;
}

const char* strategy_name(Strategy st) {
  for (const auto& r : strategy_rows())
    if (r.strategy == st) return r.name;
  return "?";
}

Plan plan_strategy(const Setting& s, Strategy st, std::size_t L) {
  const bool offsets = s.call.layout.kind == SegmentKind::Offsets;
  switch (st) {
    case Strategy::Lanes:
      return offsets ? plan_offset_teams(s, L, false) : plan_row_teams(s, L, false);
    case Strategy::Workgroup:
      return offsets ? plan_offset_teams(s, L, true) : plan_row_teams(s, L, true);
    case Strategy::Multigroup:
      return offsets ? plan_offset_parts(s, L) : plan_row_parts(s, L);
    case Strategy::Binned:
      return plan_binned(s, L);
    case Strategy::Balanced:
      return plan_balanced(s, L);
    case Strategy::Columns:
      return plan_columns(s, L);
    case Strategy::Serial:
      return s.call.layout.kind == SegmentKind::Columns ? plan_serial_columns(s) : plan_serial_segments(s);
    case Strategy::Auto:
      break;
  }
  throw InvalidArgument("opencl: no plan for segment kernel auto");
}

// InvalidArgument unless options.kernel names a strategy that reduces `kind` and supports (op,
// type), and exact mode when asked.
void check_strategy(const DeviceCaps& caps, const RunOptions& opt, Op op, DType type, SegmentKind kind) {
  const StrategyRow& row = find_strategy(opt.kernel);
  if (std::find(row.layouts.begin(), row.layouts.end(), kind) == row.layouts.end())
    throw InvalidArgument("opencl: segment kernel '" + opt.kernel + "' does not reduce " +
                          std::string(to_string(kind)));
  for (const KernelInfo& k : segment_strategies(caps))
    if (k.name == opt.kernel) check_request(k, op, type, 1, "opencl", opt);
}

void check_buffer(cl_mem mem, cl_context context, std::uint64_t bytes, const char* what) {
  if (!mem) throw InvalidArgument(std::string("opencl: null ") + what + " buffer");
  cl_context owner = nullptr;
  std::size_t size = 0;
  check(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr), "clGetMemObjectInfo", "CL_MEM_CONTEXT");
  check(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr), "clGetMemObjectInfo", "CL_MEM_SIZE");
  if (owner != context)
    throw InvalidArgument(std::string("opencl: the ") + what + " buffer belongs to another context than the queue");
  if (size < bytes)
    throw InvalidArgument(std::string("opencl: the ") + what + " buffer holds " + std::to_string(size) +
                          " bytes, fewer than the " + std::to_string(bytes) + " the reduction reaches");
}

}  // namespace

// ---- buffers, queues -------------------------------------------------------------------------

cl_mem SegmentBuffers::get(cl_context context, Role role, std::size_t want) {
  want = std::max<std::size_t>(want, 1);
  if (memory[role] && bytes[role] >= want) return memory[role].get();
  memory[role].reset();
  bytes[role] = 0;
  static constexpr const char* names[kRoles] = {
      "segment input", "segment offsets",   "segment values",  "segment partials", "segment lists", "segment tasks",
      "segment spans", "planning counters", "segment carries", "carried segments", "exact pieces",  "exact words"};
  memory[role] = create_buffer(context, CL_MEM_READ_WRITE, want, names[role]);
  bytes[role] = want;
  return memory[role].get();
}

SegmentQueue segment_queue(cl_command_queue queue) {
  if (!queue) throw InvalidArgument("opencl: null command queue");
  SegmentQueue q;
  q.queue = queue;
  cl_device_id device = nullptr;
  cl_command_queue_properties props = 0;
  check(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_DEVICE");
  check(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof q.context, &q.context, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_CONTEXT");
  check(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr), "clGetCommandQueueInfo",
        "CL_QUEUE_PROPERTIES");
  q.caps = &caps_of(device);
  q.profiling = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  return q;
}

std::vector<KernelInfo> segment_strategies(const DeviceCaps& caps) {
  std::vector<DType> types;
  for (DType t : segment_dtypes())
    if (caps.fp64 || t != DType::F64) types.push_back(t);
  const std::vector<Op> ops(fold_ops.begin(), fold_ops.end());
  const std::string no64 = caps.fp64 ? "" : " [no f64: device lacks cl_khr_fp64]";
  const auto widest = static_cast<unsigned>(caps.max_work_group);
  std::vector<KernelInfo> out;
  for (const auto& r : strategy_rows()) {
    KernelInfo k;
    k.name = r.name;
    k.note = std::string(r.note) + no64;
    k.kind = r.strategy == Strategy::Auto ? KernelKind::Auto : KernelKind::Rung;
    k.ops = ops;
    k.types = types;
    k.exact = true;  // exact sums go through exact pieces, whatever the strategy
    k.blocks = r.strategy == Strategy::Serial ? BlockRule{1, 1, 1, {}, 1} : BlockRule{1, widest, 1, {}, 0};
    k.layouts = r.layouts;
    out.push_back(std::move(k));
  }
  return out;
}

SegmentRun run_segments(const SegmentQueue& q, const SegmentCall& call, SegmentBuffers& buffers) {
  const DeviceCaps& caps = *q.caps;
  const RunOptions& opt = call.options;
  const SegmentLayout& lay = call.layout;
  const StrategyRow& row = find_strategy(opt.kernel);
  if (std::find(row.layouts.begin(), row.layouts.end(), lay.kind) == row.layouts.end())
    throw InvalidArgument("opencl: segment kernel '" + opt.kernel + "' does not reduce " +
                          std::string(to_string(lay.kind)));
  if (call.type == DType::F64 && !caps.fp64)
    throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps.name + " does not offer");
  Setting s{q, caps, call, buffers, result_dtype(call.op, call.type, opt.accumulator), 0, 0};
  s.acc_bytes = size_of(s.acc);
  s.compute_bytes = size_of(compute_dtype(s.acc));
  const bool offsets = lay.kind == SegmentKind::Offsets;
  if (offsets && lay.count) {
    for (std::uint64_t i = 0; i < lay.count; ++i)
      s.max_len = std::max(s.max_len, static_cast<std::uint64_t>(lay.offsets[i + 1] - lay.offsets[i]));
    s.mean_len = static_cast<double>(lay.offsets[lay.count] - lay.offsets[0]) / static_cast<double>(lay.count);
  }

  SegmentRun run;
  Plan plan;
  const bool all_empty = offsets ? s.max_len == 0 : lay.length == 0;
  std::size_t L = choose_work_group(opt.block_size, caps.max_work_group, policy::kWorkGroup, caps, row.name);
  Strategy chosen = row.strategy;
  if (lay.count == 0) {
    plan.finish = "none";
  } else if (all_empty) {
    // Every value is the empty one: a fill, nothing read.
    unsigned char empty[8] = {};
    visit_dtype(s.acc, [&](auto t) {
      const auto v = empty_value<decltype(t)>(call.op);
      std::memcpy(empty, &v, sizeof v);
    });
    plan.steps.push_back(fill_step(call.out, lay.count * s.acc_bytes, empty, s.acc_bytes, "empty values"));
    plan.finish = "none (every segment empty)";
  } else {
    if (chosen == Strategy::Auto) chosen = auto_strategy(s, L);
    if (offsets && lay.count > kMostPlannedSegments && (chosen == Strategy::Binned || chosen == Strategy::Multigroup))
      throw InvalidArgument("opencl: segment kernel " + std::string(strategy_name(chosen)) + " sorts at most " +
                            std::to_string(kMostPlannedSegments) + " segments, not " + std::to_string(lay.count));
    // A smaller work-group when a kernel allows fewer work-items (registers, local memory) than
    // the default: planned again with the most every launch allows.
    for (;;) {
      plan = plan_strategy(s, chosen, L);
      std::size_t fits = L;
      for (const Step& st : plan.steps)
        if (st.kernel && st.local > st.limit) fits = std::min(fits, st.limit);
      if (fits == L) break;
      if (opt.block_size)
        throw InvalidArgument("opencl: work-group size " + std::to_string(opt.block_size) + " exceeds " +
                              std::to_string(fits) + ", the most segment kernel " + row.name + " allows on " +
                              caps.name + " (CL_KERNEL_WORK_GROUP_SIZE, local memory)");
      L = floor_pow2(fits);
    }
  }
  run.kernel = row.strategy == Strategy::Auto ? "auto:" + std::string(strategy_name(chosen)) : row.name;
  if (lay.count == 0 || all_empty) run.kernel = row.strategy == Strategy::Auto ? "auto:none" : row.name;
  run.finish = plan.finish;
  run.depth = plan.depth;
  run.launches = plan.launches();
  run.kernel_ms = time_passes(q, plan.steps, opt);
  return run;
}

// ---- exact sums ----------------------------------------------------------------------------

ExactPieces exact_pieces_of(const SegmentLayout& lay) {
  ExactPieces out;
  out.first.reserve(lay.count + 1);
  const std::int64_t most = xr::detail::kExactPieceElements;
  for (std::uint64_t i = 0; i < lay.count; ++i) {
    out.first.push_back(out.pieces.size());
    std::int64_t first = 0, count = 0, step = 1;
    switch (lay.kind) {
      case SegmentKind::Rows:
        first = static_cast<std::int64_t>(i * lay.stride);
        count = static_cast<std::int64_t>(lay.length);
        break;
      case SegmentKind::Columns:
        first = static_cast<std::int64_t>(i);
        count = static_cast<std::int64_t>(lay.length);
        step = static_cast<std::int64_t>(lay.stride);
        break;
      case SegmentKind::Offsets:
        first = lay.offsets[i];
        count = lay.offsets[i + 1] - lay.offsets[i];
        break;
    }
    for (std::int64_t k = 0; k < count; k += most)
      out.pieces.push_back(ExactPiece{first + k * step, std::min(most, count - k), step});
  }
  out.first.push_back(out.pieces.size());
  return out;
}

SegmentRun run_exact_pieces(const SegmentQueue& q, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                            std::span<const ExactPiece> pieces, std::int64_t* words, const RunOptions& options,
                            SegmentBuffers& buffers, double* read_ms) {
  const DeviceCaps& caps = *q.caps;
  if (!is_float(type))
    throw InvalidArgument("opencl: exact piece states are for float types, not " + std::string(to_string(type)));
  if (type == DType::F64 && !caps.fp64)
    throw InvalidArgument("opencl: f64 needs cl_khr_fp64, which " + caps.name + " does not offer");
  const int per_piece = xr::detail::exact_piece_words(compute_dtype(type));
  std::vector<cl_long> table(3 * pieces.size());
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    const ExactPiece& x = pieces[p];
    const std::int64_t last = x.first + (x.count > 0 ? (x.count - 1) * x.step : 0);
    if (x.count < 0 || x.count > xr::detail::kExactPieceElements ||
        (x.count > 0 && (x.first < 0 || last < 0 || static_cast<std::uint64_t>(std::max(x.first, last)) >= n)))
      throw InvalidArgument("opencl: exact piece " + std::to_string(p) + " (first " + std::to_string(x.first) +
                            ", count " + std::to_string(x.count) + ", step " + std::to_string(x.step) +
                            ") reaches outside the " + std::to_string(n) + " elements");
    table[3 * p] = x.first;
    table[3 * p + 1] = x.count;
    table[3 * p + 2] = x.step;
  }
  SegmentRun run;
  run.kernel = "exact";
  run.finish = "piece states merged on the host";
  run.depth = 1;
  *read_ms = 0;
  if (pieces.empty()) return run;

  using clock = std::chrono::steady_clock;
  cl_mem table_mem = buffers.get(q.context, SegmentBuffers::Pieces, table.size() * sizeof(cl_long));
  {
    Event written;
    const auto t0 = clock::now();
    check(clEnqueueWriteBuffer(q.queue, table_mem, CL_TRUE, 0, table.size() * sizeof(cl_long), table.data(), 0, nullptr,
                               written.out()),
          "clEnqueueWriteBuffer", "exact pieces");
    *read_ms +=
        q.profiling ? event_ms(written.get()) : std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  }
  // Pieces per launch: their words stay within 64 MiB of device memory.
  const std::uint64_t batch =
      std::max<std::uint64_t>(1, (std::uint64_t{64} << 20) / (static_cast<std::uint64_t>(per_piece) * sizeof(cl_long)));
  const std::uint64_t launches = ceil_div(pieces.size(), batch);
  cl_mem words_mem = buffers.get(q.context, SegmentBuffers::Words,
                                 std::min<std::uint64_t>(batch, pieces.size()) * per_piece * sizeof(cl_long));
  CachedKernel& k = cached_kernel(q.context, caps.device, kSegmentsSource, exact_options(type), "xr_seg_exact");
  const std::size_t local =
      choose_work_group(options.block_size, group_limit(k, caps, 0), policy::kExactWorkGroup, caps, "xr_seg_exact");
  std::vector<Step> steps;
  for (std::uint64_t l = 0; l < launches; ++l) {
    const std::uint64_t base = l * batch, count = std::min<std::uint64_t>(batch, pieces.size() - base);
    Step st;
    st.name = "xr_seg_exact";
    st.kernel = &k;
    st.local = local;
    st.global = static_cast<std::size_t>(std::min(ceil_div(count, local), max_groups(local))) * local;
    st.args = {value_arg(data),           value_arg(cl_ulong{offset}), value_arg(table_mem),
               value_arg(cl_ulong{base}), value_arg(cl_ulong{count}),  value_arg(words_mem)};
    steps.push_back(std::move(st));
  }
  run.launches = static_cast<int>(launches);
  run.kernel_ms = time_passes(q, steps, options);
  // One launch's words are still in the buffer; several overwrite one another, so they run once
  // more (untimed), each read before the next.
  for (std::uint64_t l = 0; l < launches; ++l) {
    const std::uint64_t base = l * batch, count = std::min<std::uint64_t>(batch, pieces.size() - base);
    if (launches > 1) {
      EventChain chain;
      enqueue(q.queue, steps[l], chain);
      check(clWaitForEvents(1, chain.events.data()), "clWaitForEvents", "exact pieces");
    }
    Event read;
    const auto t0 = clock::now();
    check(clEnqueueReadBuffer(q.queue, words_mem, CL_TRUE, 0, count * per_piece * sizeof(cl_long),
                              words + base * per_piece, 0, nullptr, read.out()),
          "clEnqueueReadBuffer", "exact piece states");
    *read_ms +=
        q.profiling ? event_ms(read.get()) : std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  }
  return run;
}

// ---- the Reducer's device --------------------------------------------------------------------

SegmentQueueDevice::SegmentQueueDevice(const DeviceCaps& caps, cl_context context, cl_command_queue queue) {
  queue_.queue = queue;
  queue_.context = context;
  queue_.caps = &caps;
  queue_.profiling = true;  // the reducer's queue profiles
}

std::vector<KernelInfo> SegmentQueueDevice::kernels() const { return segment_strategies(*queue_.caps); }

std::uint64_t SegmentQueueDevice::max_job_bytes(const RunOptions& options) const {
  // The input is one buffer (at most CL_DEVICE_MAX_MEM_ALLOC_SIZE); the values, offsets and
  // partials beside it take at most about three times the input (i32 rows of one element give
  // i64 values twice their size), so a job takes at most a quarter of the memory it may use.
  std::uint64_t budget = queue_.caps->global_mem;
  if (options.device_mem_limit) budget = std::min(budget, options.device_mem_limit);
  return std::max<std::uint64_t>(1, std::min(queue_.caps->max_alloc, budget / 4));
}

double SegmentQueueDevice::upload(SegmentBuffers::Role role, const void* host, std::size_t bytes) {
  cl_mem mem = buffers_.get(queue_.context, role, bytes);
  if (!bytes) return 0;
  Event written;
  check(clEnqueueWriteBuffer(queue_.queue, mem, CL_TRUE, 0, bytes, host, 0, nullptr, written.out()),
        "clEnqueueWriteBuffer", format_bytes(bytes) + " of segment data");
  return event_ms(written.get());
}

xr::detail::SegmentOutcome SegmentQueueDevice::reduce(const xr::detail::SegmentJob& job) {
  const SegmentLayout& lay = job.layout;
  xr::detail::SegmentOutcome out;
  SegmentCall call;
  call.type = job.type;
  call.op = job.op;
  call.options = job.options;
  call.layout = lay;
  call.n = job.n;
  out.transfer_ms += upload(SegmentBuffers::Data, job.data, job.n * size_of(job.type));
  call.data = buffers_.memory[SegmentBuffers::Data].get();
  if (lay.kind == SegmentKind::Offsets) {
    out.transfer_ms += upload(SegmentBuffers::Offsets, lay.offsets, (lay.count + 1) * sizeof(std::int64_t));
    call.offsets = buffers_.memory[SegmentBuffers::Offsets].get();
  }
  const std::size_t value_bytes = lay.count * size_of(job.result_type);
  call.out = buffers_.get(queue_.context, SegmentBuffers::Out, value_bytes);
  const SegmentRun run = run_segments(queue_, call, buffers_);
  if (value_bytes) {
    Event read;
    check(clEnqueueReadBuffer(queue_.queue, call.out, CL_TRUE, 0, value_bytes, job.out, 0, nullptr, read.out()),
          "clEnqueueReadBuffer", "segment values");
    out.transfer_ms += event_ms(read.get());
  }
  out.kernel_ms = run.kernel_ms;
  out.launches = run.launches;
  out.kernel = run.kernel;
  out.finish = run.finish;
  out.depth = run.depth;
  return out;
}

xr::detail::SegmentOutcome SegmentQueueDevice::exact_pieces(const void* data, std::uint64_t n, DType type,
                                                            std::span<const ExactPiece> pieces, std::int64_t* words,
                                                            const RunOptions& options) {
  xr::detail::SegmentOutcome out;
  out.transfer_ms = upload(SegmentBuffers::Data, data, n * size_of(type));
  double copies = 0;
  const SegmentRun run = run_exact_pieces(queue_, buffers_.memory[SegmentBuffers::Data].get(), 0, n, type, pieces,
                                          words, options, buffers_, &copies);
  out.transfer_ms += copies;
  out.kernel_ms = run.kernel_ms;
  out.launches = run.launches;
  out.kernel = run.kernel;
  out.finish = run.finish;
  out.depth = run.depth;
  return out;
}

}  // namespace xr::opencl::detail

// ---- the cl_mem entry points -------------------------------------------------------------------

namespace xr::opencl {

namespace {

using detail::SegmentBuffers;
using detail::SegmentCall;
using detail::SegmentQueue;

// The reduction of a checked call on the caller's buffers: the strategy's kernels, or the exact
// piece states merged and rounded on the host and written to `out`.
Result run_call(const SegmentQueue& q, const SegmentCall& call, double transfer_ms) {
  const detail::DeviceCaps& caps = *q.caps;
  const RunOptions& opt = call.options;
  const SegmentLayout& lay = call.layout;
  const DType acc = result_dtype(call.op, call.type, opt.accumulator);
  detail::check_strategy(caps, opt, call.op, call.type, lay.kind);
  detail::check_buffer(call.out, q.context, lay.count * size_of(acc), "values");
  SegmentBuffers buffers;
  Result res;
  const bool exact = opt.exact && exact_applies(call.op, call.type);
  detail::SegmentRun run;
  if (exact) {
    const detail::ExactPieces pieces = detail::exact_pieces_of(lay);
    // f16 and bf16 pieces have the states of their values widened to f32; their sums round to f32.
    const DType state = compute_dtype(call.type);
    const int per_piece = xr::detail::exact_piece_words(state);
    std::vector<std::int64_t> words(pieces.pieces.size() * per_piece);
    double copies = 0;
    run = detail::run_exact_pieces(q, call.data, call.offset, call.n, call.type, pieces.pieces, words.data(), opt,
                                   buffers, &copies);
    transfer_ms += copies;
    HostBuffer values(acc, lay.count);
    for (std::uint64_t i = 0; i < lay.count; ++i) {
      ExactSum sum;
      for (std::uint64_t p = pieces.first[i]; p < pieces.first[i + 1]; ++p)
        xr::detail::merge_piece(sum, words.data() + p * per_piece, state);
      if (acc == DType::F32)
        values.as<float>()[i] = sum.to_float();
      else
        values.as<double>()[i] = sum.to_double();
    }
    if (lay.count) {
      detail::Event written;
      detail::check(
          clEnqueueWriteBuffer(q.queue, call.out, CL_TRUE, 0, values.bytes(), values.data(), 0, nullptr, written.out()),
          "clEnqueueWriteBuffer", "exact segment values");
      if (q.profiling) transfer_ms += detail::event_ms(written.get());
    }
  } else {
    run = detail::run_segments(q, call, buffers);
  }
  res.backend = "opencl";
  res.device = caps.name;
  res.kernel = run.kernel;
  res.finish = run.finish;
  res.launches = run.launches;
  res.repeats = opt.repeat;
  res.kernel_ms = run.kernel_ms;
  res.transfer_ms = transfer_ms;
  res.n = lay.elements();
  res.op = call.op;
  res.type = call.type;
  res.rounding_depth = run.depth;
  const std::uint64_t bytes = lay.elements() * size_of(call.type) +
                              (lay.kind == SegmentKind::Offsets ? (lay.count + 1) * sizeof(std::int64_t) : 0) +
                              lay.count * size_of(acc);
  res.bytes_per_s = run.kernel_ms > 0 ? static_cast<double>(bytes) / (run.kernel_ms * 1e-3) : 0.0;
  return res;
}

void check_data(const SegmentQueue& q, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type) {
  if (offset > std::numeric_limits<std::uint64_t>::max() - n)
    throw InvalidArgument("opencl: elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                          std::to_string(n) + ") overflow");
  detail::check_buffer(data, q.context, (offset + n) * size_of(type), "data");
}

}  // namespace

Result reduce_segments(cl_command_queue queue, cl_mem data, std::uint64_t offset, std::uint64_t n, DType type,
                       cl_mem offsets, std::uint64_t n_segments, cl_mem out, Op op, const RunOptions& options) {
  check_options(options);
  const SegmentQueue q = detail::segment_queue(queue);
  check_data(q, data, offset, n, type);
  detail::check_buffer(offsets, q.context, (n_segments + 1) * sizeof(std::int64_t), "offsets");
  // The offsets are read back and checked before anything reads the data.
  std::vector<std::int64_t> host(n_segments + 1);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  detail::check(clEnqueueReadBuffer(queue, offsets, CL_TRUE, 0, host.size() * sizeof(std::int64_t), host.data(), 0,
                                    nullptr, nullptr),
                "clEnqueueReadBuffer", "segment offsets");
  const double read_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  check_offsets(host, n);
  SegmentCall call;
  call.data = data;
  call.offset = offset;
  call.n = n;
  call.type = type;
  call.op = op;
  call.options = options;
  call.layout.kind = SegmentKind::Offsets;
  call.layout.count = n_segments;
  call.layout.offsets = host.data();
  call.offsets = offsets;
  call.out = out;
  return run_call(q, call, read_ms);
}

Result reduce_axis(cl_command_queue queue, cl_mem data, std::uint64_t offset, DType type, const MatrixShape& shape,
                   int axis, cl_mem out, Op op, const RunOptions& options) {
  check_options(options);
  const SegmentQueue q = detail::segment_queue(queue);
  SegmentCall call;
  call.layout = axis_layout(shape, axis);
  call.n = call.layout.span();
  check_data(q, data, offset, call.n, type);
  call.data = data;
  call.offset = offset;
  call.type = type;
  call.op = op;
  call.options = options;
  call.out = out;
  return run_call(q, call, 0.0);
}

}  // namespace xr::opencl
