// Reading inputs from files: raw binary, NumPy .npy, and text with one number a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/buffer.hpp"
#include "xreduce/export.hpp"

namespace xr {

enum class FileFormat : std::uint8_t { Auto, Raw, Npy, Text };
XR_API FileFormat parse_file_format(std::string_view text);

// The longest line a text input may have, in bytes without its newline.
inline constexpr std::size_t kMaxTextLine = 4096;

// Reads a whole input into memory. `path` is opened once. Auto picks .npy by its magic bytes,
// Text for .txt/.csv, Raw otherwise. Raw and Text take the element type from `type` (required
// for Raw; Text defaults to f64); .npy takes it from its header, and a `type` that disagrees is
// an error. `max_elements` bounds what is read: at most the first max_elements elements.
//
// What the path names: a regular file; a pipe, FIFO or socket, read front to back once (the
// format is detected from the bytes already read), and so is a file that reports 0 bytes yet
// holds data (procfs, sysfs); a character or block device, which may never end, only with
// max_elements; a directory is refused.
//
// Text: one number a line, '#' comments and blank lines skipped, spaces, tabs and a CR around
// the number ignored. The whole token must parse as the type (a finite number must be in its
// range); control bytes are refused, and so is a line longer than kMaxTextLine.
// .npy: versions 1-3; the header is the Python literal of a dict with the keys 'descr' (an element
// type's TypeInfo::npy: '<i4' '<i8' '<f4' '<f8'), 'fortran_order' (True or False) and 'shape' (a tuple of
// non-negative integers), each exactly once; the data size is checked against the shape before
// any data is read.
// An input read into memory may hold at most half of the machine's memory.
//
// Throws InputError naming the input and the problem in one line (control characters escaped,
// quoted input cut to about 80 characters): unreadable, truncated, size not a multiple of the
// element size, unsupported .npy dtype, a malformed header, an unparsable line (with its number).
XR_API HostBuffer load_file(const std::string& path, std::optional<DType> type = std::nullopt,
                     FileFormat format = FileFormat::Auto, std::optional<std::uint64_t> max_elements = std::nullopt);

// The same for an open descriptor, read front to back from where it stands (stdin, a pipe);
// `name` is the input's name in messages. The descriptor is not closed.
XR_API HostBuffer load_stream(int fd, const std::string& name, std::optional<DType> type = std::nullopt,
                       FileFormat format = FileFormat::Auto,
                       std::optional<std::uint64_t> max_elements = std::nullopt);

// Where the elements of a regular raw or .npy file lie, checked as load_file checks them (the
// same errors), without reading the data. A text file has no fixed layout, and a pipe, a device
// or a file that reports 0 bytes yet holds data no place to read from at will: InvalidArgument.
struct FileLayout {
  FileFormat format = FileFormat::Raw;  // Raw or Npy
  DType type = DType::F32;
  std::uint64_t n = 0;                  // elements
  std::uint64_t data_offset = 0;        // byte offset of element 0
  std::uint64_t file_size = 0;          // bytes
  std::vector<std::uint64_t> shape;     // .npy: its 'shape' (a raw file: empty)
  bool fortran_order = false;           // .npy: its 'fortran_order'
};
XR_API FileLayout inspect_file(const std::string& path, std::optional<DType> type = std::nullopt,
                               FileFormat format = FileFormat::Auto);

XR_API void save_raw(const std::string& path, HostArray data);
// `shape`: the dimensions written to the header (empty: one dimension of data.n), whose product
// must be data.n; `fortran_order`: the header's flag (the caller's data are in that order).
XR_API void save_npy(const std::string& path, HostArray data, const std::vector<std::uint64_t>& shape = {},
                     bool fortran_order = false);

}  // namespace xr
