// The exceptions xreduce throws. The library never prints and never exits.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "xreduce/export.hpp"

namespace xr {

// `text` as it may appear in a one-line message: control characters escaped (\n, \t, \r,
// \xNN), and text longer than `max_chars` cut there, followed by "... (N bytes)".
XR_API std::string printable(std::string_view text, std::size_t max_chars = 80);

class XR_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad argument from the caller: unknown name, unsupported (kernel, op, type), bad size.
class XR_API InvalidArgument : public Error {
 public:
  using Error::Error;
};

// min or max of zero elements: there is no value to return.
class XR_API EmptyInput : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// An input file that cannot be read or parsed; the message names the file and the problem.
class XR_API InputError : public Error {
 public:
  using Error::Error;
};

// The backend was not compiled in, or has no usable device now; what() gives the reason.
class XR_API BackendUnavailable : public Error {
 public:
  BackendUnavailable(std::string backend, const std::string& reason)
      : Error(backend + " backend unavailable: " + reason), backend_(std::move(backend)) {}
  const std::string& backend() const { return backend_; }

 private:
  std::string backend_;
};

// A device API call failed. code() is the native code (cudaError_t, cl_int), code_name()
// its symbolic name (cudaErrorMemoryAllocation, CL_OUT_OF_RESOURCES).
class XR_API DeviceError : public Error {
 public:
  DeviceError(const std::string& what, int code, std::string code_name)
      : Error(what), code_(code), code_name_(std::move(code_name)) {}
  int code() const { return code_; }
  const std::string& code_name() const { return code_name_; }

 private:
  int code_;
  std::string code_name_;
};

// Device code failed to compile at run time; log() is the compiler's build log.
class XR_API KernelBuildError : public DeviceError {
 public:
  KernelBuildError(const std::string& what, int code, std::string code_name, std::string log)
      : DeviceError(what, code, std::move(code_name)), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

}  // namespace xr
