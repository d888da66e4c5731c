// A rank's failure, carried to every rank: the exception's class, its native code and its message
// as bytes, and the same exception rebuilt on each rank, naming the rank it came from.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace xr::mpi::detail {

// The failure of this rank, as bytes another rank can rebuild it from.
std::vector<char> encode_error(std::exception_ptr error);

// Throws, on the rank that calls it, the failure `bytes` describes, its message prefixed with
// "rank R of P (host): ".
[[noreturn]] void throw_error(const std::vector<char>& bytes, int rank, int size, const std::string& host);

// Throws xr::Error naming the MPI call when an MPI function returns an error (a communicator
// whose error handler is MPI_ERRORS_RETURN; the default handler aborts the job instead).
void check(int rc, const char* call);

// This process's host name (MPI_Get_processor_name).
std::string host_name();

// Collective over comm: the rank with the lowest index that has a failure (`failed`) sends it to
// every rank, and each throws it. Returns when no rank failed. `lowest_failed` is that rank when
// the caller already knows it (from a status exchange), or -1 to find it here.
void raise_if_any(MPI_Comm comm, std::exception_ptr failed, int lowest_failed = -1);

}  // namespace xr::mpi::detail
