#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "input_internal.hpp"
#include "pipeline.hpp"
#include "xreduce/error.hpp"
#include "xreduce/source.hpp"

namespace xr {
namespace {

constexpr std::size_t kBytesPerThread = std::size_t{4} << 20;
// H100 host (16-core Xeon VM), 64 MiB into pinned memory: 28.5 GB/s with 8 threads, 38.0 with
// 16 (docs/performance.md, "Pageable host data").
constexpr unsigned kMaxThreads = 16;

unsigned threads_for(std::size_t bytes, unsigned requested) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned cap = requested ? requested : std::min(hw, kMaxThreads);
  return static_cast<unsigned>(std::clamp<std::size_t>(bytes / kBytesPerThread, 1, cap));
}

// Runs piece(begin, end) over [0, bytes) split into `threads` page-aligned pieces; the
// first exception of any piece is rethrown after all have finished.
template <class Piece>
void in_pieces(std::size_t bytes, unsigned threads, Piece piece) {
  if (threads <= 1) {
    piece(std::size_t{0}, bytes);
    return;
  }
  const std::size_t step = (bytes / threads + 4095) & ~std::size_t{4095};
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex mutex;
  for (std::size_t begin = 0; begin < bytes; begin += step)
    pool.emplace_back([&, begin] {
      try {
        piece(begin, std::min(bytes, begin + step));
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void parallel_copy(void* dst, const void* src, std::size_t bytes, unsigned threads) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  in_pieces(bytes, threads_for(bytes, threads),
            [&](std::size_t begin, std::size_t end) { std::memcpy(d + begin, s + begin, end - begin); });
}

ChunkReader::~ChunkReader() {
  if (thread_.joinable()) thread_.join();
}

void ChunkReader::start(ChunkSource& source, std::uint64_t first, std::uint64_t count, void* dst) {
  join();
  thread_ = std::thread([this, &source, first, count, dst] {
    try {
      source.read(first, count, dst);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

void ChunkReader::join() {
  if (thread_.joinable()) thread_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ArraySource::read(std::uint64_t first, std::uint64_t count, void* dst) {
  if (first > array_.n || count > array_.n - first)
    throw InvalidArgument("host array: elements " + std::to_string(first) + ".." + std::to_string(first + count) +
                          " past its " + std::to_string(array_.n));
  const std::size_t elem = size_of(array_.type);
  parallel_copy(dst, static_cast<const unsigned char*>(array_.data) + first * elem, count * elem);
}

FileSource::FileSource(std::string path, std::optional<DType> type, FileFormat format,
                       std::optional<std::uint64_t> max_elements)
    : path_(std::move(path)) {
  // Opened without waiting for a FIFO's writer: anything but a regular file is refused unread.
  input::Descriptor fd = input::open_path(path_, true);
  const input::Opened what = input::classify(fd.get(), path_, true);
  if (what.kind != input::Kind::Regular) input::refuse_in_place(path_, what.kind);
  layout_ = input::inspect_regular(fd.get(), path_, what.size, type, format);
  if (max_elements) layout_.n = std::min(layout_.n, *max_elements);
  fd_ = fd.release();
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

void FileSource::read(std::uint64_t first, std::uint64_t count, void* dst) {
  if (first > layout_.n || count > layout_.n - first)
    throw InvalidArgument(printable(path_, 256) + ": elements " + std::to_string(first) + ".." +
                          std::to_string(first + count) +
                          " past its " + std::to_string(layout_.n));
  const std::size_t elem = size_of(layout_.type);
  const std::uint64_t base = layout_.data_offset + first * elem;
  const std::size_t bytes = count * elem;
  const std::uint64_t expected = layout_.data_offset + layout_.n * elem;
  auto* out = static_cast<unsigned char*>(dst);
  // Each piece reads its bytes or records where it stopped; the lowest such offset is where
  // the file really ends (or fails).
  std::mutex mutex;
  std::uint64_t stop_at = ~std::uint64_t{0};
  int stop_errno = 0;
  in_pieces(bytes, threads_for(bytes, 0), [&](std::size_t begin, std::size_t end) {
    std::size_t done = begin;
    while (done < end) {
      const ssize_t got = ::pread(fd_, out + done, end - done, static_cast<off_t>(base + done));
      if (got > 0) {
        done += static_cast<std::size_t>(got);
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      std::lock_guard lock(mutex);
      if (base + done < stop_at) {
        stop_at = base + done;
        stop_errno = got < 0 ? errno : 0;
      }
      return;
    }
  });
  if (stop_at == ~std::uint64_t{0}) return;
  if (stop_errno)
    throw InputError(printable(path_, 256) + ": read error at byte " + std::to_string(stop_at) + ": " +
                     std::strerror(stop_errno));
  throw InputError(printable(path_, 256) + ": truncated: ends at byte " + std::to_string(stop_at) + ", expected " +
                   std::to_string(expected) + " bytes");
}

void BufferSource::read(std::uint64_t first, std::uint64_t count, void* dst) {
  ArraySource(buffer_.view()).read(first, count, dst);
}

std::unique_ptr<ChunkSource> open_input(const std::string& path, std::optional<DType> type, FileFormat format,
                                        std::optional<std::uint64_t> max_elements) {
  input::Descriptor fd = input::open_path(path);
  const input::Opened what = input::classify(fd.get(), path, max_elements.has_value());
  if (what.kind == input::Kind::Regular) {
    const FileFormat resolved = input::resolve_regular(fd.get(), path, format);
    if (resolved != FileFormat::Text) return std::make_unique<FileSource>(path, type, resolved, max_elements);
    return std::make_unique<BufferSource>(input::read_whole(fd.get(), path, what.size, type, resolved, max_elements),
                                          path);
  }
  return std::make_unique<BufferSource>(input::read_whole(fd.get(), path, std::nullopt, type, format, max_elements),
                                        path);
}

SliceSource::SliceSource(ChunkSource& inner, std::uint64_t first, std::uint64_t count)
    : inner_(inner), first_(first), count_(count) {
  if (first > inner.size() || count > inner.size() - first)
    throw InvalidArgument("slice [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                          std::to_string(count) + ") of " + printable(inner.name()) + " runs past its " +
                          std::to_string(inner.size()) + " elements");
}

std::string SliceSource::name() const {
  return inner_.name() + " [" + std::to_string(first_) + ", " + std::to_string(first_ + count_) + ")";
}

void SliceSource::read(std::uint64_t first, std::uint64_t count, void* dst) {
  if (first > count_ || count > count_ - first)
    throw InvalidArgument("read of [" + std::to_string(first) + ", " + std::to_string(first) + " + " +
                          std::to_string(count) + ") runs past " + printable(name()));
  inner_.read(first_ + first, count, dst);
}

const void* SliceSource::memory() const {
  const void* whole = inner_.memory();
  return whole ? static_cast<const unsigned char*>(whole) + first_ * size_of(inner_.type()) : nullptr;
}

void ProgressSource::read(std::uint64_t first, std::uint64_t count, void* dst) {
  inner_.read(first, count, dst);
  const std::size_t elem = size_of(inner_.type());
  report_((first + count) * elem, inner_.size() * elem);
}

}  // namespace xr
