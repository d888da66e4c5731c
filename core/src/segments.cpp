// Segmented reductions: argument checks, layouts, and the one driver that cuts an input, on the host
// or in a device's memory, into the jobs and exact pieces a backend's SegmentDevice reduces
// (segment_device.hpp). The host reference is in segment_reference.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "segment_device.hpp"
#include "short_exact.hpp"
#include "xreduce/error.hpp"
#include "xreduce/reference.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"

namespace xr {

std::string_view to_string(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::Rows: return "rows";
    case SegmentKind::Columns: return "columns";
    case SegmentKind::Offsets: return "offsets";
  }
  return "offsets";
}

std::vector<DType> segment_dtypes() { return {all_dtypes.begin(), all_dtypes.end()}; }

bool KernelInfo::reduces(SegmentKind kind) const {
  return std::find(layouts.begin(), layouts.end(), kind) != layouts.end();
}

std::uint64_t SegmentLayout::span() const {
  if (count == 0) return 0;
  switch (kind) {
    case SegmentKind::Rows: return length ? (count - 1) * stride + length : 0;
    case SegmentKind::Columns: return length ? (length - 1) * stride + count : 0;
    case SegmentKind::Offsets: return static_cast<std::uint64_t>(offsets[count]);
  }
  return 0;
}

std::uint64_t SegmentLayout::elements() const {
  if (kind == SegmentKind::Offsets)
    return count ? static_cast<std::uint64_t>(offsets[count] - offsets[0]) : 0;
  return count * length;
}

SegmentLayout axis_layout(const MatrixShape& shape, int axis) {
  if (axis != 0 && axis != 1)
    throw InvalidArgument("axis " + std::to_string(axis) + " of a 2-D array: it has axes 0 (one value per column) "
                          "and 1 (one value per row)");
  const std::uint64_t inner = shape.leading(), outer = shape.order == Order::C ? shape.rows : shape.cols;
  const std::uint64_t stride = shape.step();
  const char* line = shape.order == Order::C ? "row" : "column";
  if (shape.stride && shape.stride < inner)
    throw InvalidArgument("a stride of " + std::to_string(shape.stride) + " elements is below the " + line +
                          " length of " + std::to_string(inner));
  if (shape.rows && shape.cols) {
    constexpr auto max = std::numeric_limits<std::uint64_t>::max();
    if (outer - 1 > (max - inner) / std::max<std::uint64_t>(stride, 1))
      throw InvalidArgument(std::to_string(shape.rows) + " x " + std::to_string(shape.cols) + " with a stride of " +
                            std::to_string(stride) + " elements overflows 64-bit element positions");
  }
  SegmentLayout l;
  l.stride = stride;
  // The axis that runs along memory (the row of C order, the column of Fortran order) gives
  // contiguous runs; the other gives one element per run.
  const bool along_memory = (axis == 1) == (shape.order == Order::C);
  l.kind = along_memory ? SegmentKind::Rows : SegmentKind::Columns;
  l.count = axis == 1 ? shape.rows : shape.cols;
  l.length = axis == 1 ? shape.cols : shape.rows;
  return l;
}

void check_offsets(std::span<const std::int64_t> offsets, std::uint64_t n) {
  if (offsets.empty())
    throw InvalidArgument("offsets: at least one value is needed (n_segments + 1 values; {0} for no segments)");
  if (offsets[0] < 0)
    throw InvalidArgument("offsets[0] is " + std::to_string(offsets[0]) + ": offsets must not be negative");
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1])
      throw InvalidArgument("offsets decrease at position " + std::to_string(i) + ": " + std::to_string(offsets[i - 1]) +
                            " then " + std::to_string(offsets[i]));
  if (static_cast<std::uint64_t>(offsets.back()) > n)
    throw InvalidArgument("offsets[" + std::to_string(offsets.size() - 1) + "] is " + std::to_string(offsets.back()) +
                          ", past the input's " + std::to_string(n) + " elements");
}

namespace {

// Calls f(PairFn<op>{}, T{}) for a pair op over the input type.
template <class F> decltype(auto) visit_pair_type(Op op, DType type, F&& f) {
  return visit_pair(op, [&](auto fn) { return visit_dtype(type, [&](auto t) { return f(fn, t); }); });
}

// The fold whose identity a pair op's empty value is: min for argmin and minmax, max for argmax;
// a mapped op's fold; a fold itself.
Op value_fold(Op op) { return op == Op::ArgMax ? Op::Max : op == Op::ArgMin || op == Op::MinMax ? Op::Min : fold_of(op); }

}  // namespace

Scalar empty_segment_value(Op op, DType type, Accumulator acc) {
  const Op fold = value_fold(op);
  return visit_dtype(result_dtype(op, type, acc), [&](auto zero) {
    using T = decltype(zero);
    return Scalar::of<T>(finalize_value(op, fold == Op::Min || fold == Op::Max ? identity<T>(fold) : empty_value<T>(fold), 0));
  });
}

Scalar empty_segment_maximum(DType type) {
  return visit_dtype(type, [](auto zero) { return Scalar::of(identity<decltype(zero)>(Op::Max)); });
}

std::size_t segment_record_bytes(Op op, DType type, Accumulator acc) {
  if (!is_pair(op)) return size_of(result_dtype(op, type, acc));
  return visit_pair_type(op, type, [](auto fn, auto t) { return sizeof(pair_record_t<decltype(fn)::op, decltype(t)>); });
}

std::size_t segment_record_align(Op op, DType type, Accumulator acc) {
  if (!is_pair(op)) return size_of(result_dtype(op, type, acc));
  return visit_pair_type(op, type, [](auto fn, auto t) { return alignof(pair_record_t<decltype(fn)::op, decltype(t)>); });
}

Scalar SegmentedResult::value(std::uint64_t i) const {
  if (i >= values.size())
    throw InvalidArgument("value " + std::to_string(i) + " of " + std::to_string(values.size()));
  return detail::scalar_from_bytes(values.type(), static_cast<const unsigned char*>(values.data()) + i * size_of(values.type()));
}

std::int64_t SegmentedResult::index(std::uint64_t i) const {
  if (i >= values.size())
    throw InvalidArgument("index " + std::to_string(i) + " of " + std::to_string(values.size()));
  return i < indices.size() ? indices.as<std::int64_t>()[i] : -1;
}

Scalar SegmentedResult::maximum(std::uint64_t i) const {
  if (i >= values.size())
    throw InvalidArgument("maximum " + std::to_string(i) + " of " + std::to_string(values.size()));
  if (i >= maxima.size()) return {};
  return detail::scalar_from_bytes(maxima.type(), static_cast<const unsigned char*>(maxima.data()) + i * size_of(maxima.type()));
}

namespace detail {

void empty_segment_record(Op op, DType type, Accumulator acc, void* bytes) {
  const Scalar value = empty_segment_value(op, type, acc);
  if (!is_pair(op)) {
    visit_dtype(value.type, [&](auto zero) {
      const auto v = value.as<decltype(zero)>();
      std::memcpy(bytes, &v, sizeof v);
    });
    return;
  }
  visit_pair_type(op, type, [&](auto fn, auto t) {
    using T = decltype(t);
    pair_record_t<decltype(fn)::op, T> r{};
    if constexpr (requires { r.index; }) r = {value.as<T>(), -1};
    else r = {value.as<T>(), empty_segment_maximum(type).as<T>()};
    std::memcpy(bytes, &r, sizeof r);
  });
}

void merge_piece(ExactSum& sum, const std::int64_t* words, DType type) {
  ExactSum::Raw raw;
  const int first = exact_window_first(type), limbs = exact_window_limbs(type);
  for (int i = 0; i < limbs; ++i) raw.limb[static_cast<std::size_t>(first + i)] = words[i];
  raw.flags = static_cast<std::uint32_t>(words[limbs]);
  sum.merge_raw(raw);
}

// The strategy named `name`; InvalidArgument listing the known names.
KernelInfo find_strategy(const std::vector<KernelInfo>& list, std::string_view name, std::string_view backend) {
  for (const auto& k : list)
    if (k.name == name) return k;
  std::string known;
  for (const auto& k : list) known += (known.empty() ? "" : ", ") + k.name;
  throw InvalidArgument("unknown " + std::string(backend) + " segment strategy '" + printable(name) + "' (known: " +
                        known + ")");
}

namespace {

using Clock = std::chrono::steady_clock;

// Elements [first, first + count) of the input: in place when it lies in host memory or on the
// device, else read from the source into a host buffer.
class Window {
 public:
  Window(ChunkSource& source, DType type) : source_(&source), type_(type) {}
  // A buffer of `count` elements at once, for a source that is read (a buffer that grew job by
  // job would leave each smaller one in the host allocator's heap).
  void reserve_for(std::uint64_t count) {
    if (source_ && !source_->memory()) reserve(count);
  }
  Window(Memory device_data, DType type) : device_(device_data), type_(type) {}
  // Whether get() hands out the input where it lies (device memory, or a source in host memory)
  // rather than reading it into a buffer.
  bool in_place() const { return !source_ || source_->memory(); }
  Memory get(std::uint64_t first, std::uint64_t count) {
    if (!source_) return device_.at(first * size_of(type_));
    if (const void* m = source_->memory()) return Memory::host(static_cast<const unsigned char*>(m) + first * size_of(type_));
    reserve(count);
    if (count) source_->read(first, count, buffer_.data());
    return Memory::host(buffer_.data());
  }
  // Rows [row, row + rows) of width `cols` from `col` of a strided host array, packed densely.
  Memory tile(std::uint64_t row, std::uint64_t rows, std::uint64_t col, std::uint64_t cols, std::uint64_t stride) {
    const std::size_t e = size_of(type_);
    if (cols == stride) {  // whole rows: in place in host memory, else one read (a file spreads it over threads)
      if (const void* m = source_->memory()) return Memory::host(static_cast<const unsigned char*>(m) + (row * stride + col) * e);
      reserve(rows * cols);
      source_->read(row * stride + col, rows * cols, buffer_.data());
      return Memory::host(buffer_.data());
    }
    reserve(rows * cols);
    auto* dst = static_cast<unsigned char*>(buffer_.data());
    for (std::uint64_t r = 0; r < rows; ++r) {
      const std::uint64_t first = (row + r) * stride + col;
      if (const void* m = source_->memory()) std::memcpy(dst + r * cols * e, static_cast<const unsigned char*>(m) + first * e, cols * e);
      else source_->read(first, cols, dst + r * cols * e);
    }
    return Memory::host(buffer_.data());
  }

 private:
  // Room for `count` elements; a smaller buffer goes first, so that the two never add up.
  void reserve(std::uint64_t count) {
    if (buffer_.size() >= count) return;
    buffer_ = HostBuffer();
    buffer_ = HostBuffer(type_, count);
  }
  ChunkSource* source_ = nullptr;
  Memory device_;
  DType type_;
  HostBuffer buffer_;
};

// Sums of the outcomes of a call's jobs.
struct Tally {
  double kernel_ms = 0, transfer_ms = 0;
  int launches = 0, jobs = 0;
  std::uint64_t depth = 0;
  std::string kernel, finish;
  void add(const SegmentOutcome& o, std::uint64_t extra_depth = 0) {
    kernel_ms += o.kernel_ms;
    transfer_ms += o.transfer_ms;
    launches += o.launches;
    ++jobs;
    depth = std::max(depth, o.depth ? o.depth + extra_depth : 0);
    if (kernel.empty()) kernel = o.kernel;
    else if (kernel != o.kernel && kernel.find(o.kernel) == std::string::npos) kernel += "+" + o.kernel;
    if (finish.empty()) finish = o.finish;
  }
};

// One reduction: its input (a host source, or device memory), its checked arguments, and the
// values it fills in host memory (host input; the exact sums of device input, written to the
// device after).
struct Call {
  SegmentDevice& device;
  Window window;
  Op op;
  DType type, result_type;
  RunOptions options;
  SegmentLayout layout;
  std::uint64_t budget;  // elements one job may hold
  Tally tally;
  unsigned char* out;
  // Input in device memory: where its exact values go there. Short columns are rounded there
  // directly (exact_out_written); the pieces' values are written after, from `out`.
  Memory exact_out{};
  bool exact_out_written = false;

  SegmentOutcome job(Memory data, std::uint64_t n, const SegmentLayout& l, void* dst) {
    SegmentJob j;
    j.op = op;
    j.type = type;
    j.result_type = result_type;
    j.options = options;
    j.layout = l;
    j.data = data;
    j.n = n;
    j.out = Memory::host(dst);
    return device.reduce(j);
  }
  std::size_t record_bytes() const { return segment_record_bytes(op, type, options.accumulator); }
  unsigned char* value_at(std::uint64_t i) const { return out + i * record_bytes(); }
  // dst = dst (op) part, for parts of one segment reduced apart, in order; `part` starts `shift`
  // elements into the segment (the pair ops' indices within it move by that much).
  void combine_into(void* dst, const void* part, std::uint64_t shift) const {
    if (!is_pair(op)) {
      visit_dtype(result_type, [&](auto zero) {
        using T = decltype(zero);
        T a, b;
        std::memcpy(&a, dst, sizeof a);
        std::memcpy(&b, part, sizeof b);
        a = combine<T>(op, a, b);
        std::memcpy(dst, &a, sizeof a);
      });
      return;
    }
    visit_pair_type(op, type, [&](auto fn, auto t) {
      using F = decltype(fn);
      pair_record_t<F::op, decltype(t)> a, b;
      std::memcpy(&a, dst, sizeof a);
      std::memcpy(&b, part, sizeof b);
      if constexpr (requires { a.index; }) {  // -1 (nothing) is the identity's kNoIndex here
        a.index = a.index < 0 ? kNoIndex : a.index;
        b.index = b.index < 0 ? kNoIndex : b.index + static_cast<std::int64_t>(shift);
        a = F::apply(a, b);
        a.index = a.index == kNoIndex ? -1 : a.index;
      } else {
        a = F::apply(a, b);
      }
      std::memcpy(dst, &a, sizeof a);
    });
  }
};

// Every value the op's empty record: rows or columns of no elements (whatever their stride).
void fill_empty(Call& c) {
  const std::size_t size = c.record_bytes();
  unsigned char empty[kMaxCellBytes];
  empty_segment_record(c.op, c.type, c.options.accumulator, empty);
  for (std::uint64_t i = 0; i < c.layout.count; ++i) std::memcpy(c.out + i * size, empty, size);
}

// Rows and Offsets: runs of whole segments up to the budget; a segment longer than the budget
// goes in parts whose values combine in order.
void run_runs(Call& c) {
  Window& window = c.window;
  const SegmentLayout& l = c.layout;
  if (l.kind == SegmentKind::Rows && l.length == 0) return fill_empty(c);
  const std::size_t rsize = c.record_bytes();
  std::vector<std::int64_t> local;
  std::uint64_t i = 0;
  while (i < l.count) {
    const Range first = segment_range(l, i);
    if (first.end - first.begin > c.budget) {  // one long segment, in parts
      std::vector<unsigned char> part(rsize);
      std::uint64_t parts = 0;
      for (std::uint64_t b = first.begin; b < first.end; b += c.budget, ++parts) {
        const std::uint64_t len = std::min(c.budget, first.end - b);
        SegmentLayout one{SegmentKind::Rows, 1, len, len, nullptr};
        c.tally.add(c.job(window.get(b, len), len, one, parts ? part.data() : c.value_at(i)),
                    (first.end - first.begin + c.budget - 1) / c.budget);
        if (parts) c.combine_into(c.value_at(i), part.data(), b - first.begin);
      }
      ++i;
      continue;
    }
    std::uint64_t j = i + 1;  // segments [i, j) fit the budget together
    while (j < l.count && segment_range(l, j).end - first.begin <= c.budget) ++j;
    const std::uint64_t end = std::max(first.end, segment_range(l, j - 1).end);
    SegmentLayout run = l;
    run.count = j - i;
    if (l.kind == SegmentKind::Offsets) {
      local.assign(l.offsets + i, l.offsets + j + 1);
      for (auto& o : local) o -= static_cast<std::int64_t>(first.begin);
      run.offsets = local.data();
    }
    c.tally.add(c.job(window.get(first.begin, end - first.begin), end - first.begin, run, c.value_at(i)));
    i = j;
  }
}

// Columns: tiles of whole-width column bands and bands of rows; the row bands' values combine
// in order.
void run_columns(Call& c) {
  Window& window = c.window;
  const SegmentLayout& l = c.layout;
  const std::uint64_t width = std::min(l.count, c.budget);
  const std::uint64_t height = std::max<std::uint64_t>(1, c.budget / width);
  std::vector<unsigned char> part(width * c.record_bytes());
  if (l.length == 0) return fill_empty(c);  // columns of no rows
  for (std::uint64_t col = 0; col < l.count; col += width) {
    const std::uint64_t w = std::min(width, l.count - col);
    for (std::uint64_t row = 0; row < l.length; row += height) {
      const std::uint64_t h = std::min(height, l.length - row);
      SegmentLayout tile{SegmentKind::Columns, w, h, w, nullptr};
      void* dst = row ? part.data() : c.value_at(col);
      c.tally.add(c.job(window.tile(row, h, col, w, l.stride), h * w, tile, dst), (l.length + height - 1) / height);
      if (row)
        for (std::uint64_t k = 0; k < w; ++k)
          c.combine_into(c.value_at(col + k), part.data() + k * c.record_bytes(), row);
    }
  }
}

// Exact sums: each segment in pieces of at most kExactPieceElements, the pieces' states merged
// per segment in order and rounded once to the result type (f32 for f16 and bf16). Pieces go to
// the device in batches whose data fit the budget; a segment's state stays open until its last
// piece is in. A piece of f16 or bf16 has the state of its values widened to f32 (each exactly):
// the window of compute_dtype(type).
class ExactSink {
 public:
  ExactSink(Call& c) : c_(c) {}
  void add(std::uint64_t segment, const std::int64_t* words) {
    advance(segment);
    merge_piece(sums_[segment - base_], words, compute_dtype(c_.type));
  }
  // Every segment below `segment` (outside the open window) is complete.
  void advance(std::uint64_t segment) {
    while (segment >= base_ + sums_.size()) close_window();
  }
  void finish() { advance(c_.layout.count + sums_.size()); }
  void set_window(std::size_t w) { sums_.assign(w, ExactSum{}); }

 private:
  void close_window() {
    for (std::size_t k = 0; k < sums_.size() && base_ + k < c_.layout.count; ++k) {
      unsigned char* dst = c_.value_at(base_ + k);
      // A mean's: the exact sum over the segment's length, rounded once.
      const std::uint64_t divisor = finalize_of(c_.op) == Finalize::None ? 1 : segment_length(c_.layout, base_ + k);
      if (c_.result_type == DType::F32) {
        const float v = sums_[k].quotient_to_float(divisor);
        std::memcpy(dst, &v, sizeof v);
      } else {
        const double v = sums_[k].quotient_to_double(divisor);
        std::memcpy(dst, &v, sizeof v);
      }
      sums_[k].clear();
    }
    base_ += sums_.size();
  }
  Call& c_;
  std::vector<ExactSum> sums_{1};
  std::uint64_t base_ = 0;
};

// Rows or columns of at most kShortExactTerms terms, the whole matrix in one job: each summed in a
// 128-bit integer by the device where it has that (exact_short_segments), those whose terms span
// too many binades for it through pieces, one piece each, rounded here. Whether it ran.
bool run_short_exact_segments(Call& c) {
  const SegmentLayout& l = c.layout;
  if (finalize_of(c.op) != Finalize::None) return false;  // a mean's quotients are rounded here, from pieces
  if (l.kind == SegmentKind::Offsets || l.length > static_cast<std::uint64_t>(kShortExactTerms) || l.span() > c.budget ||
      !c.window.in_place())  // a read source would be read once here and again for pieces where the device has no kernel
    return false;
  const Memory data = c.window.get(0, l.span());
  const Memory out = c.exact_out.handle ? c.exact_out : Memory::host(c.out);
  std::vector<std::uint64_t> missed;
  const std::optional<SegmentOutcome> o = c.device.exact_short_segments(data, l.span(), c.type, l, out, missed, c.options);
  if (!o) return false;
  c.tally.add(*o);
  c.exact_out_written = out.on_device;
  std::sort(missed.begin(), missed.end());
  const int words = exact_piece_words(compute_dtype(c.type));
  const std::size_t size = size_of(c.result_type);
  constexpr std::size_t kBatch = std::size_t{1} << 16;
  // Many missed segments on a device: its values come down, are patched and go back in one copy
  // each way, rather than one small copy a segment.
  HostBuffer patched;
  if (out.on_device && missed.size() > 1024) {
    patched = HostBuffer(c.result_type, l.count);
    c.tally.transfer_ms += c.device.read(out, patched.data(), patched.bytes());
  }
  std::vector<ExactPiece> pieces;
  std::vector<std::int64_t> states;
  for (std::size_t first = 0; first < missed.size(); first += kBatch) {
    const std::size_t count = std::min(kBatch, missed.size() - first);
    pieces.clear();
    const bool rows = l.kind == SegmentKind::Rows;
    for (std::size_t i = 0; i < count; ++i)
      pieces.push_back({static_cast<std::int64_t>(rows ? missed[first + i] * l.stride : missed[first + i]),
                        static_cast<std::int64_t>(l.length), rows ? 1 : static_cast<std::int64_t>(l.stride)});
    states.resize(count * static_cast<std::size_t>(words));
    c.tally.add(c.device.exact_pieces(data, l.span(), c.type, pieces, states.data(), c.options));
    for (std::size_t i = 0; i < count; ++i) {
      ExactSum sum;
      merge_piece(sum, states.data() + i * static_cast<std::size_t>(words), compute_dtype(c.type));
      unsigned char value[sizeof(double)];
      if (c.result_type == DType::F32) {
        const float f = sum.to_float();
        std::memcpy(value, &f, sizeof f);
      } else {
        const double d = sum.to_double();
        std::memcpy(value, &d, sizeof d);
      }
      const std::uint64_t segment = missed[first + i];
      if (!out.on_device) std::memcpy(c.out + segment * size, value, size);
      else if (patched.bytes()) std::memcpy(static_cast<unsigned char*>(patched.data()) + segment * size, value, size);
      else c.tally.transfer_ms += c.device.write(value, out.at(segment * size), size);
    }
  }
  if (patched.bytes()) c.tally.transfer_ms += c.device.write(patched.data(), out, patched.bytes());
  return true;
}

void run_exact(Call& c) {
  if (run_short_exact_segments(c)) return;
  const SegmentLayout& l = c.layout;
  const int words = exact_piece_words(compute_dtype(c.type));
  // Batches of at most 2^18 pieces (46 MiB of f32 states, 145 MiB of f64 states), and of states
  // no larger than the budget's bytes (at least 1024 pieces): a streamed source in small jobs of
  // short segments keeps its states about as small as its jobs.
  constexpr std::uint64_t kBatch = std::uint64_t{1} << 18;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t state_bytes = static_cast<std::uint64_t>(words) * sizeof(std::int64_t);
  const std::uint64_t budget_bytes = c.budget > kMax / size_of(c.type) ? kMax : c.budget * size_of(c.type);
  const std::size_t batch = static_cast<std::size_t>(std::min(kBatch, std::max<std::uint64_t>(1024, budget_bytes / state_bytes)));
  Window& window = c.window;
  ExactSink sink(c);
  std::vector<ExactPiece> pieces;
  std::vector<std::uint64_t> owner;
  std::vector<std::int64_t> states;
  std::uint64_t lo = 0, hi = 0;
  const auto flush = [&] {
    if (pieces.empty()) return;
    for (auto& p : pieces) p.first -= static_cast<std::int64_t>(lo);
    states.resize(pieces.size() * static_cast<std::size_t>(words));
    c.tally.add(c.device.exact_pieces(window.get(lo, hi - lo), hi - lo, c.type, pieces, states.data(), c.options));
    for (std::size_t p = 0; p < pieces.size(); ++p) sink.add(owner[p], states.data() + p * static_cast<std::size_t>(words));
    pieces.clear();
    owner.clear();
  };
  const auto piece = [&](std::uint64_t segment, std::uint64_t first, std::uint64_t count, std::uint64_t step) {
    const std::uint64_t end = first + (count - 1) * step + 1;
    if (!pieces.empty() && (pieces.size() == batch || std::max(hi, end) - std::min(lo, first) > c.budget)) flush();
    if (pieces.empty()) lo = first, hi = end;
    lo = std::min(lo, first);
    hi = std::max(hi, end);
    pieces.push_back({static_cast<std::int64_t>(first), static_cast<std::int64_t>(count), static_cast<std::int64_t>(step)});
    owner.push_back(segment);
  };
  if (l.kind == SegmentKind::Columns) {
    // Bands of columns; in each, pieces row band by row band, so that a batch's data stay near.
    const std::uint64_t width = std::min<std::uint64_t>(l.count, 4096);
    const std::uint64_t rows = std::max<std::uint64_t>(
        1, std::min<std::uint64_t>(kExactPieceElements, c.budget > width ? (c.budget - width) / l.stride + 1 : 1));
    sink.set_window(width);
    for (std::uint64_t col = 0; col < l.count; col += width)
      for (std::uint64_t row = 0; row < l.length; row += rows)
        for (std::uint64_t k = col; k < std::min(l.count, col + width); ++k)
          piece(k, row * l.stride + k, std::min(rows, l.length - row), l.stride);
  } else {
    const auto piece_len = static_cast<std::uint64_t>(kExactPieceElements);
    const std::uint64_t len = std::min(piece_len, c.budget);
    for (std::uint64_t i = 0; i < l.count; ++i) {
      const Range r = segment_range(l, i);
      for (std::uint64_t b = r.begin; b < r.end; b += len) piece(i, b, std::min(len, r.end - b), 1);
    }
  }
  flush();
  sink.finish();
}

// How many bytes a call reads and writes.
std::uint64_t bytes_read(const SegmentLayout& l, DType type) {
  return l.elements() * size_of(type) + (l.kind == SegmentKind::Offsets ? (l.count + 1) * sizeof(std::int64_t) : 0);
}

// A pair op's records (host memory, segment_record_bytes apart) into the result's values and
// indices or maxima.
void split_records(Op op, DType type, const unsigned char* records, SegmentedResult& result) {
  const std::uint64_t count = result.values.size();
  visit_pair_type(op, type, [&](auto fn, auto t) {
    using T = decltype(t);
    using R = pair_record_t<decltype(fn)::op, T>;
    T* values = result.values.as<T>();
    if constexpr (requires(R r) { r.index; }) {
      result.indices = HostBuffer(DType::I64, count);
      auto* indices = result.indices.as<std::int64_t>();
      for (std::uint64_t i = 0; i < count; ++i) {
        R r;
        std::memcpy(&r, records + i * sizeof(R), sizeof r);
        values[i] = r.value;
        indices[i] = r.index;
      }
    } else {
      result.maxima = HostBuffer(type, count);
      T* maxima = result.maxima.as<T>();
      for (std::uint64_t i = 0; i < count; ++i) {
        R r;
        std::memcpy(&r, records + i * sizeof(R), sizeof r);
        values[i] = r.min;
        maxima[i] = r.max;
      }
    }
  });
}

// Runs the call's jobs (exact pieces, column tiles, or runs of segments) into c.out and fills the
// record's timing, kernel and rounding fields from them. The wall time in ms.
double run_call(Call& c, bool exact, Result& r, std::uint64_t& rounding_depth) {
  const auto t0 = Clock::now();
  if (exact) run_exact(c);
  else if (c.layout.kind == SegmentKind::Columns) run_columns(c);
  else run_runs(c);
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  r.kernel = c.tally.kernel;
  r.finish = !exact ? c.tally.finish
             : c.tally.kernel.find(":exact short ") != std::string::npos
                 ? "each segment in a 128-bit integer, rounded where it lies (one spanning too many binades: pieces)"
                 : "exact pieces, merged and rounded on the host";
  r.launches = c.tally.launches;
  r.kernel_ms = c.tally.kernel_ms;
  r.transfer_ms += c.tally.transfer_ms;
  r.chunks = static_cast<std::uint64_t>(c.tally.jobs);
  rounding_depth = exact ? 1 : c.tally.depth;
  return wall;
}

// nanmin and nanmax of float segments: as needs_nan_twin, segment by segment. Whether a non-empty
// segment's value is its fold's identity (all its elements NaN, or its extreme that infinity); an
// empty segment keeps the identity whatever the twin finds.
bool holds_nan_twin_candidate(const SegmentedResult& result, const SegmentLayout& layout, Op op) {
  for (std::uint64_t i = 0; i < result.values.size(); ++i)
    if (segment_length(layout, i) && needs_nan_twin(op, result.value(i))) return true;
  return false;
}

// NaN for each non-empty segment whose value and whose twin's are both their identities: every
// element of it is NaN. An empty segment keeps the identity, as min and max of one do.
void settle_segments_with_twin(SegmentedResult& result, const SegmentLayout& layout, const SegmentedResult& twin) {
  visit_dtype(result.values.type(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (is_float_v<T>) {
      for (std::uint64_t i = 0; i < result.values.size(); ++i)
        if (segment_length(layout, i) && needs_nan_twin(result.record.op, result.value(i)) &&
            needs_nan_twin(twin.record.op, twin.value(i)))
          result.values.as<T>()[i] = std::numeric_limits<T>::quiet_NaN();
    }
  });
}

// The fields every segmented record carries: backend, device, n, op, type, repeats, and bytes per
// second over total_ms when set, else kernel_ms.
void fill_record(Result& r, std::string_view backend, const std::string& device_name, const SegmentLayout& layout,
                 Op op, DType type, const RunOptions& options) {
  fill_identity(r, backend, layout.elements(), op, type);
  r.device = device_name;
  r.repeats = options.repeat;
  r.value = Scalar::of<std::int64_t>(0);
  const double ms = r.total_ms > 0 ? r.total_ms : r.kernel_ms;
  const std::uint64_t bytes = bytes_read(layout, type) + layout.count * segment_record_bytes(op, type, options.accumulator);
  r.bytes_per_s = ms > 0 ? static_cast<double>(bytes) / (ms * 1e-3) : 0;
}

}  // namespace

KernelInfo check_segment_call(SegmentDevice& device, std::string_view backend, const SegmentLayout& layout, Op op,
                              DType type, const RunOptions& options) {
  check_options(options);
  const std::vector<KernelInfo> kernels = device.kernels();
  const KernelInfo k = find_strategy(kernels, options.kernel, backend);
  // A strategy takes the folds or the pair ops (auto both): one line naming those that take op.
  if (std::find(k.ops.begin(), k.ops.end(), op) == k.ops.end()) {
    std::string takers;
    for (const auto& other : kernels)
      if (std::find(other.ops.begin(), other.ops.end(), op) != other.ops.end())
        takers += (takers.empty() ? "" : ", ") + other.name;
    if (takers.empty())
      throw InvalidArgument(std::string(backend) + " segment strategy '" + k.name + "' does not take " +
                            std::string(to_string(op)) + ": no segment strategy does (" +
                            std::string(to_string(op)) + " reduces whole arrays)");
    throw InvalidArgument(std::string(backend) + " segment strategy '" + k.name + "' does not take " +
                          std::string(to_string(op)) + " (strategies that do: " + takers + ")");
  }
  check_request(k, op, type, 1, backend, options);
  if (!k.reduces(layout.kind))
    throw InvalidArgument(std::string(backend) + " segment strategy '" + k.name + "' does not reduce " +
                          std::string(to_string(layout.kind)));
  return k;
}

namespace {

// run_segments below, but for nanmin and nanmax settling all-NaN segments.
SegmentedResult run_segments_once(SegmentDevice& device, std::string_view backend, const std::string& device_name,
                                  ChunkSource& source, const SegmentLayout& layout, Op op, const RunOptions& options) {
  const DType type = source.type();
  const KernelInfo k = check_segment_call(device, backend, layout, op, type, options);
  if (layout.span() > source.size())
    throw InvalidArgument("the layout reaches element " + std::to_string(layout.span()) + " but the input has " +
                          std::to_string(source.size()));

  const bool exact = options.exact && exact_applies(op, type);
  SegmentedResult result;
  result.kind = layout.kind;
  result.values = HostBuffer(result_dtype(op, type, options.accumulator), layout.count);
  Result& r = result.record;
  r.kernel = k.name;
  r.path = source.memory() ? "resident" : "stream";

  // A pair op's jobs write records, split into values and indices or maxima at the end.
  HostBuffer records(DType::U8, is_pair(op) ? layout.count * segment_record_bytes(op, type) : 0);
  if (layout.count) {
    Call c{device, Window(source, type), op, type, result.values.type(), options, layout, 0, {},
           static_cast<unsigned char*>(is_pair(op) ? records.data() : result.values.data())};
    std::uint64_t budget = device.max_job_bytes(options) / size_of(type);
    if (!budget) budget = std::numeric_limits<std::uint64_t>::max();
    if (options.chunk_elements) budget = std::min(budget, options.chunk_elements);
    if (!source.memory()) budget = std::min(budget, chunk_elements(options, size_of(type), 2, std::uint64_t{256} << 20));
    c.budget = std::max<std::uint64_t>(budget, 1);
    // No job reaches past the layout's elements or the budget.
    const std::uint64_t largest = std::min(c.budget, layout.span());
    c.window.reserve_for(largest);
    device.host_job_bytes = largest * size_of(type);
    const double wall = [&] {
      try {
        return run_call(c, exact, r, result.rounding_depth);
      } catch (...) {
        device.host_job_bytes = 0;
        throw;
      }
    }();
    device.host_job_bytes = 0;
    if (c.tally.jobs > 1 || !source.memory()) {
      r.total_ms = wall;
      r.path = (source.memory() ? "resident, " : "stream, ") + std::to_string(c.tally.jobs) + " jobs";
    }
  } else {
    r.finish = "none (no segments)";
  }
  if (is_pair(op)) split_records(op, type, static_cast<const unsigned char*>(records.data()), result);
  if (map_of(op) == ElementMap::Square && is_float(type)) result.rounding_depth += 1;  // each square rounds once
  result.bytes_read = bytes_read(layout, type);
  result.bytes_written = layout.count * segment_record_bytes(op, type, options.accumulator);
  fill_record(r, backend, device_name, layout, op, type, options);
  return result;
}

}  // namespace

namespace {

// Segments in device memory of an op with a last step need the backend's step there.
void check_segment_finalize(const SegmentDevice& device, std::string_view backend, Op op) {
  if (device.finalizes_on_device(finalize_of(op))) return;
  throw InvalidArgument(std::string(backend) + ": " + std::string(to_string(op)) +
                        " of segments in device memory is not available on this backend: reduce a host input, or " +
                        (finalize_of(op) == Finalize::DivideByCount ? "sum the segments and divide by their lengths"
                                                                     : "count their nonzero elements"));
}

// Mapped op `op`'s last step (Finalize) on every value: a mean divides each segment's sum by its
// length (an empty segment's 0 / 0 is NaN), any and all test its count. Exact means are divided
// already (ExactSink).
void finalize_segments(SegmentedResult& result, const SegmentLayout& layout, Op op, bool exact) {
  result.record.op = op;
  if (finalize_of(op) == Finalize::None || exact) return;
  visit_dtype(result.values.type(), [&](auto t) {
    using A = decltype(t);
    A* v = static_cast<A*>(result.values.data());
    for (std::uint64_t i = 0; i < layout.count; ++i) v[i] = finalize_value(op, v[i], segment_length(layout, i));
  });
  if (finalize_of(op) == Finalize::DivideByCount) result.rounding_depth += 1;
}

}  // namespace

SegmentedResult run_segments(SegmentDevice& device, std::string_view backend, const std::string& device_name,
                             ChunkSource& source, const SegmentLayout& layout, Op op, const RunOptions& options) {
  const bool exact = options.exact && exact_applies(op, source.type());
  if (kernel_op(op, source.type()) != op && !exact) {  // mean of floats, any, all: a fold, then its last step
    check_segment_call(device, backend, layout, op, source.type(), options);  // errors name the mean
    SegmentedResult result =
        run_segments(device, backend, device_name, source, layout, kernel_op(op, source.type()), options);
    finalize_segments(result, layout, op, false);
    return result;
  }
  SegmentedResult result = run_segments_once(device, backend, device_name, source, layout, op, options);
  if (may_be_all_nan(op, source.type()) && holds_nan_twin_candidate(result, layout, op)) {
    RunOptions once = options;
    once.warmup = 0;
    once.repeat = 1;
    settle_segments_with_twin(
        result, layout, run_segments_once(device, backend, device_name, source, layout, nan_twin(op), once));
  }
  finalize_segments(result, layout, op, exact);
  return result;
}

Result run_device_segments(SegmentDevice& device, std::string_view backend, const std::string& device_name,
                           const DeviceSegmentCall& call, const RunOptions& options) {
  SegmentLayout layout = call.layout;
  check_segment_finalize(device, backend, call.op);
  const KernelInfo k = check_segment_call(device, backend, layout, call.op, call.type, options);
  if (may_be_all_nan(call.op, call.type))
    throw InvalidArgument(std::string(backend) + ": " + std::string(to_string(call.op)) + " of " +
                          std::string(to_string(call.type)) + " segments in device memory: where a segment may be all NaN "
                          "(NaN, not " + (fold_of(call.op) == Op::Min ? "+inf" : "-inf") +
                          "), a second pass follows the first once its values are on the host: reduce a host input");
  const bool exact = options.exact && exact_applies(call.op, call.type);
  if (exact && !call.synchronous)
    throw InvalidArgument(std::string(backend) +
                          ": exact segmented sums round on the host: use the synchronous form, not the asynchronous one");
  const DType result_type = result_dtype(call.op, call.type, options.accumulator);
  Result r;
  r.kernel = k.name;
  r.path = "in place";
  std::vector<std::int64_t> offsets;
  if (layout.kind == SegmentKind::Offsets) {
    layout.offsets = nullptr;
    if (call.synchronous) {
      offsets.resize(layout.count + 1);
      r.transfer_ms += device.read(call.offsets, offsets.data(), offsets.size() * sizeof(std::int64_t));
      check_offsets(offsets, call.n);
      layout.offsets = offsets.data();
    }
  } else if (layout.span() > call.n) {
    throw InvalidArgument("the layout reaches element " + std::to_string(layout.span()) + " but the input has " +
                          std::to_string(call.n));
  }

  SegmentJob job;
  job.op = kernel_op(call.op, call.type);  // a mean of floats, any, all: a fold, its last step below
  job.type = call.type;
  job.result_type = result_type;
  job.options = options;
  job.layout = layout;
  job.data = call.data;
  job.n = call.n;
  job.offsets = call.offsets;
  job.out = call.out;
  job.synchronous = call.synchronous;
  const Finalize last = finalize_of(call.op);
  if (!call.synchronous) {
    if (layout.count) device.reduce(job);
    if (layout.count && last != Finalize::None) device.finalize(job, last);
    return r;
  }

  if (!layout.count) {
    r.finish = "none (no segments)";
  } else if (exact) {
    HostBuffer values(result_type, layout.count);
    Call c{device, Window(call.data, call.type), call.op, call.type, result_type, options, layout,
           std::numeric_limits<std::uint64_t>::max(), {}, static_cast<unsigned char*>(values.data()), call.out};
    run_call(c, true, r, r.rounding_depth);
    if (!c.exact_out_written) r.transfer_ms += device.write(values.data(), call.out, values.bytes());
  } else {
    const SegmentOutcome o = device.reduce(job);
    r.kernel = o.kernel;
    r.finish = o.finish;
    r.launches = o.launches;
    r.kernel_ms = o.kernel_ms;
    r.transfer_ms += o.transfer_ms;
    r.chunks = 1;
    r.rounding_depth = o.depth;
    if (last != Finalize::None) {
      device.finalize(job, last);
      r.launches += 1;
      if (last == Finalize::DivideByCount) r.rounding_depth += 1;
    }
  }
  fill_record(r, backend, device_name, layout, call.op, call.type, options);
  return r;
}

}  // namespace detail

// ---- the Reducer entry points ----

std::vector<KernelInfo> Reducer::segment_kernels() { return segment_device().kernels(); }

KernelInfo Reducer::segment_kernel(std::string_view name) {
  return detail::find_strategy(segment_kernels(), name, backend());
}

SegmentedResult Reducer::reduce_axis(const HostMatrix& in, int axis, Op op, const RunOptions& options) {
  const SegmentLayout layout = axis_layout(in.shape, axis);
  if (layout.span() > 0 && in.data == nullptr) throw InvalidArgument("reduce_axis: null data pointer");
  ArraySource source(HostArray{in.data, layout.span(), in.type});
  return reduce_axis(source, in.shape, axis, op, options);
}

SegmentedResult Reducer::reduce_axis(ChunkSource& source, const MatrixShape& shape, int axis, Op op,
                                     const RunOptions& options) {
  const SegmentLayout layout = axis_layout(shape, axis);
  std::lock_guard lock(mutex_);
  return detail::run_segments(segment_device(), backend(), device(), source, layout, op, options);
}

SegmentedResult Reducer::reduce_segments(HostArray in, std::span<const std::int64_t> offsets, Op op,
                                         const RunOptions& options) {
  if (in.n > 0 && in.data == nullptr) throw InvalidArgument("reduce_segments: null data pointer with n > 0");
  ArraySource source(in);
  return reduce_segments(source, offsets, op, options);
}

SegmentedResult Reducer::reduce_segments(ChunkSource& source, std::span<const std::int64_t> offsets, Op op,
                                         const RunOptions& options) {
  check_offsets(offsets, source.size());
  SegmentLayout layout;
  layout.kind = SegmentKind::Offsets;
  layout.count = offsets.size() - 1;
  layout.offsets = offsets.data();
  std::lock_guard lock(mutex_);
  return detail::run_segments(segment_device(), backend(), device(), source, layout, op, options);
}

}  // namespace xr
