// What the segment strategies (segments/*.cpp) share: the strategy row each file defines, the
// setting every plan works from, the plan (its launches, their shapes and the rounding depth),
// the program options of kernels_cl/segments*.cl, and the launches of more than one strategy:
// xr_seg_team (lanes, workgroup, multigroup, binned) and xr_seg_plan (multigroup, binned).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "internal.hpp"
#include "launch.hpp"
#include "policy.hpp"
#include "segments.hpp"

namespace xr::opencl::detail {

// ---- programs ----------------------------------------------------------------------------------

// The -D options of kernels_cl/segments*.cl beyond reduce.cl's (see segments.cl's header).
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
std::string build_options(DType in, DType acc, Op op, const Build& b);
// The program of xr_seg_exact for a float input type.
std::string exact_options(DType type);
// The options of xr_seg_finalize: step `step` over values of `type` (a mean's f32 or f64, with
// double enabled for the quotient; any's and all's i64).
std::string finalize_options(Finalize step, DType type);

// ---- the setting and the plan ------------------------------------------------------------------

// One segmented reduction of data in device memory: every segment of `layout` over the n elements
// of `data` from element `offset`, into `out`.
struct SegmentCall {
  cl_mem data = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t n = 0;  // >= layout.span() (Offsets without host offsets: segments clamped to n)
  DType type = DType::F32;
  Op op = Op::Sum;
  RunOptions options;
  SegmentLayout layout;      // Offsets: the host's copy of the offsets, relative to `offset`, or null
  cl_mem offsets = nullptr;  // Offsets: count + 1 values on the device
  cl_mem out = nullptr;      // layout.count records of segment_record_bytes(op, type, accumulator)
};

struct SegmentStrategy;

// What every plan works from.
struct Setting {
  const DeviceCaps& caps;
  cl_context context;
  const SegmentCall& call;
  SegmentBuffers& buffers;
  const SegmentStrategy* strategy = nullptr;  // the strategy planning (auto: the one it chose)
  DType acc = DType::F32;
  std::size_t acc_bytes = 0;
  // Bytes of a value in registers and local memory (acc_t): acc_bytes, but 4 for the min and max
  // of f16 and bf16, which are computed in float and stored as the input type.
  std::size_t compute_bytes = 0;
  // Offsets: the longest segment and the mean length (from the host's offsets; without them the
  // mean is n / count and the longest n).
  std::uint64_t max_len = 0;
  double mean_len = 0;
  // The buffer of `role` of at least `bytes`, which the strategy lists in its scratch (else
  // xr::Error: a row must name every buffer its plan takes).
  cl_mem scratch(SegmentBuffers::Role role, std::size_t bytes) const;
  // The buffer of `role` as scratch() last made it.
  cl_mem held(SegmentBuffers::Role role) const { return buffers.memory[role].get(); }
};

struct Plan {
  std::string finish;
  std::vector<Launch> steps;
  std::uint64_t depth = 0;
};

// ---- the strategy rows -------------------------------------------------------------------------

// One segment strategy: a file of segments/ defines its row (segment_strategies.hpp, generated
// from the files there, declares segment_strategy_<file>() for each).
struct SegmentStrategy {
  int order = 0;        // place in segment_kernels(): ascending, auto first
  const char* name = "";
  const char* note = "";  // what it improves over the strategy before, what it still costs
  std::vector<SegmentKind> layouts;
  bool one_item_groups = false;  // work-groups of one work-item (BlockRule 1..1), else up to the device's
  std::vector<SegmentBuffers::Role> scratch;  // the buffers its plans take
  // Needs the host's copy of the offsets to size its launches (a job without them reads them back).
  bool plans_from_offsets = false;
  // Takes the pair ops (argmin, argmax, minmax) and no fold; the others take the folds and the
  // mapped ops (auto: every op).
  bool pair_ops = false;
  // The plan at work-group size L; null for auto.
  Plan (*plan)(const Setting& s, std::size_t L) = nullptr;
  // auto: the strategy it runs for the setting; null for the others.
  const SegmentStrategy& (*choose)(const Setting& s, std::size_t L) = nullptr;
};

// Every file's row, in file order (segment_strategies.cpp, generated from segments/).
std::vector<const SegmentStrategy*> strategy_files();
// Every strategy, ascending `order`.
const std::vector<const SegmentStrategy*>& strategy_list();
// The strategy named `name`; InvalidArgument listing the names otherwise.
const SegmentStrategy& find_segment_strategy(const std::string& name);

// ---- shared planning ---------------------------------------------------------------------------

// The planning kernel counts segments, tasks and spans in 32-bit counters.
constexpr std::uint64_t kMostPlannedSegments = (std::uint64_t{1} << 31) - 1;
// Segments balanced can number: xr_seg_balanced keeps a segment's place in its tile in 32 bits.
constexpr std::uint64_t kBalancedMostSegments = (std::uint64_t{1} << 32) - 1;

// InvalidArgument: the strategy planning does not reduce the layout's kind (a plan's case for a
// kind its row does not list).
[[noreturn]] void refuse_layout(const Setting& s);

// The kernel `name` of the program for a step that reads `data` as elements of `in`: the call's
// op over the call's data; its fold over anything else (partials, which a mapped op's map must
// not meet again).
CachedKernel& segment_kernel(const Setting& s, DType in, cl_mem data, const Build& b, const char* name);

// Work-groups a launch aims at: kSegWaves times what the device holds at once.
std::uint64_t target_groups(const DeviceCaps& caps, std::size_t local);

// The widest load (1, 2 or 4 elements, at most 16 bytes) that every value of `multiples` is a
// multiple of: then every load of a row (column) of that layout is aligned.
unsigned pack_width(DType t, std::initializer_list<std::uint64_t> multiples);

std::size_t lowest_bit(std::size_t x);

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
                     bool whole_group);

// Roundings behind a team's value of an item of `units` loads of `pack` elements: each lane's
// chain, the pack's lanes, the team's tree.
std::uint64_t team_depth(std::uint64_t units, unsigned team, unsigned pack);

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
Launch team_step(const Setting& s, const TeamLaunch& t, std::size_t L);
std::string team_finish(unsigned team);

// A team (lanes, or the whole work-group) per row, or per segment of the offsets.
Plan plan_row_teams(const Setting& s, std::size_t L, bool whole_group);
Plan plan_offset_teams(const Setting& s, std::size_t L, bool whole_group);

// A launch that combines, for each of `count` values, `parts` consecutive partials (rows of the
// Partials buffer), or the spans the planning kernel listed (of `partials` partials).
Launch combine_step(const Setting& s, std::size_t L, Mode mode, std::uint64_t count, std::uint64_t parts,
                    std::uint64_t max_parts, std::uint64_t partials, cl_mem items, std::uint64_t* depth);

// The planning kernel's sorting of the offsets, as the host predicts it: segments per list, tasks,
// spans, the most parts of one segment and the longest segment of each list.
struct Sorting {
  std::array<std::uint64_t, 3> listed{};
  std::array<std::uint64_t, 3> longest{};
  std::uint64_t tasks = 0, spans = 0, max_parts = 1, part = 1;
  std::array<std::int64_t, 3> limits{-1, -1, -1};
};
Sorting sort_segments(const SegmentLayout& lay, std::array<std::int64_t, 3> limits, std::uint64_t part);
// The planning kernel (its counters zeroed first): Counters, Lists, Tasks, Spans.
void add_sorting_steps(const Setting& s, std::size_t L, const Sorting& sorting, Plan& p);
// The tasks of split (or, for multigroup, every) segment: a work-group each, then the spans
// (Partials).
void add_task_steps(const Setting& s, std::size_t L, const Sorting& sorting, Plan& p);

}  // namespace xr::opencl::detail
