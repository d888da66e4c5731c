#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/types.hpp"

namespace xr {
namespace {

std::string lower(std::string_view text) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Whether `key` is one of `spellings`, "|" between them.
bool spelled_as(std::string_view spellings, std::string_view key) {
  while (!spellings.empty()) {
    const std::size_t bar = spellings.find('|');
    if (spellings.substr(0, bar) == key) return true;
    if (bar == std::string_view::npos) return false;
    spellings.remove_prefix(bar + 1);
  }
  return false;
}

}  // namespace

std::string_view to_string(Op op) { return op_info(op).name; }

std::string_view to_string(DType type) { return type_info(type).name; }

std::string_view to_string(Accumulator acc) { return acc == Accumulator::Wide ? "wide" : "native"; }

Op parse_op(std::string_view text) {
  const std::string key = lower(text);
  for (const OpInfo& o : op_table)
    if (key == o.name || spelled_as(o.aliases, key)) return o.op;
  std::string accepted;  // the message alone builds the list: a parse sits on every call's path
  for (std::size_t row = 0; row < std::size(op_table); ++row)
    accepted += (row == 0 ? "" : row + 1 == std::size(op_table) ? " or " : ", ") + std::string(op_table[row].name);
  throw InvalidArgument("unknown op '" + printable(text) + "' (expected " + accepted + ")");
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::uint64_t parse_bytes(std::string_view text) {
  const std::string s = lower(text);
  const auto bad = [&] {
    return InvalidArgument("cannot read '" + printable(text) +
                           "' as a size in bytes (examples: 4096, 256K, 256M, 1.5G, 64MiB)");
  };
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = s.substr(used);
  if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "ib") == 0) unit.resize(unit.size() - 2);
  else if (unit.size() >= 1 && unit.back() == 'b') unit.pop_back();
  static constexpr std::pair<const char*, int> shifts[] = {{"", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
  for (const auto& [name, shift] : shifts)
    if (unit == name) {
      const double bytes = std::ldexp(v, shift);
      if (!(bytes >= 1) || bytes >= 0x1p63 || (shift == 0 && v != std::floor(v))) throw bad();
      return static_cast<std::uint64_t>(bytes);
    }
  throw bad();
}

DType parse_dtype(std::string_view text) {
  // The table's names, NumPy's names, and the C spellings of the four original types.
  static constexpr std::pair<const char*, DType> aliases[] = {
      {"int32", DType::I32},   {"int", DType::I32},   {"int64", DType::I64},   {"long", DType::I64},
      {"float32", DType::F32}, {"float", DType::F32}, {"float64", DType::F64}, {"double", DType::F64},
      {"int8", DType::I8},     {"uint8", DType::U8},  {"uint32", DType::U32},  {"uint64", DType::U64},
      {"float16", DType::F16}, {"half", DType::F16},  {"bfloat16", DType::BF16}};
  const std::string key = lower(text);
  for (const TypeInfo& t : type_table)
    if (key == t.name) return t.type;
  for (const auto& [name, value] : aliases)
    if (key == name) return value;
  std::string accepted;
  for (const TypeInfo& t : type_table) accepted += (accepted.empty() ? "" : ", ") + std::string(t.name);
  throw InvalidArgument("unknown type '" + printable(text) + "' (expected " + accepted + ")");
}

namespace {
// The shortest decimal that reads back (through float, rounded to H) to the half value v.
template <class H> std::string shortest_half(double v) {
  char buf[64];
  const H want(static_cast<float>(v));
  for (int digits = 1;; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::isnan(v) || H(static_cast<float>(std::strtod(buf, nullptr))).bits == want.bits || digits >= 9) return buf;
  }
}
}  // namespace

std::string Scalar::to_string() const {
  char buf[64];
  std::to_chars_result r;
  if (type == DType::F16) return shortest_half<f16>(f);
  if (type == DType::BF16) return shortest_half<bf16>(f);
  if (type == DType::F32) r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(f));
  else if (type == DType::F64) r = std::to_chars(buf, buf + sizeof buf, f);
  else if (type == DType::U64) r = std::to_chars(buf, buf + sizeof buf, static_cast<std::uint64_t>(i));
  else r = std::to_chars(buf, buf + sizeof buf, i);
  return std::string(buf, r.ptr);
}

bool Scalar::same_bits(const Scalar& other) const {
  if (type != other.type) return false;
  if (!is_float(type)) return i == other.i;
  if (std::isnan(f) || std::isnan(other.f)) return std::isnan(f) && std::isnan(other.f);
  if (type == DType::F32) {
    const float a = static_cast<float>(f), b = static_cast<float>(other.f);
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
  return std::memcmp(&f, &other.f, sizeof f) == 0;
}

Scalar empty_scalar(Op op, DType type) {
  return visit_dtype(type, [&](auto t) { return Scalar::of(empty_value<decltype(t)>(op)); });
}

void require_value_exists(Op op, std::uint64_t n) {
  if (n == 0 && !op_info(op).empty_has_value)
    throw EmptyInput(std::string(to_string(op)) + " of an empty input has no value");
}

}  // namespace xr
