// Reducers from many threads at once. Run as `xr_test_threads --xr-backend=NAME`: the first
// thing the process does is create NAME's reducers from 8 threads at once (so that a backend's
// first device discovery is itself concurrent); then 8 threads share one reducer. Every value
// is checked. Exits 77 (skipped) when every thread finds NAME unavailable, for the same reason.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xreduce/reference.hpp"
#include "xreduce/xreduce.hpp"

using namespace xr;

namespace {

constexpr unsigned kThreads = 8;
std::string g_backend = "omp";
std::optional<std::string> g_unavailable;  // the reason every thread gave

// Thread t's input: i64 values whose sum is exact, different for every thread and size.
HostBuffer input_of(unsigned t, std::uint64_t n) { return generate(DType::I64, n, Dist::Uniform, 1000 + t); }

// What thread t checks on `reducer`: host data on the backend's default path and resident, and
// a streamed source in several chunks, each against the host reference.
std::vector<std::string> exercise(Reducer& reducer, unsigned t) {
  std::vector<std::string> failures;
  const auto expect = [&](const Result& r, const Reference& ref, const std::string& what) {
    if (!r.value.same_bits(ref.value))
      failures.push_back("thread " + std::to_string(t) + " " + what + ": got " + r.value.to_string() +
                         ", reference " + ref.value.to_string());
  };
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{100003} + t, std::uint64_t{1} << 18}) {
    const HostBuffer x = input_of(t, n);
    for (Op op : {Op::Sum, Op::Max}) {
      const Reference ref = reference_reduce(x.view(), op);
      RunOptions o;
      expect(reducer.reduce(x.view(), op, o), ref, "stream n=" + std::to_string(n));
      o.host_path = HostPath::Resident;
      expect(reducer.reduce(x.view(), op, o), ref, "resident n=" + std::to_string(n));
      RunOptions chunks;
      chunks.chunk_elements = 4099;
      ArraySource source(x.view());
      expect(reducer.reduce(source, op, chunks), ref, "chunked n=" + std::to_string(n));
    }
  }
  return failures;
}

// Runs body(t) on kThreads threads released together; returns each thread's error text, if any.
template <class Body> std::vector<std::string> on_threads(Body body) {
  std::barrier start(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  return errors;
}

}  // namespace

TEST_CASE("8 threads create their own reducers at once, the process's first use of the backend") {
  std::vector<std::vector<std::string>> failures(kThreads);
  // A byte a thread: vector<bool> packs the flags into shared words, whose writes race.
  std::vector<unsigned char> unavailable(kThreads, 0);
  const auto errors = on_threads([&](unsigned t) {
    std::unique_ptr<Reducer> reducer;
    try {
      reducer = make_reducer(g_backend);
    } catch (const BackendUnavailable&) {
      unavailable[t] = true;
      throw;
    }
    failures[t] = exercise(*reducer, t);
  });
  unsigned none = 0;
  for (unsigned t = 0; t < kThreads; ++t) none += unavailable[t];
  if (none == kThreads && std::all_of(errors.begin(), errors.end(), [&](const auto& e) { return e == errors[0]; })) {
    g_unavailable = errors[0];
    return;
  }
  for (unsigned t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
    for (const auto& f : failures[t]) FAIL_CHECK(f);
  }
}

TEST_CASE("one reducer shared by 8 threads gives every thread its own values") {
  if (g_unavailable) return;
  const auto shared = make_reducer(g_backend);
  std::vector<std::vector<std::string>> failures(kThreads);
  const auto errors = on_threads([&](unsigned t) { failures[t] = exercise(*shared, t); });
  for (unsigned t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
    for (const auto& f : failures[t]) FAIL_CHECK(f);
  }
}

TEST_CASE("status queries and reducers from 8 threads at once") {
  if (g_unavailable) return;
  std::vector<std::string> devices(kThreads);
  const auto errors = on_threads([&](unsigned t) {
    if (t % 2) devices[t] = backend_status(g_backend).usable ? "usable" : "unusable";
    else devices[t] = make_reducer(g_backend)->device().empty() ? "unnamed" : "usable";
  });
  for (unsigned t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
    CHECK_MESSAGE(devices[t] == "usable", "thread ", t);
  }
}

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--xr-backend=", 13) == 0) g_backend = argv[i] + 13;
    else rest.push_back(argv[i]);
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  const int status = context.run();
  if (status == 0 && g_unavailable) {
    std::printf("SKIP %s: %s\n", g_backend.c_str(), g_unavailable->c_str());
    return 77;
  }
  return status;
}
