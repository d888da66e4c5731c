// The combine step: every rank's local result (or its failure) in, the whole input's value out.
#pragma once

#include <mpi.h>

#include <exception>
#include <optional>

#include "xreduce/result.hpp"

namespace xr::mpi::detail {

// What one rank brings to the combine.
struct Part {
  Op op = Op::Sum;           // the op every rank passes, known even where the rank failed
  int runs = 1;              // combines this call makes (warmup + repeat): every rank must agree
  std::exception_ptr error;  // the rank failed: every rank throws this
  Result result;             // otherwise its result: value, n, op, type, exact_state, times, depth
  double magnitude = 0;      // references: sum |x| of the part (float sums)
};

// The combined values, before the caller fills the rest of the record.
struct Combined {
  bool here = false;         // this rank holds the value (every rank, or root)
  Scalar value;
  std::int64_t index = -1;   // argmin, argmax: the global index
  Scalar maximum;            // minmax: the max
  std::uint64_t n = 0;
  std::uint64_t depth = 0;   // the global rounding depth
  std::optional<ExactSum::Raw> exact_state;
  double kernel_ms = 0;      // the slowest rank's
  double total_ms = 0;       // the slowest rank's end to end
  double magnitude = 0;      // the parts' magnitudes, added
  int nonempty = 0;          // ranks that held elements
};

// The datatype and operations of the combine, made once (MPI objects are freed before
// MPI_Finalize, or left to it when the owner outlives it).
class Wire {
 public:
  Wire();
  ~Wire();
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;
  // Collective over comm: the parts combined, on every rank (root < 0) or on root.
  Combined combine(MPI_Comm comm, const Part& part, int root) const;

 private:
  MPI_Datatype record_ = MPI_DATATYPE_NULL;
  MPI_Op commutative_ = MPI_OP_NULL;  // integer sums and products, exact states
  MPI_Op ordered_ = MPI_OP_NULL;      // min, max and the pair ops: the ranks' records in rank order
};

}  // namespace xr::mpi::detail
