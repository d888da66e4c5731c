// Reading inputs from files: raw binary, NumPy .npy, and text with one number a line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "xreduce/buffer.hpp"
#include "xreduce/export.hpp"

namespace xr {

enum class FileFormat : std::uint8_t { Auto, Raw, Npy, Text };
XR_API FileFormat parse_file_format(std::string_view text);

// Auto picks .npy by its magic bytes, Text for .txt/.csv, Raw otherwise. Raw and Text take
// the element type from `type` (required for Raw; Text defaults to f64); .npy takes it from
// its header, and a `type` that disagrees is an error. Throws InputError naming the file and
// the problem: unreadable, truncated, size not a multiple of the element size, unsupported
// .npy dtype, an unparsable line (with its number).
XR_API HostBuffer load_file(const std::string& path, std::optional<DType> type = std::nullopt,
                            FileFormat format = FileFormat::Auto);

// Where the elements of a raw or .npy file lie, checked as load_file checks them (the same
// errors), without reading the data. A text file has no fixed layout: InvalidArgument.
struct FileLayout {
  FileFormat format = FileFormat::Raw;  // Raw or Npy
  DType type = DType::F32;
  std::uint64_t n = 0;                  // elements
  std::uint64_t data_offset = 0;        // byte offset of element 0
  std::uint64_t file_size = 0;          // bytes
};
XR_API FileLayout inspect_file(const std::string& path, std::optional<DType> type = std::nullopt,
                               FileFormat format = FileFormat::Auto);

XR_API void save_raw(const std::string& path, HostArray data);
XR_API void save_npy(const std::string& path, HostArray data);

}  // namespace xr
