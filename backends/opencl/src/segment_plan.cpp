// The planning the segment strategies share (segment_plan.hpp).
#include "segment_plan.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "xreduce/error.hpp"

namespace xr::opencl::detail {

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

std::string finalize_options(Finalize step, DType type) {
  if (step == Finalize::DivideByCount && (type == DType::F32 || type == DType::F64))  // the quotient in double
    return program_options(DType::F64, DType::F64, Op::Sum, 1, Tree::Sequential, Finish::Partials) +
           " -DXR_SEG_FINALIZE=1 -DXR_FIN_STEP=1 -DXR_FIN_T=" + (type == DType::F64 ? "double" : "float");
  if ((step == Finalize::IsPositive || step == Finalize::EqualsCount) && type == DType::I64)
    return program_options(DType::I64, DType::I64, Op::Sum, 1, Tree::Sequential, Finish::Partials) +
           " -DXR_SEG_FINALIZE=1 -DXR_FIN_T=long -DXR_FIN_STEP=" + std::to_string(static_cast<int>(step));
  throw InvalidArgument("opencl: no last step on the device for values of " + std::string(to_string(type)) +
                        " (a mean's are f32 or f64, any's and all's i64)");
}

cl_mem Setting::scratch(SegmentBuffers::Role role, std::size_t bytes) const {
  if (std::find(strategy->scratch.begin(), strategy->scratch.end(), role) == strategy->scratch.end())
    throw Error(std::string("opencl: segment strategy ") + strategy->name + " takes a buffer its row does not list (" +
                segment_buffer_name(role) + ")");
  return buffers.get(context, role, bytes);
}

const std::vector<const SegmentStrategy*>& strategy_list() {
  static const std::vector<const SegmentStrategy*> list = [] {
    std::vector<const SegmentStrategy*> l = strategy_files();
    std::stable_sort(l.begin(), l.end(),
                     [](const SegmentStrategy* a, const SegmentStrategy* b) { return a->order < b->order; });
    return l;
  }();
  return list;
}

const SegmentStrategy& find_segment_strategy(const std::string& name) {
  for (const SegmentStrategy* s : strategy_list())
    if (name == s->name) return *s;
  std::string known;
  for (const SegmentStrategy* s : strategy_list()) known += (known.empty() ? "" : ", ") + std::string(s->name);
  throw InvalidArgument("unknown opencl segment kernel '" + name + "' (known: " + known + ")");
}

void refuse_layout(const Setting& s) {
  throw InvalidArgument("opencl: segment kernel '" + std::string(s.strategy->name) + "' does not reduce " +
                        std::string(to_string(s.call.layout.kind)));
}

std::size_t lowest_bit(std::size_t x) { return x & (~x + 1); }

CachedKernel& segment_kernel(const Setting& s, DType in, cl_mem data, const Build& b, const char* name) {
  const Op op = data == s.call.data ? s.call.op : fold_of(s.call.op);
  return cached_kernel(s.context, s.caps.device, kSegmentsSource, build_options(in, s.acc, op, b), name);
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

namespace {

// The program of a team launch. Its shape (team size, items a round, loads in flight, fitted
// rows) is compiled in where it pays: on a GPU, for inputs of at least kSegShapedMinBytes. A CPU
// device runs the team strategies only when they are asked for by name (its auto takes serial),
// and a smaller input's launch is bound by its start, not by memory; there one program per
// (mode, pack) serves every team shape: the team at run time, one item per round, no fitted rows.
// Each lane still reads units t, t + G, ... into one accumulator, so the values keep their bits,
// and a new shape costs no build (about 0.8 s on NVIDIA's OpenCL).
Build team_build(const Setting& s, const TeamLaunch& t) {
  Build b = t.build;
  if (s.caps.is_cpu() || s.call.n * size_of(s.call.type) < policy::kSegShapedMinBytes) {
    b.team = 0;
    b.segs = 1;
    b.unroll = policy::kSegUnroll;
    b.fit = false;
  }
  return b;
}

}  // namespace

Launch team_step(const Setting& s, const TeamLaunch& t, std::size_t L) {
  Launch st;
  st.name = "xr_seg_team";
  const Build build = team_build(s, t);
  st.kernel = &segment_kernel(s, t.in, t.data, build, st.name);
  const std::size_t scratch = std::size_t{build.segs} * s.compute_bytes;
  st.limit = group_limit(*st.kernel, s.caps, scratch);
  st.local = L;
  const std::uint64_t per_round = std::uint64_t{L / t.team} * build.segs;
  const std::uint64_t groups = t.groups ? t.groups : ceil_div(std::max<std::uint64_t>(t.total, 1), per_round);
  // The teams loop over rounds, so a smaller grid gives the same values (binned launches keep
  // their groups: each bin owns a range of them).
  const std::uint64_t limit = s.caps.is_cpu() && !t.groups
                                  ? std::max<std::uint64_t>(1, policy::kCpuMaxTeamGridItems / L)
                                  : max_groups(L);
  st.global = static_cast<std::size_t>(std::min(groups, limit)) * L;
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
Launch combine_step(const Setting& s, std::size_t L, Mode mode, std::uint64_t count, std::uint64_t parts,
                    std::uint64_t max_parts, std::uint64_t partials, cl_mem items, std::uint64_t* depth) {
  const unsigned pack = mode == Mode::Rows ? pack_width(s.acc, {parts}) : 1;
  const std::uint64_t units = (mode == Mode::Rows ? parts : max_parts) / pack;
  const TeamShape shape = team_shape(static_cast<double>(units), pack * s.acc_bytes, L, static_cast<unsigned>(L),
                                     mode == Mode::Rows, false);
  TeamLaunch t;
  t.in = s.acc;
  t.build = {mode, 0, shape.segs, pack, shape.unroll, shape.fit};
  t.team = shape.team;
  t.data = s.held(SegmentBuffers::Partials);
  t.n = partials;
  t.items = items;
  t.count = t.total = count;
  t.length = t.stride = parts;
  t.out = s.call.out;
  t.segments = s.call.layout.count;
  *depth = team_depth(units, shape.team, pack);
  return team_step(s, t, L);
}

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
  cl_mem counters = s.scratch(SegmentBuffers::Counters, 8 * sizeof(cl_uint));
  const cl_uint zero = 0;
  p.steps.push_back(fill_launch(counters, 8 * sizeof(cl_uint), &zero, sizeof zero, "planning counters"));
  Launch st;
  st.name = "xr_seg_plan";
  st.kernel = &segment_kernel(s, c.type, c.data, Build{Mode::Offsets}, st.name);
  st.limit = group_limit(*st.kernel, s.caps, sizeof(cl_ulong));
  // Scans of 16-bit fields: at most 65535 work-items.
  st.local = std::min<std::size_t>(L, 65535);
  st.global = static_cast<std::size_t>(std::min(ceil_div(count, st.local), max_groups(st.local))) * st.local;
  const cl_long4 limits{{sorting.limits[0], sorting.limits[1], sorting.limits[2], 0}};
  const std::uint64_t listed = sorting.listed[0] + sorting.listed[1] + sorting.listed[2];
  cl_mem lists = s.scratch(SegmentBuffers::Lists, (listed ? 3 * count : 1) * sizeof(cl_ulong));
  cl_mem tasks = s.scratch(SegmentBuffers::Tasks, std::max<std::uint64_t>(1, 2 * sorting.tasks) * 8);
  cl_mem spans = s.scratch(SegmentBuffers::Spans, std::max<std::uint64_t>(1, 3 * sorting.spans) * 8);
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
  t.items = s.held(SegmentBuffers::Tasks);
  t.count = t.total = sorting.tasks;
  t.out = c.out;
  t.segments = c.layout.count;
  t.partials =
      s.scratch(SegmentBuffers::Partials, std::max<std::uint64_t>(1, sorting.tasks) * s.acc_bytes);
  p.steps.push_back(team_step(s, t, L));
  std::uint64_t depth = team_depth(std::min(sorting.part, s.max_len), t.team, 1);
  if (sorting.spans) {
    std::uint64_t combine_depth = 0;
    p.steps.push_back(combine_step(s, L, Mode::Spans, sorting.spans, 0, sorting.max_parts, sorting.tasks,
                                   s.held(SegmentBuffers::Spans), &combine_depth));
    depth += combine_depth;
  }
  p.depth = std::max(p.depth, depth);
}

}  // namespace xr::opencl::detail
