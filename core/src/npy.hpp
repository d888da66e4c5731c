// The .npy format inside core (npy.cpp): an input's header and its checks; not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reader.hpp"
#include "xreduce/types.hpp"

namespace xr::input {

inline constexpr std::string_view kNpyMagic("\x93NUMPY", 6);

struct NpyHeader {
  DType type = DType::F32;
  std::string descr;
  std::uint64_t n = 1;
  std::uint64_t data_at = 0;
  std::vector<std::uint64_t> shape;
  bool fortran_order = false;
};

// The preamble and header of a .npy input at the reader's start. `size`: the file's bytes,
// when known, which the header must fit in.
NpyHeader read_npy_header(Reader& r, const std::string& name, std::optional<std::uint64_t> size);

// InputError when --type `type` is given and is not the header's.
void check_type(const NpyHeader& h, std::optional<DType> type, const std::string& name);

// A regular file's elements against its header: neither fewer bytes nor more.
void check_npy_size(const NpyHeader& h, std::uint64_t size, const std::string& name);

}  // namespace xr::input
