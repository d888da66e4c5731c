// An MPI application on the installed package: find_package(xreduce), xreduce::mpi, and the
// exact sum of data spread over the ranks equals one process's.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "xreduce/mpi.hpp"
#include "xreduce/xreduce.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::uint64_t n = 100003;
  const xr::mpi::Part part = xr::mpi::partition(MPI_COMM_WORLD, n);
  const xr::HostBuffer mine = xr::generate_slice(xr::DType::F64, n, part.first, part.count, xr::Dist::Cancel, 7);
  xr::RunOptions exact;
  exact.exact = true;
  const xr::mpi::GlobalResult g = xr::mpi::reduce(MPI_COMM_WORLD, mine.view(), xr::Op::Sum, {.backend = "omp"}, exact);
  const xr::HostBuffer whole = xr::generate(xr::DType::F64, n, xr::Dist::Cancel, 7);
  xr::ExactSum one;
  one.add(whole.as<double>(), n);
  const bool same = g.result.value.f == one.to_double();
  if (rank == 0) std::printf("consumer_mpi: %d ranks, exact sum %s, %s\n", size, g.result.value.to_string().c_str(),
                             same ? "the bits of one process" : "DIFFERS from one process");
  MPI_Finalize();
  return same ? 0 : 1;
}
