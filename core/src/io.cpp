#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "xreduce/error.hpp"
#include "xreduce/io.hpp"

namespace xr {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw InputError(path + ": " + problem);
}

File open_file(const std::string& path, const char* mode) {
  File f(std::fopen(path.c_str(), mode));
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  return f;
}

std::uint64_t file_size(std::FILE* f, const std::string& path) {
  if (std::fseek(f, 0, SEEK_END) != 0) fail(path, std::string("cannot seek: ") + std::strerror(errno));
  const long size = std::ftell(f);
  if (size < 0) fail(path, std::string("cannot tell size: ") + std::strerror(errno));
  std::rewind(f);
  return static_cast<std::uint64_t>(size);
}

// Reads exactly `bytes` into dst at the current position, or fails with the offset reached.
void read_exact(std::FILE* f, void* dst, std::uint64_t bytes, std::uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, 1u << 26));
    const std::size_t got = std::fread(p + done, 1, want, f);
    done += got;
    if (got < want) {
      if (std::ferror(f)) fail(path, "read error at byte " + std::to_string(offset + done) + ": " + std::strerror(errno));
      fail(path, "truncated: ends at byte " + std::to_string(offset + done) + ", expected " +
                     std::to_string(offset + bytes) + " bytes");
    }
  }
}

std::string type_text(DType t) { return std::string(to_string(t)); }

// Where the elements of a raw file lie; the size must be a whole number of elements.
FileLayout raw_layout(const std::string& path, std::optional<DType> type) {
  if (!type) fail(path, "raw binary input needs an element type (--type i32|i64|f32|f64)");
  File f = open_file(path, "rb");
  const std::uint64_t size = file_size(f.get(), path);
  const std::uint64_t elem = size_of(*type);
  if (size % elem != 0)
    fail(path, "size " + std::to_string(size) + " bytes is not a multiple of the " + std::to_string(elem) +
                   "-byte " + type_text(*type) + " element (" + std::to_string(size % elem) + " bytes left over)");
  return {FileFormat::Raw, *type, size / elem, 0, size};
}

// The value of key `key` in a .npy header dict, e.g. "'<f4'" or "(3, 4)".
std::string npy_field(const std::string& header, const std::string& key, const std::string& path) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "malformed .npy header: no '" + key + "' in " + header);
  auto pos = header.find(':', at);
  if (pos == std::string::npos) fail(path, "malformed .npy header near '" + key + "'");
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  const char open = header[pos];
  const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  const auto end = header.find(close, pos + 1);
  if (end == std::string::npos) fail(path, "malformed .npy header near '" + key + "'");
  return header.substr(pos, end - pos + (close == ',' ? 0 : 1));
}

// Where the elements of a .npy file lie, from its header, checked against the file's size.
FileLayout npy_layout(const std::string& path, std::optional<DType> type) {
  File f = open_file(path, "rb");
  const std::uint64_t size = file_size(f.get(), path);
  unsigned char pre[12];
  if (size < 10) fail(path, "truncated .npy: " + std::to_string(size) + " bytes, shorter than its preamble");
  read_exact(f.get(), pre, 10, 0, path);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = pre[6];
  std::uint64_t header_len = 0, header_at = 10;
  if (major == 1) {
    header_len = pre[8] | (pre[9] << 8);
  } else if (major == 2 || major == 3) {
    read_exact(f.get(), pre + 10, 2, 10, path);
    header_len = pre[8] | (pre[9] << 8) | (std::uint64_t(pre[10]) << 16) | (std::uint64_t(pre[11]) << 24);
    header_at = 12;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (header_at + header_len > size) fail(path, "truncated .npy: header runs past the end of the file");
  std::string header(header_len, '\0');
  read_exact(f.get(), header.data(), header_len, header_at, path);

  const std::string descr = npy_field(header, "descr", path);
  static const std::pair<const char*, DType> dtypes[] = {
      {"'<i4'", DType::I32}, {"'<i8'", DType::I64}, {"'<f4'", DType::F32}, {"'<f8'", DType::F64}};
  std::optional<DType> file_type;
  for (const auto& [name, t] : dtypes)
    if (descr == name) file_type = t;
  if (!file_type) fail(path, "unsupported .npy dtype " + descr + " (supported: '<i4' '<i8' '<f4' '<f8')");
  if (type && *type != *file_type)
    fail(path, "--type " + type_text(*type) + " disagrees with the file's dtype " + descr);
  if (npy_field(header, "fortran_order", path) != "False" && npy_field(header, "fortran_order", path) != "True")
    fail(path, "malformed .npy header: fortran_order");

  const std::string shape = npy_field(header, "shape", path);
  std::uint64_t n = 1;
  for (std::size_t pos = 1; pos + 1 < shape.size();) {
    while (pos < shape.size() && (shape[pos] == ' ' || shape[pos] == ',')) ++pos;
    if (pos + 1 >= shape.size()) break;
    std::uint64_t dim = 0;
    const auto [end, ec] = std::from_chars(shape.data() + pos, shape.data() + shape.size() - 1, dim);
    if (ec != std::errc()) fail(path, "malformed .npy shape " + shape);
    if (dim != 0 && n > std::numeric_limits<std::uint64_t>::max() / 8 / dim) fail(path, ".npy shape too large: " + shape);
    n *= dim;
    pos = static_cast<std::size_t>(end - shape.data());
  }
  const std::uint64_t data_at = header_at + header_len;
  const std::uint64_t want = n * size_of(*file_type);
  if (size - data_at < want)
    fail(path, "truncated: ends at byte " + std::to_string(size) + "; the header says " + std::to_string(n) +
                   " elements, which need bytes " + std::to_string(data_at) + " to " + std::to_string(data_at + want));
  if (size - data_at > want)
    fail(path, std::to_string(size - data_at - want) + " unexpected bytes after the " + std::to_string(n) + " elements");
  return {FileFormat::Npy, *file_type, n, data_at, size};
}

HostBuffer load_layout(const std::string& path, const FileLayout& layout) {
  File f = open_file(path, "rb");
  if (layout.data_offset && std::fseek(f.get(), static_cast<long>(layout.data_offset), SEEK_SET) != 0)
    fail(path, "cannot seek to byte " + std::to_string(layout.data_offset) + ": " + std::strerror(errno));
  HostBuffer buf(layout.type, layout.n);
  read_exact(f.get(), buf.data(), layout.n * size_of(layout.type), layout.data_offset, path);
  return buf;
}

template <class T> bool parse_number(std::string_view text, T& out) {
  if constexpr (std::is_floating_point_v<T>) {
    // strtod accepts "nan", "inf" and hex floats; from_chars of this libstdc++ is stricter.
    std::string s(text);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') return false;
    out = static_cast<T>(v);
    return true;
  } else {
    const char* b = text.data();
    if (!text.empty() && text[0] == '+') ++b;
    const auto [end, ec] = std::from_chars(b, text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
  }
}

HostBuffer load_text(const std::string& path, std::optional<DType> type) {
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  const DType t = type.value_or(DType::F64);
  return visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> values;
    std::string line;
    for (std::uint64_t number = 1; std::getline(in, line); ++number) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      const auto last = line.find_last_not_of(" \t\r");
      const std::string_view text(line.data() + first, last - first + 1);
      T v{};
      if (!parse_number(text, v))
        fail(path, "line " + std::to_string(number) + ": cannot parse '" + std::string(text) + "' as " + type_text(t));
      values.push_back(v);
    }
    if (in.bad()) fail(path, std::string("read error: ") + std::strerror(errno));
    HostBuffer buf(t, values.size());
    if (!values.empty()) std::memcpy(buf.data(), values.data(), values.size() * sizeof(T));
    return buf;
  });
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool has_npy_magic(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  char magic[6] = {};
  return f && std::fread(magic, 1, 6, f.get()) == 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0;
}

void write_all(const std::string& path, const void* header, std::size_t header_bytes, HostArray data) {
  File f = open_file(path, "wb");
  const std::uint64_t bytes = data.n * size_of(data.type);
  if ((header_bytes && std::fwrite(header, 1, header_bytes, f.get()) != header_bytes) ||
      (bytes && std::fwrite(data.data, 1, bytes, f.get()) != bytes) || std::fflush(f.get()) != 0)
    fail(path, std::string("write failed: ") + std::strerror(errno));
}

}  // namespace

FileFormat parse_file_format(std::string_view text) {
  if (text == "auto") return FileFormat::Auto;
  if (text == "raw") return FileFormat::Raw;
  if (text == "npy") return FileFormat::Npy;
  if (text == "text") return FileFormat::Text;
  throw InvalidArgument("unknown file format '" + std::string(text) + "' (expected auto, raw, npy or text)");
}

FileFormat resolve_format(const std::string& path, FileFormat format) {
  if (format != FileFormat::Auto) return format;
  if (has_npy_magic(path)) return FileFormat::Npy;
  if (ends_with(path, ".npy")) return FileFormat::Npy;  // reports the bad magic
  if (ends_with(path, ".txt") || ends_with(path, ".csv")) return FileFormat::Text;
  return FileFormat::Raw;
}

FileLayout inspect_file(const std::string& path, std::optional<DType> type, FileFormat format) {
  switch (resolve_format(path, format)) {
    case FileFormat::Npy: return npy_layout(path, type);
    case FileFormat::Text:
      throw InvalidArgument(path + ": a text file has no fixed layout (parse it whole with load_file)");
    default: return raw_layout(path, type);
  }
}

HostBuffer load_file(const std::string& path, std::optional<DType> type, FileFormat format) {
  format = resolve_format(path, format);
  if (format == FileFormat::Text) return load_text(path, type);
  return load_layout(path, inspect_file(path, type, format));
}

void save_raw(const std::string& path, HostArray data) { write_all(path, nullptr, 0, data); }

void save_npy(const std::string& path, HostArray data) {
  static const char* descr[] = {"<i4", "<i8", "<f4", "<f8"};
  std::string dict = std::string("{'descr': '") + descr[static_cast<int>(data.type)] +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(data.n) + ",), }";
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
