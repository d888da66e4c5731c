// The list of CUDA segment strategies (from segment_strategy_list.inc), their KernelInfo, and the
// scratch memory they plan with.
#include "segment_strategy.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "check.hpp"
#include "xreduce/error.hpp"
#include "xreduce/semantics.hpp"

namespace xr::cuda::detail {

// ---- scratch -------------------------------------------------------------------------------

SegmentScratch::SegmentScratch(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  DeviceGuard guard(device);
  try {
    check(cudaMalloc(reinterpret_cast<void**>(&entries_), 4 * sizeof(std::uint64_t)), "cudaMalloc of the bin counters");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  } catch (...) {
    if (start_) cudaEventDestroy(start_);
    cudaFree(entries_);
    throw;
  }
}

SegmentScratch::~SegmentScratch() {
  // Errors are ignored: a destructor cannot report them.
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  for (void* p : slot_)
    if (p) cudaFree(p);
  cudaFree(tickets_);
  cudaFree(entries_);
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
  cudaGetLastError();
  cudaSetDevice(previous);
}

namespace {
// Stream-ordered: work already queued on the stream still sees the old allocation.
void* regrow(void* old, std::size_t bytes, cudaStream_t stream, const char* what) {
  if (old) check(cudaFreeAsync(old, stream), std::string("cudaFreeAsync (") + what + ")");
  void* p = nullptr;
  check(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync of " + format_bytes(bytes) + " (" + what + ")");
  return p;
}
constexpr const char* kSlotNames[] = {"bin lists", "chunk bases", "partials", "CUB temp storage", "segment input",
                                      "segment offsets", "segment values", "exact pieces", "exact states"};
static_assert(std::size(kSlotNames) == SegmentScratch::kSlots, "a name for every slot");
}  // namespace

void* SegmentScratch::buffer(Slot slot, std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (slot_bytes_[slot] >= bytes) return slot_[slot];
  slot_bytes_[slot] = 0;
  slot_[slot] = regrow(std::exchange(slot_[slot], nullptr), bytes, stream_, kSlotNames[slot]);
  slot_bytes_[slot] = bytes;
  return slot_[slot];
}

unsigned* SegmentScratch::tickets(u64 count) {
  count = std::max<u64>(count, 1);
  if (ticket_count_ >= count) return tickets_;
  ticket_count_ = 0;
  tickets_ =
      static_cast<unsigned*>(regrow(std::exchange(tickets_, nullptr), count * sizeof(unsigned), stream_, "tickets"));
  check(cudaMemsetAsync(tickets_, 0, count * sizeof(unsigned), stream_), "cudaMemsetAsync (tickets)");
  ticket_count_ = count;
  return tickets_;
}

std::size_t SegmentScratch::held_bytes() const {
  std::size_t b = ticket_count_ * sizeof(unsigned);
  for (std::size_t s : slot_bytes_) b += s;
  return b;
}

// ---- the strategies ------------------------------------------------------------------------

KernelInfo strategy_info(std::string name, KernelKind kind, std::vector<SegmentKind> layouts, BlockRule blocks,
                         std::string note) {
  KernelInfo k;
  k.name = std::move(name);
  k.note = std::move(note);
  k.kind = kind;
  k.ops.assign(folding_ops.begin(), folding_ops.end());
  k.types = segment_dtypes();
  k.exact = true;  // exact sums go through pieces (Segments::exact_pieces), whatever the strategy
  k.blocks = std::move(blocks);
  k.layouts = std::move(layouts);
  return k;
}

void layout_not_reduced(const char* what, SegmentKind kind) {
  throw InvalidArgument("cuda: " + std::string(what) + " does not reduce " + std::string(to_string(kind)));
}

const std::vector<const Strategy*>& strategies() {
  static const std::vector<const Strategy*> list = [] {
    std::vector<const Strategy*> v = {
#define XR_SEGMENT_STRATEGY(name) &strategy_##name(),
#include "segment_strategy_list.inc"
#undef XR_SEGMENT_STRATEGY
    };
    std::stable_sort(v.begin(), v.end(), [](const Strategy* a, const Strategy* b) { return a->order < b->order; });
    return v;
  }();
  return list;
}

const Strategy& find_strategy(std::string_view name) {
  for (const Strategy* s : strategies())
    if (s->info.name == name) return *s;
  std::string known;
  for (const Strategy* s : strategies()) known += (known.empty() ? "" : ", ") + s->info.name;
  throw InvalidArgument("cuda: unknown segment strategy '" + std::string(name) + "' (known: " + known + ")");
}

unsigned checked_block(const Strategy& s, unsigned block) {
  const unsigned b = block ? block : s.info.blocks.preferred;
  if (!s.info.blocks.accepts(b))
    throw InvalidArgument("cuda: segment strategy " + s.info.name + " accepts block sizes " + s.info.blocks.describe() +
                          ", not " + std::to_string(b));
  return b;
}

}  // namespace xr::cuda::detail
