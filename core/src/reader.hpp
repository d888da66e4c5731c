// Reading a descriptor front to back through a buffer (io.cpp, npy.cpp); not installed.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "input_internal.hpp"

namespace xr::input {

// Reads a descriptor front to back through a buffer: what was read to detect the format is
// read again from the buffer, never from the input.
class Reader {
 public:
  Reader(int fd, std::string name) : fd_(fd), name_(std::move(name)), buf_(std::size_t{1} << 16) {}

  // Up to `n` bytes ahead (fewer only at the end), without consuming them.
  std::string_view peek(std::size_t n) {
    while (end_ - pos_ < n && fill()) {
    }
    return {buf_.data() + pos_, std::min(n, end_ - pos_)};
  }

  // Copies up to `n` bytes; fewer only at the end.
  std::uint64_t read(void* dst, std::uint64_t n) {
    auto* out = static_cast<char*>(dst);
    std::uint64_t done = 0;
    while (done < n) {
      if (pos_ == end_) {
        if (n - done >= buf_.size()) {  // large reads go straight to dst
          const std::size_t got = read_some(out + done, static_cast<std::size_t>(std::min<std::uint64_t>(n - done, 1u << 26)));
          if (got == 0) break;
          done += got;
          consumed_ += got;
          continue;
        }
        if (!fill()) break;
      }
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, end_ - pos_));
      std::memcpy(out + done, buf_.data() + pos_, take);
      pos_ += take;
      consumed_ += take;
      done += take;
    }
    return done;
  }

  bool at_end() { return pos_ == end_ && !fill(); }
  std::uint64_t offset() const { return consumed_; }

  enum class Line { Read, End, TooLong };
  // The next line without its '\n' (the last may lack it); TooLong past `max` bytes.
  Line line(std::string& text, std::size_t max) {
    text.clear();
    if (pos_ == end_ && !fill()) return Line::End;
    for (;;) {
      const char* begin = buf_.data() + pos_;
      const std::size_t avail = end_ - pos_;
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', avail));
      const std::size_t take = newline ? static_cast<std::size_t>(newline - begin) : avail;
      if (text.size() + take > max) {  // what fits is kept, for the caller's checks
        text.append(begin, max - text.size());
        return Line::TooLong;
      }
      text.append(begin, take);
      pos_ += take + (newline ? 1 : 0);
      consumed_ += take + (newline ? 1 : 0);
      if (newline || !fill()) return Line::Read;
    }
  }

 private:
  // Appends what the input gives to the buffer; false at its end.
  bool fill() {
    if (eof_) return false;
    if (pos_ == end_) pos_ = end_ = 0;
    if (end_ == buf_.size()) {  // keep the unread part, make room after it
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
      if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    }
    const std::size_t got = read_some(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += got;
    return true;
  }

  std::size_t read_some(char* dst, std::size_t n) {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for data
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      fail(name_, "read error at byte " + count(consumed_) + ": " + std::strerror(errno));
    }
  }

  int fd_;
  std::string name_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t consumed_ = 0;
};

}  // namespace xr::input
