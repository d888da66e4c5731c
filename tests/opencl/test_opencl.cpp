// OpenCL backend: programs, the cl_mem API, finishes, work-group shapes, device choice,
// errors. Every test runs on each platform's default device (NVIDIA and PoCL on a GPU machine).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "embedded_sources.hpp"
#include "internal.hpp"
#include "targets.hpp"
#include "xreduce/opencl.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;
namespace od = xr::opencl::detail;
using namespace xr::ocl_test;

namespace {

// A device buffer holding `data`, released at scope exit.
struct DeviceBuffer {
  cl_mem mem = nullptr;
  template <class T> DeviceBuffer(const Target& t, const std::vector<T>& data) {
    cl_int rc = CL_SUCCESS;
    mem = clCreateBuffer(t.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, std::max<std::size_t>(1, data.size()) * sizeof(T),
                         const_cast<T*>(data.data()), &rc);
    od::check(rc, "clCreateBuffer");
  }
  ~DeviceBuffer() { clReleaseMemObject(mem); }
};

template <class T> std::vector<T> iota_values(std::size_t n, T start = T(0)) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(start + static_cast<T>(i % 1000));
  return v;
}

void expect_agrees(const Result& r, HostArray in, Op op, Accumulator acc, const std::string& what) {
  const Agreement a = check_result(r, reference_reduce(in, op, acc));
  CHECK_MESSAGE(a.ok, what, ": ", a.detail);
}

}  // namespace

TEST_CASE("every embedded program builds (each rung x op x type x finish the device supports)") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const cl_context ctx = od::shared_context(t.caps);
    const auto options = od::all_program_options(t.caps);
    CHECK(options.size() >= 6 * 3 * 4);
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& o : options) {
      CAPTURE(o);
      od::CachedKernel* k = nullptr;
      REQUIRE_NOTHROW(k = &od::cached_kernel(ctx, t.caps.device, od::kSource, o, od::kKernel));
      CHECK(k->work_group_max >= 1);
    }
    // The pair programs: both kernels of each, one build.
    const auto pair_options = od::all_pair_program_options(t.caps);
    CHECK(pair_options.size() == pair_ops.size() * (t.caps.fp64 ? all_dtypes.size() : all_dtypes.size() - 1));
    for (const auto& o : pair_options) {
      CAPTURE(o);
      for (const char* kernel : {od::kPairKernel, od::kPairRecordsKernel}) {
        od::CachedKernel* k = nullptr;
        REQUIRE_NOTHROW(k = &od::cached_kernel(ctx, t.caps.device, od::kPairSource, o, kernel));
        CHECK(k->work_group_max >= 1);
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu + %zu pair programs built in %.1f s\n", t.label().c_str(), options.size(),
                pair_options.size(), s);
    // Built once: asking again hits the cache.
    const std::size_t cached = opencl::program_cache_size();
    for (const auto& o : options) od::cached_kernel(ctx, t.caps.device, od::kSource, o, od::kKernel);
    for (const auto& o : pair_options) od::cached_kernel(ctx, t.caps.device, od::kPairSource, o, od::kPairKernel);
    CHECK(opencl::program_cache_size() == cached);
  }
}

TEST_CASE("the embedded source is the real kernels_cl file") {
  const auto sources = od::embedded_sources();
  REQUIRE(sources.size() >= 1);
  const std::string_view text = od::embedded_source("reduce.cl");
  CHECK(text.find("__kernel void xr_reduce") != std::string_view::npos);
  CHECK(text.find("cl_khr_global_int32_base_atomics") != std::string_view::npos);
  CHECK(od::embedded_source("pairs.cl").find("__kernel void xr_pair_records") != std::string_view::npos);
  CHECK(od::program_text(od::kPairSource).find("__kernel void xr_pair(") != std::string::npos);
  CHECK_THROWS_AS(od::embedded_source("missing.cl"), Error);
}

TEST_CASE("a build failure throws KernelBuildError carrying the build log") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const char* broken = "__kernel void broken(__global int* p) { p[0] = undeclared_name + ; }";
    try {
      od::build_program(t.context, t.caps.device, "broken.cl", broken, "-cl-std=CL1.2");
      FAIL("the broken source built");
    } catch (const KernelBuildError& e) {
      CHECK(e.code() == CL_BUILD_PROGRAM_FAILURE);
      CHECK(e.code_name() == "CL_BUILD_PROGRAM_FAILURE");
      CHECK(!e.log().empty());
      CHECK(std::string(e.what()).find("clBuildProgram") != std::string::npos);
      CHECK(e.log().find("undeclared_name") != std::string::npos);
    }
  }
}

TEST_CASE("error names and the checked-call message") {
  CHECK(std::string(opencl::error_name(CL_SUCCESS)) == "CL_SUCCESS");
  CHECK(std::string(opencl::error_name(CL_OUT_OF_RESOURCES)) == "CL_OUT_OF_RESOURCES");
  CHECK(std::string(opencl::error_name(CL_MEM_OBJECT_ALLOCATION_FAILURE)) == "CL_MEM_OBJECT_ALLOCATION_FAILURE");
  CHECK(std::string(opencl::error_name(CL_INVALID_WORK_GROUP_SIZE)) == "CL_INVALID_WORK_GROUP_SIZE");
  CHECK(std::string(opencl::error_name(-1001)) == "CL_PLATFORM_NOT_FOUND_KHR");
  CHECK(std::string(opencl::error_name(-72)) == "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
  CHECK(std::string(opencl::error_name(-12345)) == "CL_ERROR_-12345");
  // Every code from 0 to -72 that OpenCL defines has a name.
  for (int c : {0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19})
    CHECK(std::string(opencl::error_name(c)).rfind("CL_ERROR_", 0) != 0);
  for (int c = -30; c >= -72; --c) CHECK(std::string(opencl::error_name(c)).rfind("CL_ERROR_", 0) != 0);
  CHECK_NOTHROW(od::check(CL_SUCCESS, "clFinish"));
  try {
    od::check(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer", od::format_bytes(1ull << 30));
    FAIL("no throw");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()) == "opencl: clCreateBuffer (1.0 GiB) failed: CL_MEM_OBJECT_ALLOCATION_FAILURE");
    CHECK(e.code() == CL_MEM_OBJECT_ALLOCATION_FAILURE);
    CHECK(e.code_name() == "CL_MEM_OBJECT_ALLOCATION_FAILURE");
  }
}

TEST_CASE("cl_mem API: offset, range checks, queues with and without profiling") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    const std::vector<std::int32_t> xi = iota_values<std::int32_t>(5000, -400);
    const std::vector<float> xf = [] {
      std::vector<float> v(5000);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(static_cast<int>(i % 17) - 8);
      return v;
    }();
    DeviceBuffer bi(t, xi), bf(t, xf);
    const std::uint64_t off = 37, n = 4321;
    const auto ladder = opencl::kernels(t.caps.device);
    const std::string pair_rung = od::pair_rung_name(t.caps);
    for (cl_command_queue q : {t.queue, t.plain_queue}) {
      for (const char* rung : {"naive", "coarse4", "vector", pair_rung.c_str(), "auto"}) {
        CAPTURE(rung);
        RunOptions o;
        o.kernel = rung;
        o.repeat = 2;
        const HostArray hi{xi.data() + off, n, DType::I32}, hf{xf.data() + off, n, DType::F32};
        const KernelInfo& info = *std::find_if(ladder.begin(), ladder.end(), [&](const KernelInfo& k) { return k.name == rung; });
        for (Op op : all_ops) {
          CAPTURE(to_string(op));
          if (!info.supports(op, DType::I32)) {  // a pair op on a rung without it
            CHECK_THROWS_WITH_AS(opencl::reduce<std::int32_t>(q, bi.mem, off, n, op, o),
                                 doctest::Contains(std::string(to_string(op)).c_str()), InvalidArgument);
            continue;
          }
          const Result ri = opencl::reduce<std::int32_t>(q, bi.mem, off, n, op, o);
          expect_agrees(ri, hi, op, Accumulator::Wide, std::string("i32 ") + std::string(to_string(op)));
          CHECK(ri.n == n);
          CHECK(ri.backend == "opencl");
          CHECK(ri.kernel_ms > 0);
          const Result rf = opencl::reduce(q, bf.mem, off, n, DType::F32, op, o);
          expect_agrees(rf, hf, op, Accumulator::Wide, std::string("f32 ") + std::string(to_string(op)));
        }
      }
    }
    // The whole buffer, and an empty range at its end.
    CHECK(opencl::reduce<std::int32_t>(t.queue, bi.mem, 0, xi.size(), Op::Sum).value.i ==
          std::accumulate(xi.begin(), xi.end(), std::int64_t{0}));
    CHECK(opencl::reduce<std::int32_t>(t.queue, bi.mem, xi.size(), 0, Op::Sum).value.i == 0);
    CHECK_THROWS_AS(opencl::reduce<std::int32_t>(t.queue, bi.mem, xi.size(), 0, Op::Min), EmptyInput);
    // Beyond the buffer, wrong element size, unknown rung.
    CHECK_THROWS_AS(opencl::reduce<std::int32_t>(t.queue, bi.mem, 1, xi.size(), Op::Sum), InvalidArgument);
    CHECK_THROWS_AS(opencl::reduce<std::int64_t>(t.queue, bi.mem, 0, xi.size(), Op::Sum), InvalidArgument);
    RunOptions bad;
    bad.kernel = "no_such_rung";
    CHECK_THROWS_AS(opencl::reduce<std::int32_t>(t.queue, bi.mem, 0, 10, Op::Sum, bad), InvalidArgument);
    // A buffer from another context.
    cl_int rc = CL_SUCCESS;
    cl_context other = clCreateContext(nullptr, 1, &t.caps.device, nullptr, nullptr, &rc);
    od::check(rc, "clCreateContext");
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, nullptr, &rc);
    od::check(rc, "clCreateBuffer");
    CHECK_THROWS_AS(opencl::reduce<std::int32_t>(t.queue, foreign, 0, 4, Op::Sum), InvalidArgument);
    clReleaseMemObject(foreign);
    clReleaseContext(other);
  }
}

TEST_CASE("finishes: atomics where the device has them, a second pass otherwise, same values") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    const HostBuffer i32 = generate(DType::I32, 100003, Dist::Uniform, 3);
    const HostBuffer i64 = generate(DType::I64, 100003, Dist::Uniform, 4);
    const HostBuffer f32 = generate(DType::F32, 100003, Dist::Uniform, 5);
    RunOptions native;
    native.accumulator = Accumulator::Native;
    native.kernel = "divergence_free";
    const Result s32 = r.reduce(i32.view(), Op::Sum, native);
    CHECK(s32.finish == (t.caps.int32_base ? "atom_add" : "second pass"));
    CHECK(s32.launches == (t.caps.int32_base ? 1 : 2));
    expect_agrees(s32, i32.view(), Op::Sum, Accumulator::Native, "i32 native sum");
    CHECK(r.reduce(i32.view(), Op::Sum).finish == (t.caps.int64_base ? "atom_add" : "second pass"));
    CHECK(r.reduce(i64.view(), Op::Sum).finish == (t.caps.int64_base ? "atom_add" : "second pass"));
    CHECK(r.reduce(i32.view(), Op::Min).finish == (t.caps.int32_extended ? "atom_min" : "second pass"));
    CHECK(r.reduce(i64.view(), Op::Max).finish == (t.caps.int64_extended ? "atom_max" : "second pass"));
    CHECK(r.reduce(i32.view(), Op::Prod).finish == "second pass");
    CHECK(r.reduce(f32.view(), Op::Sum).finish == "second pass");
    RunOptions one;
    one.kernel = "naive";
    CHECK(r.reduce(f32.view(), Op::Sum, one).launches == 3);  // 100003 -> 391 -> 2 -> 1
    const HostBuffer small = generate(DType::F32, 200, Dist::Uniform, 6);
    CHECK(r.reduce(small.view(), Op::Sum, one).finish == "one work-group");

    // Forcing the second pass (as on a device without the extensions) gives the same integers.
    for (DType type : {DType::I32, DType::I64}) {
      const HostBuffer& x = type == DType::I32 ? i32 : i64;
      cl_int rc = CL_SUCCESS;
      cl_mem buf = clCreateBuffer(t.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, x.bytes(), const_cast<void*>(x.data()), &rc);
      od::check(rc, "clCreateBuffer");
      for (Op op : fold_ops)
        for (const char* rung : {"naive", "coarse8", "auto"}) {
          od::Request rq;
          rq.queue = t.queue;
          rq.buffer = buf;
          rq.n = x.size();
          rq.type = type;
          rq.op = op;
          rq.options.kernel = rung;
          const Result a = od::reduce_on_queue(rq);
          rq.finish = od::FinishPolicy::SecondPass;
          const Result b = od::reduce_on_queue(rq);
          CAPTURE(rung);
          CAPTURE(to_string(op));
          CHECK(b.finish == "second pass");
          CHECK(a.value.same_bits(b.value));
          expect_agrees(b, x.view(), op, Accumulator::Wide, "forced second pass");
        }
      clReleaseMemObject(buf);
    }
  }
}

TEST_CASE("any work-group size the kernel allows, powers of two or not; grid and coarsening options") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    const HostBuffer f = generate(DType::F32, 3001, Dist::Uniform, 7);
    const HostBuffer i = generate(DType::I64, 3001, Dist::Uniform, 8);
    for (const auto& k : r.kernels()) {
      for (unsigned block : {1u, 3u, 100u, 255u}) {  // NVIDIA caps this kernel at 256
        RunOptions o;
        o.kernel = k.name;
        o.block_size = block;
        CAPTURE(k.name);
        CAPTURE(block);
        expect_agrees(r.reduce(f.view(), Op::Sum, o), f.view(), Op::Sum, Accumulator::Wide, "f32 sum");
        expect_agrees(r.reduce(i.view(), Op::Max, o), i.view(), Op::Max, Accumulator::Wide, "i64 max");
      }
    }
    RunOptions too_big;
    too_big.block_size = static_cast<unsigned>(t.caps.max_work_group * 2);
    CHECK_THROWS_AS(r.reduce(f.view(), Op::Sum, too_big), InvalidArgument);

    for (unsigned c : {1u, 3u, 33u}) {
      RunOptions o;
      o.kernel = "coarse";
      o.coarsening = c;
      expect_agrees(r.reduce(f.view(), Op::Sum, o), f.view(), Op::Sum, Accumulator::Wide, "coarse");
    }
    for (std::uint64_t g : {1ull, 2ull, 7ull, 1000000ull}) {
      RunOptions o;
      o.kernel = "coarse2";
      o.grid_size = g;
      CAPTURE(g);
      const Result res = r.reduce(f.view(), Op::Sum, o);
      expect_agrees(res, f.view(), Op::Sum, Accumulator::Wide, "grid");
      if (g == 1) CHECK(res.launches == 1);
      expect_agrees(r.reduce(i.view(), Op::Sum, o), i.view(), Op::Sum, Accumulator::Wide, "grid i64");
    }
  }
}

TEST_CASE("results carry timing, launches and an honest rounding depth") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    const HostBuffer f = generate(DType::F32, (1u << 20) + 7, Dist::Uniform, 9);
    RunOptions o;
    o.warmup = 1;
    o.repeat = 3;
    const Result res = r.reduce(f.view(), Op::Sum, o);
    CHECK(res.kernel == "auto:" + od::auto_rung_name(t.caps, DType::F32));
    // auto picks by element size: on a GPU, vector's 16-byte loads for elements under 4 bytes.
    const HostBuffer bytes = generate(DType::U8, 4099, Dist::Uniform, 9);
    const Result narrow = r.reduce(bytes.view(), Op::Sum, o);
    CHECK(narrow.kernel == "auto:" + od::auto_rung_name(t.caps, DType::U8));
    if (t.caps.is_gpu()) CHECK(narrow.kernel == "auto:vector");
    CHECK(res.repeats == 3);
    CHECK(res.kernel_ms > 0);
    CHECK(res.transfer_ms > 0);
    CHECK(res.bytes_per_s > 0);
    CHECK(res.launches == 2);
    CHECK(res.rounding_depth > 8);
    CHECK(res.rounding_depth < f.size() / 16);
    CHECK(res.device == t.caps.name);
  }
}

TEST_CASE("resident inputs larger than one allocation go through in chunks") {
  RunOptions resident;
  resident.host_path = HostPath::Resident;
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::set_chunk_limit_for_testing(1000);
    const HostBuffer f = generate(DType::F64, 10007, Dist::Uniform, 10);
    const HostBuffer i = generate(DType::I32, 10007, Dist::Uniform, 11);
    for (Op op : all_ops) {
      if (t.caps.fp64) {
        const Result rf = t.reducer->reduce(f.view(), op, resident);
        CHECK(rf.finish.find("11 chunks") != std::string::npos);
        CHECK(rf.path == "resident: 11 chunks");
        expect_agrees(rf, f.view(), op, Accumulator::Wide, "chunked f64");
      }
      expect_agrees(t.reducer->reduce(i.view(), op, resident), i.view(), op, Accumulator::Wide, "chunked i32");
    }
    od::set_chunk_limit_for_testing(0);
  }
}

namespace {

// n elements of type t, every one `v`.
HostBuffer filled(DType t, std::uint64_t n, float v) {
  HostBuffer x(t, n);
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t i = 0; i < n; ++i) x.as<T>()[i] = T(v);
  });
  return x;
}

// Element i of x set to v (a float NaN, or any value of every type).
void set_element(HostBuffer& x, std::uint64_t i, float v) {
  visit_dtype(x.type(), [&](auto zero) {
    using T = decltype(zero);
    x.as<T>()[i] = T(v);
  });
}

}  // namespace

// argmin, argmax and minmax on every kernel that declares them (auto and the pair rung), every
// type, sizes from one element to past a million: uniform data, every element equal (index 0),
// NaN inside a float array (the first NaN and its index), and streamed in chunks of 1000 whose
// records are combined in order (the extreme and its ties in later chunks).
TEST_CASE("the pair ops agree with the host reference on the kernels that declare them") {
  const std::uint64_t sizes[] = {1, 2, 31, 1000, 65537, (std::uint64_t{1} << 20) + 3};
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    std::vector<std::string> declaring;
    for (const auto& k : r.kernels())
      if (k.supports(Op::ArgMin, DType::I32)) declaring.push_back(k.name);
    CHECK(declaring == std::vector<std::string>{od::pair_rung_name(t.caps), "auto"});
    for (DType type : all_dtypes) {
      if (type == DType::F64 && !t.caps.fp64) continue;
      CAPTURE(to_string(type));
      for (std::uint64_t n : sizes) {
        CAPTURE(n);
        std::vector<std::pair<std::string, HostBuffer>> inputs;
        inputs.emplace_back("uniform", generate(type, n, Dist::Uniform, n + static_cast<std::uint64_t>(type)));
        inputs.emplace_back("all equal", filled(type, n, 3.0f));
        const std::uint64_t nan_at = n / 2;
        if (is_float(type)) {
          HostBuffer x = generate(type, n, Dist::Uniform, n * 3);
          set_element(x, nan_at, NAN);
          set_element(x, n - 1 - (n - 1 - nan_at) / 3, NAN);  // a second NaN after it
          inputs.emplace_back("NaN inside", std::move(x));
        }
        for (const auto& [name, x] : inputs) {
          for (Op op : pair_ops) {
            const Reference ref = reference_reduce(x.view(), op);
            for (const auto& kernel : declaring) {
              const std::string what = kernel + " " + std::string(to_string(op)) + " " + name;
              RunOptions o;
              o.kernel = kernel;
              const Result res = r.reduce(x.view(), op, o);
              const Agreement a = check_result(res, ref);
              CHECK_MESSAGE(a.ok, what, ": ", a.detail);
              CHECK(res.value.type == type);
              CHECK(res.kernel == (kernel == "auto" ? "auto:" + od::pair_rung_name(t.caps) : kernel));
              if (!is_indexed(op)) continue;
              if (name == "all equal") CHECK_MESSAGE(res.index == 0, what);
              if (name == "NaN inside") CHECK_MESSAGE(res.index == static_cast<std::int64_t>(nan_at), what);
            }
          }
        }
      }
      // Streamed in chunks of 1000: the extremes first appear in chunk 1 and again in chunks 5
      // and 70, a NaN (float types) in chunk 2 and again in chunk 7; uniform data besides.
      const std::uint64_t n = 100003;
      HostBuffer equal = filled(type, n, 3.0f);
      HostBuffer extremes = filled(type, n, 50.0f);
      for (std::uint64_t at : {1500, 5999, 70000}) set_element(extremes, at, 100.0f);
      for (std::uint64_t at : {1501, 5000, 70001}) set_element(extremes, at, 1.0f);
      std::vector<std::pair<std::string, const HostBuffer*>> streamed = {{"all equal", &equal},
                                                                        {"extremes in later chunks", &extremes}};
      HostBuffer uniform = generate(type, n, Dist::Uniform, 77);
      streamed.emplace_back("uniform", &uniform);
      HostBuffer nans = generate(type, n, Dist::Uniform, 78);
      if (is_float(type)) {
        set_element(nans, 2500, NAN);
        set_element(nans, 7000, NAN);
        streamed.emplace_back("NaN in chunk 2", &nans);
      }
      for (const auto& [name, x] : streamed) {
        for (Op op : pair_ops) {
          const std::string what = std::string(to_string(op)) + " " + name + " streamed";
          RunOptions o;
          o.chunk_elements = 1000;
          ArraySource source(x->view());
          const Result res = r.reduce(source, op, o);
          CHECK_MESSAGE(res.chunks == (n + 999) / 1000, what);
          const Agreement a = check_result(res, reference_reduce(x->view(), op));
          CHECK_MESSAGE(a.ok, what, ": ", a.detail);
          if (!is_indexed(op)) continue;
          if (name == "all equal") CHECK_MESSAGE(res.index == 0, what);
          if (name == "extremes in later chunks") CHECK_MESSAGE(res.index == (op == Op::ArgMax ? 1500 : 1501), what);
          if (name == "NaN in chunk 2") CHECK_MESSAGE(res.index == 2500, what);
        }
      }
    }
  }
}

TEST_CASE("f64 needs cl_khr_fp64: declared per device, rejected with a clear error") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    od::DeviceCaps no64 = t.caps;
    no64.fp64 = false;
    for (const auto& rung : od::rung_table(no64)) {
      CHECK(!rung.info.supports(Op::Sum, DType::F64));
      CHECK(rung.info.note.find("cl_khr_fp64") != std::string::npos);
    }
    for (const auto& o : od::all_program_options(no64)) CHECK((o.find("XR_IN=3") == std::string::npos && o.find("XR_ACC=3") == std::string::npos));
    const auto kernels = t.reducer->kernels();
    for (const auto& k : kernels) CHECK(k.supports(Op::Sum, DType::F64) == t.caps.fp64);
    if (!t.caps.fp64) {
      const HostBuffer d = generate(DType::F64, 100, Dist::Uniform, 1);
      CHECK_THROWS_AS(t.reducer->reduce(d.view(), Op::Sum), InvalidArgument);
    }
  }
}

TEST_CASE("device selection: index, name substring, bad index, no match; status lists devices") {
  const BackendStatus s = backend_status("opencl");
  REQUIRE(s.usable);
  REQUIRE(!s.devices.empty());
  for (const auto& d : s.devices) {
    CHECK(d.name.find(" / ") != std::string::npos);
    CHECK(d.detail.find("fp64") != std::string::npos);
    CHECK(d.detail.find("int32 atomics") != std::string::npos);
    CHECK(d.detail.find("int64 atomics") != std::string::npos);
  }
  for (auto& t : targets()) {
    CAPTURE(t.label());
    BackendOptions by_name;
    by_name.platform = t.platform;
    std::string upper = t.caps.name.substr(0, std::min<std::size_t>(t.caps.name.size(), 6));
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    by_name.device = upper;
    CHECK(make_reducer("opencl", by_name)->device() == t.caps.name);
    BackendOptions by_index;
    by_index.platform = t.platform;
    by_index.device = "0";
    CHECK_NOTHROW(make_reducer("opencl", by_index));
    BackendOptions bad = by_index;
    bad.device = "999";
    CHECK_THROWS_AS(make_reducer("opencl", bad), InvalidArgument);
  }
  BackendOptions bad_platform;
  bad_platform.platform = 999;
  CHECK_THROWS_AS(make_reducer("opencl", bad_platform), InvalidArgument);
  BackendOptions no_match;
  no_match.device = "no-such-device-xyzzy";
  // A name that matches no device is the caller's mistake, as an index out of range is.
  CHECK_THROWS_WITH_AS(make_reducer("opencl", no_match), doctest::Contains("no OpenCL device matches"), InvalidArgument);
  BackendOptions global_index;
  global_index.device = std::to_string(s.devices.size() - 1);
  CHECK_NOTHROW(make_reducer("opencl", global_index));
  for (const auto& d : s.devices) {  // each listed device's options choose that very device
    CAPTURE(d.name);
    CHECK(d.detail.find("platform " + std::to_string(d.select.platform) + ", device " + d.select.device + ":") == 0);
    CHECK(d.name.ends_with(" / " + make_reducer("opencl", d.select)->device()));
  }
}

TEST_CASE("integer wrap and NaN semantics on the device match core") {
  for (auto& t : targets()) {
    CAPTURE(t.label());
    auto& r = *t.reducer;
    std::vector<std::int32_t> big(70000, 2147483647);
    std::vector<std::int64_t> bigl(70000, 9223372036854775807ll);
    for (const auto& k : r.kernels()) {
      RunOptions o;
      o.kernel = k.name;
      CAPTURE(k.name);
      o.accumulator = Accumulator::Native;
      expect_agrees(r.reduce(big, Op::Sum, o), HostArray::of(std::span<const std::int32_t>(big)), Op::Sum,
                    Accumulator::Native, "i32 native wrap");
      o.accumulator = Accumulator::Wide;
      expect_agrees(r.reduce(bigl, Op::Sum, o), HostArray::of(std::span<const std::int64_t>(bigl)), Op::Sum,
                    Accumulator::Wide, "i64 wrap");
      expect_agrees(r.reduce(bigl, Op::Prod, o), HostArray::of(std::span<const std::int64_t>(bigl)), Op::Prod,
                    Accumulator::Wide, "i64 prod wrap");
    }
    // A sum of only -0.0 is -0.0.
    std::vector<float> negzero(3000, -0.0f);
    const Result z = r.reduce(negzero, Op::Sum);
    CHECK(std::signbit(z.value.f));
  }
}

TEST_CASE("the program cache is reused across reductions and reducers, and can be cleared") {
  REQUIRE(!targets().empty());
  auto& t = targets().front();
  const HostBuffer f = generate(DType::F32, 5000, Dist::Uniform, 12);
  t.reducer->reduce(f.view(), Op::Sum);
  const std::size_t before = opencl::program_cache_size();
  t.reducer->reduce(f.view(), Op::Sum);
  BackendOptions o;
  o.platform = t.platform;
  make_reducer("opencl", o)->reduce(f.view(), Op::Sum);
  CHECK(opencl::program_cache_size() == before);
  opencl::clear_program_cache();
  CHECK(opencl::program_cache_size() == 0);
  expect_agrees(t.reducer->reduce(f.view(), Op::Sum), f.view(), Op::Sum, Accumulator::Wide, "after clear");
  CHECK(opencl::program_cache_size() >= 1);
}

TEST_CASE("a streaming reducer releases every buffer it created: the shared context's references return") {
  for (const auto& t : targets()) {
    INFO(t.label());
    const cl_context context = od::shared_context(t.caps);
    const auto references = [&] {
      cl_uint count = 0;
      od::check(clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof count, &count, nullptr),
                "clGetContextInfo");
      return count;
    };
    const HostBuffer x = generate(DType::I32, 100003, Dist::Uniform, 5);
    BackendOptions o;
    o.platform = t.platform;
    RunOptions chunks;
    chunks.chunk_elements = 4096;  // 25 chunks: staging buffers, slots, chunk results, scratch
    const auto stream_once = [&] {
      auto reducer = make_reducer("opencl", o);
      expect_agrees(reducer->reduce(x.view(), Op::Sum, chunks), x.view(), Op::Sum, Accumulator::Wide, "streamed");
    };
    // PoCL drops the references of finished commands on its own threads, a moment after the
    // reducer is gone: a count is read once it has held still for 250 ms (5 s at most).
    const auto settled_references = [&] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      cl_uint count = references();
      auto still_since = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() < deadline &&
             std::chrono::steady_clock::now() - still_since < std::chrono::milliseconds(250)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const cl_uint now = references();
        if (now != count) {
          count = now;
          still_since = std::chrono::steady_clock::now();
        }
      }
      return count;
    };
    stream_once();  // builds and caches the programs, which hold the context as long as they live
    const cl_uint before = settled_references();
    // The count shows a leak only where a buffer holds a reference to its context: PoCL's do,
    // NVIDIA's do not (there the check below holds whatever the reducer leaves behind).
    cl_int status = CL_SUCCESS;
    cl_mem probe = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    const bool buffers_counted = references() > before;
    clReleaseMemObject(probe);
    if (t.caps.platform_name.find("Portable Computing Language") != std::string::npos) CHECK(buffers_counted);
    if (!buffers_counted) MESSAGE(t.label() << ": buffers hold no context reference; a leak cannot show here");
    stream_once();
    CHECK(settled_references() == before);  // a leaked buffer keeps its reference for good
  }
}

int main(int argc, char** argv) { return xr::ocl_test::run_on_targets(argc, argv, "opencl"); }
