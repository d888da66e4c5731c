#include "errors.hpp"

#include <cstring>
#include <new>
#include <string_view>

#include "xreduce/error.hpp"

namespace xr::mpi::detail {
namespace {

// The classes a failure keeps across ranks, most derived first.
enum class Kind : std::int32_t { Error, InvalidArgument, EmptyInput, InputError, BackendUnavailable, DeviceError, KernelBuildError };

struct Failure {
  Kind kind = Kind::Error;
  std::int32_t code = 0;  // DeviceError::code()
  std::string code_name;  // DeviceError::code_name()
  std::string backend;    // BackendUnavailable::backend()
  std::string message;    // what()
  std::string log;        // KernelBuildError::log(), cut
};

Failure describe(std::exception_ptr error) {
  Failure f;
  try {
    std::rethrow_exception(error);
  } catch (const KernelBuildError& e) {
    f = {Kind::KernelBuildError, e.code(), e.code_name(), "", e.what(), printable(e.log(), 4000)};
  } catch (const DeviceError& e) {
    f = {Kind::DeviceError, e.code(), e.code_name(), "", e.what(), ""};
  } catch (const BackendUnavailable& e) {
    f = {Kind::BackendUnavailable, 0, "", e.backend(), e.what(), ""};
  } catch (const EmptyInput& e) {
    f = {Kind::EmptyInput, 0, "", "", e.what(), ""};
  } catch (const InvalidArgument& e) {
    f = {Kind::InvalidArgument, 0, "", "", e.what(), ""};
  } catch (const InputError& e) {
    f = {Kind::InputError, 0, "", "", e.what(), ""};
  } catch (const Error& e) {
    f.message = e.what();
  } catch (const std::bad_alloc&) {
    f.message = "out of host memory";
  } catch (const std::exception& e) {
    f.message = std::string("internal error: ") + e.what();
  } catch (...) {
    f.message = "internal error: an unknown exception";
  }
  return f;
}

void put(std::vector<char>& out, const std::string& s) {
  out.insert(out.end(), s.begin(), s.end());
  out.push_back('\0');
}

std::string take(const std::vector<char>& in, std::size_t& at) {
  std::string s;
  while (at < in.size() && in[at] != '\0') s.push_back(in[at++]);
  ++at;
  return s;
}

}  // namespace

std::vector<char> encode_error(std::exception_ptr error) {
  const Failure f = describe(error);
  std::vector<char> out(2 * sizeof(std::int32_t));
  const std::int32_t head[2] = {static_cast<std::int32_t>(f.kind), f.code};
  std::memcpy(out.data(), head, sizeof head);
  for (const std::string* s : {&f.code_name, &f.backend, &f.message, &f.log}) put(out, *s);
  return out;
}

void throw_error(const std::vector<char>& bytes, int rank, int size, const std::string& host) {
  std::int32_t head[2] = {0, 0};
  if (bytes.size() >= sizeof head) std::memcpy(head, bytes.data(), sizeof head);
  std::size_t at = sizeof head;
  Failure f;
  f.kind = static_cast<Kind>(head[0]);
  f.code = head[1];
  f.code_name = take(bytes, at);
  f.backend = take(bytes, at);
  f.message = take(bytes, at);
  f.log = take(bytes, at);
  const std::string where = "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (" + host + "): ";
  const std::string message = where + f.message;
  switch (f.kind) {
    case Kind::InvalidArgument: throw InvalidArgument(message);
    case Kind::EmptyInput: throw EmptyInput(message);
    case Kind::InputError: throw InputError(message);
    case Kind::BackendUnavailable: {
      // what() of BackendUnavailable is "<backend> backend unavailable: <reason>": keep that form.
      const std::string prefix = f.backend + " backend unavailable: ";
      std::string_view reason = f.message;
      if (reason.starts_with(prefix)) reason.remove_prefix(prefix.size());
      throw BackendUnavailable(f.backend, where + std::string(reason));
    }
    case Kind::DeviceError: throw DeviceError(message, f.code, f.code_name);
    case Kind::KernelBuildError: throw KernelBuildError(message, f.code, f.code_name, f.log);
    case Kind::Error: break;
  }
  throw Error(message);
}

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("mpi: ") + call + " failed: " + printable(std::string_view(text, static_cast<std::size_t>(len)), 200));
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "unknown host";
  return std::string(name, static_cast<std::size_t>(len));
}

void raise_if_any(MPI_Comm comm, std::exception_ptr failed, int lowest_failed) {
  int rank = 0, size = 1;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (lowest_failed < 0) {
    const int mine = failed ? rank : size;
    check(MPI_Allreduce(&mine, &lowest_failed, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  }
  if (lowest_failed >= size) return;
  // The failing rank sends its failure and its host's name; every rank rebuilds the same exception.
  std::vector<char> bytes;
  if (rank == lowest_failed) {
    bytes = encode_error(failed);
    put(bytes, host_name());
  }
  long long length = static_cast<long long>(bytes.size());
  check(MPI_Bcast(&length, 1, MPI_LONG_LONG, lowest_failed, comm), "MPI_Bcast");
  bytes.resize(static_cast<std::size_t>(length));
  check(MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_CHAR, lowest_failed, comm), "MPI_Bcast");
  // The host's name is the last string: after the four of the failure.
  std::size_t at = 2 * sizeof(std::int32_t);
  for (int i = 0; i < 4; ++i) take(bytes, at);
  const std::string host = take(bytes, at);
  throw_error(bytes, lowest_failed, size, host);
}

}  // namespace xr::mpi::detail
