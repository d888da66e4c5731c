// Inputs opened once: what a descriptor is, and reading it front to back (io.cpp). Shared by
// io.cpp, npy.cpp and source.cpp; not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "xreduce/error.hpp"
#include "xreduce/io.hpp"

namespace xr::input {

// InputError "name: problem".
[[noreturn]] void fail(const std::string& name, const std::string& problem);

inline std::string quoted(std::string_view text) { return "'" + printable(text) + "'"; }
inline std::string type_text(DType t) { return std::string(to_string(t)); }
inline std::string count(std::uint64_t v) { return std::to_string(v); }

// Stream: a pipe, FIFO or socket. Unsized: a regular file that reports 0 bytes yet holds data
// (procfs, sysfs), read to its end as a stream is.
enum class Kind { Regular, Stream, Device, Unsized };

// An open descriptor, closed with its owner.
class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : fd_(other.release()) {}
  Descriptor& operator=(Descriptor&& other) noexcept;
  int get() const { return fd_; }
  int release() noexcept;

 private:
  int fd_ = -1;
};

// Opens `path` for reading (InputError naming it when it cannot). `nonblocking`: a FIFO opens
// at once, without waiting for a writer (for callers that refuse anything but regular files).
Descriptor open_path(const std::string& path, bool nonblocking = false);

struct Opened {
  Kind kind = Kind::Regular;
  std::uint64_t size = 0;  // bytes, for Regular
};
// What `fd` is. Throws InputError for a directory, and for a device unless `bounded` (a device
// may never end).
Opened classify(int fd, const std::string& name, bool bounded);

// InvalidArgument: `path`, of `kind` (not Regular), cannot be read in place.
[[noreturn]] void refuse_in_place(const std::string& path, Kind kind);

// Where the elements of the regular file `fd` (at offset 0) lie: inspect_file's checks.
FileLayout inspect_regular(int fd, const std::string& name, std::uint64_t size, std::optional<DType> type,
                           FileFormat format);

// The format `format` resolves to for the regular file `fd` (its first bytes, then its name).
FileFormat resolve_regular(int fd, const std::string& name, FileFormat format);

// Writes a header's bytes, then the array's, to `path`.
void write_file(const std::string& path, const void* header, std::size_t header_bytes, HostArray data);

// Reads `fd` from where it stands, once, into memory. `size`: the bytes left in a regular
// file (checked against a .npy header before any data is read); nullopt for a stream.
HostBuffer read_whole(int fd, const std::string& name, std::optional<std::uint64_t> size, std::optional<DType> type,
                      FileFormat format, std::optional<std::uint64_t> max_elements);

}  // namespace xr::input
