#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "input_internal.hpp"
#include "xreduce/error.hpp"
#include "xreduce/io.hpp"

namespace xr {
namespace input {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw InputError(printable(name, 256) + ": " + problem);
}

std::string quoted(std::string_view text) { return "'" + printable(text) + "'"; }
std::string type_text(DType t) { return std::string(to_string(t)); }
std::string count(std::uint64_t v) { return std::to_string(v); }

// Inputs read whole into memory may take half of the machine's memory.
std::uint64_t memory_cap() { return host_memory_bytes() / 2; }

void check_fits_memory(std::uint64_t bytes, const std::string& name, const std::string& what) {
  if (bytes > memory_cap())
    fail(name, what + " need " + format_bytes(bytes) + " of memory, more than half of this machine's " +
                   format_bytes(memory_cap() * 2));
}

// Reads a descriptor front to back through a buffer: what was read to detect the format is
// read again from the buffer, never from the input.
class Reader {
 public:
  Reader(int fd, std::string name) : fd_(fd), name_(std::move(name)), buf_(std::size_t{1} << 16) {}

  // Up to `n` bytes ahead (fewer only at the end), without consuming them.
  std::string_view peek(std::size_t n) {
    while (end_ - pos_ < n && fill()) {
    }
    return {buf_.data() + pos_, std::min(n, end_ - pos_)};
  }

  // Copies up to `n` bytes; fewer only at the end.
  std::uint64_t read(void* dst, std::uint64_t n) {
    auto* out = static_cast<char*>(dst);
    std::uint64_t done = 0;
    while (done < n) {
      if (pos_ == end_) {
        if (n - done >= buf_.size()) {  // large reads go straight to dst
          const std::size_t got = read_some(out + done, static_cast<std::size_t>(std::min<std::uint64_t>(n - done, 1u << 26)));
          if (got == 0) break;
          done += got;
          consumed_ += got;
          continue;
        }
        if (!fill()) break;
      }
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, end_ - pos_));
      std::memcpy(out + done, buf_.data() + pos_, take);
      pos_ += take;
      consumed_ += take;
      done += take;
    }
    return done;
  }

  bool at_end() { return pos_ == end_ && !fill(); }
  std::uint64_t offset() const { return consumed_; }

  enum class Line { Read, End, TooLong };
  // The next line without its '\n' (the last may lack it); TooLong past `max` bytes.
  Line line(std::string& text, std::size_t max) {
    text.clear();
    if (pos_ == end_ && !fill()) return Line::End;
    for (;;) {
      const char* begin = buf_.data() + pos_;
      const std::size_t avail = end_ - pos_;
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', avail));
      const std::size_t take = newline ? static_cast<std::size_t>(newline - begin) : avail;
      if (text.size() + take > max) {  // what fits is kept, for the caller's checks
        text.append(begin, max - text.size());
        return Line::TooLong;
      }
      text.append(begin, take);
      pos_ += take + (newline ? 1 : 0);
      consumed_ += take + (newline ? 1 : 0);
      if (newline || !fill()) return Line::Read;
    }
  }

 private:
  // Appends what the input gives to the buffer; false at its end.
  bool fill() {
    if (eof_) return false;
    if (pos_ == end_) pos_ = end_ = 0;
    if (end_ == buf_.size()) {  // keep the unread part, make room after it
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
      if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    }
    const std::size_t got = read_some(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += got;
    return true;
  }

  std::size_t read_some(char* dst, std::size_t n) {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for data
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      fail(name_, "read error at byte " + count(consumed_) + ": " + std::strerror(errno));
    }
  }

  int fd_;
  std::string name_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t consumed_ = 0;
};

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

constexpr std::string_view kNpyMagic("\x93NUMPY", 6);

// Auto: .npy by the magic in the first bytes, then by the name.
FileFormat resolve(Reader& r, const std::string& name, FileFormat format) {
  if (format != FileFormat::Auto) return format;
  if (r.peek(kNpyMagic.size()) == kNpyMagic) return FileFormat::Npy;
  if (ends_with(name, ".npy")) return FileFormat::Npy;  // reports the bad magic
  if (ends_with(name, ".txt") || ends_with(name, ".csv")) return FileFormat::Text;
  return FileFormat::Raw;
}

// ---- .npy -----------------------------------------------------------------------------------

// The largest header accepted (numpy writes a few hundred bytes; it reads at most 10,000 by default).
constexpr std::uint64_t kMaxNpyHeader = 65536;

struct NpyHeader {
  DType type = DType::F32;
  std::string descr;
  std::uint64_t n = 1;
  std::uint64_t data_at = 0;
  std::vector<std::uint64_t> shape;
  bool fortran_order = false;
};

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

// The preamble and header of a .npy input at the reader's start. `size`: the file's bytes,
// when known, which the header must fit in.
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

// A regular file's elements against its header: neither fewer bytes nor more.
void check_npy_size(const NpyHeader& h, std::uint64_t size, const std::string& name) {
  const std::uint64_t want = h.n * size_of(h.type);
  if (size - h.data_at < want)
    fail(name, "truncated: ends at byte " + count(size) + "; the header says " + count(h.n) +
                   " elements, which need bytes " + count(h.data_at) + " to " + count(h.data_at + want));
  if (size - h.data_at > want)
    fail(name, count(size - h.data_at - want) + " unexpected bytes after the " + count(h.n) + " elements");
}

FileLayout raw_layout(const std::string& name, std::uint64_t size, std::optional<DType> type) {
  if (!type) {
    std::string names;
    for (const TypeInfo& t : type_table) names += (names.empty() ? "" : "|") + std::string(t.name);
    fail(name, "raw binary input needs an element type (--type " + names + ")");
  }
  const std::uint64_t elem = size_of(*type);
  if (size % elem != 0)
    fail(name, "size " + count(size) + " bytes is not a multiple of the " + count(elem) + "-byte " + type_text(*type) +
                   " element (" + count(size % elem) + " bytes left over)");
  return {FileFormat::Raw, *type, size / elem, 0, size, {}, false};  // a raw file has no shape
}

// ---- text -----------------------------------------------------------------------------------

template <class T> bool parse_number(std::string_view text, T& out, bool& out_of_range) {
  out_of_range = false;
  if constexpr (is_float_v<T>) {
    // strtod takes "nan", "inf" and hex floats (from_chars of this libstdc++ does not). It
    // also skips leading spaces and stops at a NUL: neither reaches it (trimmed, refused).
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return false;
    const bool finite_text = std::isfinite(v) || errno == ERANGE;
    // f16 and bf16 through float: rounding twice gives the value rounded once, float having more
    // than twice their bits and two more.
    if constexpr (is_half_v<T>) out = T(static_cast<float>(v));
    else out = static_cast<T>(v);
    out_of_range = finite_text && !std::isfinite(static_cast<double>(out));
    return true;
  } else {
    // One optional sign, then digits only ("+-5" and "--5" are no numbers).
    const auto digit_at = [](std::string_view s, std::size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
    std::string_view body = text;
    if (!body.empty() && body[0] == '+') body.remove_prefix(1);  // from_chars takes '-' but not '+'
    const std::size_t first_digit = !body.empty() && body[0] == '-' && text[0] != '+' ? 1 : 0;
    if (!digit_at(body, first_digit)) return false;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), out);
    out_of_range = ec == std::errc::result_out_of_range;
    return (ec == std::errc() || out_of_range) && end == body.data() + body.size();
  }
}

template <class T>
std::vector<T> parse_text(Reader& r, const std::string& name, DType t, std::optional<std::uint64_t> max_elements) {
  std::vector<T> values;
  const std::uint64_t most = max_elements.value_or(std::numeric_limits<std::uint64_t>::max());
  std::string line;
  for (std::uint64_t number = 1; values.size() < most; ++number) {
    const auto state = r.line(line, kMaxTextLine);
    if (state == Reader::Line::End) break;
    const std::string where = "line " + count(number) + ": ";
    for (std::size_t i = 0; i < line.size(); ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
        fail(name, where + "control byte " + quoted(line.substr(i, 1)) + " at byte " + count(i + 1));
    }
    if (state == Reader::Line::TooLong) fail(name, where + "longer than " + count(kMaxTextLine) + " bytes");
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string_view text(line.data() + first, last - first + 1);
    T v{};
    bool out_of_range = false;
    if (!parse_number(text, v, out_of_range))
      fail(name, where + "cannot parse " + quoted(text) + " as " + type_text(t));
    if (out_of_range) fail(name, where + printable(text) + " is out of the " + type_text(t) + " range");
    if (values.size() % (1u << 20) == 0) check_fits_memory((values.size() + (1u << 20)) * sizeof(T), name, "its values");
    values.push_back(v);
  }
  return values;
}

HostBuffer load_text(Reader& r, const std::string& name, std::optional<DType> type,
                     std::optional<std::uint64_t> max_elements) {
  const DType t = type.value_or(DType::F64);
  return visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> values = parse_text<T>(r, name, t, max_elements);
    HostBuffer buf(t, values.size());
    if (!values.empty()) std::memcpy(buf.data(), values.data(), values.size() * sizeof(T));
    return buf;
  });
}

// ---- whole inputs ---------------------------------------------------------------------------

// Exactly `n` elements of `type` from the reader into memory, else InputError from `truncated`.
template <class Truncated>
HostBuffer read_elements(Reader& r, const std::string& name, DType type, std::uint64_t n, Truncated truncated) {
  check_fits_memory(n * size_of(type), name, count(n) + " " + type_text(type) + " elements");
  HostBuffer buf(type, n);
  const std::uint64_t start = r.offset(), want = n * size_of(type);
  const std::uint64_t got = r.read(buf.data(), want);
  if (got < want) truncated(start + got, start + want);
  return buf;
}

// A raw stream of unknown length: blocks until its end or the bound, then one buffer.
HostBuffer read_raw_stream(Reader& r, const std::string& name, DType type, std::optional<std::uint64_t> max_elements) {
  const std::uint64_t elem = size_of(type);
  const std::uint64_t cap = memory_cap();
  const std::uint64_t limit = max_elements && *max_elements <= cap / elem ? *max_elements * elem : cap + 1;
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  std::vector<std::unique_ptr<char[]>> blocks;
  std::uint64_t total = 0;
  for (;;) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, limit - total));
    if (want == 0) break;
    blocks.emplace_back(new char[want]);
    const std::uint64_t got = r.read(blocks.back().get(), want);
    total += got;
    if (got < want) break;
  }
  if (total > cap)
    fail(name, "more than " + format_bytes(cap) + " (half of this machine's memory) without an end; bound it with a "
               "number of elements (--n)");
  if (total % elem != 0)
    fail(name, "size " + count(total) + " bytes is not a multiple of the " + count(elem) + "-byte " + type_text(type) +
                   " element (" + count(total % elem) + " bytes left over)");
  HostBuffer buf(type, total / elem);
  std::uint64_t at = 0;
  for (const auto& b : blocks) {
    const std::uint64_t take = std::min<std::uint64_t>(kBlock, total - at);
    if (take) std::memcpy(static_cast<char*>(buf.data()) + at, b.get(), take);
    at += take;
  }
  return buf;
}

}  // namespace

Descriptor::~Descriptor() {
  if (fd_ >= 0) ::close(fd_);
}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int Descriptor::release() noexcept { return std::exchange(fd_, -1); }

Descriptor open_path(const std::string& path, bool nonblocking) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0));
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  return Descriptor(fd);
}

Opened classify(int fd, const std::string& name, bool bounded) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(name, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(name, "is a directory");
  if (S_ISREG(st.st_mode)) return {Kind::Regular, static_cast<std::uint64_t>(st.st_size)};
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    if (!bounded)
      fail(name, std::string(S_ISCHR(st.st_mode) ? "a character" : "a block") +
                     " device, which may never end: give the number of elements to read (--n)");
    return {Kind::Device, 0};
  }
  return {Kind::Stream, 0};
}

FileFormat resolve_regular(int fd, const std::string& name, FileFormat format) {
  if (format != FileFormat::Auto) return format;
  char head[kNpyMagic.size()] = {};
  ssize_t got;
  do {
    got = ::pread(fd, head, sizeof head, 0);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof head) && std::string_view(head, sizeof head) == kNpyMagic) return FileFormat::Npy;
  if (ends_with(name, ".npy")) return FileFormat::Npy;
  if (ends_with(name, ".txt") || ends_with(name, ".csv")) return FileFormat::Text;
  return FileFormat::Raw;
}

FileLayout inspect_regular(int fd, const std::string& name, std::uint64_t size, std::optional<DType> type,
                           FileFormat format) {
  switch (resolve_regular(fd, name, format)) {
    case FileFormat::Text:
      throw InvalidArgument(printable(name, 256) + ": a text file has no fixed layout (parse it whole with load_file)");
    case FileFormat::Npy: {
      Reader r(fd, name);
      const NpyHeader h = read_npy_header(r, name, size);
      check_type(h, type, name);
      check_npy_size(h, size, name);
      return {FileFormat::Npy, h.type, h.n, h.data_at, size, h.shape, h.fortran_order};
    }
    case FileFormat::Auto:  // resolve_regular gives the file's format, never Auto
    case FileFormat::Raw: break;
  }
  return raw_layout(name, size, type);
}

HostBuffer read_whole(int fd, const std::string& name, std::optional<std::uint64_t> size, std::optional<DType> type,
                      FileFormat format, std::optional<std::uint64_t> max_elements) {
  Reader r(fd, name);
  const auto bounded = [&](std::uint64_t n) { return max_elements ? std::min(n, *max_elements) : n; };
  switch (resolve(r, name, format)) {
    case FileFormat::Text: return load_text(r, name, type, max_elements);
    case FileFormat::Npy: {
      const NpyHeader h = read_npy_header(r, name, size);
      check_type(h, type, name);
      if (size) check_npy_size(h, *size, name);  // before any data is read
      const std::uint64_t n = bounded(h.n);
      HostBuffer buf = read_elements(r, name, h.type, n, [&](std::uint64_t at, std::uint64_t) {
        fail(name, "truncated: ends at byte " + count(at) + "; the header says " + count(h.n) +
                       " elements, which need bytes " + count(h.data_at) + " to " +
                       count(h.data_at + h.n * size_of(h.type)));
      });
      if (n == h.n && !size && !r.at_end()) fail(name, "unexpected bytes after the " + count(h.n) + " elements");
      return buf;
    }
    case FileFormat::Auto:  // resolve gives the input's format, never Auto
    case FileFormat::Raw: break;
  }
  if (!size) {
    if (!type) fail(name, "raw binary input needs an element type (--type i32|i64|f32|f64)");
    return read_raw_stream(r, name, *type, max_elements);
  }
  const FileLayout layout = raw_layout(name, *size, type);
  return read_elements(r, name, layout.type, bounded(layout.n), [&](std::uint64_t at, std::uint64_t expected) {
    fail(name, "truncated: ends at byte " + count(at) + ", expected " + count(expected) + " bytes");
  });
}

}  // namespace input

FileFormat parse_file_format(std::string_view text) {
  if (text == "auto") return FileFormat::Auto;
  if (text == "raw") return FileFormat::Raw;
  if (text == "npy") return FileFormat::Npy;
  if (text == "text") return FileFormat::Text;
  throw InvalidArgument("unknown file format '" + printable(text) + "' (expected auto, raw, npy or text)");
}

FileLayout inspect_file(const std::string& path, std::optional<DType> type, FileFormat format) {
  const input::Descriptor fd = input::open_path(path, true);
  const input::Opened what = input::classify(fd.get(), path, true);
  if (what.kind != input::Kind::Regular)
    throw InvalidArgument(printable(path, 256) +
                          ": not a regular file (a pipe, FIFO, socket or device): it cannot be read in place; "
                          "load_file reads it into memory");
  return input::inspect_regular(fd.get(), path, what.size, type, format);
}

HostBuffer load_file(const std::string& path, std::optional<DType> type, FileFormat format,
                     std::optional<std::uint64_t> max_elements) {
  const input::Descriptor fd = input::open_path(path);
  const input::Opened what = input::classify(fd.get(), path, max_elements.has_value());
  return input::read_whole(fd.get(), path, what.kind == input::Kind::Regular ? std::optional(what.size) : std::nullopt,
                           type, format, max_elements);
}

HostBuffer load_stream(int fd, const std::string& name, std::optional<DType> type, FileFormat format,
                       std::optional<std::uint64_t> max_elements) {
  input::classify(fd, name, max_elements.has_value());
  return input::read_whole(fd, name, std::nullopt, type, format, max_elements);
}

namespace {

void write_all(const std::string& path, const void* header, std::size_t header_bytes, HostArray data) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> f(std::fopen(path.c_str(), "wb"));
  if (!f) throw InputError(printable(path, 256) + ": cannot open: " + std::strerror(errno));
  const std::uint64_t bytes = data.n * size_of(data.type);
  if ((header_bytes && std::fwrite(header, 1, header_bytes, f.get()) != header_bytes) ||
      (bytes && std::fwrite(data.data, 1, bytes, f.get()) != bytes) || std::fflush(f.get()) != 0)
    throw InputError(printable(path, 256) + ": write failed: " + std::strerror(errno));
}

}  // namespace

void save_raw(const std::string& path, HostArray data) { write_all(path, nullptr, 0, data); }

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
  write_all(path, header.data(), header.size(), data);
}

}  // namespace xr
