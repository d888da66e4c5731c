// OpenCL segmented reductions, balanced's work-groups and grids (a part of xr_test_opencl_segments,
// whose main() is in test_opencl_segments.cpp): lognormal lengths with every op and type, empty
// segments, one segment across many tiles, segment ends at tile and work-group boundaries, and the
// plan it makes for a GPU, run on this device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../turning_ops.hpp"
#include "internal.hpp"
#include "segment_checks.hpp"
#include "segment_entries.hpp"
#include "segments.hpp"
#include "targets.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
using namespace xr::ocl_test;
using namespace xr_seg;

// balanced named, with a work-group size and a grid (0: its defaults, 128 work-items and 4
// work-groups of them per compute unit). At 32 work-items a tile is 1024 elements of f32 and u8
// (512 of f64), so that small inputs span many tiles and work-groups; at 16, narrower than the
// 30 edge elements a tile of u8 may have, some work-items load more than one.
namespace {

RunOptions balanced(unsigned block = 0, u64 grid = 0) {
  RunOptions o;
  o.kernel = "balanced";
  o.block_size = block;
  o.grid_size = grid;
  return o;
}

std::string shape_of(const std::string& what, unsigned block, u64 grid) {
  return what + ", work-groups of " + std::to_string(block) + ", grid " + std::to_string(grid);
}

}  // namespace

TEST_CASE("balanced: lognormal lengths, every op and type, work-groups of 16 to 128, one to one per tile") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    // The segments start at element 5 of the input, which starts at element 3 of the buffer: no
    // tile starts on a 16-byte boundary.
    const auto offsets = offsets_of(lognormal_lengths(3000, 3.66, 1.2, 31), 5);
    const u64 n = static_cast<u64>(offsets.back()) + 7;
    std::vector<DType> types{DType::F32, DType::I32, DType::U8, DType::F16, DType::BF16};
    if (t.caps.fp64) types.push_back(DType::F64);
    for (DType type : types)
      for (Op op : fold_ops) {
        const HostBuffer data = generate(type, n + 3, dist_for(op), 32);
        check_offsets_call(t, data, 3, offsets, op, balanced(), name_of("balanced", op, type, "lognormal"));
      }
    // i32 sums: in i64 by default, wrapping in i32 with the native accumulator.
    const HostBuffer wide = generate(DType::I32, n, Dist::Wide, 33);
    RunOptions native = balanced(32);
    native.accumulator = Accumulator::Native;
    check_offsets_call(t, wide, 0, offsets, Op::Sum, balanced(32), name_of("balanced", Op::Sum, DType::I32, "wide"));
    check_offsets_call(t, wide, 0, offsets, Op::Sum, native, name_of("balanced", Op::Sum, DType::I32, "wide, native"));
    // Work-group sizes and grids: one work-group for every tile, a few, one per tile.
    for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::U8, Op::Max}}) {
      const HostBuffer data = generate(type, n + 3, Dist::Uniform, 34);
      for (unsigned block : {16u, 32u, 64u, 128u})
        for (u64 grid : {u64{1}, u64{3}, u64{0}, u64{1} << 20})
          check_offsets_call(t, data, 3, offsets, op, balanced(block, grid),
                             name_of("balanced", op, type, shape_of("lognormal", block, grid)));
    }
  }
}

TEST_CASE("balanced: empty segments, alone, alternating with long ones, leading and trailing") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    std::vector<u64> alternating;
    for (u64 i = 0; i < 400; ++i) alternating.push_back(i % 2 ? 0 : i % 3 ? 1500 : 3);
    std::vector<u64> around(500, 0);
    around.push_back(5000);
    around.insert(around.end(), 700, 0);
    std::vector<u64> one(1000, 0);
    one[999] = 1;
    const std::vector<Lengths> cases = {{"all empty", std::vector<u64>(3000, 0)},
                                        {"empty alternating with long", alternating},
                                        {"500 empty, 5000, 700 empty", around},
                                        {"999 empty, then 1", one}};
    for (const auto& c : cases) {
      const auto offsets = offsets_of(c.lengths, 2);
      const u64 n = static_cast<u64>(offsets.back()) + 4;
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::F32, Op::Max},
                                     std::pair{DType::I32, Op::Min}, std::pair{DType::I32, Op::Prod}}) {
        const HostBuffer data = generate(type, n, dist_for(op), 41);
        for (unsigned block : {32u, 128u})
          for (u64 grid : {u64{0}, u64{1} << 20})
            check_offsets_call(t, data, 0, offsets, op, balanced(block, grid),
                               name_of("balanced", op, type, shape_of(c.name, block, grid)));
      }
    }
  }
}

TEST_CASE("balanced: one segment across many tiles and work-groups") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    std::vector<u64> huge(300, 3);
    huge[150] = (u64{1} << 20) + 3;
    const std::vector<Lengths> cases = {{"one of 2^20+3 among short ones", huge},
                                        {"one segment of 2^20+3", {(u64{1} << 20) + 3}},
                                        {"2^20+3, then short ones", {(u64{1} << 20) + 3, 1, 0, 2, 5}}};
    for (const auto& c : cases) {
      const auto offsets = offsets_of(c.lengths, 1);
      const u64 n = static_cast<u64>(offsets.back()) + 1;
      for (const auto& [type, op] : {std::pair{DType::F32, Op::Sum}, std::pair{DType::I32, Op::Sum},
                                     std::pair{t.caps.fp64 ? DType::F64 : DType::F32, Op::Max}}) {
        const HostBuffer data = generate(type, n, Dist::Uniform, 51);
        // Default groups; 300 and 5000 work-groups of 32 (tiles of 1024), so that the fix-up
        // combines runs of parts longer than its work-group.
        for (const auto& [block, grid] : {std::pair{0u, u64{0}}, std::pair{32u, u64{300}}, std::pair{32u, u64{5000}}})
          check_offsets_call(t, data, 0, offsets, op, balanced(block, grid),
                             name_of("balanced", op, type, shape_of(c.name, block, grid)));
      }
    }
  }
}

TEST_CASE("balanced: segments ending at, before and after tile and work-group boundaries") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    // Work-groups of 32: tiles of 1024 elements (f32, u8), 512 (f64). Lengths around multiples of
    // those, so that segments end on, one before and one after the edges of tiles, and cross them.
    std::vector<u64> lengths;
    for (u64 tile : {u64{512}, u64{1024}})
      for (u64 m : {u64{1}, u64{2}, u64{3}})
        for (u64 d : {u64{0}, u64{1}, u64{2}}) {
          lengths.push_back(m * tile - 1 + d);
          lengths.push_back(d);
        }
    std::mt19937_64 rng(61);
    std::shuffle(lengths.begin(), lengths.end(), rng);
    for (u64 start : {u64{0}, u64{1023}}) {
      const auto offsets = offsets_of(lengths, start);
      const u64 n = static_cast<u64>(offsets.back());
      std::vector<std::pair<DType, Op>> typed{{DType::F32, Op::Sum}, {DType::U8, Op::Sum}, {DType::BF16, Op::Min}};
      if (t.caps.fp64) typed.emplace_back(DType::F64, Op::Sum);
      for (const auto& [type, op] : typed) {
        const HostBuffer data = generate(type, n, dist_for(op), 62);
        // One tile per work-group, two or three, and the default grid.
        for (u64 grid : {u64{1} << 20, u64{40}, u64{0}})
          check_offsets_call(t, data, 0, offsets, op, balanced(32, grid),
                             name_of("balanced", op, type, shape_of("start " + std::to_string(start), 32, grid)));
      }
    }
  }
}

TEST_CASE("balanced: the plan of a GPU (132 compute units), run on this device") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::DeviceCaps gpu = t.caps;
    gpu.type = CL_DEVICE_TYPE_GPU;
    gpu.compute_units = 132;
    od::Segments device(gpu, t.context, t.queue, true);
    const auto offsets = offsets_of(lognormal_lengths(40000, 3.66, 1.0, 71));
    const u64 n = static_cast<u64>(offsets.back());
    const HostBuffer data = generate(DType::F32, n, Dist::Uniform, 72);
    ClBuffer in(t.context, data.bytes(), data.data());
    ClBuffer offs(t.context, offsets.size() * sizeof(std::int64_t), offsets.data());
    ClBuffer out(t.context, (offsets.size() - 1) * sizeof(float));
    const xr::detail::SegmentJob job = job_on(in.mem, n, offsets_layout(offsets), offs.mem, out.mem, "balanced");
    const xr::detail::SegmentOutcome r = device.reduce(job);
    CHECK(r.kernel == "balanced");
    CHECK(r.launches == 2);
    CHECK_MESSAGE(r.finish.find("528 work-groups") != std::string::npos, r.finish);
    SegmentedResult got;
    got.kind = SegmentKind::Offsets;
    got.values = read_back(t, out.mem, DType::F32, job.layout.count);
    got.rounding_depth = r.depth;
    const SegmentAgreement a = check_segments(got, reference_segments(data.view(), job.layout, Op::Sum), false);
    CHECK_MESSAGE(a.ok(), a.detail);
  }
}

