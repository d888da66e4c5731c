// reduce_cli built without MPI: under mpirun each rank would reduce the whole input alone.
#include "cli_common.hpp"
#include "distributed.hpp"

namespace xr::cli {

int run_distributed(const CommandLine&, const std::function<DistributedJob()>&) {
  return report("started by an MPI launcher, but this reduce_cli was built without MPI (configure with "
                "-DXREDUCE_MPI=ON and Open MPI installed)",
                kUsage);
}

}  // namespace xr::cli
