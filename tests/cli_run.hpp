// Running reduce_cli as a user does, for the CLI suites: the exit code and what it printed.
#pragma once

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace xr_cli_test {

namespace fs = std::filesystem;

struct Run {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs a shell command line; stderr joins stdout.
inline Run shell(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t got = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// reduce_cli with `args` (shell words), stopped after 60 s (exit 124) should it hang.
inline Run cli(const std::string& args) { return shell("timeout 60 " + std::string(XR_REDUCE_CLI) + " " + args); }

// reduce_cli with `args` (shell words) as a child of this process, stopped after 60 s (exit 124)
// should it hang, with the peak resident memory of the run in KiB (getrusage's ru_maxrss of the
// child and the processes it waited for: `timeout` and reduce_cli).
struct Measured {
  Run run;
  std::uint64_t peak_rss_kib = 0;
};
inline Measured cli_peak_rss(const std::string& args, const std::string& out_path) {
  const std::string cmd = "exec timeout 60 " + std::string(XR_REDUCE_CLI) + " " + args + " > '" + out_path + "' 2>&1";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  std::ifstream in(out_path, std::ios::binary);
  Measured m;
  m.run = {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}};
  m.peak_rss_kib = static_cast<std::uint64_t>(usage.ru_maxrss);
  return m;
}

inline std::string scratch(const std::string& name, const std::string& bytes) {
  fs::create_directories(XR_TEST_TMP);
  const auto p = fs::path(XR_TEST_TMP) / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

// The bytes of a file ("" where there is none).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline bool one_error_line(const std::string& out) {
  return out.rfind("reduce_cli: error: ", 0) == 0 && out.find('\n') == out.size() - 1;
}

}  // namespace xr_cli_test
