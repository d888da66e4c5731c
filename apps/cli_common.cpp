#include "cli_common.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"
#include "xreduce/registry.hpp"

namespace xr::cli {

std::string shown(const std::string& text) { return "'" + printable(text) + "'"; }

std::uint64_t parse_whole(const std::string& text, const std::string& option, std::uint64_t lo, std::uint64_t hi,
                          const std::string& limit) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw InvalidArgument(option + ": cannot read " + shown(text) + " as a whole number");
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range || v > hi)
    throw InvalidArgument(option + ": " + shown(text) + " is above the limit of " + std::to_string(hi) + " (" + limit +
                          ")");
  if (v < lo) throw InvalidArgument(option + ": " + shown(text) + " is below the minimum of " + std::to_string(lo));
  return v;
}

// 2^64, the first count past the largest.
constexpr long double kTwoTo64 = 18446744073709551616.0L;

std::uint64_t parse_count(const std::string& text, const std::string& option) {
  const auto bad = [&]() -> std::uint64_t {
    throw InvalidArgument(option + ": cannot read " + shown(text) + " as a count (examples: 16777216, 16M, 2^24, 1e6)");
  };
  if (text.empty() || text[0] < '0' || text[0] > '9') return bad();
  if (const auto caret = text.find('^'); caret != std::string::npos) {
    std::size_t used = 0;
    unsigned long base = 0, exp = 0;
    try {
      base = std::stoul(text.substr(0, caret), &used);
      if (used != caret) return bad();
      exp = std::stoul(text.substr(caret + 1), &used);
      if (used != text.size() - caret - 1) return bad();
    } catch (const std::logic_error&) {
      return bad();
    }
    const long double v = std::pow(static_cast<long double>(base), static_cast<long double>(exp));
    if (!(v < kTwoTo64)) throw InvalidArgument(option + ": " + shown(text) + " is above 2^64 - 1");
    return static_cast<std::uint64_t>(v);
  }
  std::string digits = text;
  long double scale = 1;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
  if (digits.size() > 1 && (last == 'K' || last == 'M' || last == 'G' || last == 'T')) {
    scale = last == 'K' ? 1024.0L : last == 'M' ? 1048576.0L : last == 'G' ? 1073741824.0L : 1099511627776.0L;
    digits.pop_back();
  } else if (digits.size() > 2 && (digits.ends_with("Ki") || digits.ends_with("Mi") || digits.ends_with("Gi"))) {
    return parse_count(digits.substr(0, digits.size() - 1), option);
  }
  if (digits.find_first_not_of("0123456789.eE+-") != std::string::npos) return bad();  // no hex, inf or nan
  long double v = 0;
  try {
    std::size_t used = 0;
    v = std::stold(digits, &used);
    if (used != digits.size()) return bad();
  } catch (const std::logic_error&) {
    return bad();
  }
  if (scale == 1 && digits.find_first_not_of("0123456789") == std::string::npos) {  // plain digits: exact
    std::uint64_t whole = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), whole);
    if (ec == std::errc::result_out_of_range) throw InvalidArgument(option + ": " + shown(text) + " is above 2^64 - 1");
    return whole;
  }
  v *= scale;
  if (!(v >= 0) || v != std::floor(v)) throw InvalidArgument(option + ": " + shown(text) + " is not a whole count");
  if (!(v < kTwoTo64)) throw InvalidArgument(option + ": " + shown(text) + " is above 2^64 - 1");
  return static_cast<std::uint64_t>(v);
}

Progress::Progress(bool enabled) : on_(enabled && isatty(STDERR_FILENO)) {}

void Progress::show(const std::string& text) {
  if (on_) std::cerr << "\r\033[K" << text << std::flush;
}

void Progress::clear() {
  if (on_) std::cerr << "\r\033[K" << std::flush;
}

CLI::Option* add_backend_option(CLI::App& app, std::string& backend) {
  std::vector<std::string> names = backend_names();
  names.push_back("all");
  return app.add_option("--backend,-b", backend, spelled(names, [](const std::string& name) { return name; }))
      ->check(CLI::IsMember(names))
      ->capture_default_str();
}

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("an empty value (leave the option out instead)") : std::string(); },
      "", "NONEMPTY");
  for (CLI::Option* option : app.get_options())
    if (option->get_expected_min() > 0) option->check(non_empty);
}

void check_fits_memory(DType t, std::uint64_t n, const std::string& what) {
  const std::uint64_t memory = host_memory_bytes() / 2;
  if (n > memory / size_of(t))
    throw InvalidArgument(what + ": " + std::to_string(n) + " " + std::string(to_string(t)) + " elements need more than " +
                          format_bytes(memory) + ", half of this machine's memory");
}

int report(const std::string& message, int code) {
  std::cerr << "reduce_cli: error: " << printable(message, 2000) << '\n';
  return code;
}

int exit_code(std::exception_ptr failure, bool print) {
  const auto say = [&](const std::string& message, int code) { return print ? report(message, code) : code; };
  try {
    std::rethrow_exception(failure);
  } catch (const BackendUnavailable& e) {
    return say(e.what(), kUnavailable);
  } catch (const KernelBuildError& e) {
    return say(std::string(e.what()) + "; build log: " + printable(e.log(), 400), kUsage);
  } catch (const Error& e) {
    return say(e.what(), kUsage);
  } catch (const std::bad_alloc&) {
    return say("out of host memory", kUsage);
  } catch (const std::exception& e) {
    return say(std::string("internal error: ") + e.what(), kUsage);
  } catch (...) {
    return say("internal error: an unknown exception", kUsage);
  }
}

bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(variable)) return true;
  return false;
}

}  // namespace xr::cli
