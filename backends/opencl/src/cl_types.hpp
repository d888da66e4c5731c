// The OpenCL C storage type of each element type, as the kernels' -D options name it.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "xreduce/types.hpp"

namespace xr::opencl::detail {

// "float" for f32. f16 is OpenCL C's half (stored; computed in float through vload_half); bf16
// has no OpenCL C type and is its bits, a ushort.
constexpr std::string_view cl_type_name(DType type) {
  switch (type) {
    case DType::I32: return "int";
    case DType::I64: return "long";
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I8: return "char";
    case DType::U8: return "uchar";
    case DType::U32: return "uint";
    case DType::U64: return "ulong";
    case DType::F16: return "half";
    case DType::BF16: return "ushort";
  }
  throw std::out_of_range("xr::opencl::cl_type_name: not a DType");
}
// A type of core's table without its case above reaches the throw while compiling: an error here.
static_assert(std::ranges::all_of(all_dtypes, [](DType t) { return !cl_type_name(t).empty(); }));

}  // namespace xr::opencl::detail
