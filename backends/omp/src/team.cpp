#include "team.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "policy.hpp"

namespace xr::omp::detail {
namespace {

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// Threads of this process in state R, from /proc/self/task/<tid>/stat ("tid (name) R ...").
int own_running() {
  int running = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const std::string stat = read_small(task.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R') ++running;
  }
  return running;
}

int sample_free_cores() {
  const int cores = std::max(omp_get_num_procs(), 1);
  const int free = free_cores_of(read_small("/proc/loadavg"), cores, own_running());
  return free < 0 ? cores : free;
}

}  // namespace

int free_cores_of(std::string_view loadavg, int cores, int own) {
  // The fourth field: runnable/total.
  std::size_t at = 0;
  for (int field = 0; field < 3; ++field) {
    at = loadavg.find(' ', at);
    if (at == std::string_view::npos) return -1;
    ++at;
  }
  const auto slash = loadavg.find('/', at);
  if (slash == std::string_view::npos) return -1;
  int runnable = 0;
  const auto [end, ec] = std::from_chars(loadavg.data() + at, loadavg.data() + slash, runnable);
  if (ec != std::errc() || end != loadavg.data() + slash) return -1;
  const int others = std::max(runnable - std::max(own, 1), 0);
  return std::clamp(cores - others, 1, std::max(cores, 1));
}

int free_cores() {
  static std::atomic<std::int64_t> sampled_at{-kLoadSampleNanoseconds};
  static std::atomic<int> cached{0};
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::int64_t last = sampled_at.load(std::memory_order_relaxed);
  if (now - last < kLoadSampleNanoseconds && cached.load(std::memory_order_relaxed) > 0)
    return cached.load(std::memory_order_relaxed);
  if (sampled_at.compare_exchange_strong(last, now, std::memory_order_relaxed)) cached.store(sample_free_cores());
  const int free = cached.load(std::memory_order_relaxed);
  return free > 0 ? free : sample_free_cores();
}

int team_size(const RunOptions& options, std::uint64_t bytes) {
  if (options.threads) return static_cast<int>(options.threads);
  static const bool env_team = [] {
    const char* v = std::getenv("OMP_NUM_THREADS");
    return v && *v;
  }();
  if (env_team) return omp_get_max_threads();
  const auto by_work = static_cast<int>(std::clamp<std::uint64_t>(bytes / kMinBytesPerThread, 1, 1u << 16));
  const int team = std::min(omp_get_max_threads(), by_work);
  return team <= 1 ? 1 : std::min(team, free_cores());
}

}  // namespace xr::omp::detail
