// What reduce_cli's commands share: exit codes, the one-line error, strict number parsing and
// the progress line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <string>

#include "xreduce/types.hpp"

namespace CLI {
class App;
class Option;
}

namespace xr::cli {

enum Exit { kAgree = 0, kDisagree = 1, kUsage = 2, kUnavailable = 3 };

// "a, b, c or d" from the names of a table's entries ("a, b, c and d" with last = " and ").
template <class Range, class Name> std::string spelled(const Range& entries, Name name, const char* last = " or ") {
  const std::size_t count = std::size(entries);
  std::string out;
  std::size_t i = 0;
  for (const auto& e : entries) {
    if (i > 0) out += i + 1 == count ? last : ", ";
    out += name(e);
    ++i;
  }
  return out;
}

// A Result's or a Reference's value as the CLI shows it: "3.5"; argmin, argmax "3.5 at 17" (the
// index of its first occurrence); minmax "-1 .. 7".
template <class R> std::string value_text(const R& r) {
  std::string text = r.value.to_string();
  switch (op_info(r.op).kind) {
    case OpKind::Fold: break;
    case OpKind::Located: text += " at " + std::to_string(r.index); break;
    case OpKind::Bounds: text += " .. " + r.maximum.to_string(); break;
  }
  return text;
}

// `text` quoted and escaped for a one-line message.
std::string shown(const std::string& text);

// A whole number within [lo, hi]: decimal digits only (no sign, space, exponent or suffix).
// `limit` says where hi comes from.
std::uint64_t parse_whole(const std::string& text, const std::string& option, std::uint64_t lo, std::uint64_t hi,
                          const std::string& limit);

// "16777216", "16M", "16Mi", "2^24", "1e6", "64K": a count of elements.
std::uint64_t parse_count(const std::string& text, const std::string& option);

// --backend (-b): a backend of the registry, or "all" (the default).
CLI::Option* add_backend_option(CLI::App& app, std::string& backend);

// No option of `app` takes an empty value: '' is refused rather than read as "not given".
void refuse_empty_values(CLI::App& app);

// Refuses `n` elements of `t` held in memory where they pass half of this machine's memory:
// "--n: 10 f32 elements need more than 8.0 GiB, half of this machine's memory" (`what` begins it).
void check_fits_memory(DType t, std::uint64_t n, const std::string& what);

// One line on stderr: control characters escaped, an overlong message cut. Returns `code`.
int report(const std::string& message, int code);

// True when an MPI launcher started this process (Open MPI, PMIx or Hydra's environment).
bool launched_by_mpi();

// The exit code of a failure (kUnavailable for BackendUnavailable, kUsage for everything else),
// after its one line on stderr when `print`.
int exit_code(std::exception_ptr failure, bool print = true);

// A progress line on stderr, only when stderr is a terminal.
class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress() { clear(); }
  bool on() const { return on_; }
  void show(const std::string& text);
  void clear();

 private:
  bool on_;
};

}  // namespace xr::cli
