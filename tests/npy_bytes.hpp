// Building .npy files byte by byte, well-formed or not, for the input tests.
#pragma once

#include <initializer_list>
#include <string>

namespace xr_npy_test {

// A .npy file of version 1.0 whose header dict is `dict` (padded with spaces and ended with a
// newline, as numpy writes it), followed by `data`.
inline std::string npy_bytes(std::string dict, const std::string& data) {
  const std::size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict + data;
}

// The bytes of `values` as they lie in memory.
template <class T, class Values> std::string bytes_of(const Values& values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}
template <class T> std::string bytes_of(std::initializer_list<T> values) { return bytes_of<T, std::initializer_list<T>>(values); }

}  // namespace xr_npy_test
