// reduce_cli under mpirun (distributed.hpp), on xreduce::mpi.
#include <mpi.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "cli_common.hpp"
#include "distributed.hpp"
#include "segmented.hpp"
#include "table.hpp"
#include "xreduce/mpi.hpp"
#include "xreduce/reference.hpp"

namespace xr::cli {
namespace {

using nlohmann::json;

class MpiSession {
 public:
  MpiSession() {
    int provided = 0;  // MPI is called from the main thread only
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// A step each rank takes alone; then every rank knows whether any failed, and throws if one did.
template <class Step> void local_step(MPI_Comm comm, Step&& step) {
  std::exception_ptr failed;
  try {
    step();
  } catch (...) {
    failed = std::current_exception();
  }
  mpi::agree(comm, failed);
}

// Every rank must have been asked for the same reduction: rank 0's description goes to every
// rank, and a rank whose own differs fails (MPMD command lines are each rank's own).
void agree_same(MPI_Comm comm, const std::string& mine) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  long long length = static_cast<long long>(mine.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, comm);
  std::string first = rank == 0 ? mine : std::string(static_cast<std::size_t>(length), '\0');
  MPI_Bcast(first.data(), static_cast<int>(length), MPI_CHAR, 0, comm);
  local_step(comm, [&] {
    if (mine != first)
      throw InvalidArgument("the ranks were asked for different reductions: this rank " + mine + ", rank 0 " + first);
  });
}

// ", wide accumulator, exact, 1 warm-up and 5 timed runs"
std::string runs_text(const DistributedJob& job) {
  return ", " + std::string(to_string(job.options.accumulator)) + " accumulator" + (job.options.exact ? ", exact" : "") +
         ", " + std::to_string(job.options.warmup) + " warm-up and " + std::to_string(job.options.repeat) + " timed runs";
}

std::string describe(const DistributedJob& job, std::uint64_t total, DType type) {
  const std::string source = job.input.empty() ? std::string(to_string(job.dist)) + ", seed " + std::to_string(job.seed)
                                               : printable(job.input);
  return std::string(to_string(job.op)) + " of " + std::to_string(total) + " " + std::string(to_string(type)) + " (" +
         source + ")" + runs_text(job);
}

void print_table(const mpi::GlobalResult& g, const Reference& ref, const Agreement& agreement, const std::string& what) {
  const Result& r = g.result;
  std::cout << what << " over " << g.ranks << " ranks; reference " << value_text(ref)
            << " (computed distributed)\n";
  Table ranks({"rank", "host", "backend", "device", "kernel", "first", "n", "time ms", "total ms"});
  for (const mpi::RankRow& row : g.rows)
    ranks.add({std::to_string(row.rank), row.host, row.backend, row.device, row.kernel, std::to_string(row.first),
               std::to_string(row.n), fixed(row.kernel_ms, 3), row.total_ms > 0 ? fixed(row.total_ms, 3) : "-"});
  ranks.print(std::cout);
  Table global({"value", "agrees", "slowest rank ms", "combine us", "total ms", "GB/s", "combined"});
  global.add({value_text(r), agreement.ok ? "yes" : "NO: " + agreement.detail, fixed(r.kernel_ms, 3),
              fixed(g.combine_ms * 1e3, 1), fixed(r.total_ms, 3), fixed(r.bytes_per_s / 1e9, 1), r.finish});
  global.print(std::cout);
}

json to_json(const mpi::GlobalResult& g, const Reference& ref, const Agreement& agreement) {
  const Result& r = g.result;
  json rows = json::array();
  for (const mpi::RankRow& row : g.rows)
    rows.push_back({{"rank", row.rank}, {"host", row.host}, {"backend", row.backend}, {"device", row.device},
                    {"kernel", row.kernel}, {"first", row.first}, {"n", row.n}, {"kernel_ms", row.kernel_ms},
                    {"total_ms", row.total_ms}});
  json result = {{"value", r.value.to_string()}, {"value_type", to_string(r.value.type)},
                 {"reference", ref.value.to_string()}, {"agrees", agreement.ok}, {"detail", agreement.detail},
                 {"op", to_string(r.op)}, {"type", to_string(r.type)}, {"n", r.n}, {"ranks", g.ranks},
                 {"kernel_ms", r.kernel_ms}, {"combine_ms", g.combine_ms}, {"total_ms", r.total_ms},
                 {"bytes_per_s", r.bytes_per_s}, {"rounding_depth", r.rounding_depth}, {"finish", r.finish},
                 {"repeats", r.repeats}};
  if (op_info(r.op).kind == OpKind::Located) {
    result["index"] = r.index;
    result["reference_index"] = ref.index;
  } else if (op_info(r.op).kind == OpKind::Bounds) {
    result["maximum"] = r.maximum.to_string();
    result["reference_maximum"] = ref.maximum.to_string();
  }
  return {{"ranks", rows}, {"result", result}};
}

// A segmented reduction over the ranks (the header says how it splits): each rank reads its part
// into memory, the values are gathered on rank 0, and rank 0 checks them and saves them.
int run_segmented(MPI_Comm comm, const DistributedJob& job, const SegmentedInput& in) {
  const SegmentedArgs& args = *job.segmented;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const DType type = in.source->type();
  agree_same(comm, std::string(to_string(job.op)) + " of " + in.what + runs_text(job));
  const bool by_axis = in.layout.kind != SegmentKind::Offsets;
  const std::uint64_t unit = by_axis ? in.shape.cols : 1;  // elements of one unit of the split
  const mpi::Part part = mpi::partition(comm, by_axis ? in.shape.rows : in.source->size(), static_cast<double>(job.share));
  HostBuffer mine;
  local_step(comm, [&] {
    check_fits_memory(type, part.count * unit, "this rank's part");
    mine = HostBuffer(type, part.count * unit);
    auto* out = static_cast<unsigned char*>(mine.data());
    if (by_axis && in.shape.order == Order::Fortran) {  // each column's run of this rank's rows
      for (std::uint64_t c = 0; c < in.shape.cols; ++c)
        in.source->read(c * in.shape.rows + part.first, part.count, out + c * part.count * size_of(type));
    } else {
      in.source->read(part.first * unit, part.count * unit, out);
    }
  });
  mpi::Reducer reducer(comm, {job.backend, job.device});
  const mpi::GlobalSegments g =
      by_axis ? reducer.reduce_axis(HostMatrix{mine.data(), type, {part.count, in.shape.cols, 0, in.shape.order}},
                                    in.axis, job.op, job.options, 0)
              : reducer.reduce_segments(mine.view(), in.offsets, job.op, job.options, 0);
  int status = kAgree;
  local_step(comm, [&] {
    if (rank != 0) return;
    const SegmentReference ref = reference_segments(*in.source, in.layout, job.op, job.options.accumulator,
                                                    reference_chunk_bytes(job.options, type));
    const SegmentAgreement agreement = check_segments(g.result, ref, job.options.exact);
    status = agreement.ok() ? kAgree : kDisagree;
    if (!args.save_result.empty()) save_values(args.save_result, g.result);
    const Result& r = g.result.record;
    const double gbps = r.total_ms > 0 ? static_cast<double>(r.n * size_of(type)) / (r.total_ms * 1e6) : 0;
    const std::string agree = std::to_string(agreement.agree) + "/" + std::to_string(agreement.count);
    if (job.json) {
      const json result = {{"op", to_string(job.op)}, {"type", to_string(type)}, {"layout", to_string(in.layout.kind)},
                           {"count", g.result.count()}, {"n", r.n}, {"ranks", g.ranks},
                           {"value_type", to_string(g.result.values.type())}, {"first_values", first_values(g.result)},
                           {"agrees", agreement.ok()}, {"agree", agreement.agree}, {"detail", agreement.detail},
                           {"kernel", r.kernel}, {"kernel_ms", r.kernel_ms}, {"total_ms", r.total_ms},
                           {"bytes_per_s", gbps * 1e9}, {"exact", job.options.exact}};
      std::cout << json{{"result", result}}.dump(2) << '\n';
      return;
    }
    std::cout << to_string(job.op) << " of " << in.what << " over " << g.ranks
              << " ranks; reference by rank 0 over the whole input\n";
    Table t({"values", "first values", "agree", "rank 0 kernel", "rank 0 ms", "total ms", "GB/s"});
    t.add({std::to_string(g.result.count()), first_values(g.result), agreement.ok() ? agree : "NO " + agree + ": " + agreement.detail,
           r.kernel, fixed(r.kernel_ms, 3), fixed(r.total_ms, 3), fixed(gbps, 1)});
    t.print(std::cout);
    if (!args.save_result.empty()) std::cout << "values saved to " << args.save_result << '\n';
  });
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  return status;
}

// Whether any rank's command line leaves early (--help), agreed on by every rank: the lowest such
// rank prints, and every rank returns its exit code. Empty when no rank leaves.
std::optional<int> leave_together(MPI_Comm comm, const CommandLine& line) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The lowest leaving rank (negated, for MPI_MAX) and whether any rank stays.
  int agreed[2] = {-(line.leave ? rank : size), line.leave ? 0 : 1};
  MPI_Allreduce(MPI_IN_PLACE, agreed, 2, MPI_INT, MPI_MAX, comm);
  const int leaving = -agreed[0];
  if (leaving >= size) return std::nullopt;
  int code = 0;
  if (rank == leaving) {
    code = line.leave();
    std::cout.flush();  // the help before the line on standard error
    if (agreed[1])
      std::cerr << "reduce_cli: rank " << rank << " of " << size
                << " was given an option that prints and exits (--help): no rank reduces anything\n";
  }
  MPI_Bcast(&code, 1, MPI_INT, leaving, comm);
  return code;
}

int run(MPI_Comm comm, const CommandLine& line, const std::function<DistributedJob()>& make_job) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (const std::optional<int> code = leave_together(comm, line)) return *code;
  DistributedJob job;
  std::unique_ptr<FileSource> file;
  SegmentedInput segmented;
  std::uint64_t total = 0;
  DType type = DType::F32;
  local_step(comm, [&] {
    if (line.error) std::rethrow_exception(line.error);
    job = make_job();
    if ((job.segmented ? job.segmented->input : job.input) == "-")
      throw InvalidArgument("--input: standard input cannot be split over ranks; under mpirun give a raw or .npy file");
    if (job.segmented) {
      segmented = plan_segmented(*job.segmented);
      return;
    }
    if (job.input.empty()) {
      total = job.n;
      type = job.type;
      return;
    }
    file = std::make_unique<FileSource>(job.input, job.file_type, job.format, job.bound);
    total = file->size();
    type = file->type();
  });
  if (job.segmented) return run_segmented(comm, job, segmented);
  const std::string what = describe(job, total, type);
  agree_same(comm, what);

  const mpi::Part part = mpi::partition(comm, total, static_cast<double>(job.share));
  HostBuffer generated;
  std::unique_ptr<ChunkSource> mine;
  local_step(comm, [&] {
    if (file) {
      mine = std::make_unique<SliceSource>(*file, part.first, part.count);
      return;
    }
    check_fits_memory(type, part.count, "--n: this rank's part");
    generated = generate_slice(type, total, part.first, part.count, job.dist, job.seed);
    mine = std::make_unique<ArraySource>(generated.view());
  });

  const Reference ref = mpi::reference_reduce(comm, *mine, job.op, job.options.accumulator);
  mpi::Reducer reducer(comm, {job.backend, job.device});
  const mpi::GlobalResult g = reducer.reduce(*mine, job.op, job.options);
  const Agreement agreement = check_result(g.result, ref, job.options.exact);
  if (rank == 0) {
    if (job.json) std::cout << to_json(g, ref, agreement).dump(2) << '\n';
    else print_table(g, ref, agreement, what);
  }
  return agreement.ok ? kAgree : kDisagree;
}

}  // namespace

int run_distributed(const CommandLine& line, const std::function<DistributedJob()>& make_job) {
  MpiSession session;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    return run(MPI_COMM_WORLD, line, make_job);
  } catch (...) {
    // Every failure here was agreed on: each rank has the same one, and rank 0 prints it.
    return exit_code(std::current_exception(), rank == 0);
  }
}

}  // namespace xr::cli
