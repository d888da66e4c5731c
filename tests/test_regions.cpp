// Every OpenMP parallel region of the library made to throw from inside (testing::arm_region): each
// public call that enters the region throws the injected xr::DeviceError as an ordinary C++
// exception (an exception that left the region would end the process instead), the fault was
// thrown from inside that region, and the same call unarmed then gives the right answer. The
// regions are testing.hpp's table; one that no case here enters fails the suite.
#include <doctest/doctest.h>

#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../backends/omp/src/team.hpp"
#include "testing.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
namespace hooks = xr::detail::testing;
using hooks::Region;

namespace {

// More threads than this machine may have cores, so that a region's threads are several.
constexpr unsigned kThreads = 4;
// Elements enough for kThreads threads in every segmented strategy (kMinBytesPerThread of f32).
constexpr std::uint64_t kElements = std::uint64_t{1} << 19;

RunOptions with(std::string kernel, bool exact = false) {
  RunOptions o;
  o.kernel = std::move(kernel);
  o.threads = kThreads;
  o.exact = exact;
  return o;
}

Reducer& omp() {
  static const std::unique_ptr<Reducer> reducer = make_reducer("omp");
  return *reducer;
}

// A call that enters a region: it runs the public API and checks what it returns.
struct Call {
  std::string what;
  std::function<void()> run;
};

// Inputs, made once (before any region is armed).
struct Inputs {
  HostBuffer f32 = generate(DType::F32, kElements, Dist::Uniform, 1);
  HostBuffer f16 = generate(DType::F16, kElements, Dist::Normal, 2);
  HostBuffer i32 = generate(DType::I32, kElements, Dist::Wide, 3);
  std::vector<std::int64_t> offsets;  // segments of 0 to 210 elements over f32
  Inputs() {
    offsets.push_back(0);
    for (std::int64_t i = 0; offsets.back() + 211 <= static_cast<std::int64_t>(kElements); ++i)
      offsets.push_back(offsets.back() + (i * 37) % 211);
  }
};
const Inputs& inputs() {
  static const Inputs in;
  return in;
}

// Host memory read chunk by chunk, as a file is: the streamed host path (no memory() to reduce in place).
class Streamed final : public ChunkSource {
 public:
  explicit Streamed(const HostBuffer& x) : inner_(x.view()) {}
  DType type() const override { return inner_.type(); }
  std::uint64_t size() const override { return inner_.size(); }
  std::string name() const override { return "streamed host array"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override { inner_.read(first, count, dst); }

 private:
  ArraySource inner_;
};

// A whole-array reduction of x by `options`, against the reference.
Call whole(std::string what, const HostBuffer& x, Op op, RunOptions options) {
  return {std::move(what), [&x, op, options] {
            const Result r = omp().reduce(x.view(), op, options);
            const Agreement a = check_result(r, reference_reduce(x.view(), op), options.exact);
            CHECK_MESSAGE(a.ok, a.detail);
          }};
}

// The same through a streamed source in several chunks.
Call streamed(std::string what, const HostBuffer& x, Op op, RunOptions options) {
  options.chunk_elements = kElements / 5;
  return {std::move(what), [&x, op, options] {
            Streamed source(x);
            const Result r = omp().reduce(source, op, options);
            CHECK(r.chunks > 1);
            const Agreement a = check_result(r, reference_reduce(x.view(), op), options.exact);
            CHECK_MESSAGE(a.ok, a.detail);
          }};
}

// One value per row (axis 1) or column (axis 0) of x as a rows x cols matrix, against the reference.
Call axis(std::string what, const HostBuffer& x, std::uint64_t rows, std::uint64_t cols, int ax, Op op,
          RunOptions options) {
  return {std::move(what), [&x, rows, cols, ax, op, options] {
            const MatrixShape shape{rows, cols};
            const HostMatrix m{x.data(), x.type(), shape};
            const SegmentedResult r = omp().reduce_axis(m, ax, op, options);
            const SegmentAgreement a = check_segments(r, reference_segments(x.view(), axis_layout(shape, ax), op), options.exact);
            CHECK_MESSAGE(a.ok(), a.detail);
          }};
}

// One value per segment of inputs().offsets over x, from host memory or streamed.
Call segments(std::string what, const HostBuffer& x, Op op, RunOptions options, bool stream = false) {
  if (stream) options.chunk_elements = kElements / 5;
  return {std::move(what), [&x, op, options, stream] {
            const auto& o = inputs().offsets;
            SegmentedResult r;
            if (stream) {
              Streamed source(x);
              r = omp().reduce_segments(source, o, op, options);
            } else {
              r = omp().reduce_segments(x.view(), o, op, options);
            }
            const SegmentLayout layout{SegmentKind::Offsets, o.size() - 1, 0, 0, o.data()};
            const SegmentAgreement a = check_segments(r, reference_segments(x.view(), layout, op), options.exact);
            CHECK_MESSAGE(a.ok(), a.detail);
          }};
}

std::vector<Call> calls_for(Region region) {
  const Inputs& in = inputs();
  switch (region) {
    case Region::OmpClause:
      return {whole("clause f32 sum", in.f32, Op::Sum, with("clause")),
              whole("clause f32 max", in.f32, Op::Max, with("clause")),
              whole("clause i32 sum", in.i32, Op::Sum, with("clause"))};
    case Region::OmpVector:
      return {whole("vector f32 sum", in.f32, Op::Sum, with("vector")), whole("auto i32 min", in.i32, Op::Min, with("auto")),
              streamed("streamed f32 sum", in.f32, Op::Sum, with("auto"))};
    case Region::OmpVectorPairs:
      return {whole("vector argmax", in.f32, Op::ArgMax, with("vector")),
              whole("auto minmax", in.i32, Op::MinMax, with("auto")),
              streamed("streamed argmin", in.f32, Op::ArgMin, with("auto"))};
    case Region::OmpStreamRead:
      return {{"stream_read", [&in] {
                 const Result r = omp().reduce(in.f32.view(), Op::Sum, with("stream_read"));
                 std::uint64_t want = 0;
                 for (std::uint64_t i = 0; i < kElements / 2; ++i) {
                   std::uint64_t w;
                   std::memcpy(&w, in.f32.as<float>() + 2 * i, sizeof w);
                   want ^= w;
                 }
                 CHECK(static_cast<std::uint64_t>(r.value.as<std::int64_t>()) == want);
               }}};
    case Region::OmpExactWiden:
      return {whole("exact f16 sum", in.f16, Op::Sum, with("auto", true)),
              streamed("streamed exact f16 sum", in.f16, Op::Sum, with("auto", true))};
    case Region::OmpExact:
      return {whole("exact f32 sum", in.f32, Op::Sum, with("vector", true)),
              streamed("streamed exact f32 sum", in.f32, Op::Sum, with("auto", true))};
    case Region::OmpRowsFixed:
      return {axis("rows of 4", in.f32, kElements / 4, 4, 1, Op::Sum, with("rows")),
              axis("rows of 64, auto", in.i32, kElements / 64, 64, 1, Op::Max, with("auto"))};
    case Region::OmpRows:
      return {axis("rows of 1000", in.f32, kElements / 1000, 1000, 1, Op::Sum, with("rows")),
              segments("segments", in.f32, Op::Sum, with("rows")),
              segments("streamed segments", in.i32, Op::Min, with("auto"), true)};
    case Region::OmpColumns:
      return {axis("columns of 64", in.f32, kElements / 64, 64, 0, Op::Sum, with("columns")),
              axis("columns, auto", in.i32, kElements / 256, 256, 0, Op::Max, with("auto"))};
    case Region::OmpColumnBands:
      return {axis("columns of a very wide array", in.f32, 2, kElements / 2, 0, Op::Sum, with("columns"))};
    case Region::OmpSegmentsNarrow:
      return {axis("f16 row minima", in.f16, kElements / 256, 256, 1, Op::Min, with("rows")),
              axis("f16 column maxima", in.f16, kElements / 256, 256, 0, Op::Max, with("columns"))};
    case Region::OmpExactPieces:
      return {segments("exact segment sums", in.f32, Op::Sum, with("auto", true)),
              axis("exact f16 row sums", in.f16, kElements / 512, 512, 1, Op::Sum, with("rows", true)),
              segments("streamed exact segment sums", in.f32, Op::Sum, with("auto", true), true)};
    case Region::OmpExactShortSegments:
      return {axis("exact sums of 8-row columns", in.f32, 8, kElements / 8, 0, Op::Sum, with("auto", true)),
              axis("exact sums of 64-row f16 columns", in.f16, 64, kElements / 64, 0, Op::Sum, with("columns", true))};
    case Region::OmpPairSegments:
      return {segments("pairs: argmax of segments", in.f32, Op::ArgMax, with("pairs")),
              axis("pairs: minmax of rows", in.i32, kElements / 128, 128, 1, Op::MinMax, with("pairs")),
              segments("auto: streamed argmin of segments", in.f16, Op::ArgMin, with("auto"), true)};
    case Region::OmpPairColumns:
    case Region::OmpPairColumnMerge:
      return {axis("pairs: argmin of columns", in.f32, kElements / 128, 128, 0, Op::ArgMin, with("pairs")),
              axis("auto: minmax of columns", in.i32, kElements / 2048, 2048, 0, Op::MinMax, with("auto"))};
    case Region::CoreGenerate:
      return {{"generate", [&in] {
                 const HostBuffer again = generate(DType::F32, kElements, Dist::Uniform, 1);
                 CHECK(std::memcmp(again.data(), in.f32.data(), kElements * sizeof(float)) == 0);
               }},
              {"generate_slice", [&in] {
                 const HostBuffer part = generate_slice(DType::I32, kElements, 1000, kElements / 2, Dist::Wide, 3);
                 CHECK(std::memcmp(part.data(), in.i32.as<std::int32_t>() + 1000, kElements / 2 * sizeof(std::int32_t)) == 0);
               }}};
    case Region::CoreReferenceSum:
      return {{"reference f32 sum", [&in] {
                 const Reference ref = reference_reduce(in.f32.view(), Op::Sum);
                 CHECK(ref.value.same_bits(omp().reduce(in.f32.view(), Op::Sum, with("auto", true)).value));
               }},
              {"streamed reference f16 sum", [&in] {
                 Streamed source(in.f16);
                 const Reference ref = reference_reduce(source, Op::Sum, Accumulator::Wide, kElements / 3);
                 CHECK(ref.value.same_bits(omp().reduce(in.f16.view(), Op::Sum, with("auto", true)).value));
               }}};
    case Region::CoreReferenceWide:
      return {{"reference i32 sum", [&in] {
                 const Reference ref = reference_reduce(in.i32.view(), Op::Sum);
                 CHECK(ref.value.same_bits(omp().reduce(in.i32.view(), Op::Sum, with("auto")).value));
               }}};
    case Region::CoreSegmentPairs:
      return {segments("reference of argmax segments", in.f32, Op::ArgMax, with("auto")),
              axis("reference of minmax columns", in.i32, kElements / 128, 128, 0, Op::MinMax, with("auto"))};
    case Region::CoreSegmentFolds:
      return {segments("reference of segment sums", in.f32, Op::Sum, with("auto")),
              axis("reference of column sums", in.i32, kElements / 128, 128, 0, Op::Sum, with("auto"))};
    case Region::CoreCheckSegments:
      return {segments("check of segment maxima", in.i32, Op::Max, with("auto")),
              axis("check of row argmax", in.f32, kElements / 128, 128, 1, Op::ArgMax, with("auto"))};
  }
  return {};
}

}  // namespace

TEST_CASE("a fault inside any OpenMP region throws from the call that entered it, and the library still works") {
  inputs();
  REQUIRE_FALSE(hooks::kRegions.empty());
  for (const hooks::RegionInfo& info : hooks::kRegions) {
    CAPTURE(info.name);
    const std::vector<Call> calls = calls_for(info.region);
    CHECK_MESSAGE(!calls.empty(), "no case of test_regions.cpp enters the region " << info.name);
    for (const Call& call : calls) {
      CAPTURE(call.what);
      const std::uint64_t before = hooks::region_faults(info.region);
      hooks::arm_region(info.region);
      bool threw = false;
      try {
        call.run();
      } catch (const DeviceError& e) {
        threw = true;
        CHECK(e.code() == hooks::kInjectedFault);
        CHECK(std::string(e.what()).find(std::string(info.name)) != std::string::npos);
      }
      const bool still_armed = hooks::region_armed(info.region);
      hooks::disarm_regions();
      CHECK_MESSAGE(!still_armed, "the call did not enter " << info.name);
      CHECK(threw);
      CHECK(hooks::region_faults(info.region) == before + 1);
      // Unarmed, the same call gives the right answer (its CHECKs), with the same reducer.
      CHECK_NOTHROW(call.run());
    }
  }
}

TEST_CASE("unarmed, no region throws and no fault is counted") {
  std::vector<std::uint64_t> before;
  for (const auto& info : hooks::kRegions) before.push_back(hooks::region_faults(info.region));
  for (const auto& info : hooks::kRegions)
    for (const Call& call : calls_for(info.region)) CHECK_NOTHROW(call.run());
  for (std::size_t i = 0; i < hooks::kRegions.size(); ++i)
    CHECK(hooks::region_faults(hooks::kRegions[i].region) == before[i]);
}

TEST_CASE("a region's team: what the caller set, else the work and the cores other processes leave") {
  using xr::omp::detail::free_cores_of;
  using xr::omp::detail::team_size;
  CHECK(free_cores_of("0.50 0.40 0.30 1/612 4242", 16, 1) == 16);  // alone
  CHECK(free_cores_of("0.50 0.40 0.30 5/612 4242", 16, 3) == 14);  // 2 runnable threads elsewhere
  CHECK(free_cores_of("3.10 2.00 1.00 3/612 4242", 2, 1) == 1);    // both cores wanted: one thread
  CHECK(free_cores_of("0.00 0.00 0.00 0/1 1", 4, 0) == 4);
  for (const char* bad : {"", "0.5 0.4", "0.5 0.4 0.3 x/3 1", "0.5 0.4 0.3 3 1", "0.5 0.4 0.3 /3 1"})
    CHECK_MESSAGE(free_cores_of(bad, 4, 1) == -1, bad);
  CHECK(xr::omp::detail::free_cores() >= 1);

  RunOptions set;
  set.threads = 3;
  CHECK(team_size(set, 0) == 3);          // as given, whatever the work
  CHECK(team_size(set, 1ull << 40) == 3);
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) return;  // the team OMP_NUM_THREADS gives, as given: nothing is sized
  const RunOptions automatic;
  CHECK(team_size(automatic, 1000) == 1);  // below one thread's share: no team
  const int big = team_size(automatic, 1ull << 40);
  CHECK(big >= 1);
  CHECK(big <= omp_get_max_threads());
}

