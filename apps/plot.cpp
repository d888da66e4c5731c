#include "plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "xreduce/error.hpp"

extern char** environ;

namespace xr::cli {
namespace {

namespace fs = std::filesystem;

// A file in the temporary directory, created empty and removed with this object.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix) {
    std::string name = (fs::temp_directory_path() / ("reduce_cli_plot_XXXXXX" + suffix)).string();
    const int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
    if (fd < 0) throw Error("--plot: cannot create a temporary file: " + std::string(std::strerror(errno)));
    close(fd);
    path_ = name;
  }
  ~TempFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The last non-empty line of what the child printed.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace

std::string plot_script() {
  if (const char* chosen = std::getenv("XR_PLOT_SCRIPT"); chosen && *chosen) {
    if (!fs::is_regular_file(chosen)) throw Error("--plot: XR_PLOT_SCRIPT names '" + printable(chosen) + "', not a file");
    return chosen;
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec)
    candidates.push_back(self.parent_path() / XR_PLOT_SCRIPT_FROM_BINDIR);
  candidates.emplace_back(XR_PLOT_SCRIPT_SOURCE);
  candidates.emplace_back(XR_PLOT_SCRIPT_INSTALLED);
  std::string looked;
  for (const auto& candidate : candidates) {
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
    looked += (looked.empty() ? "" : ", ") + candidate.lexically_normal().string();
  }
  throw Error("--plot: plot.py not found (looked in " + printable(looked, 400) + "; set XR_PLOT_SCRIPT)");
}

std::string plot_ladder(const std::string& ladder_json, const std::string& output) {
  const std::string script = plot_script();
  TempFile json(".json"), messages(".txt");
  {
    std::ofstream out(json.path());
    out << ladder_json;
    if (!out.flush()) throw Error("--plot: cannot write " + json.path());
  }
  const char* chosen = std::getenv("XR_PYTHON");
  const std::string python = chosen && *chosen ? chosen : XR_PLOT_PYTHON;
  std::vector<std::string> args = {python, script, json.path(), "-o", output, "--kind", "ladder"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, messages.path().c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT)
    throw Error("--plot: no python at '" + printable(python) +
                "' (plots need python3 with matplotlib: Debian python3-matplotlib; XR_PYTHON names another)");
  if (spawned != 0) throw Error("--plot: cannot run " + printable(python) + ": " + std::string(std::strerror(spawned)));
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return script;
  const std::string said = last_line(messages.path());
  throw Error("--plot: " + printable(said.empty() ? python + " " + script + " failed with status " +
                                                        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1)
                                                  : said,
                                     400));
}

}  // namespace xr::cli
