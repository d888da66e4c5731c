// The .npy format: reading an input's header, writing a file.
#include "npy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/io.hpp"

namespace xr {
namespace input {
namespace {

// The largest header accepted (numpy writes a few hundred bytes; it reads at most 10,000 by default).
constexpr std::uint64_t kMaxNpyHeader = 65536;

// The header dict, parsed as the Python literal it is: {'descr': '<f4', 'fortran_order':
// False, 'shape': (3, 4), } with each key once, in any order; nothing else.
class NpyDict {
 public:
  NpyDict(std::string_view text, const std::string& name) : h_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader out;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{', "the header is no dict");
    for (;;) {
      if (eat('}')) break;
      const std::string key = string_literal("a key that is not a string");
      expect(':', "no ':' after " + quoted(key));
      bool* seen = key == "descr" ? &have_descr : key == "fortran_order" ? &have_order : key == "shape" ? &have_shape : nullptr;
      if (!seen) bad("unknown key " + quoted(key) + " (expected 'descr', 'fortran_order' and 'shape')");
      if (*seen) bad(quoted(key) + " twice");
      *seen = true;
      if (key == "descr") out.descr = string_literal("'descr' is not a string");
      else if (key == "fortran_order") out.fortran_order = fortran_order();
      else out.n = shape(out.shape);
      if (eat('}')) break;
      expect(',', "no ',' or '}' after the value of " + quoted(key));
    }
    skip_space();
    if (pos_ != h_.size()) bad("text after the dict");
    for (const auto& [have, key] : {std::pair{have_descr, "descr"}, {have_order, "fortran_order"}, {have_shape, "shape"}})
      if (!have) bad(std::string("no '") + key + "'");
    std::string supported;
    for (const TypeInfo& t : type_table) {
      if (t.npy.empty()) continue;  // bf16: no .npy dtype
      if (out.descr == t.npy) {
        out.type = t.type;
        return out;
      }
      supported += (supported.empty() ? "'" : " '") + std::string(t.npy) + "'";
    }
    fail(name_, "unsupported .npy dtype " + quoted(out.descr) + " (supported: " + supported + ")");
  }

 private:
  [[noreturn]] void bad(const std::string& problem) {
    fail(name_, "malformed .npy header: " + problem + " (at byte " + count(pos_) + " of " + quoted(h_) + ")");
  }
  void skip_space() {
    while (pos_ < h_.size() && (h_[pos_] == ' ' || h_[pos_] == '\t' || h_[pos_] == '\n' || h_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < h_.size() && h_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& problem) {
    if (!eat(c)) bad(problem);
  }
  std::string string_literal(const std::string& problem) {
    skip_space();
    if (pos_ >= h_.size() || (h_[pos_] != '\'' && h_[pos_] != '"')) bad(problem);
    const char quote = h_[pos_++];
    const std::size_t begin = pos_;
    for (; pos_ < h_.size() && h_[pos_] != quote; ++pos_) {
      const auto c = static_cast<unsigned char>(h_[pos_]);
      if (c < 0x20 || c == 0x7f) bad("a control character in a string");
      if (c == '\\') bad("an escape in a string");
    }
    if (pos_ >= h_.size()) bad("an unterminated string");
    return std::string(h_.substr(begin, pos_++ - begin));
  }
  std::string_view word() {
    skip_space();
    const std::size_t begin = pos_;
    while (pos_ < h_.size() && (std::isalnum(static_cast<unsigned char>(h_[pos_])) || h_[pos_] == '_')) ++pos_;
    return h_.substr(begin, pos_ - begin);
  }
  bool fortran_order() {
    const std::string_view w = word();
    if (w != "True" && w != "False") bad("'fortran_order' is not True or False");
    return w == "True";
  }
  // A tuple of non-negative integers: (), (3,), (3, 4), (3, 4,). The product of the dimensions.
  std::uint64_t shape(std::vector<std::uint64_t>& dims_out) {
    expect('(', "'shape' is not a tuple");
    const std::size_t open = pos_ - 1;
    std::uint64_t n = 1, dims = 0;
    bool comma = true;  // a dimension may follow
    for (;;) {
      if (eat(')')) break;
      if (!comma) bad("'shape' is not a tuple of integers separated by commas");
      const std::string_view digits = word();
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          (digits.size() > 1 && digits[0] == '0'))
        bad("'shape' holds something other than a non-negative integer");
      std::uint64_t dim = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), dim);
      if (ec != std::errc() || end != digits.data() + digits.size()) bad("a 'shape' dimension beyond 2^64");
      if (dim != 0 && n > std::numeric_limits<std::uint64_t>::max() / 8 / dim)
        fail(name_, ".npy shape too large: " + quoted(h_.substr(open, pos_ - open)) + "...");
      n *= dim;
      ++dims;
      dims_out.push_back(dim);
      comma = eat(',');
    }
    if (dims == 1 && !comma) bad("'shape' (n) is no tuple; one dimension is written (n,)");
    return n;
  }

  std::string_view h_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

}  // namespace

NpyHeader read_npy_header(Reader& r, const std::string& name, std::optional<std::uint64_t> size) {
  unsigned char pre[12] = {};
  const std::uint64_t got = r.read(pre, 10);
  if (got < 10) fail(name, "truncated .npy: " + count(got) + " bytes, shorter than its preamble");
  if (std::memcmp(pre, kNpyMagic.data(), kNpyMagic.size()) != 0) fail(name, "not a .npy file (bad magic)");
  const int major = pre[6];
  std::uint64_t header_len = 0, header_at = 10;
  if (major == 1) {
    header_len = pre[8] | (pre[9] << 8);
  } else if (major == 2 || major == 3) {
    if (r.read(pre + 10, 2) < 2) fail(name, "truncated .npy: 11 bytes, shorter than its preamble");
    header_len = pre[8] | (pre[9] << 8) | (std::uint64_t(pre[10]) << 16) | (std::uint64_t(pre[11]) << 24);
    header_at = 12;
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > kMaxNpyHeader)
    fail(name, "a .npy header of " + count(header_len) + " bytes, more than the " + count(kMaxNpyHeader) +
                   " this reader accepts");
  if (size && header_at + header_len > *size) fail(name, "truncated .npy: header runs past the end of the file");
  std::string header(header_len, '\0');
  if (r.read(header.data(), header_len) < header_len) fail(name, "truncated .npy: header runs past the end of the input");
  NpyHeader h = NpyDict(header, name).parse();
  h.data_at = header_at + header_len;
  return h;
}

void check_type(const NpyHeader& h, std::optional<DType> type, const std::string& name) {
  if (type && *type != h.type)
    fail(name, "--type " + type_text(*type) + " disagrees with the file's dtype '" + h.descr + "'");
}

void check_npy_size(const NpyHeader& h, std::uint64_t size, const std::string& name) {
  const std::uint64_t want = h.n * size_of(h.type);
  if (size - h.data_at < want)
    fail(name, "truncated: ends at byte " + count(size) + "; the header says " + count(h.n) +
                   " elements, which need bytes " + count(h.data_at) + " to " + count(h.data_at + want));
  if (size - h.data_at > want)
    fail(name, count(size - h.data_at - want) + " unexpected bytes after the " + count(h.n) + " elements");
}

}  // namespace input

void save_npy(const std::string& path, HostArray data, const std::vector<std::uint64_t>& shape, bool fortran_order) {
  if (type_info(data.type).npy.empty())
    throw InvalidArgument("save_npy: " + std::string(to_string(data.type)) +
                          " has no .npy dtype (NumPy has no such type); write it raw (save_raw)");
  std::uint64_t product = 1;
  std::string dims;
  for (auto d : shape) {
    product *= d;
    dims += std::to_string(d) + ", ";
  }
  if (shape.empty()) dims = std::to_string(data.n) + ", ";
  else if (product != data.n)
    throw InvalidArgument("save_npy: a shape of " + std::to_string(product) + " elements for " + std::to_string(data.n));
  if (shape.size() > 1) dims.erase(dims.size() - 2);  // (3, 4), but (3,)
  else dims.pop_back();
  std::string dict = "{'descr': '" + std::string(type_info(data.type).npy) + "', 'fortran_order': " +
                     (fortran_order ? "True" : "False") + ", 'shape': (" + dims + "), }";
  // Version 1.0: magic, version, 2-byte length, dict padded with spaces to a 64-byte boundary.
  const std::size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string header = "\x93NUMPY";
  header.push_back('\x01');
  header.push_back('\x00');
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  header += dict;
  input::write_file(path, header.data(), header.size(), data);
}

}  // namespace xr
