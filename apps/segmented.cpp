#include "segmented.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_common.hpp"
#include "table.hpp"
#include "xreduce/reference.hpp"

namespace xr::cli {
namespace {

using nlohmann::json;

// "RxC" with each side a count ("2^16x1024", "1000x3").
std::pair<std::uint64_t, std::uint64_t> parse_shape(const std::string& text) {
  const auto x = text.find('x');
  if (x == std::string::npos || text.find('x', x + 1) != std::string::npos)
    throw InvalidArgument("--shape: " + shown(text) + " is not ROWSxCOLS (e.g. 1024x1024, 2^16x1024)");
  return {parse_count(text.substr(0, x), "--shape rows"), parse_count(text.substr(x + 1), "--shape columns")};
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const auto end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// Segment lengths: --seg-len N for all, or --seg-dist uniform:A:B | lognormal:MEAN[:MAX].
std::vector<std::uint64_t> segment_lengths(const SegmentedArgs& a, std::uint64_t count) {
  if (!a.seg_len.empty() == !a.seg_dist.empty())
    throw InvalidArgument("--segments needs one of --seg-len N and --seg-dist uniform:A:B|lognormal:MEAN[:MAX]");
  if (!a.seg_len.empty()) return std::vector<std::uint64_t>(count, parse_count(a.seg_len, "--seg-len"));
  const auto parts = split(a.seg_dist, ':');
  std::mt19937_64 rng(a.seed);
  std::vector<std::uint64_t> lengths(count);
  if (parts[0] == "uniform" && parts.size() == 3) {
    const std::uint64_t lo = parse_count(parts[1], "--seg-dist uniform A"), hi = parse_count(parts[2], "--seg-dist uniform B");
    if (lo > hi) throw InvalidArgument("--seg-dist: uniform:A:B needs A <= B");
    std::uniform_int_distribution<std::uint64_t> d(lo, hi);
    for (auto& l : lengths) l = d(rng);
  } else if (parts[0] == "lognormal" && (parts.size() == 2 || parts.size() == 3)) {
    const double mean = static_cast<double>(parse_count(parts[1], "--seg-dist lognormal MEAN"));
    const std::uint64_t max = parts.size() == 3 ? parse_count(parts[2], "--seg-dist lognormal MAX") : ~std::uint64_t{0};
    // Lengths e^N(mu, 1) with mu chosen so that their mean is MEAN; capped at MAX.
    std::lognormal_distribution<double> d(std::log(std::max(mean, 1.0)) - 0.5, 1.0);
    for (auto& l : lengths) l = std::min<std::uint64_t>(max, static_cast<std::uint64_t>(std::llround(d(rng))));
  } else {
    throw InvalidArgument("--seg-dist: " + shown(a.seg_dist) + " is neither uniform:A:B nor lognormal:MEAN[:MAX]");
  }
  return lengths;
}

// The data `generate` makes, read in slices (GeneratedSource::read makes only the slice asked for).
class GeneratedSource final : public ChunkSource {
 public:
  GeneratedSource(DType type, std::uint64_t n, Dist dist, std::uint64_t seed)
      : type_(type), n_(n), dist_(dist), seed_(seed) {}
  DType type() const override { return type_; }
  std::uint64_t size() const override { return n_; }
  std::string name() const override { return "generated data"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override {
    const HostBuffer slice = generate_slice(type_, n_, first, count, dist_, seed_);
    std::memcpy(dst, slice.data(), slice.bytes());
  }

 private:
  DType type_;
  std::uint64_t n_;
  Dist dist_;
  std::uint64_t seed_;
};

// A run of one strategy on one backend.
struct Run {
  std::string backend, device;
  SegmentedResult result;
  SegmentAgreement agreement;
  KernelKind kind = KernelKind::Rung;
};

}  // namespace

// The first three values; argmin and argmax as value@index, minmax as min..max.
std::string first_values(const SegmentedResult& r) {
  std::string s;
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(3, r.count()); ++i) {
    s += (i ? " " : "") + r.value(i).to_string();
    if (r.indices.size()) s += "@" + std::to_string(r.index(i));
    if (r.maxima.size()) s += ".." + r.maximum(i).to_string();
  }
  if (r.count() > 3) s += " ...";
  return s.empty() ? "-" : s;
}

bool segmented_requested(const std::string& shape, const std::string& segments, const std::string& offsets,
                         bool axis_given) {
  return !shape.empty() || !segments.empty() || !offsets.empty() || axis_given;
}

SegmentedInput plan_segmented(const SegmentedArgs& a) {
  SegmentedInput in;
  std::unique_ptr<ChunkSource> file;
  std::uint64_t generated = 0;  // elements of generated data
  MatrixShape& shape = in.shape;
  SegmentLayout& layout = in.layout;
  std::vector<std::int64_t>& offsets = in.offsets;
  std::string what;
  const int axis = in.axis = static_cast<int>(parse_whole(a.axis, "--axis", 0, 1, "a 2-D array has axes 0 and 1"));
  const bool by_axis = !a.shape.empty() || (a.segments.empty() && a.offsets.empty());
  if (by_axis && (!a.segments.empty() || !a.offsets.empty()))
    throw InvalidArgument("--shape (or a 2-D .npy) and --segments/--offsets are two different reductions: give one");
  const char* lengths_option = !a.seg_len.empty() ? "--seg-len" : !a.seg_dist.empty() ? "--seg-dist" : nullptr;
  const char* layout_option = !a.stride.empty() ? "--stride" : a.order_given ? "--order" : nullptr;
  if (by_axis) {
    if (a.order != "c" && a.order != "fortran") throw InvalidArgument("--order: " + shown(a.order) + " is neither c nor fortran");
    if (lengths_option)
      throw InvalidArgument(std::string(lengths_option) + " gives the lengths of generated segments (--segments); "
                            "a 2-D array's rows and columns have theirs");
    if (!a.input.empty()) {
      if (!a.shape.empty()) throw InvalidArgument("--shape is for generated data; a .npy file carries its own");
      if (layout_option)
        throw InvalidArgument(std::string(layout_option) + " lays out a generated array (--shape); a .npy file "
                              "carries its own layout");
      const FileLayout fl = inspect_file(a.input, a.type, a.format);
      if (fl.shape.size() != 2)
        throw InvalidArgument(a.input + ": --axis reduces a 2-D .npy; this input has " +
                              (fl.format == FileFormat::Npy ? std::to_string(fl.shape.size()) + " dimensions" : "no shape (raw)"));
      shape = {fl.shape[0], fl.shape[1], 0, fl.fortran_order ? Order::Fortran : Order::C};
      file = open_input(a.input, a.type, a.format);
      what = a.input;
    } else {
      const auto [rows, cols] = parse_shape(a.shape);
      shape = {rows, cols, a.stride.empty() ? 0 : parse_count(a.stride, "--stride"),
               a.order == "c" ? Order::C : Order::Fortran};
      generated = axis_layout(shape, 0).span();
      what = std::string(to_string(a.dist)) + ", seed " + std::to_string(a.seed);
    }
    layout = axis_layout(shape, axis);
    what = std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + (shape.order == Order::C ? " C" : " Fortran") +
           " array (" + what + "), axis " + std::to_string(axis) + ": " + std::to_string(layout.count) + " values";
  } else {
    if (layout_option || a.axis_given)
      throw InvalidArgument(std::string(layout_option ? layout_option : "--axis") +
                            " is for a 2-D array (--shape or a 2-D .npy); segments of 1-D data have no rows");
    if (!a.offsets.empty()) {
      if (!a.segments.empty()) throw InvalidArgument("--offsets gives the segments; --segments generates them: give one");
      if (lengths_option)
        throw InvalidArgument(std::string(lengths_option) + " gives the lengths of generated segments (--segments); "
                              "--offsets gives them from a file");
      const HostBuffer o = load_file(a.offsets, DType::I64, FileFormat::Auto);
      if (o.type() != DType::I64) throw InvalidArgument(a.offsets + ": offsets are int64 (.npy '<i8' or raw)");
      offsets.assign(o.as<std::int64_t>(), o.as<std::int64_t>() + o.size());
    } else {
      const auto lengths = segment_lengths(a, parse_count(a.segments, "--segments"));
      constexpr auto kMaxTotal = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      offsets.push_back(0);
      for (auto l : lengths) {
        const auto at = static_cast<std::uint64_t>(offsets.back());
        if (l > kMaxTotal - at)
          throw InvalidArgument("--segments " + a.segments + " with " + (a.seg_len.empty() ? "--seg-dist " + a.seg_dist
                                                                                            : "--seg-len " + a.seg_len) +
                                ": the segments' total length passes 2^63 - 1 elements (at segment " +
                                std::to_string(offsets.size() - 1) + ")");
        offsets.push_back(static_cast<std::int64_t>(at + l));
      }
    }
    if (!a.input.empty()) {
      file = open_input(a.input, a.type, a.format);
      what = a.input;
    } else {
      if (!offsets.empty() && offsets.back() < 0) check_offsets(offsets, 0);
      generated = offsets.empty() ? 0 : static_cast<std::uint64_t>(offsets.back());
      what = std::string(to_string(a.dist)) + ", seed " + std::to_string(a.seed);
    }
    check_offsets(offsets, file ? file->size() : generated);
    layout.kind = SegmentKind::Offsets;
    layout.count = offsets.size() - 1;
    layout.offsets = offsets.data();
    std::uint64_t longest = 0;
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i)
      longest = std::max<std::uint64_t>(longest, static_cast<std::uint64_t>(offsets[i + 1] - offsets[i]));
    what = std::to_string(layout.count) + " segments of " + std::to_string(layout.elements()) + " elements (longest " +
           std::to_string(longest) + "; " + what + ")";
  }
  in.generated = !file;
  in.source = file ? std::move(file)
                   : std::make_unique<GeneratedSource>(a.type.value_or(DType::F32), generated, a.dist, a.seed);
  in.what = std::move(what);
  // NumPy has no bf16 (bf16 min and max are bf16): say so before anything runs.
  if (a.save_result.ends_with(".npy") &&
      result_dtype(a.op, in.source->type(), a.options.accumulator) == DType::BF16)
    throw InvalidArgument("--save-result " + a.save_result +
                          ": bf16 values have no .npy type; a name not ending in .npy writes them as raw bytes");
  return in;
}

std::uint64_t reference_chunk_bytes(const RunOptions& options, DType type) {
  return options.chunk_elements ? chunk_elements(options, size_of(type), 2) * size_of(type) : std::uint64_t{64} << 20;
}

void save_values(const std::string& path, const SegmentedResult& result) {
  const HostArray values = result.values.view();
  if (path.ends_with(".npy")) save_npy(path, values);
  else save_raw(path, values);
}

int run_segmented(const SegmentedArgs& a) {
  // The data and the layout: a file streams from disk (memory stays bounded by a few chunks, as
  // whole-array reductions of files); generated data lie in memory.
  const SegmentedInput in = plan_segmented(a);
  const MatrixShape& shape = in.shape;
  const SegmentLayout& layout = in.layout;
  const std::vector<std::int64_t>& offsets = in.offsets;
  const int axis = in.axis;
  HostBuffer data;
  if (in.generated) {
    check_fits_memory(in.source->type(), in.source->size(), layout.kind == SegmentKind::Offsets ? "--segments" : "--shape");
    data = generate(in.source->type(), in.source->size(), a.dist, a.seed);
  }
  ArraySource generated(data.view());
  ChunkSource& source = in.generated ? generated : *in.source;
  const DType type = source.type();
  const SegmentReference ref =
      reference_segments(source, layout, a.op, a.options.accumulator, reference_chunk_bytes(a.options, type));
  std::vector<Run> runs;
  json out = json::array();
  int status = kAgree;
  for (const auto& name : a.backends) {
    const BackendStatus st = backend_status(name);
    if (!st.usable) {
      if (a.backend_named) throw BackendUnavailable(name, st.reason);
      if (!a.json) std::cout << name << ": skipped, " << st.reason << '\n';
      continue;
    }
    auto reducer = make_reducer(name, a.device);
    if (a.options.kernel == "list") {
      std::cout << reducer->backend() << " on " << reducer->device() << ":\n";
      Table t({"strategy", "layouts", "note"});
      for (const auto& k : reducer->segment_kernels()) {
        std::string layouts;
        for (auto l : k.layouts) layouts += (layouts.empty() ? "" : ",") + std::string(to_string(l));
        t.add({k.name, layouts, k.note});
      }
      t.print(std::cout);
      continue;
    }
    std::vector<KernelInfo> todo;
    for (const auto& k : reducer->segment_kernels())
      if ((a.options.kernel == "all" || k.name == a.options.kernel) && k.reduces(layout.kind) &&
          k.supports(a.op, type))
        todo.push_back(k);
    // An unknown name: its error lists the known ones; a strategy that does not take the op or the
    // layout runs, so that the library's error says why.
    if (todo.empty() && a.options.kernel != "all") todo.push_back(reducer->segment_kernel(a.options.kernel));
    for (const auto& k : todo) {
      RunOptions o = a.options;
      o.kernel = k.name;
      Run run{name, reducer->device(), {}, {}, k.kind};
      run.result = layout.kind == SegmentKind::Offsets ? reducer->reduce_segments(source, offsets, a.op, o)
                                                       : reducer->reduce_axis(source, shape, axis, a.op, o);
      run.agreement = check_segments(run.result, ref, o.exact);
      if (!run.agreement.ok()) status = kDisagree;
      const Result& r = run.result.record;
      out.push_back({{"backend", r.backend}, {"device", r.device}, {"kernel", r.kernel}, {"op", to_string(a.op)},
                     {"type", to_string(type)}, {"layout", to_string(layout.kind)}, {"count", run.result.count()},
                     {"n", r.n}, {"value_type", to_string(run.result.values.type())}, {"first_values", first_values(run.result)},
                     {"agree", run.agreement.agree}, {"detail", run.agreement.detail}, {"launches", r.launches},
                     {"kernel_ms", r.kernel_ms}, {"transfer_ms", r.transfer_ms}, {"total_ms", r.total_ms},
                     {"bytes_read", run.result.bytes_read}, {"bytes_written", run.result.bytes_written},
                     {"bytes_per_s", r.bytes_per_s}, {"finish", r.finish}, {"jobs", r.chunks}, {"exact", o.exact}});
      runs.push_back(std::move(run));
    }
  }
  if (!a.save_result.empty()) {
    if (runs.empty()) throw InvalidArgument("--save-result: no backend ran");
    save_values(a.save_result, runs.front().result);
  }
  if (a.json) {
    std::cout << out.dump(2) << '\n';
    return status;
  }
  if (a.options.kernel == "list") return kAgree;
  std::cout << to_string(a.op) << " of " << in.what << "; median of " << a.options.repeat << " after "
            << a.options.warmup << " warm-up; GB/s counts bytes read and written\n";
  const Run* cub = nullptr;
  for (const auto& r : runs)
    if (r.kind == KernelKind::Baseline) cub = &r;
  Table t({"backend", "kernel", "values", "first values", "agree", "time ms", "GB/s", cub ? "vs " + cub->result.record.kernel : "",
           "launches"});
  for (const auto& run : runs) {
    const Result& r = run.result.record;
    const double ms = r.total_ms > 0 ? r.total_ms : r.kernel_ms;
    const double base = cub && cub->backend == run.backend ? cub->result.record.kernel_ms : 0;
    t.add({run.backend, r.kernel, std::to_string(run.result.count()), first_values(run.result),
           run.agreement.ok() ? std::to_string(run.agreement.agree) + "/" + std::to_string(run.agreement.count)
                              : "NO " + std::to_string(run.agreement.agree) + "/" + std::to_string(run.agreement.count) +
                                    ": " + run.agreement.detail,
           fixed(ms, 3), fixed(r.bytes_per_s / 1e9, 1), base > 0 ? fixed(base / ms, 2) + "x" : "",
           std::to_string(r.launches)});
  }
  t.print(std::cout);
  if (!a.save_result.empty()) std::cout << "values of " << runs.front().result.record.kernel << " on " << runs.front().backend
                                        << " saved to " << a.save_result << '\n';
  return status;
}

}  // namespace xr::cli
