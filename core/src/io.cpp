#include <fcntl.h>
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
#include "npy.hpp"
#include "reader.hpp"
#include "xreduce/error.hpp"
#include "xreduce/io.hpp"

namespace xr {
namespace input {

void fail(const std::string& name, const std::string& problem) { throw InputError(printable(name, 256) + ": " + problem); }

namespace {

// Inputs read whole into memory may take half of the machine's memory.
std::uint64_t memory_cap() { return host_memory_bytes() / 2; }

void check_fits_memory(std::uint64_t bytes, const std::string& name, const std::string& what) {
  if (bytes > memory_cap())
    fail(name, what + " need " + format_bytes(bytes) + " of memory, more than half of this machine's " +
                   format_bytes(memory_cap() * 2));
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Auto: .npy by the magic in the first bytes, then by the name.
FileFormat resolve(Reader& r, const std::string& name, FileFormat format) {
  if (format != FileFormat::Auto) return format;
  if (r.peek(kNpyMagic.size()) == kNpyMagic) return FileFormat::Npy;
  if (ends_with(name, ".npy")) return FileFormat::Npy;  // reports the bad magic
  if (ends_with(name, ".txt") || ends_with(name, ".csv")) return FileFormat::Text;
  return FileFormat::Raw;
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

namespace {

// True when `fd` has no byte at offset 0 (a read error counts as a byte: reading it will say so).
bool empty_at_start(int fd) {
  char byte;
  ssize_t got;
  do {
    got = ::pread(fd, &byte, 1, 0);
  } while (got < 0 && errno == EINTR);
  return got == 0;
}

}  // namespace

Opened classify(int fd, const std::string& name, bool bounded) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(name, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(name, "is a directory");
  if (S_ISREG(st.st_mode)) {
    if (st.st_size == 0 && !empty_at_start(fd)) return {Kind::Unsized, 0};
    return {Kind::Regular, static_cast<std::uint64_t>(st.st_size)};
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    if (!bounded)
      fail(name, std::string(S_ISCHR(st.st_mode) ? "a character" : "a block") +
                     " device, which may never end: give the number of elements to read (--n)");
    return {Kind::Device, 0};
  }
  return {Kind::Stream, 0};
}

void refuse_in_place(const std::string& path, Kind kind) {
  throw InvalidArgument(printable(path, 256) +
                        (kind == Kind::Unsized ? ": reports a size of 0 bytes yet holds data (procfs, sysfs)"
                                               : ": not a regular file (a pipe, FIFO, socket or device)") +
                        ": it cannot be read in place; load_file reads it into memory");
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

void write_file(const std::string& path, const void* header, std::size_t header_bytes, HostArray data) {
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
  if (what.kind != input::Kind::Regular) input::refuse_in_place(path, what.kind);
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


void save_raw(const std::string& path, HostArray data) { input::write_file(path, nullptr, 0, data); }

}  // namespace xr
