// Segmented reductions, one test body for every backend (`xr_test_segments --xr-backend=NAME`;
// exit 77 with the reason where NAME has no usable device): rows and columns of 2-D arrays in both
// orders and with strides, CSR segments of every mix of lengths, every strategy, op and type,
// exact sums per segment, inputs cut into jobs or streamed, and every bad-input error.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "backend_suite.hpp"
#include "turning_ops.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;

namespace {

std::string g_backend = "omp";
BackendOptions g_options;

std::unique_ptr<Reducer> reducer() { return make_reducer(g_backend, g_options); }

Dist dist_for(Op op) { return op == Op::Prod ? Dist::ExactProduct : Dist::Uniform; }

// The strategies that reduce `kind`, auto and baselines included.
std::vector<std::string> strategies(Reducer& r, SegmentKind kind) {
  std::vector<std::string> names;
  for (const auto& k : r.segment_kernels())
    if (k.reduces(kind)) names.push_back(k.name);
  return names;
}

// A host array read through ChunkSource::read only (no memory()): the streamed path.
class ReadOnlySource final : public ChunkSource {
 public:
  explicit ReadOnlySource(const HostBuffer& b) : b_(b) {}
  DType type() const override { return b_.type(); }
  std::uint64_t size() const override { return b_.size(); }
  std::string name() const override { return "test stream"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override {
    std::memcpy(dst, static_cast<const unsigned char*>(b_.data()) + first * size_of(b_.type()), count * size_of(b_.type()));
  }

 private:
  const HostBuffer& b_;
};

std::string describe(const std::string& strategy, Op op, DType t, const std::string& shape) {
  return g_backend + "/" + strategy + " " + std::string(to_string(op)) + " " + std::string(to_string(t)) + " " + shape;
}

void check_axis(Reducer& r, const HostBuffer& data, const MatrixShape& shape, int axis, Op op, const std::string& strategy,
                const RunOptions& base = {}) {
  const SegmentLayout layout = axis_layout(shape, axis);
  RunOptions o = base;
  o.kernel = strategy;
  const SegmentedResult got = r.reduce_axis(HostMatrix{data.data(), data.type(), shape}, axis, op, o);
  const SegmentReference ref = reference_segments(data.view(), layout, op, o.accumulator);
  const SegmentAgreement a = check_segments(got, ref, o.exact);
  const std::string what = describe(strategy, op, data.type(), std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                                                                   (shape.order == Order::C ? " C" : " F") + " stride " +
                                                                   std::to_string(shape.stride) + " axis " + std::to_string(axis));
  CHECK_MESSAGE(a.ok(), what, ": ", a.detail);
  CHECK_MESSAGE(got.count() == layout.count, what);
  CHECK(got.record.n == layout.elements());
  CHECK(got.bytes_written == layout.count * size_of(got.values.type()));
}

void check_offsets_run(Reducer& r, const HostBuffer& data, const std::vector<std::int64_t>& offsets, Op op,
                       const std::string& strategy, const std::string& name, const RunOptions& base = {}) {
  RunOptions o = base;
  o.kernel = strategy;
  const SegmentedResult got = r.reduce_segments(data.view(), offsets, op, o);
  SegmentLayout layout;
  layout.kind = SegmentKind::Offsets;
  layout.count = offsets.size() - 1;
  layout.offsets = offsets.data();
  const SegmentReference ref = reference_segments(data.view(), layout, op, o.accumulator);
  const SegmentAgreement a = check_segments(got, ref, o.exact);
  CHECK_MESSAGE(a.ok(), describe(strategy, op, data.type(), name), ": ", a.detail);
  CHECK(got.bytes_read == layout.elements() * size_of(data.type()) + offsets.size() * 8);
}

std::vector<std::int64_t> offsets_of(const std::vector<std::uint64_t>& lengths, std::uint64_t start = 0) {
  std::vector<std::int64_t> o{static_cast<std::int64_t>(start)};
  for (auto len : lengths) o.push_back(o.back() + static_cast<std::int64_t>(len));
  return o;
}

std::vector<std::uint64_t> random_lengths(std::uint64_t count, std::uint64_t max, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> l(count);
  for (auto& x : l) x = rng() % (max + 1);
  return l;
}

// The types the loops below turn through: every type but f16 and bf16, which the test case "f16
// and bf16: ..." covers on its own shapes. Where kernels compile at run time (OpenCL on a CPU: PoCL
// takes about 0.5 s a kernel, cold cache), two more types in these loops would build a quarter
// more kernels for code paths that case reaches with fewer.
std::vector<DType> loop_dtypes() {
  std::vector<DType> types;
  for (DType t : segment_dtypes())
    if (!is_half(t)) types.push_back(t);
  return types;
}

const std::vector<MatrixShape> kSmallShapes = {
    {0, 5, 0, Order::C}, {5, 0, 0, Order::C},  {1, 1, 0, Order::C},    {1, 1000, 0, Order::C}, {1000, 1, 0, Order::C},
    {7, 33, 0, Order::C}, {7, 33, 40, Order::C}, {7, 33, 0, Order::Fortran}, {7, 33, 9, Order::Fortran},
    {33, 7, 7, Order::C}, {64, 32, 0, Order::C}};

}  // namespace

TEST_CASE("small shapes: every strategy, type, axis and order against the reference; every op with every type") {
  // Each (shape, axis, type) takes one op, turning with the shape, axis and type, so that every
  // op meets every type and every shape and axis. The whole product builds four times the
  // kernels: where they compile at run time it took 299 s (PoCL 3.1, cold kernel cache, a 2-core
  // EPYC) for no pair of (shape, op, type, strategy) that this does not hold.
  auto r = reducer();
  for (std::size_t k = 0; k < kSmallShapes.size(); ++k) {
    const MatrixShape& shape = kSmallShapes[k];
    for (int axis : {0, 1}) {
      const auto kind = axis_layout(shape, axis).kind;
      for (const auto& [t, op] : xr_test::turning_ops(loop_dtypes(), 2 * k + static_cast<std::size_t>(axis))) {
        const SegmentLayout l0 = axis_layout(shape, 0);
        const HostBuffer data = generate(t, std::max<std::uint64_t>(l0.span(), 1), dist_for(op), 7 + l0.span());
        for (const auto& s : strategies(*r, kind)) check_axis(*r, data, shape, axis, op, s);
      }
    }
  }
}

TEST_CASE("large shapes: 3x1000003, 1000003x3, 1024x1024 and a strided one, every strategy") {
  // Each shape with two (type, op) pairs, so that the shapes cover f32, i32 and f64 and sum and
  // max between them; the small shapes above take every op and type through every strategy.
  auto r = reducer();
  struct Case {
    MatrixShape shape;
    std::pair<DType, Op> runs[2];
  };
  const Case cases[] = {{{3, 1000003, 0, Order::C}, {{DType::F32, Op::Sum}, {DType::I32, Op::Max}}},
                        {{1000003, 3, 0, Order::C}, {{DType::F64, Op::Sum}, {DType::F32, Op::Max}}},
                        {{1024, 1024, 0, Order::C}, {{DType::I32, Op::Sum}, {DType::F64, Op::Max}}},
                        {{1024, 1000, 1027, Order::Fortran}, {{DType::F32, Op::Sum}, {DType::I32, Op::Max}}}};
  for (const auto& c : cases)
    for (const auto& [t, op] : c.runs) {
      const HostBuffer data = generate(t, axis_layout(c.shape, 0).span(), dist_for(op), 11);
      for (int axis : {0, 1})
        for (const auto& s : strategies(*r, axis_layout(c.shape, axis).kind)) check_axis(*r, data, c.shape, axis, op, s);
    }
}

TEST_CASE("segments: empty, single elements, empty beside huge, random lengths, one of 2^24+3") {
  auto r = reducer();
  struct Case {
    std::string name;
    std::vector<std::uint64_t> lengths;
  };
  std::vector<Case> cases = {{"no segments", {}},
                             {"all empty", std::vector<std::uint64_t>(1000, 0)},
                             {"all of one element", std::vector<std::uint64_t>(5000, 1)},
                             {"random 0..40", random_lengths(20000, 40, 1)},
                             {"random 0..3000", random_lengths(700, 3000, 2)}};
  std::vector<std::uint64_t> alternating;
  for (int i = 0; i < 8; ++i) alternating.insert(alternating.end(), {0, 0, 300001, 1, 0});
  cases.push_back({"empty alternating with huge", alternating});
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const auto offsets = offsets_of(c.lengths, 3);  // the first segment starts past the input's start
    // Each case takes each type with one op, the op turning with the case: over the six cases
    // every (op, type) pair, and every case meets every type and op.
    for (const auto& [t, op] : xr_test::turning_ops(loop_dtypes(), k)) {
      const HostBuffer data = generate(t, static_cast<std::uint64_t>(offsets.back()) + 5, dist_for(op), 3);
      for (const auto& s : strategies(*r, SegmentKind::Offsets)) check_offsets_run(*r, data, offsets, op, s, c.name);
    }
  }
  const auto huge = offsets_of({2, (1u << 24) + 3, 0, 5});
  for (DType t : {DType::F32, DType::I64}) {
    const HostBuffer data = generate(t, static_cast<std::uint64_t>(huge.back()), Dist::Uniform, 5);
    for (const auto& s : strategies(*r, SegmentKind::Offsets)) check_offsets_run(*r, data, huge, Op::Sum, s, "2^24+3");
  }
}

TEST_CASE("special values per segment: NaN, infinities, -0, type limits") {
  auto r = reducer();
  const auto offsets = offsets_of(random_lengths(3000, 12, 9));
  const auto types = loop_dtypes();
  const auto offset_strategies = strategies(*r, SegmentKind::Offsets);
  for (std::size_t ti = 0; ti < types.size(); ++ti)
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const DType t = types[ti];
      const HostBuffer data = generate(t, static_cast<std::uint64_t>(offsets.back()), Dist::Special, seed);
      // The special families give every order one result over the whole input only: within a
      // segment, a plain float sum may overflow to -inf before it meets +inf, and a product may
      // overflow or meet 0 * inf in one order and not another. So float sums run in exact mode
      // (one answer in any order) and products are left out.
      RunOptions o;
      o.exact = is_float(t);
      // Each (type, strategy) with one of sum, min and max, turning with both: every pair of
      // the three meets, at a third of the kernel builds.
      for (std::size_t si = 0; si < offset_strategies.size(); ++si) {
        const Op op = std::array{Op::Sum, Op::Min, Op::Max}[(ti + si) % 3];
        check_offsets_run(*r, data, offsets, op, offset_strategies[si], "special seed " + std::to_string(seed),
                          op == Op::Sum ? o : RunOptions{});
      }
    }
  // A segment of -0 terms sums to -0, an empty one to +0.
  const std::vector<float> zeros{-0.0f, -0.0f, -0.0f};
  const std::vector<std::int64_t> o{0, 3, 3};
  const SegmentedResult z = r->reduce_segments(HostArray::of(std::span<const float>(zeros)), o, Op::Sum);
  CHECK(std::signbit(z.values.as<float>()[0]));
  CHECK(!std::signbit(z.values.as<float>()[1]));
}

TEST_CASE("f16 and bf16: every strategy and fold on rows, columns and offsets; special values; exact sums") {
  // Sums and products of f16 and bf16 accumulate in f32 and return f32; min and max return the
  // input type. auto runs every fold on every shape; each other strategy one fold per type, turning
  // with the strategy so that it meets a sum or product (f32 values) on one type and a min or max
  // (values of the input type) on the other. Where kernels compile at run time (PoCL: about 0.5 s
  // a kernel), every fold on every strategy would build several times the kernels.
  auto r = reducer();
  // Offsets: short segments, empty ones, one for a work-group and one longer than an exact piece
  // (2^16 elements) that binned and multigroup split; the first starting past the input's start.
  std::vector<std::uint64_t> lengths = random_lengths(600, 40, 30);
  const std::vector<std::uint64_t> long_ones{0, 5000, 0, 70001, 0};
  lengths.insert(lengths.begin() + 300, long_ones.begin(), long_ones.end());
  const auto offsets = offsets_of(lengths, 3);
  const auto n = static_cast<std::uint64_t>(offsets.back()) + 2;
  struct Axis {
    MatrixShape shape;
    int axis;
  };
  // Dense rows of 8 (16-byte loads, packed rows, rows folded together on CPUs), rows of 3, long
  // strided rows (split over blocks and work-groups), 24 columns (16-byte loads across them), and
  // rows of no elements.
  const Axis axes[] = {{{64, 8}, 1}, {{200, 3}, 1}, {{3, 40001, 40003}, 1}, {{300, 24}, 0}, {{6, 0}, 1}};
  const auto run = [&](DType t, SegmentKind kind, Op op, const std::string& strategy) {
    const HostBuffer data = generate(t, n, dist_for(op), 40);
    if (kind == SegmentKind::Offsets) return check_offsets_run(*r, data, offsets, op, strategy, "short, empty and long");
    for (const Axis& a : axes) {
      if (axis_layout(a.shape, a.axis).kind != kind) continue;
      const HostBuffer m = generate(t, std::max<std::uint64_t>(axis_layout(a.shape, 0).span(), 1), dist_for(op), 41);
      check_axis(*r, m, a.shape, a.axis, op, strategy);
    }
  };
  const DType halves[] = {DType::F16, DType::BF16};
  for (std::size_t ti = 0; ti < std::size(halves); ++ti) {
    const DType t = halves[ti];
    for (SegmentKind kind : {SegmentKind::Offsets, SegmentKind::Rows, SegmentKind::Columns}) {
      for (Op op : fold_ops) run(t, kind, op, "auto");
      const auto names = strategies(*r, kind);
      for (std::size_t si = 1; si < names.size(); ++si) run(t, kind, fold_ops[(2 * ti + si) % kFoldCount], names[si]);
    }
    // Special values (NaN, infinities, -0, subnormals, the largest finite values): min and max by
    // auto and by the strategies that took one above, and sums in exact mode (the one answer in
    // any order; products have none).
    const auto offset_strategies = strategies(*r, SegmentKind::Offsets);
    RunOptions exact;
    exact.exact = true;
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      const HostBuffer data = generate(t, n, Dist::Special, seed);
      const std::string name = "special seed " + std::to_string(seed);
      for (Op op : {Op::Min, Op::Max}) check_offsets_run(*r, data, offsets, op, "auto", name);
      for (std::size_t si = 1; si < offset_strategies.size(); ++si) {
        const Op op = fold_ops[(2 * ti + si) % kFoldCount];
        if (op == Op::Min || op == Op::Max) check_offsets_run(*r, data, offsets, op, offset_strategies[si], name);
      }
      check_offsets_run(*r, data, offsets, Op::Sum, "auto", name + ", exact", exact);
    }
    // Exact sums per segment: bit for bit, rows, columns and offsets.
    std::uint64_t most = n;
    for (const Axis& a : axes) most = std::max(most, axis_layout(a.shape, 0).span());
    for (Dist d : {Dist::Wide, Dist::Cancel}) {
      const HostBuffer data = generate(t, most, d, 42);
      check_offsets_run(*r, data, offsets, Op::Sum, "auto", "exact " + std::string(to_string(d)), exact);
      for (const Axis& a : axes) check_axis(*r, data, a.shape, a.axis, Op::Sum, "auto", exact);
    }
    // The result types; a segment of -0 terms sums to -0, an empty one to +0, and the min and max
    // of an empty one are the input type's infinities.
    const HostBuffer zeros = generate(t, 3, Dist::Special, 4);  // family 4: -0 alone
    const std::vector<std::int64_t> o{0, 3, 3};
    for (Op op : fold_ops) {
      const SegmentedResult z = r->reduce_segments(zeros.view(), o, op);
      REQUIRE(z.values.type() == (op == Op::Sum || op == Op::Prod ? DType::F32 : t));
      CHECK(z.value(1).same_bits(empty_segment_value(op, t)));
      if (op == Op::Sum) CHECK(std::signbit(z.values.as<float>()[0]));
    }
    CHECK(std::isinf(empty_segment_value(Op::Min, t).f));
    // f16 and bf16 have no native accumulator.
    RunOptions native;
    native.accumulator = Accumulator::Native;
    CHECK_THROWS_WITH_AS(r->reduce_segments(zeros.view(), o, Op::Sum, native),
                         doctest::Contains("native accumulator does not apply"), InvalidArgument);
  }
}

TEST_CASE("the pair ops have no segmented kernels: one clear error") {
  auto r = reducer();
  const std::vector<std::int64_t> o{0, 2, 4};
  const HostBuffer data = generate(DType::F32, 4, Dist::Uniform, 1);
  for (Op op : pair_ops) {
    const std::string message = "does not support " + std::string(to_string(op)) + " on f32";
    CHECK_THROWS_WITH_AS(r->reduce_segments(data.view(), o, op), doctest::Contains(message.c_str()), InvalidArgument);
  }
}

TEST_CASE("i32 sums accumulate in i64 by default; the native accumulator wraps") {
  auto r = reducer();
  const std::vector<std::int32_t> big(64, 2000000000);
  const std::vector<std::int64_t> o{0, 32, 64};
  const auto in = HostArray::of(std::span<const std::int32_t>(big));
  const SegmentedResult wide = r->reduce_segments(in, o, Op::Sum);
  REQUIRE(wide.values.type() == DType::I64);
  CHECK(wide.values.as<std::int64_t>()[0] == 64000000000LL);
  RunOptions native;
  native.accumulator = Accumulator::Native;
  const SegmentedResult wrapped = r->reduce_segments(in, o, Op::Sum, native);
  REQUIRE(wrapped.values.type() == DType::I32);
  CHECK(wrapped.values.as<std::int32_t>()[1] == static_cast<std::int32_t>(static_cast<std::uint32_t>(64000000000ULL)));
}

TEST_CASE("exact sums per segment: bit for bit, rows, columns and offsets, every strategy") {
  auto r = reducer();
  RunOptions exact;
  exact.exact = true;
  const auto offsets = offsets_of(random_lengths(2000, 200, 4));
  for (DType t : {DType::F32, DType::F64})
    for (Dist d : {Dist::Wide, Dist::Cancel, Dist::Special, Dist::Uniform}) {
      const HostBuffer data = generate(t, static_cast<std::uint64_t>(offsets.back()), d, 21);
      for (const auto& s : strategies(*r, SegmentKind::Offsets))
        check_offsets_run(*r, data, offsets, Op::Sum, s, "exact " + std::string(to_string(d)), exact);
      for (const auto& shape : {MatrixShape{300, 77, 80, Order::C}, MatrixShape{77, 300, 0, Order::Fortran}})
        for (int axis : {0, 1})
          for (const auto& s : strategies(*r, axis_layout(shape, axis).kind))
            if (axis_layout(shape, 0).span() <= data.size()) check_axis(*r, data, shape, axis, Op::Sum, s, exact);
    }
  // One segment longer than an exact piece (2^16 elements): its pieces' states merge.
  const auto long_one = offsets_of({1, 200003, 7});
  const HostBuffer data = generate(DType::F64, static_cast<std::uint64_t>(long_one.back()), Dist::Wide, 8);
  check_offsets_run(*r, data, long_one, Op::Sum, "auto", "exact, pieces merged", exact);
  // A float product has no exact mode.
  CHECK_THROWS_AS(r->reduce_segments(data.view(), long_one, Op::Prod, exact), InvalidArgument);
}

TEST_CASE("inputs cut into jobs, and streamed sources, give the whole input's values") {
  auto r = reducer();
  RunOptions small;
  small.chunk_elements = 1000;  // every job at most 1000 elements: long segments split, columns in tiles
  const auto offsets = offsets_of({5, 0, 2500, 999, 1000, 1001, 0, 3, 4000});
  const MatrixShape tall{5000, 3, 4, Order::C}, wide{3, 5000, 0, Order::C};
  for (DType t : {DType::F32, DType::I32, DType::F64})
    for (Op op : fold_ops)
      for (bool exact : {false, true}) {
        if (exact && !(op == Op::Sum && is_float(t))) continue;
        RunOptions o = small;
        o.exact = exact;
        const HostBuffer data = generate(t, 20000, dist_for(op), 17);
        check_offsets_run(*r, data, offsets, op, "auto", "jobs of 1000", o);
        for (const auto& shape : {tall, wide})
          for (int axis : {0, 1}) check_axis(*r, data, shape, axis, op, "auto", o);
        // The same through ChunkSource::read alone.
        ReadOnlySource stream(data);
        SegmentLayout layout;
        layout.kind = SegmentKind::Offsets;
        layout.count = offsets.size() - 1;
        layout.offsets = offsets.data();
        const SegmentedResult got = r->reduce_segments(stream, offsets, op, o);
        CHECK(check_segments(got, reference_segments(data.view(), layout, op), exact).ok());
        CHECK(got.record.total_ms > 0);
        for (int axis : {0, 1}) {
          const SegmentedResult a = r->reduce_axis(stream, tall, axis, op, o);
          CHECK_MESSAGE(check_segments(a, reference_segments(data.view(), axis_layout(tall, axis), op), exact).ok(),
                        "streamed axis ", axis);
        }
      }
}

TEST_CASE("bad input: one InvalidArgument naming the problem and its position") {
  auto r = reducer();
  const std::vector<float> x(10, 1.0f);
  const auto in = HostArray::of(std::span<const float>(x));
  const auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no exception";
  };
  CHECK(message([&] { r->reduce_segments(in, std::vector<std::int64_t>{0, 5, 3, 10}, Op::Sum); }).find("position 2") !=
        std::string::npos);
  CHECK(message([&] { r->reduce_segments(in, std::vector<std::int64_t>{0, 5, 11}, Op::Sum); }).find("past") !=
        std::string::npos);
  CHECK(message([&] { r->reduce_segments(in, std::vector<std::int64_t>{-1, 5}, Op::Sum); }).find("negative") !=
        std::string::npos);
  CHECK(message([&] { r->reduce_segments(in, std::vector<std::int64_t>{}, Op::Sum); }).find("at least one") !=
        std::string::npos);
  CHECK(message([&] { r->reduce_axis(HostMatrix::of(x.data(), 2, 5, 4), 1, Op::Sum); }).find("stride") !=
        std::string::npos);
  CHECK(message([&] { r->reduce_axis(HostMatrix::of(x.data(), 1ull << 40, 1ull << 40), 1, Op::Sum); })
            .find("overflows") != std::string::npos);
  CHECK(message([&] { r->reduce_axis(HostMatrix::of(x.data(), 2, 5), 2, Op::Sum); }).find("axis 2") != std::string::npos);
  RunOptions o;
  o.kernel = "no_such_strategy";
  CHECK(message([&] { r->reduce_axis(HostMatrix::of(x.data(), 2, 5), 1, Op::Sum, o); }).find("known") !=
        std::string::npos);
  for (const auto& k : r->segment_kernels())
    if (!k.reduces(SegmentKind::Columns)) {
      o.kernel = k.name;
      CHECK(message([&] { r->reduce_axis(HostMatrix::of(x.data(), 2, 5), 0, Op::Sum, o); }).find("does not reduce") !=
            std::string::npos);
    }
}

TEST_CASE("the record describes the call") {
  auto r = reducer();
  const HostBuffer data = generate(DType::F32, 4096, Dist::Uniform, 1);
  RunOptions o;
  o.repeat = 3;
  const SegmentedResult s = r->reduce_axis(HostMatrix{data.data(), DType::F32, {64, 64, 0, Order::C}}, 1, Op::Sum, o);
  CHECK(s.record.kernel.rfind("auto:", 0) == 0);
  CHECK(s.record.launches >= 1);
  CHECK(s.record.repeats == 3);
  CHECK(s.record.backend == g_backend);
  CHECK(s.record.n == 4096);
  CHECK(s.bytes_read == 4096 * 4);
  CHECK(s.bytes_written == 64 * 4);
  CHECK(s.kind == SegmentKind::Rows);
}

int main(int argc, char** argv) { return xr_suite::run(argc, argv, g_backend, g_options); }
