// The OpenCL C sources of kernels_cl/, embedded at build time (cmake/XreduceEmbedCL.cmake
// generates the definition of embedded_sources()).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace xr::opencl::detail {

struct EmbeddedSource {
  const char* name;  // file name, e.g. "reduce.cl"
  const char* text;
};

std::span<const EmbeddedSource> embedded_sources();

// The source named `name`; throws xr::Error when it was not embedded.
std::string_view embedded_source(std::string_view name);

// The text of a program: one embedded source, or several named "a.cl+b.cl", in that order (each
// after a #line that names it).
std::string program_text(std::string_view names);

}  // namespace xr::opencl::detail
