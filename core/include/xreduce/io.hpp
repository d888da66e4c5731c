// Reading inputs from files: raw binary, NumPy .npy, and text with one number a line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "xreduce/buffer.hpp"

namespace xr {

enum class FileFormat : std::uint8_t { Auto, Raw, Npy, Text };
FileFormat parse_file_format(std::string_view text);

// Auto picks .npy by its magic bytes, Text for .txt/.csv, Raw otherwise. Raw and Text take
// the element type from `type` (required for Raw; Text defaults to f64); .npy takes it from
// its header, and a `type` that disagrees is an error. Throws InputError naming the file and
// the problem: unreadable, truncated, size not a multiple of the element size, unsupported
// .npy dtype, an unparsable line (with its number).
HostBuffer load_file(const std::string& path, std::optional<DType> type = std::nullopt,
                     FileFormat format = FileFormat::Auto);

void save_raw(const std::string& path, HostArray data);
void save_npy(const std::string& path, HostArray data);

}  // namespace xr
