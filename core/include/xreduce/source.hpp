// Streamed inputs: elements read chunk by chunk, so that a reduction's memory stays bounded
// whatever the input's size (Reducer::reduce(ChunkSource&, ...)).
//
//   xr::FileSource file("big.npy");                       // raw or .npy; nothing read yet
//   xr::Result r = reducer->reduce(file, xr::Op::Sum);    // reads and reduces chunk by chunk
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "xreduce/export.hpp"
#include "xreduce/buffer.hpp"
#include "xreduce/io.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/types.hpp"

namespace xr {

class XR_API ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual DType type() const = 0;
  virtual std::uint64_t size() const = 0;  // elements
  virtual std::string name() const = 0;    // for messages: the path, or "host array"
  // Copies elements [first, first + count) to dst (count * size_of(type()) bytes; dst needs no
  // alignment). Calls come from one thread at a time. Throws InputError naming the source and
  // the byte offset where reading stopped.
  virtual void read(std::uint64_t first, std::uint64_t count, void* dst) = 0;
  // The elements themselves when they already lie in host memory, else nullptr.
  virtual const void* memory() const { return nullptr; }
};

// Host memory as a source; read() copies with several threads (parallel_copy).
class XR_API ArraySource final : public ChunkSource {
 public:
  explicit ArraySource(HostArray array) : array_(array) {}
  DType type() const override { return array_.type; }
  std::uint64_t size() const override { return array_.n; }
  std::string name() const override { return "host array"; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override;
  const void* memory() const override { return array_.data; }

 private:
  HostArray array_;
};

// A regular raw binary or .npy file (text files have no fixed layout, pipes, FIFOs, devices and
// files that report 0 bytes yet hold data (procfs) no place to read from at will:
// InvalidArgument; a directory: InputError). The layout is
// checked when it opens (the errors of load_file); read() uses pread from several threads.
// `max_elements` bounds it to at most its first max_elements elements. A file that shrinks
// while it is read gives InputError with the byte offset it ends at.
class XR_API FileSource final : public ChunkSource {
 public:
  explicit FileSource(std::string path, std::optional<DType> type = std::nullopt,
                      FileFormat format = FileFormat::Auto,
                      std::optional<std::uint64_t> max_elements = std::nullopt);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  DType type() const override { return layout_.type; }
  std::uint64_t size() const override { return layout_.n; }
  std::string name() const override { return path_; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override;
  const FileLayout& layout() const { return layout_; }

 private:
  std::string path_;
  FileLayout layout_;
  int fd_ = -1;
};

// Elements held in memory, owned by the source (an input read whole: a text file, a pipe).
class XR_API BufferSource final : public ChunkSource {
 public:
  BufferSource(HostBuffer buffer, std::string name) : buffer_(std::move(buffer)), name_(std::move(name)) {}
  DType type() const override { return buffer_.type(); }
  std::uint64_t size() const override { return buffer_.size(); }
  std::string name() const override { return name_; }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override;
  const void* memory() const override { return buffer_.data(); }

 private:
  HostBuffer buffer_;
  std::string name_;
};

// `path` as a source, opened once (load_file's rules and errors): a regular raw or .npy file
// streams from disk (FileSource); a text file, a pipe, a FIFO, a socket, a file that reports 0
// bytes yet holds data (procfs) or a device bounded by max_elements is read front to back once,
// into memory (BufferSource).
XR_API std::unique_ptr<ChunkSource> open_input(const std::string& path, std::optional<DType> type = std::nullopt,
                                        FileFormat format = FileFormat::Auto,
                                        std::optional<std::uint64_t> max_elements = std::nullopt);

// Wraps a source and calls report(bytes_read, bytes_total) after every read (the CLI prints
// progress from it; the library itself never prints).
class XR_API ProgressSource final : public ChunkSource {
 public:
  using Report = std::function<void(std::uint64_t bytes_read, std::uint64_t bytes_total)>;
  ProgressSource(ChunkSource& inner, Report report) : inner_(inner), report_(std::move(report)) {}
  DType type() const override { return inner_.type(); }
  std::uint64_t size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  void read(std::uint64_t first, std::uint64_t count, void* dst) override;
  const void* memory() const override { return inner_.memory(); }

 private:
  ChunkSource& inner_;
  Report report_;
};

// Elements [first, first + count) of another source, as a source of its own: one process's part
// of a file split over processes (xr::mpi), which reads only its own byte range. InvalidArgument
// when the range runs past the source's end.
class XR_API SliceSource final : public ChunkSource {
 public:
  SliceSource(ChunkSource& inner, std::uint64_t first, std::uint64_t count);
  DType type() const override { return inner_.type(); }
  std::uint64_t size() const override { return count_; }
  std::string name() const override;
  void read(std::uint64_t first, std::uint64_t count, void* dst) override;
  const void* memory() const override;

 private:
  ChunkSource& inner_;
  std::uint64_t first_, count_;
};

// memcpy with up to `threads` threads (0: up to 16, one per 4 MiB): one thread cannot move
// host memory at the PCIe link's rate (docs/performance.md, "Pageable host data").
XR_API void parallel_copy(void* dst, const void* src, std::size_t bytes, unsigned threads = 0);

}  // namespace xr
